"""The bundled text example end to end: train, export with a string serving signature, session loader parity."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_text_example_trains_exports_and_serves_strings(tmp_path: Path) -> None:
    from tfpilot.config import load_config
    from tfpilot.errors import ExportError
    from tfpilot.export.formats import export_formats
    from tfpilot.export.verify import run_with_session_loader
    from tfpilot.workflow import evaluate_run, load_trained, run

    config = load_config(REPO_ROOT / "examples" / "text" / "config.yaml")
    config = config.model_copy(update={"runs_dir": tmp_path})
    summary = run(config)
    assert summary["metrics"]["test"]["accuracy"] >= 0.9, summary["metrics"]

    trained = load_trained(tmp_path / config.name)  # a fresh model from the run directory
    metrics = evaluate_run(trained)
    assert metrics["accuracy"] >= 0.9
    texts = [str(t) for t in trained.pipeline.source.records["text"][trained.pipeline.indices["test"]]]
    features, labels = trained.pipeline.arrays("test")
    in_process = np.argmax(trained.model.predict(features, verbose=0), axis=-1)
    # What `saved_model_cli run --input_exprs 'text=[...]'` and TF Serving do: v1 session, string batch.
    out = run_with_session_loader(Path(summary["export"]["saved_model"]), {"text": np.array(texts, dtype=object)})
    np.testing.assert_array_equal(out["class_id"], in_process)
    assert out["probabilities"].dtype == np.float32
    assert {c.decode() for c in out["class_name"]} <= set(trained.pipeline.class_names)

    with pytest.raises(ExportError, match="Flex"):
        export_formats(trained, formats=["tflite"], saved_model_path=summary["export"]["saved_model"])
