"""Rewrites of single TF1 calls: optimizers, minimize, tf.layers, RNN cells, assign, tf.compat.v1 calls, tf.app."""

from __future__ import annotations

import re

import libcst as cst

from tfpilot.migrate.compat import CompatChange
from tfpilot.migrate.native.base import Base
from tfpilot.migrate.native.parts import Definition, Fallback
from tfpilot.migrate.native.syntax import names_read
from tfpilot.migrate.native.tables import (
    ASSIGNS,
    FLATTEN,
    IGNORED_OPTIMIZER_ARGS,
    LAYER_MODULES,
    LAYER_OBJECTS,
    LAYERS,
    OPTIMIZERS,
    SPARSE_DIFFERS,
    V1,
    V1_CALLS,
)

# tf.app.flags as tf_upgrade_v2 leaves it, and tf.flags, which it leaves as written (gone from TF 2).
FLAGS_MODULES = (V1 + "flags", V1 + "app.flags", "tensorflow.flags", "tensorflow.app.flags")


# TF1 initializers -> (Keras initializer, the parameters both take, in TF1's order); seeds are left
# out (TF1's graph-level seeding has no TF2 counterpart: the values differ from TF1's either way).
_INITIALIZERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "zeros_initializer": ("Zeros", ()),
    "ones_initializer": ("Ones", ()),
    "constant_initializer": ("Constant", ("value",)),
    "random_normal_initializer": ("RandomNormal", ("mean", "stddev")),
    "truncated_normal_initializer": ("TruncatedNormal", ("mean", "stddev")),
    "random_uniform_initializer": ("RandomUniform", ("minval", "maxval")),
    "glorot_uniform_initializer": ("GlorotUniform", ()),
    "glorot_normal_initializer": ("GlorotNormal", ()),
}


class CallRewrites(Base):
    """TF1 calls rewritten one at a time from the tables (optimizers, layers, cells, assign, tf.app)."""

    variables: set[str]  # set by the analysis (analysis.py): the names of the scope's tf.Variables

    def optimizer_expression(self, call: cst.Call, line: int) -> str | None:
        name = self.qualified(call.func)
        if name is None or not name.startswith(V1 + "train."):
            return None
        kind = name[len(V1 + "train.") :]
        if not kind.endswith("Optimizer"):
            return None
        if kind not in OPTIMIZERS:
            raise Fallback(line, f"tf.compat.v1.train.{kind} has no Keras optimizer with the same update rule here")
        keras_class, positional, renames, defaults = OPTIMIZERS[kind]
        arguments: dict[str, str] = {}
        for position, arg in enumerate(call.args):
            key = arg.keyword.value if arg.keyword is not None else positional[position]
            if key in IGNORED_OPTIMIZER_ARGS:
                continue
            if key not in renames:
                raise Fallback(line, f"{kind}({key}=...) has no Keras counterpart here")
            arguments[renames[key]] = self.code(arg.value)
        for key, value in defaults.items():
            arguments.setdefault(key, value)
        rendered = ", ".join(f"{key}={value}" for key, value in arguments.items())
        if kind in SPARSE_DIFFERS:
            self.sparse_sensitive.append((kind, line))
        if kind == "RMSPropOptimizer":
            if not self.rmsprop_class:
                self.keras_name()  # the class subclasses keras.optimizers.RMSprop
                self.rmsprop_class = self.fresh("RMSpropTF1")
            self.changes.append(
                CompatChange(
                    line,
                    1,
                    f"tf.compat.v1.train.{kind} -> {self.rmsprop_class}, keras.optimizers.RMSprop with TF1's start "
                    "(mean square 1) and epsilon (1e-10)",
                )
            )
            return f"{self.rmsprop_class}({rendered})"
        self.changes.append(
            CompatChange(line, 1, f"tf.compat.v1.train.{kind} -> keras.optimizers.{keras_class} (same update rule)")
        )
        return f"{self.keras_name()}.optimizers.{keras_class}({rendered})"

    def minimize(
        self, value: cst.BaseExpression, index: int, line: int
    ) -> tuple[str, str, str | None, str | None] | None:
        """`opt.minimize(loss)`, `opt.minimize(loss, var_list=theta)` (a GAN's two players, each
        updating its own list) or `opt.minimize(loss, global_step=step)`: (optimizer expression, loss
        name, the var_list name or None, the global step variable's name or None)."""
        if not (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "minimize"
        ):
            return None
        given = {
            arg.keyword.value if arg.keyword is not None else ("loss", "global_step", "var_list")[position]: arg.value
            for position, arg in enumerate(value.args[:3])
        }
        if (
            len(value.args) > 3
            or set(given) - {"loss", "var_list", "global_step"}
            or not all(isinstance(given_value, cst.Name) for given_value in given.values())
            or "loss" not in given
        ):
            raise Fallback(line, "minimize() with more than a loss, a var_list and a global_step name")
        loss = cst.ensure_type(given["loss"], cst.Name).value
        variables = cst.ensure_type(given["var_list"], cst.Name).value if "var_list" in given else None
        counter = cst.ensure_type(given["global_step"], cst.Name).value if "global_step" in given else None
        if counter is not None and counter not in self.variables:
            raise Fallback(line, f"minimize(global_step={counter}) where `{counter}` is no tf.Variable of this scope")
        owner = value.func.value
        if isinstance(owner, cst.Name) and owner.value in self.optimizers:
            return owner.value, loss, variables, counter
        if isinstance(owner, cst.Call):
            expression = self.optimizer_expression(owner, line)
            if expression is not None:
                return expression, loss, variables, counter
        raise Fallback(line, "minimize() on something other than a tf.compat.v1.train optimizer")

    def get_variable_form(self, call: cst.Call, line: int) -> str:
        """``tf.compat.v1.get_variable(name, shape, dtype, initializer)`` as a ``tf.Variable``: made once
        where it was, with TF1's default initializer (Glorot uniform) or the Keras one of the same
        distribution. Sharing by name (a variable_scope with reuse) has no TF2 counterpart here."""
        if re.search(r"\breuse\b|AUTO_REUSE", self.module.code):
            raise Fallback(line, "get_variable in a file that shares variables by scope (reuse)")
        names = ("name", "shape", "dtype", "initializer")
        given: dict[str, cst.BaseExpression] = {}
        for position, arg in enumerate(call.args):
            key = arg.keyword.value if arg.keyword is not None else (names[position] if position < 4 else "")
            if key not in names and key != "trainable":
                raise Fallback(line, f"get_variable with `{key or 'a fifth positional argument'}`")
            given[key] = arg.value
        tf = self.tf
        shape = self.code(given["shape"]) if "shape" in given else None
        dtype = self.code(given["dtype"]) if "dtype" in given else f"{tf}.float32"
        initializer = given.get("initializer")
        keyword = ""
        if "name" in given:
            keyword += f", name={self.code(given['name'])}"
        if "trainable" in given:
            keyword += f", trainable={self.code(given['trainable'])}"
        if initializer is None:
            if shape is None:
                raise Fallback(line, "get_variable without a shape or an initializer")
            return f"{tf}.Variable({self.keras_name()}.initializers.GlorotUniform()({shape}, dtype={dtype}){keyword})"
        made = self.keras_initializer(initializer)
        if made is not None:
            if shape is None:
                raise Fallback(line, "get_variable with an initializer object but no shape")
            return f"{tf}.Variable({made}({shape}, dtype={dtype}){keyword})"
        if isinstance(initializer, cst.Call) and (self.qualified(initializer.func) or "").endswith("_initializer"):
            raise Fallback(line, f"get_variable's initializer `{self.code(initializer.func)}` has no Keras one here")
        # a value (a tensor, an array): the variable's shape is the value's, as TF1 required
        return f"{tf}.Variable({tf}.cast({self.code(initializer)}, {dtype}){keyword})"

    def layer_object(
        self, call_name: str | None, value: cst.BaseExpression, targets: tuple[str, ...] | None, line: int
    ) -> str | None:
        """The Keras class for ``L = tf.layers.Dense(units=1)`` (a TF1 layer object bound to one
        name, arguments Keras takes under the same names), else None."""
        if call_name is None or not isinstance(value, cst.Call) or not targets or len(targets) != 1:
            return None
        prefix = next((p for p in LAYER_MODULES if call_name.startswith(p)), None)
        if prefix is None:
            return None
        member = call_name[len(prefix) :]
        if member not in LAYER_OBJECTS:
            return None
        allowed = LAYER_OBJECTS[member]
        if any(arg.keyword is not None and arg.keyword.value not in allowed for arg in value.args):
            raise Fallback(line, f"tf.layers.{member} with an argument Keras' {member} does not take")
        return member

    def returns_list(self, value: cst.BaseExpression) -> bool:
        """A value that is a list or tuple of tensors, not one tensor: a literal, a comprehension, or a
        TensorFlow function that returns a list (tf.gradients, tf.unstack, tf.split)."""
        if isinstance(value, (cst.List, cst.Tuple, cst.ListComp)):
            return True
        name = self.qualified(value.func) if isinstance(value, cst.Call) else None
        return (
            name is not None
            and name.rsplit(".", 1)[-1] in ("gradients", "unstack", "split")
            and (name.startswith("tensorflow."))
        )

    def keras_initializer(self, node: cst.BaseExpression) -> str | None:
        """A TF1 initializer (a call, or the class itself: `initializer=tf.zeros_initializer`) as the
        Keras initializer of the same distribution, or None."""
        if isinstance(node, (cst.Name, cst.Attribute)):
            node = cst.Call(func=node)
        if not isinstance(node, cst.Call):
            return None
        name = (self.qualified(node.func) or "").rsplit(".", 1)[-1]
        keras_class, parameters = _INITIALIZERS.get(name, ("", ()))
        if not keras_class or len(node.args) > len(parameters):
            return None
        arguments = []
        for position, arg in enumerate(node.args):
            key = arg.keyword.value if arg.keyword is not None else parameters[position]
            if key not in parameters:
                return None
            arguments.append(f"{key}={self.code(arg.value)}")
        return f"{self.keras_name()}.initializers.{keras_class}({', '.join(arguments)})"

    def gradient_pair(
        self, value: cst.BaseExpression, targets: tuple[str, ...], line: int
    ) -> tuple[tuple[str, str] | None, str | None]:
        """``G = opt.compute_gradients(loss)``: (None, loss); ``T = opt.apply_gradients(G)``:
        ((optimizer, G's source), None); anything else (None, None). `opt` is a TF1 optimizer bound
        to a name (analysis checked it has one of each and no minimize)."""
        if not (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and isinstance(value.func.value, cst.Name)
            and value.func.value.value in self.optimizers
            and value.func.attr.value in ("compute_gradients", "apply_gradients")
        ):
            return None, None
        optimizer, method = value.func.value.value, value.func.attr.value
        if len(value.args) != 1 or value.args[0].keyword is not None or len(targets) != 1:
            raise Fallback(line, f"{method}() with more than one argument (global_step, var_list ...)")
        argument = value.args[0].value
        if method == "compute_gradients":
            if not isinstance(argument, cst.Name):
                raise Fallback(line, "compute_gradients() of an expression, not of a loss's name")
            self.gradient_losses[optimizer] = argument.value
            return None, argument.value
        if optimizer not in self.gradient_losses:
            raise Fallback(line, "apply_gradients() before its compute_gradients()")
        return (optimizer, self.code(argument)), None

    # --- tf.layers calls -> Keras layers made once ---------------------------------------
    def hoist(self, definition: Definition) -> None:
        rewrite = self
        hoisted: list[cst.BaseStatement] = []

        class Hoister(cst.CSTTransformer):
            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                if isinstance(original.func, cst.Name):
                    return rewrite.helper_call(original, updated, definition.line, hoisted)
                name = rewrite.qualified(original.func)
                if name is None:
                    return updated
                if name == FLATTEN or any(name.startswith(prefix) for prefix in LAYER_MODULES):
                    return rewrite.layer_call(name, updated, definition.line, hoisted)
                if name in (V1 + "nn.dynamic_rnn",):
                    return rewrite.rnn_call(updated, definition.line, hoisted)
                if name in ASSIGNS:
                    return rewrite.assign_call(name, updated, definition.line)
                return updated

        before = len(self.holders)
        new = definition.statement.visit(Hoister())
        self.holders[before:] = [(name, definition.index) for name, _ in self.holders[before:]]
        assert isinstance(new, cst.SimpleStatementLine)
        definition.function_form = new
        definition.module_form = tuple(hoisted)

    def helper_call(
        self, original: cst.Call, updated: cst.Call, line: int, hoisted: list[cst.BaseStatement]
    ) -> cst.BaseExpression:
        """A call of a function of the file in the graph: as it is here; a model function's becomes an
        instance's call (modules.ModuleHelpers)."""
        return updated

    def assign_call(self, name: str, call: cst.Call, line: int) -> cst.BaseExpression:
        method = name.rpartition(".")[2]
        if len(call.args) != 2 or any(arg.keyword is not None for arg in call.args):
            raise Fallback(line, f"tf.compat.v1.{method} with options (use_locking, validate_shape ...)")
        variable, value = (arg.value for arg in call.args)
        self.changes.append(CompatChange(line, 1, f"tf.compat.v1.{method}(ref, value) -> ref.{method}(value)"))
        return cst.Call(cst.Attribute(variable, cst.Name(method)), [cst.Arg(value)])

    def layer_call(self, name: str, call: cst.Call, line: int, hoisted: list[cst.BaseStatement]) -> cst.BaseExpression:
        member = "flatten" if name == FLATTEN else name.rpartition(".")[2]
        if call.args and call.args[0].keyword is not None and call.args[0].keyword.value == "inputs":
            # `tf.layers.dense(inputs=x, units=8)`: TF1's own keyword for the first argument.
            call = call.with_changes(
                args=[call.args[0].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT), *call.args[1:]]
            )
        if not call.args or call.args[0].keyword is not None:
            raise Fallback(line, f"tf.layers.{member} without its input as the first argument")
        inputs = call.args[0].value
        graph = self.graph_names()
        if member == "dropout":
            parameters = ("rate", "noise_shape", "seed", "training", "name")
            given: dict[str, cst.BaseExpression] = {}
            for position, arg in enumerate(call.args[1:]):
                given[arg.keyword.value if arg.keyword is not None else parameters[position]] = arg.value
            training = given.get("training")
            if training is None or (isinstance(training, cst.Name) and training.value == "False"):
                # TF1's tf.layers.dropout defaults to training=False: it never dropped anything.
                self.changes.append(
                    CompatChange(
                        line,
                        1,
                        "tf.layers.dropout without training= never drops (TF1's default is training=False): "
                        "rewritten as tf.identity; pass training= if dropout was meant",
                    )
                )
                return cst.parse_expression(f"{self.tf}.identity({self.code(inputs)})")
            if not (isinstance(training, cst.Name) and (training.value in self.static or training.value == "True")):
                raise Fallback(line, "tf.layers.dropout(training=...) fed a tensor (Keras Dropout wants a Python bool)")
            options = {key: value for key, value in given.items() if key in ("rate", "noise_shape", "seed")}
            keras_class = "Dropout"
            call_suffix = f", training={training.value}"
        elif member == "batch_normalization":
            parameters = ("axis", "momentum", "epsilon", "center", "scale")
            given = {}
            for position, arg in enumerate(call.args[1:]):
                if arg.keyword is None and position >= len(parameters):
                    raise Fallback(line, "tf.layers.batch_normalization with more positional arguments than it takes")
                given[arg.keyword.value if arg.keyword is not None else parameters[position]] = arg.value
            training = given.pop("training", None)
            if not (training is None or (isinstance(training, cst.Name) and training.value == "False")):
                # In training mode TF1 updated the moving statistics only through UPDATE_OPS, which the
                # script runs or not; the Keras layer always updates them.
                raise Fallback(
                    line,
                    "tf.layers.batch_normalization(training=...): TF1 updated its moving averages only through UPDATE_OPS",
                )
            unknown = set(given) - {*parameters, "name"}
            if unknown:
                raise Fallback(
                    line, f"tf.layers.batch_normalization({sorted(unknown)[0]}=...) has no Keras rewrite here"
                )
            self.changes.append(
                CompatChange(
                    line,
                    1,
                    "tf.layers.batch_normalization without training= normalised with its moving statistics (TF1's "
                    "default training=False), as the Keras layer called with training=False does",
                )
            )
            options = given
            keras_class = "BatchNormalization"  # TF1's defaults: momentum 0.99, epsilon 1e-3, as Keras'
            call_suffix = ", training=False"
        else:
            if member not in LAYERS:
                raise Fallback(line, f"tf.layers.{member} has no Keras rewrite here")
            keras_class, positional, allowed = LAYERS[member]
            options = {}
            for position, arg in enumerate(call.args[1:]):
                if arg.keyword is None and position >= len(positional):
                    raise Fallback(line, f"tf.layers.{member} with more positional arguments than it takes")
                key = arg.keyword.value if arg.keyword is not None else positional[position]
                if key not in allowed:
                    raise Fallback(line, f"tf.layers.{member}({key}=...) has no Keras rewrite here")
                options[key] = arg.value
            call_suffix = ""
        for value in options.values():
            if names_read(value) & graph:
                raise Fallback(line, f"tf.layers.{member}'s settings depend on a graph tensor")
            for node_name in self.calls_in(value):
                if node_name.startswith("tensorflow.contrib") or node_name.startswith(V1):
                    raise Fallback(line, f"tf.layers.{member} with a TF1-only argument ({node_name})")
        count = self.layer_counts[member] = self.layer_counts.get(member, 0) + 1
        variable = self.fresh(f"{member}_{count}")
        rendered = ", ".join(f"{key}={self.code(value)}" for key, value in options.items())
        hoisted.append(cst.parse_statement(f"{variable} = {self.keras_name()}.layers.{keras_class}({rendered})\n"))
        self.holders.append((variable, -1))
        self.changes.append(
            CompatChange(line, 1, f"tf.layers.{member} -> keras.layers.{keras_class} `{variable}`, created once")
        )
        return cst.parse_expression(f"{variable}({self.code(inputs)}{call_suffix})")

    def rnn_call(self, call: cst.Call, line: int, hoisted: list[cst.BaseStatement]) -> cst.BaseExpression:
        cells: set[str] = getattr(self, "cells", set())
        positions = ("cell", "inputs", "sequence_length", "initial_state", "dtype", "parallel_iterations")
        if any(arg.star or (arg.keyword is None and i >= len(positions)) for i, arg in enumerate(call.args)):
            raise Fallback(line, "dynamic_rnn with arguments passed by *args or past its parameters")
        arguments = {arg.keyword.value if arg.keyword else positions[i]: arg.value for i, arg in enumerate(call.args)}
        cell = arguments.get("cell")
        if not (isinstance(cell, cst.Name) and cell.value in cells) or set(arguments) - {"cell", "inputs", "dtype"}:
            raise Fallback(line, "dynamic_rnn with a cell other than a module-level BasicRNNCell, or extra options")
        variable = self.fresh("rnn_1")
        hoisted.append(
            cst.parse_statement(
                f"{variable} = {self.keras_name()}.layers.RNN({cell.value}, return_sequences=True, return_state=True)\n"
            )
        )
        self.holders.append((variable, -1))
        self.changes.append(
            CompatChange(
                line, 1, f"dynamic_rnn -> keras.layers.RNN `{variable}` (outputs and final state), created once"
            )
        )
        return cst.parse_expression(f"{variable}({self.code(arguments['inputs'])})")

    def rewrite_v1_calls(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """The tf.compat.v1 calls with a TF2 spelling that computes the same (``V1_CALLS``)."""
        rewrite = self

        class Calls(cst.CSTTransformer):
            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                name = rewrite.qualified(original.func) or ""
                if not name.startswith(V1) or name[len(V1) :] not in V1_CALLS:
                    return updated
                parameters, template = V1_CALLS[name[len(V1) :]]
                given: dict[str, str] = {}
                for position, arg in enumerate(updated.args):
                    if arg.keyword is None and position >= len(parameters) or arg.star:
                        return updated
                    key = arg.keyword.value if arg.keyword is not None else parameters[position]
                    if key == "scope" or key == "name":
                        continue  # names a graph op: nothing to name in TF2
                    if key not in parameters:
                        raise Fallback(
                            rewrite.line(original), f"tf.compat.v1.{name[len(V1) :]}({key}=...) is not rewritten"
                        )
                    given[key] = rewrite.code(arg.value)
                if set(given) != set(parameters):
                    raise Fallback(rewrite.line(original), f"tf.compat.v1.{name[len(V1) :]} without all its inputs")
                rewrite.changes.append(
                    CompatChange(
                        rewrite.line(original), 1, f"tf.compat.v1.{name[len(V1) :]} -> {template.split('(')[0]}"
                    )
                )
                return cst.parse_expression(template.format(tf=rewrite.tf, **given))

        new = self.module.with_changes(body=body).visit(Calls())
        return list(new.body)

    def rewrite_app(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """``tf.compat.v1.app.run`` / ``flags`` -> absl, which they wrapped."""
        rewrite = self
        uses_flags = False
        runs: list[cst.Call] = []

        class Finder(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute) -> bool:
                nonlocal uses_flags
                name = rewrite.qualified(node)
                if name in FLAGS_MODULES:
                    uses_flags = True
                    return False
                return True

            def visit_Call(self, node: cst.Call) -> None:
                if rewrite.qualified(node.func) == V1 + "app.run":
                    runs.append(node)

        module = self.module.with_changes(body=body)
        module.visit(Finder())
        if not runs and not uses_flags:
            return body
        imports: list[str] = []
        replacements: dict[int, cst.BaseExpression] = {}
        for run in runs:
            given = {
                arg.keyword.value if arg.keyword is not None else ("main", "argv")[position]: self.code(arg.value)
                for position, arg in enumerate(run.args)
            }
            main = given.get("main", "main")
            if uses_flags:
                argv = f", argv={given['argv']}" if "argv" in given else ""
                replacements[id(run)] = cst.parse_expression(f"app.run({main}{argv})")
                self.notes.append(
                    CompatChange(
                        self.line(run),
                        1,
                        "tf.app.run -> absl's app.run (what it wrapped): absl stops on a command-line flag it does "
                        "not know, where tf.app.run ignored it",
                        blocks_run=False,
                    )
                )
            else:
                replacements[id(run)] = cst.parse_expression(f"sys.exit({main}({given.get('argv', 'sys.argv')}))")
                self.changes.append(
                    CompatChange(self.line(run), 1, "tf.app.run(main) -> sys.exit(main(argv)): no flags to parse")
                )
        if uses_flags:
            imports += ["from absl import app\n"] if runs else []
            imports.append("from absl import flags\n")
            if {"app", "flags"} & self.used_names:
                raise Fallback(self.line(runs[0]) if runs else 1, "`app` or `flags` is already a name in the file")
        elif "sys" not in self.bindings:
            imports.append("import sys\n")

        class Replace(cst.CSTTransformer):
            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                return replacements.get(id(original), updated)

            def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
                if rewrite.qualified(original) in FLAGS_MODULES:
                    return cst.Name("flags")
                return updated

        new: list[cst.BaseStatement] = list(module.visit(Replace()).body)
        at = next(
            index
            for index, statement in enumerate(new)
            if isinstance(statement, cst.SimpleStatementLine)
            and any(isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body)
        )
        # Never between `from __future__` imports: they must come first (a SyntaxError otherwise).
        while at + 1 < len(new) and _is_future_import(new[at + 1]):
            at += 1
        return new[: at + 1] + [cst.parse_statement(line) for line in imports] + new[at + 1 :]


def _is_future_import(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"
        for small in statement.body
    )
