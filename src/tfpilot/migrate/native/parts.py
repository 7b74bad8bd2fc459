"""The parts of a TF1 program the native rewrite works with: definitions, sess.run sites, shared forward passes."""

from __future__ import annotations

import dataclasses

import libcst as cst


class Fallback(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


@dataclasses.dataclass
class Definition:
    index: int  # position in the flattened module body
    statement: cst.SimpleStatementLine | cst.For  # a For: a graph built by a Python loop (graph_loop)
    targets: tuple[str, ...]
    deps: list[Definition | str]  # reaching definitions and placeholder names it reads
    line: int
    function_form: cst.SimpleStatementLine | None = None  # the statement as it runs in a tf.function
    module_form: tuple[cst.BaseStatement, ...] = ()  # what stays at module level (hoisted layers)
    train: tuple[str, str] | None = None  # (keras optimizer name, loss name) for `T = opt.minimize(loss)`
    train_variables: str | None = None  # `minimize(loss, var_list=theta)`: the name of the list it updates
    train_counter: str | None = None  # `minimize(loss, global_step=step)`: the variable each update adds 1 to
    # `T = opt.apply_gradients(G)`: G's source text (the train op applies what the step computed);
    # train then names the loss of the `opt.compute_gradients(loss)` that G comes from.
    applies: str | None = None
    gradients: bool = False  # `G = opt.compute_gradients(loss)`: computed from the train step's tape


@dataclasses.dataclass
class Helper:
    """A forward pass that several steps share: one function they call."""

    root: Definition
    definitions: list[Definition]
    params: list[str]
    name: str = ""
    users: set[tuple[int | str, ...]] = dataclasses.field(default_factory=set)
    returns: set[str] = dataclasses.field(default_factory=set)

    def ordered_returns(self) -> list[str]:
        return [name for d in self.definitions for name in d.targets if name in self.returns]


@dataclasses.dataclass
class Site:
    call: cst.Call
    top: int  # index of the top-level statement that holds it
    line: int
    fetches: tuple[str, ...]
    single: bool  # fetch was one name, not a list
    feeds: dict[str, cst.BaseExpression]  # placeholder -> fed value
    assign: cst.Assign | None = None  # `_, c = sess.run([train, c], ...)`
    in_expression_statement: bool = False
    function: str = ""
    as_tuple: bool = False  # sess.run((a, b)) returns a tuple, sess.run([a, b]) a list
    keys: tuple[str, ...] = ()  # sess.run({"a": a, ...}): the dict's keys (source code), in order
