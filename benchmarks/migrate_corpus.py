"""Do migrated TF1 scripts run? Ten real TF1 scripts, migrated, then executed on TF 2.21.

The scripts come from public TF1-era tutorial repositories (see benchmarks/migrate_corpus.md for
repository, commit and path; no code of theirs is stored in this project). The benchmark:

1. exports each script from a local bare git mirror (``fetch`` puts them under /work/.mirror),
2. shrinks its step / epoch count (the only edit besides data, so a run takes seconds),
3. writes a small synthetic MNIST (``mnist.npz``; random pixels and labels) and points the
   migrated loader at it with ``TFPILOT_MNIST``: the scripts never touch the network,
4. migrates the tree with plain ``tf_upgrade_v2`` (the anchor: what migrate did before) and with
   ``tfpilot migrate --mode compat`` / ``--mode native`` (the modes named in ``--modes``),
5. runs every output with a timeout and prints, per mode, how many ran to completion, and how
   often migrate's report ("will run" / "will not run") was right.

    python benchmarks/migrate_corpus.py [--mirror /work/.mirror] [--modes upgrade,compat,native]
                                        [--timeout 300] [--keep DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


@dataclasses.dataclass(frozen=True)
class Script:
    name: str
    repo: str
    commit: str
    path: str
    # Exact (old, new) text replacements that shrink the step count; each must match once.
    steps: tuple[tuple[str, str], ...]
    # Local modules the script imports, exported next to it at the same relative path.
    support: tuple[str, ...] = ()
    held_out: bool = False  # round 2: set aside before migrate was changed; never tuned on
    # Hand edits (old, new) that the TF1 reference needs beyond reference_source's generic ones.
    reference: tuple[tuple[str, str], ...] = ()


AYMERIC = ("aymericdamien/TensorFlow-Examples", "6dcbe14649163814e72a22a999f20c5e247ce988")
NLINTZ = ("nlintz/TensorFlow-Tutorials", "d6bdab7df46492446c48537fcf37e20ba44e8168")
GOLBIN = ("golbin/TensorFlow-Tutorials", "c8ac1e45ca27cccd228f316dd4f66afbc22f9016")

CORPUS = (
    Script("logistic_regression", *AYMERIC, "examples/2_BasicModels/logistic_regression.py",
           (("training_epochs = 25", "training_epochs = 2"),)),
    Script("convolutional_network_raw", *AYMERIC, "examples/3_NeuralNetworks/convolutional_network_raw.py",
           (("num_steps = 200", "num_steps = 20"),)),
    Script("recurrent_network", *AYMERIC, "examples/3_NeuralNetworks/recurrent_network.py",
           (("training_steps = 10000", "training_steps = 20"),)),
    Script("neural_network_estimator", *AYMERIC, "examples/3_NeuralNetworks/neural_network.py",
           (("num_steps = 1000", "num_steps = 20"),)),
    Script("save_restore_model", *AYMERIC, "examples/4_Utils/save_restore_model.py",
           (("for epoch in range(3):", "for epoch in range(1):"), ("for epoch in range(7):", "for epoch in range(1):"))),
    Script("tensorboard_advanced", *AYMERIC, "examples/4_Utils/tensorboard_advanced.py",
           (("training_epochs = 25", "training_epochs = 2"),)),
    Script("tensorflow_dataset_api", *AYMERIC, "examples/5_DataManagement/tensorflow_dataset_api.py",
           (("num_steps = 2000", "num_steps = 20"),)),
    Script("lstm", *NLINTZ, "07_lstm.py", (("for i in range(100):", "for i in range(1):"),)),
    Script("cnn_tf_layers", *GOLBIN, "07 - CNN/02 - tf.layers.py", (("for epoch in range(15):", "for epoch in range(1):"),)),
    Script("rnn_mnist", *GOLBIN, "10 - RNN/01 - MNIST.py", (("total_epoch = 30", "total_epoch = 1"),)),
)  # fmt: skip

# Round 2 (benchmarks/migrate_corpus.md): six repositories the migration was not built on; the
# held-out six were chosen before any of them was migrated.
NAKED = ("jostmey/NakedTensor", "02681ccd3cffff0ca0a1962f0ca50cffe0c5c423")
MORVAN = ("MorvanZhou/Tensorflow-Tutorial", "42dc32de532d146725aeef965d87871142a542d6")
CS20 = ("chiphuyen/stanford-tensorflow-tutorials", "51e53daaa2a32cfe7a1966f060b28dbbd081791c")
GENTLE = ("nethsix/gentle_tensorflow", "efe7ff42c540ab9149bd16708fd8bc6a20877617")
PKMITAL = ("pkmital/tensorflow_tutorials", "c3eefe59979cdde7b8cb59d2c52da8ebebe43254")
COOKBOOK = ("nfmcclure/tensorflow_cookbook", "d998edfe7df11177df2ea17814be7bd6193788c9")

ROUND2 = (
    Script("naked_serial", *NAKED, "serial.py", (("_EPOCHS = 10000", "_EPOCHS = 100"),)),
    Script("naked_tensor", *NAKED, "tensor.py", (("_EPOCHS = 10000", "_EPOCHS = 100"),)),
    Script("naked_bigdata", *NAKED, "bigdata.py", (("_EPOCHS = 10000", "_EPOCHS = 100"),), held_out=True),
    Script("morvan_session", *MORVAN, "tutorial-contents/201_session.py", ()),
    Script("morvan_placeholder", *MORVAN, "tutorial-contents/202_placeholder.py", ()),
    Script("morvan_variable", *MORVAN, "tutorial-contents/203_variable.py", ()),
    Script("morvan_tensorboard", *MORVAN, "tutorial-contents/305_tensorboard.py",
           (("for step in range(100):", "for step in range(10):"),)),
    Script("morvan_dataset", *MORVAN, "tutorial-contents/306_dataset.py",
           (("for step in range(201):", "for step in range(21):"),), held_out=True),
    Script("cs20_feed_dict", *CS20, "2017/examples/02_feed_dict.py", ()),
    Script("cs20_variables", *CS20, "2017/examples/02_variables.py", ()),
    Script("cs20_lazy_loading", *CS20, "2017/examples/02_lazy_loading.py", ()),
    Script("cs20_logreg_mnist", *CS20, "2017/examples/03_logistic_regression_mnist_sol.py",
           (("n_epochs = 30", "n_epochs = 1"),)),
    Script("cs20_queue", *CS20, "2017/examples/09_queue_example.py",
           (("for step in range(100):", "for step in range(10):"),), held_out=True),
    Script("cs20_variable_sharing", *CS20, "examples/05_variable_sharing.py", ()),
    Script("cs20_randomization", *CS20, "examples/05_randomization.py", (), held_out=True),
    Script("gentle_one_feature", *GENTLE, "code/linear_regression_one_feature.py",
           (("steps = 1000", "steps = 100"),), reference=(('print("W: %f" % sess.run(W))', 'print("W: %f" % sess.run(W).item())'), ('print("b: %f" % sess.run(b))', 'print("b: %f" % sess.run(b).item())'))),
    Script("gentle_one_feature_tb", *GENTLE, "code/linear_regression_one_feature_with_tensorboard.py",
           (("steps = 1000", "steps = 100"),), reference=(('print("W: %f" % sess.run(W))', 'print("W: %f" % sess.run(W).item())'), ('print("b: %f" % sess.run(b))', 'print("b: %f" % sess.run(b).item())'))),
    Script("gentle_multi_minibatch_tb", *GENTLE,
           "code/linear_regression_multi_feature_using_mini_batch_with_tensorboard.py",
           (("steps = 10000", "steps = 100"),), reference=(('print("b: %f" % sess.run(b))', 'print("b: %f" % sess.run(b).item())'),)),
    Script("gentle_multi_nomatrix_tb", *GENTLE,
           "code/linear_regression_multi_feature_using_mini_batch_without_matrix_with_tensorboard.py",
           (("steps = 10000", "steps = 100"),), held_out=True,
           reference=(('print("b: %f" % sess.run(b))', 'print("b: %f" % sess.run(b).item())'),)),  # reference edit added after the first held-out run (its reference failed)
    Script("pkmital_residual", *PKMITAL, "python/10_residual_network.py",
           (("n_epochs = 5", "n_epochs = 1"),
            ("for batch_i in range(mnist.train.num_examples // batch_size):", "for batch_i in range(5):")),
           support=("python/libs/__init__.py", "python/libs/connections.py")),
    Script("cookbook_layers", *COOKBOOK,
           "06_Neural_Networks/05_Implementing_Different_Layers/05_implementing_different_layers.py", (),
           held_out=True),
    Script("cookbook_multiple_layers", *COOKBOOK,
           "02_TensorFlow_Way/03_Working_with_Multiple_Layers/03_multiple_layers.py", ()),
)  # fmt: skip
ROUNDS = {"1": CORPUS, "2": ROUND2}


def _git_dir(mirror: Path, repo: str) -> Path:
    """fetch leaves a bare repository at .../repo or a checkout's .git at .../repo/.git."""
    base = mirror / repo.replace("/", "+") / "repo"
    return base / ".git" if (base / ".git").is_dir() else base


def _show(git_dir: Path, commit: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def export(script: Script, mirror: Path, into: Path) -> Path:
    git_dir = _git_dir(mirror, script.repo)
    if not git_dir.is_dir():
        raise SystemExit(f"no mirror of {script.repo} at {git_dir}; fetch github:{script.repo} first")
    text = _show(git_dir, script.commit, script.path)
    script_dir = Path(script.path).parent
    for support in script.support:
        target = into / Path(support).relative_to(script_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_show(git_dir, script.commit, support), encoding="utf-8")
    for old, new in script.steps:
        if text.count(old) != 1:
            raise SystemExit(f"{script.name}: step edit {old!r} matches {text.count(old)} times, expected once")
        text = text.replace(old, new)
    target = into / f"{script.name}.py"
    target.write_text(text, encoding="utf-8")
    return target


# --- the TF1 reference: the original script, minimally hand-edited to run on TF 2.21 -------------
# `import tensorflow as tf` -> tf.compat.v1 with v2 behaviour off (what TF1 was); the MNIST tutorial
# loader and tf.layers (gone with Keras 3, and tf_keras is not installed here) come from the helper
# module migrate writes. Both the reference and the migrated runs start with the same seeds.
_TF_IMPORT = re.compile(r"^(\s*)import tensorflow as tf\s*$", re.MULTILINE)
_MNIST_IMPORT = re.compile(
    r"^(\s*)(?:from tensorflow\.examples\.tutorials\.mnist import input_data"
    r"|import tensorflow\.examples\.tutorials\.mnist\.input_data as input_data)\s*$",
    re.MULTILINE,
)
SEEDS = """import random

import numpy as np

random.seed(0)
np.random.seed(0)
try:
    import tensorflow as tf

    tf.random.set_seed(0)  # eager (native output)
    tf.compat.v1.get_default_graph().seed = 0  # TF1 graphs (reference and compat output)
except ImportError:
    pass
"""


def reference_source(text: str, edits: tuple[tuple[str, str], ...]) -> str:
    for old, new in edits:
        if text.count(old) != 1:
            raise SystemExit(f"reference edit {old!r} matches {text.count(old)} times, expected once")
        text = text.replace(old, new)
    text = _TF_IMPORT.sub(r"\1import tensorflow.compat.v1 as tf; tf.disable_v2_behavior()", text)
    text = _MNIST_IMPORT.sub(r"\1from tf1_compat_shims import _tf1_mnist as input_data", text)
    if "tf.layers." in text:
        text = text.replace("tf.layers.", "_tf1_layers.")
        text = "from tf1_compat_shims import _tf1_layers\n" + text
    return text


def export_reference(scripts: list[Script], original: Path, into: Path) -> None:
    from tfpilot.migrate.compat import render_shim_module

    shutil.copytree(original, into)
    for path in into.rglob("*.py"):
        script = next((s for s in scripts if path.name == f"{s.name}.py"), None)
        path.write_text(reference_source(path.read_text(encoding="utf-8"), script.reference if script else ()))
        (path.parent / "tf1_compat_shims.py").write_text(render_shim_module(["_tf1_mnist", "_tf1_layers"]))


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf")


def printed_numbers(stdout: str) -> list[float]:
    """Every number the script printed, except on lines about time (they differ run to run)."""
    lines = [line for line in stdout.splitlines() if not re.search(r"time|second|\bsec\b", line, re.IGNORECASE)]
    return [float(token) for line in lines for token in _NUMBER.findall(line)]


def matches(reference: str, output: str, *, rtol: float) -> bool:
    expected, got = printed_numbers(reference), printed_numbers(output)
    return len(expected) == len(got) and bool(np.allclose(got, expected, rtol=rtol, atol=rtol, equal_nan=True))


_NOT_NATIVE = re.compile(r"compat\.v1|Session\(|placeholder|disable_v2_behavior")


def really_native(path: Path) -> bool:
    """No tf.compat.v1, Session or placeholder left in the file (what --mode native promises)."""
    return not _NOT_NATIVE.search(path.read_text(encoding="utf-8"))


def synthetic_mnist(path: Path) -> None:
    """MNIST's layout (uint8 28x28 images, integer labels), 6,000 train / 1,000 test, random content."""
    rng = np.random.default_rng(0)
    arrays = {
        "x_train": rng.integers(0, 256, size=(6000, 28, 28), dtype=np.uint8),
        "y_train": rng.integers(0, 10, size=6000, dtype=np.uint8),
        "x_test": rng.integers(0, 256, size=(1000, 28, 28), dtype=np.uint8),
        "y_test": rng.integers(0, 10, size=1000, dtype=np.uint8),
    }
    np.savez_compressed(path, **arrays)


NATIVE: dict[str, bool] = {}  # --mode native: file -> rewritten natively (not the compat fallback)


def migrate_tree(mode: str, source: Path, destination: Path) -> dict[str, bool]:
    """Migrate; returns the report's verdict per file (empty for the plain tf_upgrade_v2 anchor)."""
    if mode == "upgrade":
        command = [
            sys.executable, "-m", "tensorflow.tools.compatibility.tf_upgrade_v2_main",
            "--intree", str(source), "--outtree", str(destination), "--reportfile", str(destination) + ".txt",
        ]  # fmt: skip
    else:
        command = [sys.executable, "-m", "tfpilot.cli.main", "migrate", "--mode", mode, str(source), str(destination)]
    done = subprocess.run(command, capture_output=True, text=True)
    if not destination.is_dir():
        raise SystemExit(f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    if mode == "upgrade":
        return {}
    verdicts: dict[str, bool] = {}
    report = (destination / "MIGRATION_REPORT.md").read_text(encoding="utf-8")
    section = report.split("## Files", 1)[1].split("\n## ", 1)[0]
    for row in section.splitlines():
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].endswith(".py"):
            verdicts[cells[0]] = cells[1].startswith("yes")
            if mode == "native" and len(cells) >= 5:
                NATIVE[cells[0]] = cells[4] == "native"
    return verdicts


def last_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if re.match(r"^[A-Za-z_.]+(Error|Exception|Exit)\b", line)]
    return (lines[-1] if lines else (stderr.strip().splitlines() or ["(no output)"])[-1])[:160]


STDOUT: dict[str, str] = {}  # script path -> what it printed


def run_script(path: Path, workdir: Path, mnist: Path, timeout: float) -> tuple[bool, str, float]:
    workdir.mkdir(parents=True)
    seeds = workdir / "_seeds"
    seeds.mkdir()
    (seeds / "sitecustomize.py").write_text(SEEDS, encoding="utf-8")
    env = dict(
        os.environ,
        TFPILOT_MNIST=str(mnist),
        CUDA_VISIBLE_DEVICES="",
        TF_CPP_MIN_LOG_LEVEL="2",
        PYTHONPATH=str(seeds),
        TF_DETERMINISTIC_OPS="1",
    )
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, str(path)], cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:.0f}s", time.perf_counter() - started
    seconds = time.perf_counter() - started
    STDOUT[str(path)] = done.stdout
    return done.returncode == 0, "" if done.returncode == 0 else last_error(done.stderr), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--modes", default="upgrade,compat")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--keep", type=Path, help="keep the exported, migrated and run trees here")
    parser.add_argument("--only", help="comma-separated script names to run (default: the whole round)")
    parser.add_argument("--round", choices=sorted(ROUNDS), default="1", help="1: the ten tuned on; 2: round 2")
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also run the TF1 reference (the original on tf.compat.v1, hand edits in Script.reference) and compare "
        "the numbers each migrated script prints with it",
    )
    parser.add_argument("--rtol", type=float, default=1e-3, help="tolerance for --reference (relative and absolute)")
    parser.add_argument(
        "--held-out",
        choices=("exclude", "only", "include"),
        default="exclude",
        help="round 2's six held-out scripts: left out (default), alone, or with the rest",
    )
    args = parser.parse_args()
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    scripts = [s for s in ROUNDS[args.round] if not args.only or s.name in args.only.split(",")]
    if args.held_out == "exclude":
        scripts = [s for s in scripts if not s.held_out]
    elif args.held_out == "only":
        scripts = [s for s in scripts if s.held_out]

    root = Path(tempfile.mkdtemp(prefix="tfpilot-migrate-corpus-"))
    if args.keep:
        shutil.rmtree(args.keep, ignore_errors=True)
        root = args.keep
        root.mkdir(parents=True)
    original = root / "original"
    original.mkdir()
    for script in scripts:
        export(script, args.mirror, original)
    mnist = root / "mnist.npz"
    synthetic_mnist(mnist)

    results: dict[str, dict[str, tuple[bool, str, float]]] = {}
    verdicts: dict[str, dict[str, bool]] = {}
    printed: dict[str, dict[str, str]] = {}  # script -> mode -> stdout
    if args.reference:
        export_reference(scripts, original, root / "reference")
        for script in scripts:
            path = root / "reference" / f"{script.name}.py"
            outcome = run_script(path, root / "run-reference" / script.name, mnist, args.timeout)
            results.setdefault(script.name, {})["reference"] = outcome
            printed.setdefault(script.name, {})["reference"] = STDOUT.get(str(path), "")
            status = "runs" if outcome[0] else f"fails: {outcome[1]}"
            print(f"[TF1 ref] {script.name:28} {outcome[2]:6.1f}s  {status}", flush=True)
    for mode in modes:
        destination = root / f"migrated-{mode}"
        verdicts[mode] = migrate_tree(mode, original, destination)
        for script in scripts:
            name = f"{script.name}.py"
            outcome = run_script(destination / name, root / f"run-{mode}" / script.name, mnist, args.timeout)
            results.setdefault(script.name, {})[mode] = outcome
            printed.setdefault(script.name, {})[mode] = STDOUT.get(str(destination / name), "")
            status = "runs" if outcome[0] else f"fails: {outcome[1]}"
            print(f"[{mode:7}] {script.name:28} {outcome[2]:6.1f}s  {status}", flush=True)

    print()
    header = f"{'script':28} " + " ".join(f"{mode:>8}" for mode in modes)
    print(header)
    for script in scripts:
        cells = []
        for mode in modes:
            ran = results[script.name][mode][0]
            predicted = verdicts[mode].get(f"{script.name}.py")
            mark = "runs" if ran else "FAILS"
            if predicted is not None and predicted != ran:
                mark += "!"  # the report's verdict was wrong
            cells.append(f"{mark:>8}")
        print(f"{script.name:28} " + " ".join(cells))
    print()
    anchor = sum(results[s.name][modes[0]][0] for s in scripts)
    for mode in modes:
        runs = sum(results[s.name][mode][0] for s in scripts)
        line = f"{mode:8} runs {runs}/{len(scripts)}"
        if mode != modes[0]:
            line += f" (anchor {modes[0]}: {anchor}/{len(scripts)}, +{runs - anchor})"
        if verdicts[mode]:
            right = sum(verdicts[mode].get(f"{s.name}.py") == results[s.name][mode][0] for s in scripts)
            line += f"; report verdict right for {right}/{len(scripts)}"
        if mode == "native":
            native = [s.name for s in scripts if NATIVE.get(f"{s.name}.py") and results[s.name][mode][0]]
            line += f"; rewritten to TF2 and run: {len(native)}/{len(scripts)} ({', '.join(native)})"
        print(line)
    if args.reference:
        print()
        print(f"Against the TF1 reference (printed numbers within rtol=atol={args.rtol}; time lines skipped):")
        print(f"{'script':28} {'reference':>9} " + " ".join(f"{mode + ' matches':>15}" for mode in modes)
              + (f" {'really native':>13}" if "native" in modes else ""))  # fmt: skip
        totals = dict.fromkeys(modes, 0)
        native_total = 0
        for script in scripts:
            reference_ran = results[script.name]["reference"][0]
            cells = []
            for mode in modes:
                # The same printed numbers, and the same end: both finish, or both stop with the same error
                # (a bug of the TF1 script itself is kept, not fixed, by a faithful migration).
                same_end = results[script.name]["reference"][:2] == results[script.name][mode][:2]
                same = same_end and matches(
                    printed[script.name]["reference"], printed[script.name][mode], rtol=args.rtol
                )
                totals[mode] += same
                cells.append(f"{'yes' if same else 'no':>15}")
            line = f"{script.name:28} {'runs' if reference_ran else 'FAILS':>9} " + " ".join(cells)
            if "native" in modes:
                path = root / "migrated-native" / f"{script.name}.py"
                native = bool(NATIVE.get(f"{script.name}.py")) and really_native(path)
                native_and_matching = (
                    native and results[script.name]["native"][0] and cells[modes.index("native")].strip() == "yes"
                )
                native_total += native_and_matching
                line += f" {'yes' if native else 'no':>13}"
            print(line)
        ran_reference = sum(results[s.name]["reference"][0] for s in scripts)
        summary = f"TF1 reference runs {ran_reference}/{len(scripts)}; " + "; ".join(
            f"{mode} behaves as the reference (same numbers, same end) {totals[mode]}/{len(scripts)}" for mode in modes
        )
        if "native" in modes:
            summary += f"; really native, runs and matches {native_total}/{len(scripts)}"
        print(summary)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
