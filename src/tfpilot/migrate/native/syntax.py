"""Reading Python source: the names a node reads and binds, and what a finished rewrite still uses."""

from __future__ import annotations

import ast
import re

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tfpilot.migrate.compat import dotted_name, import_bindings, qualified_name

# bound_names, descendants, estimator_line, indent, is_main_test, names_read, target_names, v1_left
from tfpilot.migrate.native.tables import ESTIMATOR_MODULES, RANDOM, V1


def is_site_call(call: cst.Call, session: str | None, graph: set[str]) -> bool:
    """`sess.run(...)` or `tensor.eval(...)`: the calls that read the graph by design."""
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value in ("run", "eval")
        and isinstance(func.value, cst.Name)
        and (func.value.value == session or func.value.value in graph)
    )


class ValueReader(cst.CSTVisitor):
    """Visits an attribute's object and an argument's value only: a member name (`x.shape`) or a
    keyword (`f(axis=1)`) is no read of a name. Subclasses add visit_Name."""

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def names_read(node: cst.CSTNode, *, session: str | None = None, graph: set[str] | None = None) -> set[str]:
    """Every Name the node reads (attribute members and keyword names excluded); with `graph`, not
    counting what the sess.run / Tensor.eval calls inside it fetch and feed."""
    found: set[str] = set()

    class Reader(ValueReader):
        def visit_Call(self, node: cst.Call) -> bool:
            return graph is None or not is_site_call(node, session, graph)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
            if not isinstance(node.target, (cst.Name, cst.Tuple, cst.List)):
                node.target.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    node.visit(Reader())
    return found


def target_names(target: cst.BaseExpression) -> tuple[str, ...] | None:
    if isinstance(target, cst.Name):
        return (target.value,)
    if isinstance(target, (cst.Tuple, cst.List)):
        names: list[str] = []
        for element in target.elements:
            inner = target_names(element.value)
            if inner is None:
                return None
            names += inner
        return tuple(names)
    return None


def bound_names(statement: cst.CSTNode) -> list[str]:
    """Names a module-scope statement binds (assignments, loops, with-as, defs, imports)."""
    bound: list[str] = []

    class Binder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            bound.append(node.name.value)
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            bound.append(node.name.value)
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            bound.extend(target_names(node.target) or ())

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            bound.extend(target_names(node.target) or ())

        def visit_For(self, node: cst.For) -> None:
            bound.extend(target_names(node.target) or ())

        def visit_AsName(self, node: cst.AsName) -> None:
            bound.extend(target_names(node.name) or ())

    statement.visit(Binder())
    return bound


def descendants(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            found.append(node)
            return True

    node.visit(Collect())
    return found


def is_main_test(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` (either order, either quotes)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    sides = {type(test.left), type(target.comparator)}
    names = [side for side in (test.left, target.comparator) if isinstance(side, cst.Name)]
    strings = [side for side in (test.left, target.comparator) if isinstance(side, cst.SimpleString)]
    return (
        isinstance(target.operator, cst.Equal)
        and sides == {cst.Name, cst.SimpleString}
        and names[0].value == "__name__"
        and strings[0].evaluated_value == "__main__"
    )


def indent(code: str, prefix: str) -> str:
    return "".join(prefix + line if line.strip() else line for line in code.splitlines(keepends=True))


def v1_left(source: str) -> tuple[int, str] | None:
    """The first tf.compat.v1 or tf.contrib use left in ``source`` (line, dotted name), if any.

    The native output promises TF2 code: a file that still needs tf.compat.v1 after the rewrite
    keeps the compat output instead, which runs the whole program the TF1 way.
    """
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    bindings = import_bindings(module)
    found: list[tuple[int, str]] = []

    class Finder(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            name = qualified_name(node, bindings)
            if name is not None and (name.startswith(V1) or name.startswith("tensorflow.contrib")):
                found.append((positions[node].start.line, dotted_name(node) or name))
                return False
            return True

    module.visit(Finder())
    return min(found) if found else None


def estimator_line(source: str) -> int | None:
    """The first line that uses tf.estimator (code, not strings), or None."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    aliases = {"tf": "tensorflow", "tensorflow": "tensorflow"}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(ESTIMATOR_MODULES):
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute):
            parts: list[str] = []
            current: ast.expr = node
            while isinstance(current, ast.Attribute):
                parts.insert(0, current.attr)
                current = current.value
            if isinstance(current, ast.Name) and current.id in aliases:
                name = ".".join([aliases[current.id], *parts])
                if any(name == module or name.startswith(module + ".") for module in ESTIMATOR_MODULES):
                    lines.append(node.lineno)
    return min(lines, default=None)


def random_line(source: str) -> int | None:
    """The first line that draws TensorFlow random numbers (a random op or a Keras layer's initializer)."""
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    bindings = import_bindings(module)
    found: list[int] = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            name = qualified_name(node.func, bindings) or ""
            if draws_random(name) or re.match(
                r"^(keras\.layers\.(?!Flatten|MaxPooling|AveragePooling)|tensorflow\.(compat\.v1\.)?layers\."
                r"(?!flatten|max_pooling|average_pooling))",
                name,
            ):
                found.append(positions[node].start.line)

    module.visit(Finder())
    return min(found, default=None)


def draws_random(name: str) -> bool:
    """A TensorFlow call (qualified name) that draws random numbers, or makes what will (not the seed setter)."""
    return name.startswith("tensorflow.") and bool(RANDOM.search(name)) and not name.endswith("seed")
