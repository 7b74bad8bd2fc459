"""A private TensorFlow API the doctor's watchers need is gone: the script still runs, and the
doctor says it could not observe it, instead of crashing the user's run (issue 33, part 1).

The missing API is made missing for real in the child process: after TensorFlow has loaded, the
module is blocked in `sys.modules`, so the doctor's own import of it fails as it would on a
TensorFlow release without it.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tfpilot.diagnose.analysis import WATCH_FILE
from tfpilot.diagnose.doctor import watchers_off_finding
from tfpilot.diagnose.watchers import WatchReport

BLOCKED = "tensorflow.python.data.ops.iterator_ops"


def test_bootstrap_runs_the_script_unobserved_when_a_private_api_is_missing(tmp_path):
    script = tmp_path / "train.py"
    marker = tmp_path / "ran.txt"
    script.write_text(
        "import tensorflow as tf\n"
        "v = tf.Variable(1.0)\n"
        "for _ in range(3):\n"
        "    v.assign_add(1.0)\n"
        f"open({str(marker)!r}, 'w').write(str(float(v.numpy())))\n"
    )
    output = tmp_path / "out"
    code = (
        "import sys\n"
        "import tensorflow\n"  # TensorFlow itself loads; then the module is gone, as in a release without it
        f"sys.modules[{BLOCKED!r}] = None\n"
        "from tfpilot.diagnose.bootstrap import main\n"
        f"sys.exit(main(['--output', {str(output)!r}, '--', {str(script)!r}]))\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert marker.read_text() == "4.0"  # the user's script ran to its end
    report = WatchReport.from_dict(json.loads((output / WATCH_FILE).read_text()))
    assert report.watchers_off is not None and BLOCKED in report.watchers_off
    assert "the doctor's input watcher" in report.watchers_off
    finding = watchers_off_finding(report.watchers_off, location=str(script))
    assert finding.code == "DOC-WATCHERS-OFF" and finding.severity.value == "warning"
    assert "the script ran, but unobserved" in finding.message
