"""The walk's state: the scope (function body or module) and GradientTape block being visited.

FileContext keeps a stack of each while it walks a file; rules read the innermost one.
"""

from __future__ import annotations

import ast
import dataclasses

from tfpilot.lint.chains import Pipeline
from tfpilot.lint.nodes import child_nodes

__all__ = ["Scope", "TapeBlock", "parameters"]

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclasses.dataclass
class Scope:
    """A function body (or the module). ``is_graph``: TensorFlow traces it (tf.function & co)."""

    node: ast.AST
    is_graph: bool = False
    graph_reason: str = ""
    has_input_signature: bool = False
    params: frozenset[str] = frozenset()
    pipelines: dict[str, Pipeline] = dataclasses.field(default_factory=dict)
    # Names assigned from TensorFlow ops inside this scope (used by the host-conversion rule).
    tensor_names: set[str] = dataclasses.field(default_factory=set)
    loop_depth: int = 0
    _local_names: set[str] | None = None

    def local_names(self) -> set[str]:
        """Parameters and every name bound in the body (nested functions excluded)."""
        if self._local_names is None:
            names = set(self.params)
            body = getattr(self.node, "body", [])
            stack: list[ast.AST] = list(body) if isinstance(body, list) else [body]
            while stack:
                node = stack.pop()
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
                elif isinstance(node, (*_FUNCTION_TYPES, ast.ClassDef)):
                    names.add(node.name)
                    continue
                elif isinstance(node, ast.Lambda):
                    continue
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    for alias in node.names:
                        names.add((alias.asname or alias.name).split(".")[0])
                stack.extend(child_nodes(node))
            self._local_names = names
        return self._local_names


@dataclasses.dataclass(frozen=True)
class TapeBlock:
    """A ``with tf.GradientTape() as tape:`` block."""

    node: ast.With
    name: str | None
    scope: Scope


def parameters(arguments: ast.arguments) -> frozenset[str]:
    """Every parameter name of a function or lambda (positional-only, keyword-only, *args, **kw)."""
    names = [arg.arg for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    if arguments.vararg:
        names.append(arguments.vararg.arg)
    if arguments.kwarg:
        names.append(arguments.kwarg.arg)
    return frozenset(names)
