"""Code that only TensorFlow 1 runs: a branch behind a test that TF 2 decides the other way.

``if tf.executing_eagerly(): ... else: sess = tf.Session()`` and ``if tf.__version__.startswith("1"):``
keep a TF1 spelling for TF1 on purpose: on TF 2.21 (eager execution on, as every TF 2 program starts)
that branch never runs, so the removed API in it breaks nothing. The rules that report APIs TF 2
or Keras 3 removed (categories "tf1 -> tf2" and "keras 3": `tf.keras.backend.get_session()` under
`if not tf.executing_eagerly():`) leave such branches alone. A version test is decided on the
installed TensorFlow's version string only (``tfpilot.tf_version``); anything else of the
program in the test leaves the branch undecided, and it is judged as any other code.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from tfpilot.lint.nodes import walk_nodes

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

__all__ = ["tf1_only_lines"]

_EAGER = frozenset({"tensorflow.executing_eagerly", "tensorflow.compat.v1.executing_eagerly"})


def tf1_only_lines(context: FileContext) -> list[tuple[int, int]]:
    """(first, last) line of every block of the file that runs only on TensorFlow 1."""
    source = context.source
    if "executing_eagerly" not in source and "__version__" not in source and not _TF_VERSION_NAME.search(source):
        return []
    blocks: list[tuple[int, int]] = []
    aliases = _version_bindings(context)
    for node in walk_nodes(context.tree):
        if not isinstance(node, ast.If):
            continue
        value = _decided_on_tf2(node.test, context, aliases)
        if value is None:
            continue
        dead = node.orelse if value else node.body
        if dead:
            blocks.append((dead[0].lineno, dead[-1].end_lineno or dead[-1].lineno))
    return blocks


def _decided_on_tf2(test: ast.expr, context: FileContext, aliases: dict[str, str]) -> bool | None:
    """The test's value on TF 2.21 with eager execution on, or None when that is not known."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _decided_on_tf2(test.operand, context, aliases)
        return None if inner is None else not inner
    if isinstance(test, ast.Call) and not test.args and context.qualname(test.func) in _EAGER:
        return True
    text = ast.unparse(test)
    if "__version__" not in text:
        text = _with_version_aliases(text, context, aliases)
        if "__version__" not in text:
            return None
    from tfpilot.tf_version import decide_version_test, installed_tensorflow

    names = {local for local, module in context.imports.items() if module.split(".")[0] == "tensorflow"}
    return decide_version_test(text, names, installed_tensorflow()) if names else None


def _version_bindings(context: FileContext) -> dict[str, str]:
    """Each name (``cur_tf_ver``, ``self.tf_version``) the file binds exactly once, to an expression that
    reads the version string: name -> that expression's source. Read once per file."""
    bound: dict[str, list[str]] = {}
    for node in walk_nodes(context.tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name | ast.Attribute):
                bound.setdefault(ast.unparse(target), []).append(ast.unparse(node.value))
    return {name: values[0] for name, values in bound.items() if len(values) == 1 and "__version__" in values[0]}


def _with_version_aliases(text: str, context: FileContext, aliases: dict[str, str]) -> str:
    """The test with each name the file binds once to the version string written out:
    ``self.cur_tf_ver == '2.0.0'`` after ``self.cur_tf_ver = tf.__version__`` is decided as
    ``tf.__version__ == '2.0.0'`` (stylegan2's `experimental_run_v2` behind it runs only on 2.0.0)."""
    for name, value in aliases.items():
        if name in text:
            text = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", f"({value})", text)
    if "__version__" not in text:
        # Set in another module (`self.cur_tf_ver = t_params['cur_tf_ver']`): a name that says it is
        # TensorFlow's version is read as it.
        tf = context.local_alias("tensorflow")
        if tf is not None:
            text = _TF_VERSION_NAME.sub(f"{tf}.__version__", text)
    return text


_TF_VERSION_NAME = re.compile(r"(?<![\w.])(?:self\.)?(?:cur_|current_)?tf_?ver(?:sion)?(?!\w)", re.IGNORECASE)
