"""``python -m tfpilot.diagnose.bootstrap --output DIR -- SCRIPT.py ARGS``: run a script under a Watcher.

The script runs as ``__main__`` (runpy) with its own argv, after the Watcher's patches are in
place, so every tf.function it creates is counted. The watch report is written even when the
script fails, so the doctor can still explain a crash or a NaN.
"""

from __future__ import annotations

import argparse
import gc
import runpy
import sys
import traceback
from pathlib import Path

from tfpilot.diagnose.window_spec import DEFAULT_PROFILE_STEPS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tfpilot-doctor-bootstrap")
    parser.add_argument("--output", required=True)
    parser.add_argument("--profile-start", type=int, default=5)
    parser.add_argument("--profile-steps", type=int, default=DEFAULT_PROFILE_STEPS)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    output = Path(options.output)
    output.mkdir(parents=True, exist_ok=True)

    from tfpilot._tf_private import PrivateApiMissing
    from tfpilot.atomic import atomic_write_json
    from tfpilot.diagnose.analysis import WATCH_FILE
    from tfpilot.diagnose.watchers import Watcher, WatchReport

    watcher = Watcher(
        profile_dir=output / "profile", profile_start=options.profile_start, profile_steps=options.profile_steps
    )
    script_args = [a for a in options.args if a != "--"] if options.args[:1] == ["--"] else options.args
    sys.argv = [options.script, *script_args]
    sys.path.insert(0, str(Path(options.script).resolve().parent))
    status = 0
    watchers_off = None
    try:
        watcher.start()
    except PrivateApiMissing as error:
        # The patches look up every private API before changing anything: nothing is installed,
        # and the script still runs (a crash is still explained), only unobserved.
        watchers_off = str(error)
    try:
        runpy.run_path(options.script, run_name="__main__")
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # the user's script failed: keep what was observed up to the failure
        traceback.print_exc()
        status = 1
    finally:
        if watchers_off is None:
            watcher.stop()
            report = watcher.report()
        else:
            report = WatchReport.unobserved(watchers_off)
        atomic_write_json(output / WATCH_FILE, report.to_dict())
        # Leave what is still alive to the process's end, uncollected. Finalization's last garbage collection can
        # free a tf.data iterator over a Python generator (from_generator) whose producer thread is inside the
        # generator: TensorFlow waits for that thread in the iterator's destructor while holding the GIL the
        # generator needs, and the process never exits (p_generator_line_parse, after watch.json was written).
        gc.freeze()
    return status


if __name__ == "__main__":
    sys.exit(main())
