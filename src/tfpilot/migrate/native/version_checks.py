"""TensorFlow version checks, decided: ``if int(tf.__version__.split('.')[1]) < 12: ... else: ...``.

TF1 tutorials guard API renames with the version (``initialize_all_variables`` before 0.12,
``global_variables_initializer`` after). On TF 2.21 only one branch ever runs, so native code keeps
that branch and drops the test: the rest of the rewrite then sees one straight line, as the program
runs it. Only tests built from ``tf.__version__``, literals, comparisons and ``int`` / ``float`` /
``str`` / ``len`` / ``split`` / ``startswith`` are decided (evaluated on the version string alone,
never on anything of the program).
"""

from __future__ import annotations

import ast
import importlib.metadata

import libcst as cst

__all__ = ["decide_version_checks", "installed_tensorflow"]

_CALLS = {"int": int, "float": float, "str": str, "len": len}
_METHODS = frozenset({"split", "startswith", "strip", "lstrip", "rstrip"})
_NODES = (
    ast.Expression,
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.Not,
    ast.And,
    ast.Or,
    ast.Call,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Tuple,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.Eq,
    ast.NotEq,
    ast.USub,
)


def installed_tensorflow() -> str:
    """The TensorFlow version the migrated code runs on (read from the package metadata)."""
    try:
        return importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        return "2.21.0"


def _decide(test: str, tf_names: set[str], version: str) -> bool | None:
    """The test's value on `version`, or None when it is no pure version check."""
    try:
        tree = ast.parse(test.strip(), mode="eval")
    except SyntaxError:
        return None
    reads_version = False
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            return None
        if isinstance(node, ast.Name) and node.id not in tf_names and node.id not in _CALLS:
            return None
        if isinstance(node, ast.Attribute):
            if node.attr == "__version__" and isinstance(node.value, ast.Name) and node.value.id in tf_names:
                reads_version = True
            elif node.attr not in _METHODS:
                return None
    if not reads_version:
        return None

    class Version:
        __version__ = version

    scope = {name: Version for name in tf_names}
    try:
        return bool(eval(compile(tree, "<version check>", "eval"), {"__builtins__": _CALLS}, scope))  # noqa: S307
    except Exception:  # noqa: BLE001 - a test that fails on this version is no check to decide
        return None


class _Decider(cst.CSTTransformer):
    def __init__(self, module: cst.Module, tf_names: set[str], version: str) -> None:
        super().__init__()
        self.module = module
        self.tf_names = tf_names
        self.version = version
        self.decided: list[str] = []

    def _chosen(self, node: cst.If) -> list[cst.BaseStatement] | None:
        value = _decide(self.module.code_for_node(node.test), self.tf_names, self.version)
        if value is None:
            return None
        self.decided.append(self.module.code_for_node(node.test))
        if value:
            return list(node.body.body) if isinstance(node.body, cst.IndentedBlock) else None
        if node.orelse is None:
            return []
        if isinstance(node.orelse, cst.Else):
            return list(node.orelse.body.body) if isinstance(node.orelse.body, cst.IndentedBlock) else None
        inner = self._chosen(node.orelse)
        if inner is not None:
            return inner
        return [cst.If(test=node.orelse.test, body=node.orelse.body, orelse=node.orelse.orelse)]

    def leave_If(
        self, original: cst.If, updated: cst.If
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel:
        chosen = self._chosen(updated)
        if chosen is None:
            return updated
        if not chosen:
            return cst.RemoveFromParent()
        head = chosen[0]
        assert isinstance(head, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        first = head.with_changes(leading_lines=[*updated.leading_lines, *head.leading_lines])
        return cst.FlattenSentinel([first, *chosen[1:]])


def decide_version_checks(source: str, version: str | None = None) -> tuple[str, list[str]]:
    """The source with each pure TensorFlow version check replaced by the branch that runs on
    `version` (default: the installed TensorFlow), and the tests decided."""
    if "__version__" not in source:
        return source, []
    module = cst.parse_module(source)
    tf_names = {"tf"}
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if module.code_for_node(alias.name) == "tensorflow":
                            asname = alias.asname
                            tf_names.add(
                                asname.name.value
                                if asname is not None and isinstance(asname.name, cst.Name)
                                else "tensorflow"
                            )
    decider = _Decider(module, tf_names, version or installed_tensorflow())
    rewritten = module.visit(decider)
    return rewritten.code, decider.decided
