"""``tfpilot migrate SRC DEST``: TF1 / Keras 2 code -> code that runs on TF 2.21 with Keras 3.

``command`` runs the whole migration (tf_upgrade_v2, the rewrites, the report, ``--verify``);
``compat`` and ``native`` are the source transforms (libcst, no TensorFlow); ``readiness`` checks
whether a migrated file will run (it imports TensorFlow to resolve names); ``shims`` holds the
helpers written into DEST/tf1_compat_shims.py.
"""

from __future__ import annotations

from tfpilot.migrate.command import (
    MODES,
    FileStatus,
    MigrationItem,
    MigrationReport,
    RunResult,
    default_report_path,
    entry_scripts,
    migrate,
    render_markdown,
    verify,
)
from tfpilot.migrate.compat import REMOVED_APIS, CompatChange, CompatResult, RemovedApi, rewrite_compat

__all__ = [
    "MODES",
    "REMOVED_APIS",
    "CompatChange",
    "CompatResult",
    "FileStatus",
    "MigrationItem",
    "MigrationReport",
    "RemovedApi",
    "RunResult",
    "default_report_path",
    "entry_scripts",
    "migrate",
    "render_markdown",
    "rewrite_compat",
    "verify",
]
