"""Doctor overhead: the same tiny training script plain vs under `doctor_script` (ratio, same run).

.venv/bin/python benchmarks/bench_doctor.py [--quick]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = Path(__file__).parents[1] / "tests" / "fixtures" / "doctor" / "good_compiled_loop.py"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    repeats = 1 if parser.parse_args().quick else 3
    from tfpilot.diagnose import doctor_script

    plain, doctored = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, str(SCRIPT)], check=True, capture_output=True, cwd=SCRIPT.parent)
        plain.append(time.perf_counter() - start)
        with tempfile.TemporaryDirectory() as output:
            start = time.perf_counter()
            doctor_script(SCRIPT, output_dir=output, profile_start=5, profile_steps=5)
            doctored.append(time.perf_counter() - start)
    anchor, instrumented = min(plain), min(doctored)
    print(
        f"doctor overhead: instrumented/plain wall-clock ratio = {instrumented / anchor:.2f}x (best of {repeats}; includes "
        "process start, profile window and xprof conversion)"
    )


if __name__ == "__main__":
    main()
