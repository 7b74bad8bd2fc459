"""Small libcst edits the fixable rules share; each keeps the surrounding formatting intact.

Imported only when ``--fix`` runs, so plain linting never pays libcst's import cost.
"""

from __future__ import annotations

import libcst as cst

__all__ = [
    "add_keyword",
    "rename_keyword",
    "set_keyword_value",
    "rename_method",
    "expression",
    "append_method_call",
    "without_keyword",
]

_TIGHT = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def expression(source: str) -> cst.BaseExpression:
    return cst.parse_expression(source)


def add_keyword(call: cst.Call, name: str, value_source: str) -> cst.Call:
    """``f(a)`` -> ``f(a, name=value)``; a trailing comma stays where it was."""
    new_arg = cst.Arg(value=expression(value_source), keyword=cst.Name(name), equal=_TIGHT)
    # libcst writes the separating comma itself; an existing trailing comma is kept as is.
    return call.with_changes(args=[*call.args, new_arg])


def rename_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    return arg.with_changes(keyword=cst.Name(name))


def set_keyword_value(arg: cst.Arg, value_source: str) -> cst.Arg:
    return arg.with_changes(value=expression(value_source))


def rename_method(call: cst.Call, method: str) -> cst.Call:
    if not isinstance(call.func, cst.Attribute):
        return call
    return call.with_changes(func=call.func.with_changes(attr=cst.Name(method)))


def without_keyword(call: cst.Call, name: str) -> cst.Call:
    kept = [arg for arg in call.args if not (arg.keyword is not None and arg.keyword.value == name)]
    if kept:
        # The last argument must not keep a comma that pointed at the removed one.
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=kept)


def append_method_call(node: cst.BaseExpression, method: str, arg_source: str) -> cst.Call:
    """``expr`` -> ``expr.method(arg)``."""
    return cst.Call(
        func=cst.Attribute(value=node, attr=cst.Name(method)),
        args=[cst.Arg(value=expression(arg_source))],
    )
