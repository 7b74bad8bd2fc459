"""Analysis of the TF1 program: where the Session is, the graph, its placeholders, sess.run sites, checks."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TypeGuard

import libcst as cst

from tfpilot.migrate.compat import CompatChange
from tfpilot.migrate.native.iterators import Iterators
from tfpilot.migrate.native.parts import Definition, Fallback, Site
from tfpilot.migrate.native.syntax import (
    ValueReader,
    bound_names,
    descendants,
    draws_random,
    is_main_test,
    is_site_call,
    names_read,
    target_names,
)
from tfpilot.migrate.native.tables import (
    CREATES_VARIABLES,
    MODULE_GRAPH,
    RANDOM,
    RESET_GRAPH,
    SPARSE_GRADIENT_OPS,
    SUMMARY_KINDS,
    TENSOR_OP,
    V1,
)


class Analysis(Iterators):
    """Where the Session is, what the graph is, where it runs, and the checks that keep its meaning."""

    # --- the scope that holds the Session, with its Session and Graph blocks opened ------
    def find_scope(self) -> None:
        """The statements the rewrite works on: the module, or the one function / main block with the Session.

        TensorFlow's own tutorials build the graph and run it inside ``main()`` (started by
        ``tf.app.run``) or under ``if __name__ == "__main__":``; the rewrite then stays inside that
        function, and its tf.functions and layers become locals of it, made once per call as the
        TF1 graph was.
        """
        self.find_graph_objects()
        self.scope_owner: cst.FunctionDef | cst.If | None = None
        self.scope: Sequence[cst.BaseStatement] = self.module.body
        if self.holds_session(self.module.body):
            return
        owners: list[cst.FunctionDef | cst.If] = []
        for statement in self.module.body:
            if isinstance(statement, cst.ClassDef) and self.holds_session_anywhere(statement):
                raise Fallback(
                    self.line(statement),
                    f"the Session lives in class `{statement.name.value}` (graph and Session as attributes "
                    "are not rewritten)",
                )
            if isinstance(statement, (cst.FunctionDef, cst.If)) and self.holds_session_anywhere(statement):
                owners.append(statement)
        if self.owner_name is not None:
            owners = [o for o in owners if isinstance(o, cst.FunctionDef) and o.name.value == self.owner_name]
        if not owners:
            raise Fallback(1, "no tf.compat.v1.Session in the module, a function or the main block")
        if len(owners) > 1:
            raise Fallback(self.line(owners[1]), "Sessions in more than one function or block")
        owner = owners[0]
        if isinstance(owner, cst.If) and (owner.orelse is not None or not is_main_test(owner.test)):
            raise Fallback(self.line(owner), "a Session inside an `if` other than `if __name__ == '__main__':`")
        if isinstance(owner, cst.FunctionDef) and owner.decorators:
            raise Fallback(self.line(owner), f"a Session in the decorated function `{owner.name.value}`")
        assert isinstance(owner.body, cst.IndentedBlock)
        if not self.holds_session(owner.body.body):
            raise Fallback(self.line(owner), "a Session nested in a loop or branch of its function")
        self.check_module_graph_free(owner)
        self.scope_owner = owner
        self.scope = owner.body.body

    def session_functions(self) -> list[str] | None:
        """The module-level functions that each hold a Session, in file order, when only functions
        do (no Session at module level, in the main block or in a class); None otherwise."""
        self.find_graph_objects()
        if self.holds_session(self.module.body):
            return None
        names: list[str] = []
        for statement in self.module.body:
            if isinstance(statement, (cst.ClassDef, cst.If)) and self.holds_session_anywhere(statement):
                return None
            if isinstance(statement, cst.FunctionDef) and self.holds_session_anywhere(statement):
                names.append(statement.name.value)
        return names if len(names) == len(set(names)) else None

    def holds_session(self, statements: Sequence[cst.BaseStatement]) -> bool:
        """A Session is made by one of these statements, or in a Session / Graph block among them."""
        for statement in statements:
            if isinstance(statement, cst.With) and len(statement.items) == 1:
                item = statement.items[0].item
                if self.is_session(item) or self.is_graph_block(item):
                    return True
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                small = statement.body[0]
                if isinstance(small, cst.Assign) and self.is_session(small.value):
                    return True
            if statements is self.module.body and self.is_main_block(statement):
                assert isinstance(statement, cst.If) and isinstance(statement.body, cst.IndentedBlock)
                if self.holds_session(statement.body.body):
                    return True
        return False

    def is_main_block(self, statement: cst.BaseStatement) -> bool:
        """``if __name__ == "__main__":`` with no else."""
        return isinstance(statement, cst.If) and statement.orelse is None and is_main_test(statement.test)

    def holds_session_anywhere(self, node: cst.CSTNode) -> bool:
        rewrite = self
        found = False

        class Finder(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                nonlocal found
                found = found or rewrite.is_session(node)

        node.visit(Finder())
        return found

    def check_module_graph_free(self, owner: cst.CSTNode) -> None:
        """With the Session in a function, nothing at module level may build graph state it reads."""
        for statement in self.module.body:
            if statement is owner or isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(statement, cst.SimpleStatementLine) and any(self.is_reset(s) for s in statement.body):
                # Nothing of the graph is built at module level (checked here): the reset empties an empty graph.
                self.module_replacements[id(statement)] = self.without_resets(statement)
                self.changes.append(
                    CompatChange(self.line(statement), 1, "removed reset_default_graph(): TF2 has no default graph")
                )
            for name in self.calls_in(statement):
                if MODULE_GRAPH.match(name):
                    raise Fallback(
                        self.line(statement), f"`{name}` at module level while the Session runs in a function"
                    )

    def flatten(self) -> None:
        self.body: list[cst.BaseStatement] = []
        self.sessions: list[tuple[str, int]] = []  # (name, index of its first statement)
        self.session_name: str | None = None
        self.main_block: cst.If | None = None
        self.in_main_block: set[int] = set()  # id() of the statements that were in it
        self.tag_prefixes: dict[int, str] = {}  # id(statement) -> the name scopes it was in, "a/b/"
        self.open(self.scope)
        if not self.sessions:
            raise Fallback(1, "no tf.compat.v1.Session at module level")

    def open(self, statements: Sequence[cst.BaseStatement], prefix: str = "") -> None:
        for statement in statements:
            if statements is self.module.body and self.is_main_block(statement):
                # The main block of a module-level graph: opened, and put back around what it became.
                assert isinstance(statement, cst.If) and isinstance(statement.body, cst.IndentedBlock)
                self.main_block = statement
                before = len(self.body)
                self.open(statement.body.body, prefix)
                self.in_main_block.update(id(inner) for inner in self.body[before:])
                continue
            if isinstance(statement, cst.With) and len(statement.items) == 1:
                item = statement.items[0]
                scope = self.name_scope(statement)
                if scope is not None:
                    assert isinstance(statement.body, cst.IndentedBlock)
                    self.changes.append(
                        CompatChange(
                            self.line(statement),
                            1,
                            f"removed the `{self.code(item.item)}` block: it named graph ops and variables, "
                            "which TF2 code does not need (summary tags keep the prefix)",
                        )
                    )
                    self.open(statement.body.body, f"{prefix}{scope}/")
                    continue
                if self.is_session_default(item.item):
                    # The Session as the default for Tensor.eval / Operation.run: TF2 has none to choose.
                    assert isinstance(statement.body, cst.IndentedBlock)
                    self.changes.append(
                        CompatChange(self.line(statement), 1, f"removed `{self.code(item.item)}`: TF2 runs eagerly")
                    )
                    self.open(statement.body.body, prefix)
                    continue
                if self.is_graph_block(item.item):
                    # TF2 has no graphs to choose between: the block's body runs as it stands.
                    assert isinstance(statement.body, cst.IndentedBlock)
                    self.changes.append(
                        CompatChange(
                            self.line(statement), 1, "removed `with tf.Graph().as_default()`: TF2 runs eagerly"
                        )
                    )
                    self.open(statement.body.body, prefix)
                    continue
                if self.is_session(item.item):
                    if item.asname is None or not isinstance(item.asname.name, cst.Name):
                        raise Fallback(self.line(statement), "a Session used without `as NAME`")
                    self.use_session(item.asname.name.value, item.item, statement)
                    self.sessions.append((item.asname.name.value, len(self.body)))
                    assert isinstance(statement.body, cst.IndentedBlock)
                    self.changes.append(
                        CompatChange(self.line(statement), 1, "removed the Session block: TF2 runs eagerly")
                    )
                    self.open(statement.body.body, prefix)
                    continue
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                small = statement.body[0]
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and small.targets[0].target.value in self.graph_objects
                ):
                    self.changes.append(
                        CompatChange(self.line(statement), 1, "removed the tf.Graph(): TF2 runs eagerly")
                    )
                    continue
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and self.is_session(small.value):
                    target = small.targets[0].target
                    if not isinstance(target, cst.Name):
                        raise Fallback(self.line(statement), "a Session bound to something other than a name")
                    self.use_session(target.value, small.value, statement)
                    self.sessions.append((target.value, len(self.body)))
                    self.changes.append(CompatChange(self.line(statement), 1, "removed the Session: TF2 runs eagerly"))
                    continue
            if prefix:
                self.tag_prefixes[id(statement)] = prefix
            self.body.append(statement)

    def name_scope(self, statement: cst.With) -> str | None:
        """The name of a ``name_scope`` / ``variable_scope`` block that only names things, else None.

        Such a block is opened: TF2 code has no graph whose ops it named. A variable_scope that
        reuses or makes variables by name (``get_variable``) is not only naming, so it stays (and the
        file falls back). A scope bound with ``as NAME`` may not have NAME read.
        """
        item = statement.items[0]
        call = item.item
        if not isinstance(call, cst.Call):
            return None
        name = self.qualified(call.func)
        if name not in ("tensorflow.name_scope", V1 + "name_scope", V1 + "variable_scope"):
            return None
        if any(arg.keyword is not None and arg.keyword.value not in ("name", "default_name") for arg in call.args):
            return None
        if name == V1 + "variable_scope" and re.search(r"\breuse\b|AUTO_REUSE", self.module.code):
            # Variables shared by scope and name: the block is more than naming. Without any reuse in the file,
            # each get_variable inside makes a new variable (TF1 refused a second one of the same name), which
            # is what the tf.Variable it becomes does.
            return None
        if item.asname is not None:
            if not isinstance(item.asname.name, cst.Name) or item.asname.name.value in names_read(statement.body):
                return None
        first = call.args[0].value if call.args else None
        if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str):
            return first.evaluated_value
        return "" if first is None else None

    def is_session_default(self, node: cst.BaseExpression) -> bool:
        """``sess.as_default()`` on a Session made before."""
        return (
            isinstance(node, cst.Call)
            and not node.args
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "as_default"
            and isinstance(node.func.value, cst.Name)
            and node.func.value.value in {name for name, _ in self.sessions}
        )

    def is_graph_block(self, node: cst.BaseExpression) -> bool:
        """``tf.Graph().as_default()``, or ``graph.as_default()`` with ``graph = tf.Graph()``."""
        if not (
            isinstance(node, cst.Call)
            and not node.args
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "as_default"
        ):
            return False
        owner = node.func.value
        return self.is_new_graph(owner) or (isinstance(owner, cst.Name) and owner.value in self.graph_objects)

    def is_new_graph(self, node: cst.BaseExpression) -> bool:
        return (
            isinstance(node, cst.Call)
            and not node.args
            and self.qualified(node.func) in ("tensorflow.Graph", V1 + "Graph")
        )

    def find_graph_objects(self) -> None:
        """Names bound once, to ``tf.Graph()``: the one graph a script builds into and runs."""
        bound: dict[str, int] = {}
        self.graph_objects: set[str] = set()
        for node in descendants(self.module):
            if isinstance(node, cst.AssignTarget):
                for name in target_names(node.target) or ():
                    bound[name] = bound.get(name, 0) + 1
            if (
                isinstance(node, cst.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0].target, cst.Name)
                and self.is_new_graph(node.value)
            ):
                self.graph_objects.add(node.targets[0].target.value)
        self.graph_objects = {name for name in self.graph_objects if bound.get(name) == 1}
        for node in descendants(self.module):  # used only as `with graph.as_default()` or `Session(graph=graph)`
            if isinstance(node, cst.Name) and node.value in self.graph_objects:
                parent = self.parents.get(node)
                if isinstance(parent, cst.Attribute) and parent.attr is node:
                    continue  # `sess.graph`: a member named graph, not the name
                as_default = isinstance(parent, cst.Attribute) and parent.attr.value == "as_default"
                passed = isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "graph"
                if not (as_default or passed or isinstance(parent, cst.AssignTarget)):
                    self.graph_objects.discard(node.value)

    def is_session(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Call) and self.qualified(node.func) in (
            V1 + "Session",
            "tensorflow.Session",
            V1 + "InteractiveSession",
        )

    def use_session(self, name: str, call: cst.BaseExpression, statement: cst.CSTNode) -> None:
        if self.session_name not in (None, name):
            raise Fallback(self.line(statement), "Sessions under different names")
        self.session_name = name
        assert isinstance(call, cst.Call)
        for arg in call.args:
            if (
                arg.keyword is not None
                and arg.keyword.value == "graph"
                and isinstance(arg.value, cst.Name)
                and arg.value.value in self.graph_objects
            ):
                continue  # the one graph the script built: TF2 has none to pass
            if arg.keyword is not None and arg.keyword.value == "config":
                self.notes.append(
                    CompatChange(
                        self.line(statement),
                        1,
                        "the Session's config= is gone with the Session: set its options with tf.config "
                        "(e.g. tf.config.experimental.set_memory_growth for gpu_options.allow_growth)",
                        blocks_run=False,
                    )
                )
            else:
                raise Fallback(self.line(statement), "a Session with a target or graph argument")

    # --- the graph: placeholders and the tensors computed from them ----------------------
    def analyse(self) -> None:
        self.placeholders: dict[str, tuple[int, str]] = {}  # name -> (order, dtype code)
        self.definitions: list[Definition] = []
        self.reaching: dict[str, list[Definition | str]] = {}
        self.init_names: set[str] = set()
        self.removed: set[int] = set()  # id() of statements to drop
        self.optimizers: dict[str, tuple[str, int]] = {}  # TF1 optimizer object name -> (keras expr, line)
        self.gradient_losses: dict[str, str] = {}  # TF1 optimizer name -> the loss of its compute_gradients
        self.saver: str | None = None
        self.holders: list[tuple[str, int]] = []  # (name, index): variables, layers, optimizers
        # tf.Variable names, bound once: a tensor computed from one is recomputed at every run, as in TF1.
        self.variables: set[str] = set()
        # Tensors of constants only (no placeholder, variable or random op): eager values, read once.
        self.constants: set[str] = set()
        self.constant_statements: set[int] = set()
        self.summaries: list[tuple[str, str, str]] = []  # (kind, tag code, tensor code), in program order
        self.image_max_outputs = 3  # TF1's and TF2's default; the largest max_outputs an image summary asks for
        self.summary_ops: set[str] = set()  # names bound to TF1 summary ops (gone)
        self.summary_names: set[str] = set()  # names bound to merge_all(): a dict of tensors
        self.summary_writer_helper = ""
        self.writers: set[str] = set()
        self.summary_adds: set[int] = set()  # id() of writer.add_summary(...) calls
        self.binds: dict[str, int] = {}
        self.retired: set[str] = set()  # graph tensor names a later loop rebinds to Python values (retire)
        self.start_iterators()
        for statement in self.body:
            for name in bound_names(statement):
                self.binds[name] = self.binds.get(name, 0) + 1
        for index, statement in enumerate(self.body):
            self.statement(index, statement)

    def statement(self, index: int, statement: cst.BaseStatement) -> None:
        graph = self.graph_names()
        if not isinstance(statement, cst.SimpleStatementLine):
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                return  # checked when a graph statement calls it
            bound = set(bound_names(statement))
            graph -= self.retire(index, statement, bound & graph)
            if isinstance(statement, cst.For) and self.graph_loop(index, statement, graph):
                return
            if bound & graph or self.assigns_graph(statement, graph):
                raise Fallback(self.line(statement), "a graph tensor is defined inside a loop or block")
            return
        if self.reset_graph(index, statement):
            return
        if len(statement.body) != 1:
            if names_read(statement) & graph:
                raise Fallback(self.line(statement), "several statements on one line use the graph")
            return
        small = statement.body[0]
        line = self.line(statement)
        if self.summary(index, statement, small):
            return
        if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            self.augmented(index, statement, small, graph, line)
            return
        if not isinstance(small, cst.Assign):
            return
        if len(small.targets) != 1:
            if names_read(small.value) & graph:
                raise Fallback(line, "a chained assignment of a graph tensor")
            return
        targets = target_names(small.targets[0].target)
        value = small.value
        if self.iterator_statement(index, statement, targets, value):
            return
        if self.is_feed_dict(value):
            return  # a feed_dict built ahead of its sess.run: see named_feed
        call_name = self.qualified(value.func) if isinstance(value, cst.Call) else None
        made = self.placeholder_calls(targets, value)
        if made is not None:
            for target, call in made:
                dtype = next((arg for arg in call.args if arg.keyword is None or arg.keyword.value == "dtype"), None)
                if dtype is None:
                    raise Fallback(line, "a placeholder without a dtype")
                self.placeholders[target] = (len(self.placeholders), self.code(dtype.value))
                self.reaching.setdefault(target, []).append(target)
                self.changes.append(CompatChange(line, 1, f"placeholder `{target}` -> a tf.function argument"))
            self.removed.add(id(statement))
            return
        if call_name in (V1 + "global_variables_initializer", V1 + "initialize_all_variables"):
            if targets is None or len(targets) != 1:
                raise Fallback(line, "an initializer bound to something other than a name")
            self.init_names.update(targets)
            self.removed.add(id(statement))
            self.changes.append(
                CompatChange(line, 1, "removed the variable initializer: TF2 variables start initialized")
            )
            return
        if call_name == V1 + "train.Saver":
            assert isinstance(value, cst.Call) and targets is not None
            if len(targets) != 1:
                raise Fallback(line, "tf.train.Saver bound to something other than a name")
            self.saver_arguments(value, line)
            self.saver = targets[0]
            self.saver_index = index
            self.saver_statement = statement
            return
        optimizer = self.optimizer_expression(value, line) if isinstance(value, cst.Call) else None
        if optimizer is not None and targets is not None and len(targets) == 1:
            # Only `minimize(loss)` becomes a tape and `apply_gradients`; the TF1 optimizer's other
            # methods (compute_gradients, apply_gradients(grads_and_vars), get_slot) have no Keras
            # counterpart of the same meaning, and a Keras optimizer left with them raises
            # AttributeError (held-out round 5: `gvs = opt.compute_gradients(cost)`).
            other = re.search(
                rf"\b{re.escape(targets[0])}\.(get_slot|get_slot_names|variables)\b",
                self.module.code,
            )
            if other is not None:
                raise Fallback(
                    line,
                    f"the TF1 optimizer's `{other.group(1)}`: native mode rewrites only minimize(loss) and "
                    "compute_gradients(loss) + apply_gradients(pairs)",
                )
            pair = [
                len(re.findall(rf"\b{re.escape(targets[0])}\.{method}\(", self.module.code))
                for method in ("compute_gradients", "apply_gradients", "minimize")
            ]
            if (pair[0] or pair[1]) and (pair[:2] != [1, 1] or pair[2]):
                raise Fallback(
                    line,
                    "the TF1 optimizer's compute_gradients / apply_gradients other than once each (and no "
                    "minimize): native mode rewrites one compute_gradients(loss) + apply_gradients(pairs)",
                )
            self.optimizers[targets[0]] = (optimizer, line)
            self.holders.append((targets[0], index))
            self.replacements[id(statement)] = (cst.parse_statement(f"{targets[0]} = {optimizer}\n"),)
            return
        layer_class = self.layer_object(call_name, value, targets, line)
        if layer_class is not None:
            # `linear = tf.layers.Dense(units=1)`: the Keras layer of the same class, made here once;
            # what it is called on later reads its weights (they train), as a variable does.
            assert targets is not None and isinstance(value, cst.Call)
            layer_line = cst.parse_statement(f"{targets[0]} = {self.keras_name()}.layers.{layer_class}()\n")
            assert isinstance(layer_line, cst.SimpleStatementLine)
            small = layer_line.body[0]
            assert isinstance(small, cst.Assign) and isinstance(small.value, cst.Call)
            layer = small.with_changes(value=small.value.with_changes(args=value.args))
            self.replacements[id(statement)] = (statement.with_changes(body=[layer]),)
            self.holders.append((targets[0], index))
            self.variables.add(targets[0])
            self.changes.append(CompatChange(line, 1, f"tf.layers.{layer_class} -> keras.layers.{layer_class}"))
            return
        if call_name == V1 + "get_variable" and targets is not None and len(targets) == 1:
            assert isinstance(value, cst.Call)
            variable = cst.parse_statement(f"{targets[0]} = {self.get_variable_form(value, line)}\n")
            assert isinstance(variable, cst.SimpleStatementLine)
            self.replacements[id(statement)] = (statement.with_changes(body=variable.body),)
            self.changes.append(CompatChange(line, 1, "get_variable -> tf.Variable with TF1's initializer"))
            call_name = "tensorflow.Variable"  # a variable from here on
        if call_name is not None and re.match(r"^tensorflow\.(compat\.v1\.)?Variable$", call_name):
            self.holders.extend((name, index) for name in targets or ())
            if targets is not None and len(targets) == 1 and self.binds.get(targets[0], 0) == 1:
                self.variables.add(targets[0])
        elif isinstance(value, (cst.Dict, cst.List, cst.Tuple)) and "Variable" in self.code(value):
            self.holders.extend((name, index) for name in targets or ())
        elif call_name == V1 + "nn.rnn_cell.BasicRNNCell" and targets is not None and len(targets) == 1:
            # The cell is built by the keras.layers.RNN that runs it (see dynamic_rnn below).
            assert isinstance(value, cst.Call)
            self.replacements[id(statement)] = (
                statement.with_changes(
                    body=[
                        small.with_changes(
                            value=value.with_changes(func=self.expression(f"{self.keras_name()}.layers.SimpleRNNCell"))
                        )
                    ]
                ),
            )
            self.cells = getattr(self, "cells", set()) | {targets[0]}
            self.changes.append(
                CompatChange(line, 1, "BasicRNNCell -> keras.layers.SimpleRNNCell (tanh, same recurrence)")
            )
            return
        factory = self.variable_factory(value.func) if isinstance(value, cst.Call) else ""
        models = [
            node.func.value
            for node in descendants(value)
            if isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and self.variable_factory(node.func) == "other"
        ]
        for model in models:
            # Made once here, what it computes from its variables would not follow their updates: a tf.Module.
            self.module_plan(model, line)
        if models and not self.reads_outside_sites(value, graph) & (graph | self.variables):
            raise Fallback(line, f"`{models[0]}` makes variables and is called on no graph tensor (computed once here)")
        if factory == "variable":
            # `W = weight_variable([784, 10])` stays where it is, made once; TF1's Saver saved what the
            # helper made with every other global variable, so the Checkpoint must hold it too.
            if targets is None:
                raise Fallback(line, "variables made by a helper are bound to something other than names")
            self.holders.extend((name, index) for name in targets)
            if len(targets) == 1 and self.binds.get(targets[0], 0) == 1:
                self.variables.add(targets[0])
        read = self.reads_outside_sites(value, graph)
        if not read & (graph | self.variables) and not self.draws_per_run(value):
            self.constant(statement, targets, value, read)
            return
        if targets is None:
            raise Fallback(line, "a graph tensor assigned to something other than names")
        # `T = opt.minimize(loss)`, with opt a TF1 optimizer (a name or made right here).
        minimized = self.minimize(value, index, line)
        train = minimized[:2] if minimized is not None else None
        applies = gradients_of = None
        if train is None:
            applies, gradients_of = self.gradient_pair(value, targets, line)
            if applies is not None:
                train = (applies[0], self.gradient_losses[applies[0]])
        deps: list[Definition | str] = [self.reaching[name][-1] for name in sorted(read & graph)]
        definition = Definition(
            index,
            statement,
            targets,
            deps,
            line,
            train=train,
            train_variables=minimized[2] if minimized is not None else None,
            train_counter=minimized[3] if minimized is not None else None,
            applies=applies[1] if applies else None,
        )
        if len(targets) == 1 and self.returns_list(value):
            # sess.run gave a list of arrays for it (tf.gradients' list, a list of tensors): each is converted
            self.structures.add(targets[0])
        if gradients_of is not None:
            # TF1 listed (gradient, variable) for the trainable variables; here those the loss read,
            # from the train step's tape (a variable the loss never reads had a None gradient there too).
            definition.gradients = True
            definition.function_form = cst.parse_statement(
                f"{targets[0]} = list(zip(tape.gradient({gradients_of}, tape.watched_variables()), "
                "tape.watched_variables()))\n"
            )  # type: ignore[assignment]
        if train is None and not definition.gradients:
            self.hoist(definition)
            layers = any(".layers." in self.code(made) for made in definition.module_form)
            elements = self.closure(deps)[1] & set(self.elements)
            if layers and elements:
                definition.module_form = self.layers_in_dtype(definition, elements)
        self.definitions.append(definition)
        for name in targets:
            self.reaching.setdefault(name, []).append(definition)
        self.removed.add(id(statement))

    def augmented(
        self, index: int, statement: cst.SimpleStatementLine, small: cst.AugAssign, graph: set[str], line: int
    ) -> None:
        """``l2_loss += tf.nn.l2_loss(W)`` at module level, building the graph: ``l2_loss = l2_loss + ...``.

        TF1 scripts sum a regulariser or a loss term by term while they build the graph. Each ``+=`` is a new
        definition of the name that reads the one before it, so the step recomputes the sum in the same order. The
        sum's start (``l2_loss = tf.constant(0.0)``, a number) moves into the steps with it (start_of).
        """
        assert isinstance(small.target, cst.Name)
        name = small.target.value
        read = self.reads_outside_sites(small.value, graph)
        if name not in graph and not read & (graph | self.variables):
            return  # Python arithmetic (a step counter, a running total of numbers)
        if name in self.variables or name in self.holders_names() or name in self.placeholders:
            raise Fallback(line, f"`{self.code(small).strip()}` rebinds a variable or placeholder")
        before = self.reaching[name][-1] if name in graph else self.start_of(index, name, line)
        deps: list[Definition | str] = [before, *(self.reaching[other][-1] for other in sorted(read & graph - {name}))]
        definition = Definition(index, statement, (name,), deps, line)
        self.hoist(definition)
        self.definitions.append(definition)
        self.reaching.setdefault(name, []).append(definition)
        self.removed.add(id(statement))

    def start_of(self, index: int, name: str, line: int) -> Definition:
        """The module-level ``name = <number or constant op>`` that a graph-building ``name += ...`` starts from."""
        graph = self.graph_names()
        for start in range(index - 1, -1, -1):
            before = self.body[start]
            if name not in bound_names(before) and name not in names_read(before):
                continue
            small = before.body[0] if isinstance(before, cst.SimpleStatementLine) and len(before.body) == 1 else None
            if not _assigns_only(small, name) or names_read(small.value) & (graph | self.variables):
                break
            calls = [self.qualified(node.func) or "" for node in descendants(small.value) if isinstance(node, cst.Call)]
            if not all(TENSOR_OP.match(call) and not CREATES_VARIABLES.match(call) for call in calls):
                break
            if any(RANDOM.search(call) for call in calls) or id(before) in self.removed:
                break
            assert isinstance(before, cst.SimpleStatementLine)
            definition = Definition(start, before, (name,), [], self.line(before))
            self.definitions.append(definition)
            self.reaching.setdefault(name, []).append(definition)
            self.removed.add(id(before))
            return definition
        raise Fallback(line, f"the graph adds to `{name}`, which does not start from a number or a constant tensor")

    def placeholder_calls(
        self, targets: tuple[str, ...] | None, value: cst.BaseExpression
    ) -> list[tuple[str, cst.Call]] | None:
        """``x = tf.placeholder(...)``, or ``x, y = tf.placeholder(...), tf.placeholder(...)``: (name, call) pairs."""
        calls = list(value.elements) if isinstance(value, cst.Tuple) else [value]
        is_placeholder = [
            isinstance(call, cst.Call) and self.qualified(call.func) in (V1 + "placeholder", "tensorflow.placeholder")
            for call in (element.value if isinstance(element, cst.Element) else element for element in calls)
        ]
        if not any(is_placeholder):
            return None
        if not all(is_placeholder) or targets is None or len(targets) != len(calls):
            raise Fallback(self.line(value), "a placeholder bound to something other than a name")
        found = [element.value if isinstance(element, cst.Element) else element for element in calls]
        return [(target, call) for target, call in zip(targets, found, strict=True) if isinstance(call, cst.Call)]

    def reset_graph(self, index: int, statement: cst.SimpleStatementLine) -> bool:
        """``tf.reset_default_graph()`` before anything of the graph is built: dropped (True when the line goes).

        TF1 scripts start with it so that a rerun (in a notebook, or a function called again) starts
        from an empty graph; TF2 has no default graph, and the scope's tensors, variables and steps
        are made afresh where it stands. After graph state was built it would have dropped that state,
        which TF2 code keeps: not rewritten.
        """
        resets = [small for small in statement.body if self.is_reset(small)]
        if not resets:
            return False
        line = self.line(statement)
        if self.definitions or self.placeholders or self.holders or self.constants or self.summaries:
            raise Fallback(line, "tf.compat.v1.reset_default_graph() after graph state was built (TF1 drops it)")
        if any(start <= index for _, start in self.sessions):
            raise Fallback(line, "tf.compat.v1.reset_default_graph() after a Session was made")
        self.changes.append(
            CompatChange(line, 1, "removed reset_default_graph(): TF2 has no default graph, nothing was built before")
        )
        kept = self.without_resets(statement)
        if kept is None:
            self.removed.add(id(statement))
        else:
            self.replacements[id(statement)] = (kept,)
        return True

    def without_resets(self, statement: cst.SimpleStatementLine) -> cst.SimpleStatementLine | None:
        """The line without its reset_default_graph() calls (None: nothing left); the rest may not be graph code."""
        kept = [small for small in statement.body if not self.is_reset(small)]
        if not kept:
            return None
        if not all(isinstance(small, cst.Expr) and not names_read(small) & self.graph_names() for small in kept):
            raise Fallback(self.line(statement), "reset_default_graph() on a line with other graph code")
        kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return statement.with_changes(body=kept)

    def is_reset(self, small: cst.BaseSmallStatement) -> bool:
        return (
            isinstance(small, cst.Expr)
            and isinstance(small.value, cst.Call)
            and not small.value.args
            and self.qualified(small.value.func) in RESET_GRAPH
        )

    def graph_loop(self, index: int, statement: cst.For, graph: set[str]) -> bool:
        """A Python loop that builds graph tensors (``total += (y - m * x) ** 2`` over the data): one definition.

        TF1 ran the loop once, while building the graph; in a tf.function it runs once per trace and
        builds the same ops. Only straight-line assignments to names, over Python data, qualify; an
        accumulator the loop adds to must start from a number right before the loop, and that start
        moves into the step with the loop (each call starts the sum afresh, as the graph did).
        """
        assert isinstance(statement.body, cst.IndentedBlock)
        session = self.session_name
        if any(isinstance(node, cst.Call) and is_site_call(node, session, graph) for node in descendants(statement)):
            return False  # a loop of the program: it runs the graph, it does not build it
        if not names_read(statement) & (graph | self.variables) or not bound_names(statement.body):
            return False  # builds nothing it binds (summaries of each variable ...): the checks below judge it
        line = self.line(statement)
        smalls = [
            inner.body[0]
            for inner in statement.body.body
            if isinstance(inner, cst.SimpleStatementLine) and len(inner.body) == 1
        ]
        if (
            statement.orelse is not None
            or len(smalls) != len(statement.body.body)
            or not all(
                (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                )
                or (isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name))
                for small in smalls
            )
            or names_read(statement.iter) & (graph | self.variables)
            or target_names(statement.target) is None
        ):
            raise Fallback(line, "a graph tensor is defined inside a loop or block")
        assigned: set[str] = set(target_names(statement.target) or ())
        starts: list[Definition] = []
        for small in smalls:
            if isinstance(small, cst.AugAssign):
                assert isinstance(small.target, cst.Name)
                name = small.target.value
                if name not in assigned and name not in {d.targets[0] for d in starts}:
                    starts.append(self.loop_start(index, name, line))
            else:
                assert isinstance(small, cst.Assign)
                assigned.update(target_names(small.targets[0].target) or ())
        targets = tuple(dict.fromkeys([*(target_names(statement.target) or ()), *bound_names(statement.body)]))
        read = names_read(statement)  # a target read before the loop binds it is the tensor from before
        deps: list[Definition | str] = [self.reaching[name][-1] for name in sorted(read & graph)]
        definition = Definition(index, statement, targets, [*deps, *starts], line)
        self.definitions.append(definition)
        for name in targets:
            self.reaching.setdefault(name, []).append(definition)
        self.removed.add(id(statement))
        self.changes.append(
            CompatChange(line, 1, "the loop that builds graph tensors moves into the steps that compute them")
        )
        return True

    def loop_start(self, index: int, name: str, line: int) -> Definition:
        """``total = 0.0`` right before the loop that adds to ``total``: it moves into the steps with the loop."""
        before = self.body[index - 1] if index > 0 else None
        small = before.body[0] if isinstance(before, cst.SimpleStatementLine) and len(before.body) == 1 else None
        if not (_assigns_only(small, name) and isinstance(small.value, (cst.Integer, cst.Float))):
            raise Fallback(line, f"the loop adds to `{name}`, which does not start from a number right before it")
        assert isinstance(before, cst.SimpleStatementLine)
        if name in self.constants or name in self.reaching:
            raise Fallback(line, f"the loop adds to `{name}`, which is already a tensor")
        start = Definition(index - 1, before, (name,), [], self.line(before))
        self.definitions.append(start)
        self.reaching.setdefault(name, []).append(start)
        self.removed.add(id(before))
        return start

    def retire(self, index: int, statement: cst.BaseStatement, names: set[str]) -> set[str]:
        """Graph tensor names a loop rebinds to plain Python values for good: no longer graph names.

        TF1 scripts reuse a short name (``y``) for their data after building the graph from it: the
        graph kept the tensor, Python the name. The tensor's definition moves into the steps, where
        the name is a local, so the loop's rebinding changes nothing there, provided the loop binds
        the name (to a value that reads no graph tensor) before anything in it reads the name, and
        nothing after the loop reads it (a loop that ran no time would leave the tensor behind).
        """
        if not names or not isinstance(statement, (cst.For, cst.While)) or statement.orelse is not None:
            return set()
        assert isinstance(statement.body, cst.IndentedBlock)
        header = (
            names_read(statement.iter) | set(bound_names(statement.target))
            if isinstance(statement, cst.For)
            else names_read(statement.test)
        )
        graph = self.graph_names()
        for name in names:
            if (
                name in header
                or name in self.variables
                or name in self.holders_names()
                or any(isinstance(definition, str) for definition in self.reaching[name])  # a placeholder
                or any(name in names_read(later) for later in self.body[index + 1 :])
            ):
                return set()
            first = next(
                inner for inner in statement.body.body if name in names_read(inner) or name in bound_names(inner)
            )
            small = first.body[0] if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 else None
            if not (_binds_plainly(small, name) and not names_read(small.value) & graph):
                return set()
        for name in names:
            del self.reaching[name]
            self.retired.add(name)
            self.changes.append(
                CompatChange(
                    self.line(statement),
                    1,
                    f"`{name}` is a graph tensor before this loop and a Python value in it: the tensor lives on "
                    "in the steps, under the same name",
                )
            )
        return names

    # --- TF1 summaries -> tf.summary v2 -------------------------------------------------------
    def summary(self, index: int, statement: cst.SimpleStatementLine, small: cst.BaseSmallStatement) -> bool:
        """A summary op, ``merge_all()`` or a ``FileWriter``: recorded, and the statement replaced."""
        value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
        if not isinstance(value, cst.Call):
            return False
        name = self.qualified(value.func) or ""
        member = name.rpartition(".")[2]
        if name.rpartition(".")[0] not in ("tensorflow.summary", V1 + "summary"):
            return False
        line = self.line(statement)
        targets = target_names(small.targets[0].target) if isinstance(small, cst.Assign) else ()
        if isinstance(small, cst.Assign) and (len(small.targets) != 1 or targets is None or len(targets) != 1):
            raise Fallback(line, f"tf.summary.{member} bound to something other than one name")
        assert targets is not None
        if member in SUMMARY_KINDS:
            positions = ("name", "tensor", "max_outputs") if member == "image" else ("name", "tensor")
            args = {
                arg.keyword.value if arg.keyword is not None else positions[position]: arg.value
                for position, arg in enumerate(value.args[: len(positions)])
            }
            allowed = {"name", "tensor", "values", "max_outputs"} if member == "image" else {"name", "tensor", "values"}
            if len(value.args) != len(args) or len(args) < 2 or set(args) - allowed:
                raise Fallback(line, f"tf.summary.{member} with options (collections, family ...)")
            tag, tensor = args["name"], args.get("tensor", args.get("values"))
            assert tensor is not None
            tensor_code = self.code(tensor)
            if member == "image":
                # TF1's image summary kept the first max_outputs images (3 unless given); TF2's takes the same
                # argument when it writes. The step returns that many, and the writer keeps up to the largest.
                limit = args.get("max_outputs", cst.Integer("3"))
                if not isinstance(limit, cst.Integer):
                    raise Fallback(line, "tf.summary.image with a max_outputs that is not a number")
                tensor_code = f"{tensor_code}[:{limit.value}]"
                self.image_max_outputs = max(self.image_max_outputs, int(limit.value))
            prefix = self.tag_prefixes.get(id(statement), "")
            if isinstance(tag, cst.SimpleString) and isinstance(tag.evaluated_value, str):
                tag_code = repr(prefix + tag.evaluated_value)
            else:
                tag_code = f"{prefix!r} + {self.code(tag)}" if prefix else self.code(tag)
            self.summaries.append((member, tag_code, tensor_code))
            self.summary_ops.update(targets)
            self.removed.add(id(statement))
            self.changes.append(
                CompatChange(line, 1, f"tf.summary.{member} -> written with tf.summary v2 where merge_all's result is")
            )
            return True
        if member == "merge_all":
            key = value.args[0].value if value.args else None
            if key is not None and not (isinstance(key, cst.SimpleString) and key.evaluated_value == "summaries"):
                raise Fallback(line, "merge_all of a collection other than the summaries")
            if len(targets) != 1:
                raise Fallback(line, "merge_all() bound to something other than one name")
            if not self.summaries:
                # TF1's merge_all() returned None when no summary was made: the name stays None.
                self.replacements[id(statement)] = (cst.parse_statement(f"{targets[0]} = None\n"),)
                self.changes.append(CompatChange(line, 1, "merge_all() with no summary before it -> None (as in TF1)"))
                return True
            kinds: dict[str, list[str]] = {}
            for kind, tag_code, tensor_code in self.summaries:
                kinds.setdefault(kind, []).append(f"{tag_code}: {tensor_code}")
            rendered = ", ".join(f"{kind!r}: {{{', '.join(entries)}}}" for kind, entries in kinds.items())
            merged = cst.parse_statement(f"{targets[0]} = {{{rendered}}}\n")
            assert isinstance(merged, cst.SimpleStatementLine)
            replaced = statement.with_changes(body=merged.body)
            self.summary_names.add(targets[0])
            read = names_read(merged) & self.graph_names()
            definition = Definition(
                index, replaced, (targets[0],), [self.reaching[name][-1] for name in sorted(read)], line
            )
            self.hoist(definition)
            self.module_forms[id(statement)] = definition.module_form
            if not self.summary_writer_helper:
                self.summary_writer_helper = self.fresh("write_summaries")
                lines = [
                    f"def {self.summary_writer_helper}(writer, summaries, step):\n",
                    '    """writer.add_summary(merged, step) in TF2: writes what merge_all() collected."""\n',
                    "    with writer.as_default(step=step):\n",
                ]
                for kind in kinds:
                    options = f", max_outputs={self.image_max_outputs}" if kind == "image" else ""
                    lines += [
                        f"        for tag, value in summaries[{kind!r}].items():\n",
                        f"            {self.tf}.summary.{kind}(tag, value{options})\n",
                    ]
                helper = cst.parse_statement("".join(lines))
                assert isinstance(helper, cst.FunctionDef)
                definition.module_form = (
                    *definition.module_form,
                    helper.with_changes(leading_lines=self.blank_lines()),
                )
                self.module_forms[id(statement)] = definition.module_form
            self.definitions.append(definition)
            self.reaching.setdefault(targets[0], []).append(definition)
            self.removed.add(id(statement))
            self.changes.append(
                CompatChange(line, 1, "merge_all() -> a dict of the summarised tensors, written by `write_summaries`")
            )
            return True
        if member == "FileWriter":
            if len(targets) != 1 or not value.args or value.args[0].keyword not in (None,):
                raise Fallback(line, "a FileWriter not bound to a name, or without its log directory first")
            extra = value.args[1:]
            if len(extra) > 1 or any(arg.keyword is not None and arg.keyword.value != "graph" for arg in extra):
                raise Fallback(line, "a FileWriter with options (flush_secs, max_queue ...)")
            created = cst.parse_statement(
                f"{targets[0]} = {self.tf}.summary.create_file_writer({self.code(value.args[0].value)})\n"
            )
            self.writers.add(targets[0])
            self.removed.add(id(statement))
            assert isinstance(created, cst.SimpleStatementLine)
            self.module_forms[id(statement)] = (statement.with_changes(body=created.body),)
            self.changes.append(CompatChange(line, 1, "FileWriter -> tf.summary.create_file_writer"))
            if extra:
                self.notes.append(
                    CompatChange(
                        line,
                        1,
                        "the FileWriter's graph is not written: TF2 has no Session graph (tf.summary.trace_on / "
                        "trace_export record a tf.function's graph)",
                        blocks_run=False,
                    )
                )
            return True
        raise Fallback(line, f"tf.summary.{member} has no native rewrite here")

    def draws_per_run(self, value: cst.BaseExpression) -> bool:
        """A TensorFlow random op that reads no graph tensor (`eps = tf.random.uniform([n, 1])`) is still
        part of the graph: every `sess.run` drew it anew. Computed once where it stands, it would
        be one draw for the whole run; it belongs in the steps like any graph tensor."""
        calls = [self.qualified(node.func) or "" for node in descendants(value) if isinstance(node, cst.Call)]
        return any(
            draws_random(name)
            # objects that draw later (initializers, generators, a tf.data pipeline's shuffle) are no draw here
            and not re.search(r"initializer|Generator|^tensorflow\.(compat\.v1\.)?data\.", name)
            for name in calls
        ) and not any(CREATES_VARIABLES.match(name) for name in calls)

    def constant(
        self,
        statement: cst.SimpleStatementLine,
        targets: tuple[str, ...] | None,
        value: cst.BaseExpression,
        read: set[str],
    ) -> None:
        """A tensor computed from constants only: computed once, eagerly, where it stands.

        ``sess.run`` of it gives the same value each time, so ``.numpy()`` reads it; random ops are
        not constants (each run drew anew), and neither is a name bound twice.
        """
        if targets is None or len(targets) != 1 or self.binds.get(targets[0], 0) != 1:
            return
        calls = [self.qualified(node.func) or "" for node in descendants(value) if isinstance(node, cst.Call)]
        if not all(TENSOR_OP.match(name) and not CREATES_VARIABLES.match(name) for name in calls):
            return  # something other than a TensorFlow op is called (a loader, a variable, a Python helper)
        if not (calls and isinstance(value, cst.Call)) and not read & self.constants:
            return
        if any(RANDOM.search(name) for name in calls) or read & self.variables:
            return
        self.constants.add(targets[0])
        self.constant_statements.add(id(statement))

    def is_feed_dict(self, node: cst.BaseExpression) -> bool:
        """``{placeholder: value, ...}``."""
        return (
            isinstance(node, cst.Dict)
            and bool(node.elements)
            and all(
                isinstance(element, cst.DictElement)
                and isinstance(element.key, cst.Name)
                and element.key.value in self.placeholders
                for element in node.elements
            )
        )

    def find_feed_bindings(self) -> None:
        """``feed = {x: xs, y_: ys}`` statements (a name bound to a feed_dict literal), at any depth."""
        self.feed_bindings: dict[int, tuple[str, cst.Dict]] = {}  # id(statement) -> (name, dict)
        rewrite = self

        class Finder(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False

            def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
                if len(node.body) != 1 or not isinstance(node.body[0], cst.Assign):
                    return
                assign = node.body[0]
                if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
                    if rewrite.is_feed_dict(assign.value):
                        assert isinstance(assign.value, cst.Dict)
                        rewrite.feed_bindings[id(node)] = (assign.targets[0].target.value, assign.value)

        for statement in self.body:
            statement.visit(Finder())
        self.feed_names = {name for name, _ in self.feed_bindings.values()}
        self.feed_arguments: set[int] = set()  # id() of the Names passed as feed_dict

    def named_feed(self, call: cst.Call, name: str, line: int) -> cst.Dict:
        """The dict literal that ``feed_dict=name`` passes here, when its values can be read at the call.

        The values are inlined into the call of the step, so none of the names they read may be
        rebound between the binding and the call, and they may not call anything (a call would run twice).
        """
        node: cst.CSTNode = call
        while True:
            parent = self.parents.get(node)
            if parent is None or isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                raise Fallback(line, f"feed_dict `{name}` is not bound to a {{placeholder: value}} literal before")
            if isinstance(parent, (cst.IndentedBlock, cst.Module)) and isinstance(node, cst.BaseStatement):
                siblings = list(parent.body)
                at = next(index for index, statement in enumerate(siblings) if statement is node)
                for back in range(at - 1, -1, -1):
                    statement = siblings[back]
                    if name not in bound_names(statement):
                        continue
                    binding = self.feed_bindings.get(id(statement))
                    if binding is None:
                        raise Fallback(line, f"feed_dict `{name}` is not bound to a {{placeholder: value}} literal")
                    values = binding[1]
                    read = set().union(*(names_read(element.value) for element in values.elements))
                    for between in siblings[back + 1 : at + 1]:
                        if set(bound_names(between)) & read:
                            raise Fallback(line, f"feed_dict `{name}` reads names rebound before the sess.run")
                    if any(isinstance(found, cst.Call) for found in descendants(values)):
                        raise Fallback(line, f"feed_dict `{name}` calls a function in its values")
                    return values
            node = parent

    def reads_outside_sites(self, node: cst.BaseExpression, graph: set[str]) -> set[str]:
        """Names ``node`` reads, not counting what sess.run / Tensor.eval calls inside it fetch and feed."""
        return names_read(node, session=self.session_name, graph=graph)

    def assigns_graph(self, statement: cst.CSTNode, graph: set[str]) -> bool:
        rewrite = self
        found = False
        session = self.session_name

        class Finder(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> bool:
                # sess.run / Tensor.eval read the graph by design: they are the call sites.
                return not is_site_call(node, session, graph)

            def visit_Assign(self, node: cst.Assign) -> None:
                nonlocal found
                if rewrite.is_feed_dict(node.value):
                    return
                if not isinstance(node.value, cst.Call) or self.visit_Call(node.value):
                    found = found or bool(names_read(node.value) & graph)

        statement.visit(Finder())
        return found

    # --- sess.run / Tensor.eval call sites -----------------------------------------------
    def find_sites(self) -> None:
        self.sites: list[Site] = []
        self.session_uses: list[tuple[cst.Call, int, str]] = []  # init runs and saver calls: (call, top, kind)
        rewrite = self
        graph = self.graph_names()
        session = self.session_name

        for top, statement in enumerate(self.body):
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                if session in names_read(statement):
                    raise Fallback(self.line(statement), f"a function uses the Session `{session}`")
                continue

            class Finder(cst.CSTVisitor):
                def __init__(self) -> None:
                    super().__init__()
                    self.handled: set[int] = set()

                def visit_Assign(self, node: cst.Assign) -> None:
                    if isinstance(node.value, cst.Call):
                        rewrite.assign_of[id(node.value)] = node

                def visit_Expr(self, node: cst.Expr) -> None:
                    if isinstance(node.value, cst.Call):
                        rewrite.expression_calls.add(id(node.value))

                def visit_Call(self, node: cst.Call) -> None:
                    func = node.func
                    if not isinstance(func, cst.Attribute):
                        return
                    owner = func.value
                    method = func.attr.value
                    line = rewrite.line(node)
                    if isinstance(owner, cst.Name) and owner.value == session and method == "close" and not node.args:
                        rewrite.session_uses.append((node, rewrite.current_top, "close"))  # nothing to close in TF2
                        self.handled.add(id(owner))
                    elif (
                        isinstance(owner, cst.Name)
                        and owner.value == session
                        and method == "run"
                        and node.args
                        and (
                            rewrite.iterator_run(node, node.args[0].value, list(node.args[1:]), line)
                            or rewrite.element_run(node, node.args[0].value, list(node.args[1:]), line)
                        )
                    ):
                        self.handled.add(id(owner))
                    elif isinstance(owner, cst.Name) and owner.value == session and method == "run":
                        rewrite.site(
                            node,
                            rewrite.current_top,
                            line,
                            fetch=node.args[0].value if node.args else None,
                            args=node.args[1:],
                        )
                        self.handled.add(id(owner))
                    elif isinstance(owner, cst.Name) and (
                        method,
                        owner.value in graph,
                        owner.value in rewrite.variables | rewrite.constants,
                    ) in (("eval", True, False), ("run", True, False), ("eval", False, True)):
                        # Tensor.eval() / Variable.eval() / Operation.run(): sess.run of that one fetch in the
                        # default Session (a TF2 variable's eval() raises: it becomes .numpy())
                        rewrite.site(node, rewrite.current_top, line, fetch=owner, args=node.args)
                        self.handled.add(id(owner))
                    elif (
                        method == "run"
                        and not node.args
                        and (
                            (isinstance(owner, cst.Name) and owner.value in rewrite.init_names)
                            or (
                                isinstance(owner, cst.Call)
                                and rewrite.qualified(owner.func) == V1 + "global_variables_initializer"
                            )
                        )
                    ):
                        rewrite.session_uses.append((node, rewrite.current_top, "init"))
                    elif isinstance(owner, cst.Name) and owner.value in rewrite.writers:
                        if method == "add_summary":
                            keywords = [arg.keyword.value if arg.keyword is not None else None for arg in node.args]
                            if len(node.args) != 2 or keywords not in _ADD_SUMMARY_KEYWORDS:
                                raise Fallback(line, "add_summary without a step (tf.summary v2 needs one)")
                            if not rewrite.summary_writer_helper:
                                raise Fallback(line, "add_summary of something other than merge_all()'s result")
                            rewrite.summary_adds.add(id(node))
                        elif method == "add_graph":
                            # TF2 has no Session graph to write: dropped, with a note (as FileWriter(graph=)).
                            rewrite.session_uses.append((node, rewrite.current_top, "graph"))
                            self.handled.update(id(name) for name in descendants(node) if isinstance(name, cst.Name))
                            rewrite.notes.append(
                                CompatChange(
                                    line,
                                    1,
                                    "FileWriter.add_graph dropped: TF2 has no Session graph (tf.summary.trace_on / "
                                    "trace_export record a tf.function's graph)",
                                    blocks_run=False,
                                )
                            )
                        elif method not in ("close", "flush"):
                            raise Fallback(line, f"FileWriter.{method} has no native rewrite here")
                    elif isinstance(owner, cst.Name) and owner.value == rewrite.saver and method in ("save", "restore"):
                        # save(sess, path, global_step=step) wrote `path-step`; the .meta graph file has no TF2 use
                        keywords = [arg.keyword.value if arg.keyword is not None else None for arg in node.args]
                        allowed = {"global_step", "write_meta_graph"} if method == "save" else set()
                        if (
                            keywords[:2] != [None, None]
                            or not set(keywords[2:]) <= allowed
                            or not (isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == session)
                        ):
                            raise Fallback(line, f"saver.{method} with arguments other than (session, path)")
                        rewrite.session_uses.append((node, rewrite.current_top, method))
                        self.handled.add(id(node.args[0].value))

                def visit_Name(self, node: cst.Name) -> None:
                    if id(node) in self.handled:
                        return
                    if node.value == session:
                        raise Fallback(rewrite.line(node), f"the Session `{session}` is used outside sess.run")

            if id(statement) in self.removed:
                continue
            self.current_top = top
            statement.visit(Finder())

    def saver_arguments(self, call: cst.Call, line: int) -> None:
        """The Saver arguments that keep "every variable made before it": a var_list of all global variables
        (what Saver() takes anyway) and max_to_keep (how many old files TF1 deleted; a note, not the numbers)."""
        positional = ("var_list", "reshape", "sharded", "max_to_keep", "keep_checkpoint_every_n_hours")
        for position, arg in enumerate(call.args):
            if arg.keyword is not None:
                keyword = arg.keyword.value
            else:
                keyword = positional[position] if position < len(positional) else ""
            if keyword == "var_list" and isinstance(arg.value, cst.Call) and not arg.value.args:
                if self.qualified(arg.value.func) in (V1 + "global_variables", V1 + "all_variables"):
                    continue
            if keyword in ("max_to_keep", "keep_checkpoint_every_n_hours"):
                self.notes.append(
                    CompatChange(
                        line,
                        1,
                        f"Saver({keyword}=...) dropped: tf.train.Checkpoint.write keeps every file it writes; "
                        "use tf.train.CheckpointManager(checkpoint, directory, max_to_keep=N) to delete old ones",
                        blocks_run=False,
                    )
                )
                continue
            raise Fallback(line, "tf.train.Saver with arguments other than all variables and max_to_keep")

    def site(
        self, call: cst.Call, top: int, line: int, *, fetch: cst.BaseExpression | None, args: Sequence[cst.Arg]
    ) -> None:
        if fetch is None:
            raise Fallback(line, "sess.run() without fetches")
        if (isinstance(fetch, cst.Name) and fetch.value in self.init_names) or (
            isinstance(fetch, cst.Call)
            and self.qualified(fetch.func) in (V1 + "global_variables_initializer", V1 + "initialize_all_variables")
        ):
            if args:
                raise Fallback(line, "the initializer run with a feed")
            self.session_uses.append((call, top, "init"))
            return
        single = isinstance(fetch, cst.Name)
        keys: tuple[str, ...] = ()
        if isinstance(fetch, cst.Dict) and all(
            isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString)
            for element in fetch.elements
        ):
            # sess.run({"loss": loss, ...}) returned a dict of the values under the same keys.
            keys = tuple(self.code(element.key) for element in fetch.elements if isinstance(element, cst.DictElement))
        elements: list[cst.BaseExpression] | None = None
        if single:
            elements = [fetch]
        elif isinstance(fetch, (cst.List, cst.Tuple)):
            elements = [e.value for e in fetch.elements]
        elif isinstance(fetch, cst.Dict) and keys:
            elements = [e.value for e in fetch.elements if isinstance(e, cst.DictElement)]
        if elements is None or not all(isinstance(element, cst.Name) for element in elements):
            raise Fallback(line, "sess.run fetches other than a name, a list of names or a dict of them")
        names = tuple(element.value for element in elements if isinstance(element, cst.Name))
        feed: cst.BaseExpression | None = None
        for position, arg in enumerate(args):
            if arg.keyword is None and position == 0 or arg.keyword is not None and arg.keyword.value == "feed_dict":
                feed = arg.value
            elif arg.keyword is not None and arg.keyword.value == "session":
                if not (isinstance(arg.value, cst.Name) and arg.value.value == self.session_name):
                    raise Fallback(line, "eval(session=...) with another session")
            else:
                raise Fallback(line, "sess.run with options or run_metadata")
        feeds: dict[str, cst.BaseExpression] = {}
        if isinstance(feed, cst.Name) and feed.value in self.feed_names:
            self.feed_arguments.add(id(feed))
            feed = self.named_feed(call, feed.value, line)
        if feed is not None:
            if not isinstance(feed, cst.Dict):
                raise Fallback(line, "a feed_dict that is not a {placeholder: value} literal")
            for element in feed.elements:
                if not (isinstance(element, cst.DictElement) and isinstance(element.key, cst.Name)):
                    raise Fallback(line, "a feed_dict that is not a {placeholder: value} literal")
                if element.key.value not in self.placeholders:
                    raise Fallback(line, f"feeds `{element.key.value}`, which is not a placeholder")
                feeds[element.key.value] = element.value
        for name in names:
            if name not in self.graph_names() and name not in self.variables and name not in self.constants:
                raise Fallback(line, f"sess.run fetches `{name}`, which is not built from placeholders or variables")
        self.sites.append(Site(call, top, line, names, single, feeds, as_tuple=isinstance(fetch, cst.Tuple), keys=keys))

    def resolve(self, name: str, top: int) -> Definition | str | None:
        """The definition of ``name`` that a fetch at top-level statement ``top`` sees (None: a variable)."""
        if (name in self.variables or name in self.constants) and name not in self.reaching:
            return None
        for definition in reversed(self.reaching[name]):
            if isinstance(definition, str) or definition.index < top:
                return definition
        raise Fallback(1, f"`{name}` is fetched before it is defined")

    @staticmethod
    def closure(roots: Iterable[Definition | str]) -> tuple[list[Definition], set[str]]:
        seen: dict[int, Definition] = {}
        placeholders: set[str] = set()
        stack = list(roots)
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                placeholders.add(item)
            elif id(item) not in seen:
                seen[id(item)] = item
                stack.extend(item.deps)
        return sorted(seen.values(), key=lambda definition: definition.index), placeholders

    # --- checks that keep the meaning -----------------------------------------------------
    def check(self) -> None:
        graph = self.graph_names()
        # A helper the graph calls may be defined in the module or in the scope (main) itself.
        functions = {
            statement.name.value: statement
            for statement in [*self.module.body, *self.body]
            if isinstance(statement, cst.FunctionDef)
        }
        for definition in self.definitions:
            node = definition.function_form or definition.statement
            for name in self.calls_in(node):
                if CREATES_VARIABLES.match(name):
                    raise Fallback(definition.line, f"`{name}` in the graph would create new variables on every call")
            self.check_imported_calls(node, definition.line)
            for name in names_read(node) - graph - self.retired:
                if name in self.holders_names():
                    continue  # a variable, layer or model instance made once
                if name in functions:
                    self.check_function(functions[name], functions, graph, set())
                elif self.binds.get(name, 0) > 1 and name not in self.holders_names():
                    raise Fallback(
                        definition.line, f"the graph reads `{name}`, which the script rebinds (TF1 read it once)"
                    )
        self.check_model_uses()
        self.check_iterators()
        if self.sparse_sensitive:
            sparse = next((name for name in self.calls_in(self.module) if SPARSE_GRADIENT_OPS.match(name)), None)
            if sparse is not None:
                kind, line = self.sparse_sensitive[0]
                raise Fallback(
                    line,
                    f"tf.compat.v1.train.{kind} in a file that calls `{sparse}`: TF1 applies a sparse gradient to "
                    "the rows it touches only, a Keras optimizer moves every row's slots",
                )
        # A graph tensor may only be read by the graph itself and by sess.run / eval.
        rewrite = self
        for statement in self.body:
            if id(statement) in self.removed or isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                continue

            class Uses(ValueReader):
                top = id(statement)

                def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
                    return id(node) not in rewrite.feed_bindings  # its keys are placeholders, by design

                def visit_Call(self, node: cst.Call) -> bool:
                    if id(node) in rewrite.statement_codes:
                        return False  # an iterator's initializer run: its feeds became the dataset's inputs
                    if isinstance(node.func, cst.Name) and node.func.value in ("print", "str", "repr"):
                        for arg in node.args:
                            if isinstance(arg.value, cst.Name) and arg.value.value in rewrite.variables:
                                # TF1 printed the variable's name and shape; a TF2 variable prints its value.
                                raise Fallback(rewrite.line(node), f"variable `{arg.value.value}` is printed itself")
                    if any(site.call is node for site in rewrite.sites):
                        owner = node.func.value if isinstance(node.func, cst.Attribute) else None
                        run = isinstance(owner, cst.Name) and owner.value == rewrite.session_name
                        for arg in node.args[1:] if run else node.args:  # the feeds (a fetched dict is the graph's)
                            if isinstance(arg.value, cst.Dict):
                                for element in arg.value.elements:
                                    if isinstance(element, cst.DictElement):
                                        element.value.visit(self)
                        return False
                    return True

                def visit_Name(self, node: cst.Name) -> None:
                    if node.value in rewrite.constants and self.top not in rewrite.constant_statements:
                        # TF1 printed a symbolic tensor where TF2 has its value: not the same program.
                        raise Fallback(rewrite.line(node), f"tensor `{node.value}` is used outside sess.run / eval")
                    if node.value in graph and node.value not in rewrite.optimizers:
                        raise Fallback(
                            rewrite.line(node), f"graph tensor `{node.value}` is used outside sess.run / eval"
                        )

            statement.visit(Uses())
        # A named feed_dict is inlined into its calls: it may not be read anywhere else.
        for top_statement in self.body:
            for found in descendants(top_statement):
                if (
                    isinstance(found, cst.Name)
                    and found.value in self.feed_names
                    and id(found) not in self.feed_arguments
                    and not isinstance(self.parents.get(found), cst.AssignTarget)
                    and not _is_keyword(found, self.parents.get(found))  # `feed_dict=feed_dict`: the keyword
                ):
                    raise Fallback(self.line(found), f"feed_dict `{found.value}` is used other than as a feed_dict")
        # Later Sessions start from fresh variables in TF1; here only a restore gives the same state.
        for (_previous, before), (_name, start) in zip(self.sessions, self.sessions[1:], strict=False):
            earlier = [top for _, top, _ in self.session_uses if before <= top < start]
            earlier += [site.top for site in self.sites if before <= site.top < start]
            if not earlier:
                continue  # the Session before it ran nothing: this one is the first that does
            uses = sorted(
                [(top, kind) for _, top, kind in self.session_uses if top >= start]
                + [(site.top, "run") for site in self.sites if site.top >= start]
            )
            kinds = [kind for _, kind in uses if kind not in ("init", "close", "graph")]
            if not kinds or kinds[0] != "restore":
                raise Fallback(
                    self.line(self.body[start]) if start < len(self.body) else 1,
                    "a second Session starts from fresh variables (TF1) unless it restores a checkpoint first",
                )

    def check_function(
        self, function: cst.FunctionDef, functions: dict[str, cst.FunctionDef], graph: set[str], seen: set[str]
    ) -> None:
        if function.name.value in seen:
            return
        seen.add(function.name.value)
        parameters = {param.name.value for param in function.params.params}
        line = self.line(function)
        for name in self.calls_in(function.body):
            if CREATES_VARIABLES.match(name):
                raise Fallback(
                    line, f"`{function.name.value}` creates variables ({name}) each call: make them once, outside"
                )
        read = names_read(function.body)
        local = set(bound_names(function.body)) | parameters
        if (read - local) & graph:
            raise Fallback(line, f"`{function.name.value}` reads graph tensors as globals")
        for name in read - local:
            if name in functions:
                self.check_function(functions[name], functions, graph, seen)

    def prescan_static(self) -> None:
        """Names that every feed_dict in the file feeds with a Python literal only."""
        fed: dict[str, list[bool]] = {}

        class Feeds(cst.CSTVisitor):
            def visit_Dict(self, node: cst.Dict) -> None:
                for element in node.elements:
                    if isinstance(element, cst.DictElement) and isinstance(element.key, cst.Name):
                        value = element.value
                        literal = isinstance(value, (cst.Integer, cst.Float)) or (
                            isinstance(value, cst.Name) and value.value in ("True", "False")
                        )
                        fed.setdefault(element.key.value, []).append(literal)

        self.module.visit(Feeds())
        self.static = {name for name, literals in fed.items() if literals and all(literals)}
        self.reaching = {}  # the graph, filled by analyse(); empty while the scope is looked for
        self.replacements: dict[int, tuple[cst.BaseStatement, ...]] = {}
        self.assign_of: dict[int, cst.Assign] = {}
        self.expression_calls: set[int] = set()
        self.module_forms: dict[int, tuple[cst.BaseStatement, ...]] = {}
        # Module-level statements outside the scope (a Session in main()) replaced, or dropped (None).
        self.module_replacements: dict[int, cst.BaseStatement | None] = {}


# add_summary(summary, step) with either argument by keyword (TF1's names).
_ADD_SUMMARY_KEYWORDS = [[first, second] for first in (None, "summary") for second in (None, "global_step")]


def _is_keyword(name: cst.Name, parent: cst.CSTNode | None) -> bool:
    """The keyword of a call's argument (``feed_dict`` in ``feed_dict=feeds``), not a read of that name."""
    return isinstance(parent, cst.Arg) and parent.keyword is name


def _binds_plainly(small: cst.BaseSmallStatement | None, name: str) -> TypeGuard[cst.Assign]:
    """``name = ...`` or ``x, name = ...``: one assignment that binds that name (unpacked or not)."""
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
        return False
    target = small.targets[0].target
    if isinstance(target, cst.Name):
        return target.value == name
    return (
        isinstance(target, (cst.Tuple, cst.List))
        and all(isinstance(element, cst.Element) and isinstance(element.value, cst.Name) for element in target.elements)
        and any(isinstance(element.value, cst.Name) and element.value.value == name for element in target.elements)
    )


def _assigns_only(small: cst.BaseSmallStatement | None, name: str) -> TypeGuard[cst.Assign]:
    """``name = ...``: one plain assignment to that one name."""
    return (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
        and small.targets[0].target.value == name
    )
