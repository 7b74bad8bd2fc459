"""Shared logic of the rules for whole TensorFlow modules that no longer exist (TFP611-TFP613).

Each such rule lists the module prefixes that are gone. An import of one is reported once, at
the import; a reference through ``tf`` (``tf.estimator.Estimator``) is reported where it is
used. A name reached through an import that was already reported is not reported again.
"""

from __future__ import annotations

import abc
import ast
from typing import ClassVar

from tfpilot.lint.rule import Rule

__all__ = ["RemovedModuleRule"]


class RemovedModuleRule(Rule, abc.ABC):
    """Base class: subclasses set ``removed`` and implement ``describe``."""

    # Fully qualified module prefixes that are gone (``tensorflow.estimator``).
    removed: ClassVar[tuple[str, ...]] = ()

    def _removed(self, name: str) -> str | None:
        if not name.startswith(self.removed):  # one C-level check for the common case: not removed
            return None
        for prefix in self.removed:
            if name == prefix or name.startswith(prefix + "."):
                return prefix
        return None

    @abc.abstractmethod
    def describe(self, name: str, shown: str) -> str:
        """The message for the removed name ``name`` (fully qualified), written as ``shown``."""

    # The file's first import of a removed module fails, and the file stops there: one finding
    # per file for the imports (the rest fail the same way once it is fixed).
    _import_reported = False

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if self._removed(alias.name) and not self._import_reported:
                self._import_reported = True
                self.report(node, f"`import {alias.name}` fails: " + self.describe(alias.name, alias.name))
                return

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module or self._import_reported:
            return
        for alias in node.names:
            name = f"{node.module}.{alias.name}"
            if self._removed(node.module) or self._removed(name):
                self._import_reported = True
                self.report(node, f"`from {node.module} import {alias.name}` fails: " + self.describe(name, name))
                return

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        if self._removed(qualname) is None:
            return
        if self._removed(self.context.root_binding(node) or ""):
            return  # reached through an import of the removed module, reported at the import
        shown = self.context.dotted(node) or qualname
        self.report(node, f"`{shown}` does not exist: " + self.describe(qualname, shown))
