"""SavedModel -> TF.js graph model, run by tfpilot in a child process of its own Python.

    python convert.py SITE SAVED_MODEL OUTPUT_DIR [--imports-report PATH]

SITE is the directory tfpilot installed requirements.txt into (it is also on PYTHONPATH). Only
the conversion module is loaded: the package __init__ files of tensorflowjs import the Keras and
JAX converters (tf_keras, jax, flax), which a SavedModel conversion never calls, so empty package
shells stand in for them. tensorflow_decision_forests is imported by the conversion module only to
register TF-DF's custom ops; tfpilot's models have none and TF-DF 1.12's ops do not load into
TensorFlow 2.21, so an empty module stands in for it here, in this process only.

--imports-report writes which top-level modules were imported and from where, so a test can show
that the conversion needs nothing beyond TensorFlow's environment and SITE.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import types


def _shell_package(name: str, directory: str) -> None:
    module = types.ModuleType(name)
    module.__path__ = [directory]
    sys.modules[name] = module


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("site")
    parser.add_argument("saved_model")
    parser.add_argument("output_dir")
    parser.add_argument("--imports-report")
    args = parser.parse_args()

    site = os.path.abspath(args.site)
    _shell_package("tensorflowjs", os.path.join(site, "tensorflowjs"))
    _shell_package("tensorflowjs.converters", os.path.join(site, "tensorflowjs", "converters"))
    sys.modules["tensorflow_decision_forests"] = types.ModuleType("tensorflow_decision_forests")

    from tensorflowjs.converters import tf_saved_model_conversion_v2

    tf_saved_model_conversion_v2.convert_tf_saved_model(
        args.saved_model, args.output_dir, signature_def="serving_default", saved_model_tags="serve"
    )

    if args.imports_report:
        origins: dict[str, str] = {}
        for name, module in list(sys.modules.items()):
            top = name.split(".")[0]
            if top in origins or module is None:
                continue
            path = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", []) or []), None)
            origins[top] = "site" if path and os.path.abspath(path).startswith(site + os.sep) else "environment"
        stubbed = ["tensorflow_decision_forests"]
        for name in stubbed:
            origins[name] = "stub"
        import tensorflow as tf

        report = {"modules": origins, "tensorflow": tf.__version__, "python": sys.executable}
        with open(args.imports_report, "w") as handle:
            json.dump(report, handle, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
