"""`python -m tfpilot.train.ps_server`: a `ps` or `worker` task of a parameter-server cluster.

Under ParameterServerStrategy only the chief (coordinator) runs Python training code; every
other task just hosts a tf.distribute.Server that stores variables (ps) or executes the functions
the coordinator schedules (worker). `tfpilot launch --ps M` starts these with TF_CONFIG and stops
them once the chief has finished, so `join()` blocking forever is the intended behaviour.
"""

from __future__ import annotations

import json
import os
import sys

__all__ = ["serve"]


def serve() -> None:
    import tensorflow as tf

    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise SystemExit("tfpilot.train.ps_server: TF_CONFIG is not set; start it with `tfpilot launch --ps M`")
    task = json.loads(raw).get("task", {})
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if task.get("type") not in ("ps", "worker"):
        raise SystemExit(f"tfpilot.train.ps_server: task type `{task.get('type')}` received; expected ps or worker")
    # Several local tasks may share one GPU: take memory as needed instead of nearly all of it.
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
    server = tf.distribute.Server(
        resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id, protocol="grpc", start=True
    )
    print(f"{resolver.task_type} {resolver.task_id} serving on {server.target}", flush=True)
    server.join()


if __name__ == "__main__":
    serve()
    sys.exit(0)
