"""State and helpers every stage of the native rewrite shares (the parsed module, names, positions)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from tfpilot.migrate.compat import CompatChange, import_bindings, qualified_name
from tfpilot.migrate.native.parts import Definition, Fallback
from tfpilot.migrate.native.syntax import bound_names, names_read


class Base:
    """The parsed module and the helpers every stage uses; the analysis fills in the graph."""

    # Set by the analysis (analysis.py); declared here because the call rewrites read them too.
    reaching: dict[str, list[Definition | str]]
    holders: list[tuple[str, int]]  # (name, index): variables, layers, optimizers
    optimizers: dict[str, tuple[str, int]]  # TF1 optimizer object name -> (keras expression, line)
    gradient_losses: dict[str, str]  # TF1 optimizer name -> the loss of its compute_gradients
    static: set[str]  # placeholders only ever fed Python literals
    scope_owner: cst.FunctionDef | cst.If | None

    def __init__(self, source: str, *, owner: str | None = None) -> None:
        # With several functions that each hold a Session (a file of self-contained examples), one
        # rewrite works on the function named here and leaves the others as they are.
        self.owner_name = owner
        self.module = cst.parse_module(source)
        self.wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self.positions = self.wrapper.resolve(PositionProvider)
        self.parents = self.wrapper.resolve(ParentNodeProvider)
        self.bindings = import_bindings(self.module)
        self.changes: list[CompatChange] = []
        self.notes: list[CompatChange] = []
        self.layer_counts: dict[str, int] = {}
        self.rmsprop_class = ""  # the RMSprop subclass with TF1's start, written once when a file needs it
        self.sparse_sensitive: list[tuple[str, int]] = []  # (TF1 optimizer, line) whose sparse update differs
        self.used_names = names_read(self.module) | {
            name for statement in self.module.body for name in bound_names(statement)
        }
        tf_aliases = [local for local, full in self.bindings.items() if full == "tensorflow"]
        if not tf_aliases:
            raise Fallback(1, "no `import tensorflow as tf` at module level")
        self.tf = tf_aliases[0]
        self.keras = next((local for local, full in self.bindings.items() if full == "keras"), None)

    # --- helpers -------------------------------------------------------------------------
    def line(self, node: cst.CSTNode) -> int:
        try:
            return self.positions[node].start.line
        except KeyError:
            return 1

    def qualified(self, node: cst.BaseExpression) -> str | None:
        return qualified_name(node, self.bindings)

    def fresh(self, base: str) -> str:
        name, counter = base, 1
        while name in self.used_names:
            counter += 1
            name = f"{base}_{counter}"
        self.used_names.add(name)
        return name

    def keras_name(self) -> str:
        if self.keras is None:
            self.keras = "keras"
        return self.keras

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def graph_names(self) -> set[str]:
        return set(self.reaching)

    def expression(self, code: str) -> cst.BaseExpression:
        return cst.parse_expression(code)

    def calls_in(self, node: cst.CSTNode) -> list[str]:
        names: list[str] = []
        rewrite = self

        class Calls(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute) -> None:
                name = rewrite.qualified(node)
                if name:
                    names.append(name)

        node.visit(Calls())
        return names

    def holders_names(self) -> set[str]:
        return {name for name, _ in self.holders}

    def blank_lines(self) -> list[cst.EmptyLine]:
        """PEP 8: two blank lines around a module-level function, one around a nested one."""
        return [cst.EmptyLine(indent=False)] * (2 if self.scope_owner is None else 1)
