"""TFP607: a module that runs on tf.compat.v1 (one note per file)."""

from __future__ import annotations

import ast
import re
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import TF1_COVERED, TF1_MODE_SWITCHES, TF1_PLACEHOLDER, TF1_REMOVED_MODULES, tf1_match, tf1_name
from tfpilot.lint.rule import Invalid, Rule

_COMPAT_V1 = "tensorflow.compat.v1"
# How many of a file's TF1 names the note spells out before "and N more".
_NAMED = 6
_GRAPH_CONTEXT = re.compile(r"Session|Graph|as_default")


def _is_compat_v1(name: str) -> bool:
    return name == _COMPAT_V1 or name.startswith(_COMPAT_V1 + ".")


class CompatV1(Rule):
    """``tf.compat.v1`` keeps TF1 semantics alive inside a TF2 program: one note per file.

    It is how tf_upgrade_v2 makes old code run, not a destination: the TF1 APIs it keeps run on
    TF 2.21, mostly in graph mode (``disable_eager_execution`` / ``disable_v2_behavior``, which
    turn off eager execution, tf.function semantics and Keras 3 for the whole process), and get
    no new features or fixes. Because the code runs, this is a note (info), once per file, that
    names what the file uses; the other TF1 rules only claim a defect for the removed spellings
    (``tf.Session`` under ``import tensorflow as tf``). It is a warning in one case that does
    not run: a module-level placeholder in a file that never leaves eager mode (no mode switch,
    not inside ``with tf.Session()`` or ``with graph.as_default()``), where TF 2.21 raises ``RuntimeError: tf.placeholder() is not compatible with eager execution``.
    """

    code = "TFP607"
    name = "tf-compat-v1"
    message = "this module runs on tf.compat.v1 (TF1 APIs that TF 2.21 keeps)"
    fix_hint = "Port to the TF2 API; `tfpilot migrate SRC DEST` rewrites what it can and lists the rest"
    severity = Severity.INFO
    category = "tf1 -> tf2"
    tokens = ("compat", "disable_v2_behavior", "disable_eager_execution", "enable_eager_execution")
    VALID = [
        """
import tensorflow as tf

x = tf.constant(1.0)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
""",
            line=2,
        ),
        Invalid(
            """
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
""",
            line=4,
        ),
        Invalid(
            """
import tensorflow as tf

init = tf.compat.v1.initializers.glorot_uniform()
""",
            line=4,
        ),
        # eager mode is never left: the placeholder raises RuntimeError (a warning, not a note)
        Invalid(
            """
import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 3])
""",
            line=4,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._first: ast.AST | None = None
        self._import = ""
        self._uses: dict[str, None] = {}  # insertion-ordered set of the TF1 names used
        self._switch: tuple[ast.AST, str] | None = None
        self._placeholder: ast.AST | None = None

    def _note_first(self, node: ast.AST) -> None:
        if self._first is None:
            self._first = node

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _is_compat_v1(alias.name):
                self._note_first(node)
                self._import = self._import or f"`import {alias.name}`"
                return

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            return
        if _is_compat_v1(module) or (module == "tensorflow.compat" and any(a.name == "v1" for a in node.names)):
            self._note_first(node)
            self._import = self._import or f"`from {module} import ...`"

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        if not _is_compat_v1(qualname):
            return
        if qualname == _COMPAT_V1:
            self._note_first(node)  # `tf1 = tf.compat.v1`: the module's TF1 names go through tf1
            return
        name = tf1_name(qualname) or ""
        if tf1_match(qualname, TF1_REMOVED_MODULES) is not None:
            return  # gone from compat.v1 too: TFP611 / TFP612 report every use as an error
        self._note_first(node)
        if tf1_match(qualname, TF1_MODE_SWITCHES) is not None:
            self._switch = self._switch or (node, name)
            return
        if (
            self._placeholder is None
            and tf1_match(qualname, TF1_PLACEHOLDER) is not None
            and self._called(node)
            and self._in_eager(node)
        ):
            self._placeholder = node
        # named in the note: the TF1-only APIs (tf.float32 through compat.v1 is just TF)
        api = tf1_match(qualname, TF1_COVERED)
        if api is not None:
            self._uses.setdefault(api, None)

    def _called(self, node: ast.AST) -> bool:
        """``tf.compat.v1.placeholder(...)`` itself, not the name in a type annotation or a table."""
        parent = self.context.parent
        return isinstance(parent, ast.Call) and parent.func is node

    def _in_eager(self, node: ast.AST) -> bool:
        """Certainly run in eager mode unless a mode switch is called: module-level code outside any
        `with tf.Session()` / `with graph.as_default()` (a function may be called from one;
        measured on TF 2.21: an InteractiveSession does not make later placeholders work)."""
        if len(self.context.scopes) > 1:
            return False
        for ancestor in self.context.stack:
            if isinstance(ancestor, ast.With) and any(
                _GRAPH_CONTEXT.search(ast.unparse(item.context_expr)) for item in ancestor.items
            ):
                return False
        return True

    def finish(self) -> None:
        if self._first is None:
            return
        if self._placeholder is not None and self._switch is None:
            self.report(
                self._placeholder,
                f"`{self.context.dotted(self._placeholder)}` raises RuntimeError in TF2's eager mode, and this "
                "file never leaves it (no tf.compat.v1.disable_eager_execution(), no `with graph.as_default()`)",
                severity=Severity.WARNING,
            )
        uses = list(self._uses)
        named = ", ".join(uses[:_NAMED]) + (f" and {len(uses) - _NAMED} more" if len(uses) > _NAMED else "")
        parts = [f"this module runs on tf.compat.v1{f' through {self._import}' if self._import else ''}"]
        if named:
            parts.append(f"TF1 APIs used: {named}")
        if self._switch is not None:
            line = self.context.char_span(self._switch[0])[0]
            parts.append(f"tf.{self._switch[1]}() on line {line} turns TF2 behaviour off for the whole process")
        parts.append("it runs on TF 2.21, but these APIs get no fixes")
        self.report(self._first, "; ".join(parts))
