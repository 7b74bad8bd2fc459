"""``ast.walk`` and ``ast.iter_child_nodes`` without their per-node generator layers.

The rules walk sub-trees thousands of times per file; the standard library's versions go through
``iter_fields`` and ``iter_child_nodes`` generators for every node. These visit the same nodes in
the same order (breadth first for ``walk_nodes``, field order for ``child_nodes``) with one loop.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

__all__ = ["child_nodes", "walk_nodes", "walk_statements"]

_AST = ast.AST


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The direct children of ``node``, as ``list(ast.iter_child_nodes(node))``."""
    children: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, _AST):
            children.append(value)
        elif value.__class__ is list:
            for item in value:
                if isinstance(item, _AST):
                    children.append(item)
    return children


def walk_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` (itself first), breadth first, as ``ast.walk(node)``."""
    todo = deque([node])
    pop, append = todo.popleft, todo.append
    while todo:
        current = pop()
        for name in current._fields:
            value = getattr(current, name, None)
            if isinstance(value, _AST):
                append(value)
            elif value.__class__ is list:
                for item in value:
                    if isinstance(item, _AST):
                        append(item)
        yield current


_BLOCK_NODES = (ast.stmt, ast.ExceptHandler, ast.match_case)


def walk_statements(body: list[ast.stmt]) -> list[ast.AST]:
    """The statements in ``body`` and in their blocks (nested functions included), breadth first in
    ``walk_nodes``' order, without visiting any expression: for a rule that looks only at statements
    (assignments), a function's expressions are most of its nodes. Except handlers and match cases come
    along as the nodes that hold blocks."""
    found: list[ast.AST] = []
    todo: deque[ast.AST] = deque(body)
    while todo:
        node = todo.popleft()
        found.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                todo.extend(item for item in value if isinstance(item, _BLOCK_NODES))
    return found
