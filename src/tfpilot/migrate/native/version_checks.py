"""TensorFlow version checks, decided: ``if int(tf.__version__.split('.')[1]) < 12: ... else: ...``.

TF1 tutorials guard API renames with the version (``initialize_all_variables`` before 0.12,
``global_variables_initializer`` after). On TF 2.21 only one branch ever runs, so native code keeps
that branch and drops the test: the rest of the rewrite then sees one straight line, as the program
runs it. Only tests built from ``tf.__version__``, literals, comparisons and ``int`` / ``float`` /
``str`` / ``len`` / ``split`` / ``startswith`` are decided (evaluated on the version string alone,
never on anything of the program).
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tfpilot.migrate.compat import import_bindings, stops_the_program
from tfpilot.tf_version import decide_version_test, installed_tensorflow

__all__ = ["decide_version_checks"]

_TENSORFLOW = frozenset({"tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2"})


def _statements(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    """A branch's statements, as lines of the enclosing block (`if c: a = 1` has a one-line suite)."""
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    assert isinstance(block, cst.SimpleStatementSuite)
    return [cst.SimpleStatementLine(body=block.body)]


class _Decider(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: cst.Module, tf_names: set[str], version: str) -> None:
        super().__init__()
        self.module = module
        self.tf_names = tf_names
        self.version = version
        self.decided: list[tuple[int, str]] = []  # (line, test) of each check decided
        self.refused: list[tuple[int, str]] = []  # (line, test) of each guard refusing TF 2, removed
        self._elifs: set[int] = set()  # ids of the `elif` branches (decided by the `if` they belong to)

    def _value(self, original: cst.If) -> bool | None:
        test = self.module.code_for_node(original.test)
        value = decide_version_test(test, self.tf_names, self.version)
        if value is not None:
            self.decided.append((self.get_metadata(PositionProvider, original).start.line, test))
        return value

    def _orelse(
        self, original: cst.If | cst.Else | None, updated: cst.If | cst.Else | None
    ) -> cst.If | cst.Else | None:
        """An if's `elif`/`else` chain with its decided checks folded in (`elif <check>` true: it is
        the `else`; false: the chain goes on past it)."""
        if not isinstance(original, cst.If) or not isinstance(updated, cst.If):
            return updated
        value = self._value(original)
        rest = self._orelse(original.orelse, updated.orelse)
        if value is None:
            return updated.with_changes(orelse=rest)
        return cst.Else(body=updated.body) if value else rest

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self._elifs.add(id(node.orelse))

    def leave_If(
        self, original: cst.If, updated: cst.If
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel:
        if id(original) in self._elifs:
            return updated  # its own `if` decides it (_orelse): an elif is no statement of its own
        value = self._value(original)
        rest = self._orelse(original.orelse, updated.orelse)
        if value is None:
            return updated.with_changes(orelse=rest)
        if value and original.orelse is None and stops_the_program(original.body):
            self.refused.append(self.decided.pop())  # a guard refusing TF 2 (compat.refuses_tensorflow2)
            return cst.RemoveFromParent()
        if value:
            chosen = _statements(updated.body)
        elif rest is None:
            return cst.RemoveFromParent()
        elif isinstance(rest, cst.Else):
            chosen = _statements(rest.body)
        else:  # the first undecided elif becomes the if
            chosen = [cst.If(test=rest.test, body=rest.body, orelse=rest.orelse)]
        head = chosen[0]
        assert isinstance(head, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        first = head.with_changes(leading_lines=[*updated.leading_lines, *head.leading_lines])
        return cst.FlattenSentinel([first, *chosen[1:]])


def decide_version_checks(
    source: str, version: str | None = None, refused: list[tuple[int, str]] | None = None
) -> tuple[str, list[tuple[int, str]]]:
    """The source with each pure TensorFlow version check replaced by the branch that runs on
    `version` (default: the installed TensorFlow), and (line, test) of each check decided."""
    if "__version__" not in source:
        return source, []
    module = cst.parse_module(source)
    tf_names = {name for name, bound in import_bindings(module).items() if bound in _TENSORFLOW}
    decider = _Decider(module, tf_names, version or installed_tensorflow())
    rewritten = MetadataWrapper(module).visit(decider)
    if refused is not None:
        refused.extend(decider.refused)  # guards that only stopped the program on TF 2: removed
    return rewritten.code, decider.decided
