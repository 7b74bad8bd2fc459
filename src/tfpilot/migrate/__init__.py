"""``tfpilot migrate``'s rewrites beyond tf_upgrade_v2: compat mode (TF1 graph code that runs on
TF 2.21) and the check of whether a migrated file will run.

The command itself is ``tfpilot.lint.migrate``; this package holds the source transforms (libcst,
no TensorFlow) and the readiness check (imports TensorFlow to resolve names).
"""

from __future__ import annotations

from tfpilot.migrate.compat import CompatChange, CompatResult, rewrite_compat

__all__ = ["CompatChange", "CompatResult", "rewrite_compat"]
