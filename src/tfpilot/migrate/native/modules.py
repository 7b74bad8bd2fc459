"""Model functions -> tf.Module classes: a helper that makes variables and returns what it computes from them.

The most common TF1 shape: ``def model(x, n_out): W = tf.Variable(...); ...; return tf.matmul(x, W) + b``
(or ``tf.layers.dense`` calls under ``variable_scope(name, reuse=reuse)``), called while the graph is
built. TF1 ran the function once per call site: each call made its variables (a ``reuse=True`` call
shared those of the scope's earlier call) and put the computation into the graph, which every
``sess.run`` recomputed from the variables' current values. In TF2 that is a ``tf.Module``: the
variables are made once, when the instance is made (where the TF1 call stood), and calling the
instance computes what the function returned; the steps call it, so the value follows training.

Only straight-line functions qualify (assignments, ``name_scope`` / ``variable_scope`` blocks, one
final ``return``); a variable's settings may read the function's parameters (given Python values at
every call) but nothing it computes. Anything else keeps the file on compat with the reason.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from tfpilot.migrate.compat import CompatChange
from tfpilot.migrate.native.calls import CallRewrites
from tfpilot.migrate.native.parts import Fallback
from tfpilot.migrate.native.syntax import ValueReader, bound_names, descendants, names_read, target_names
from tfpilot.migrate.native.tables import CREATES_VARIABLES, FLATTEN, LAYER_MODULES, TRUSTED_MODULES, V1

# tf.Module's own members: a variable kept under one of these names gets a suffix.
_MODULE_MEMBERS = frozenset(
    {"name", "name_scope", "variables", "trainable_variables", "non_trainable_variables", "submodules"}
)
_SCOPES = ("tensorflow.name_scope", V1 + "name_scope", V1 + "variable_scope")


@dataclasses.dataclass
class ModulePlan:
    """How one model function becomes a tf.Module class, and its instances so far."""

    function: cst.FunctionDef
    class_name: str
    init_params: list[str]  # parameters the variables' settings read: given to the constructor
    call_params: list[str]  # parameters the computation reads: given at each call
    reuse_param: str | None  # the parameter passed as variable_scope(reuse=...)
    rendered: cst.ClassDef
    shared_by_reuse: bool  # its variables are tf.layers' (get_variable: reuse shares them), not tf.Variable's
    instances: list[str] = dataclasses.field(default_factory=list)


class ModuleHelpers(CallRewrites):
    """Plans model functions as tf.Module classes and rewrites their calls into instances made once."""

    module_plans: dict[str, ModulePlan]
    # Set by the analysis (analysis.py): the scope's statements and what becomes of them.
    body: list[cst.BaseStatement]
    removed: set[int]
    replacements: dict[int, tuple[cst.BaseStatement, ...]]
    module_replacements: dict[int, cst.BaseStatement | None]

    # --- functions of the file that make variables ------------------------------------------
    def variable_factory(self, func: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> str:
        """What a function of this file that makes variables returns: "variable" (``def weight_variable(shape):
        return tf.Variable(...)``, itself or through another such function), "other" (something computed from
        the variables it made), or "" (not such a function)."""
        if not isinstance(func, cst.Name) or func.value in seen:
            return ""
        function = next(
            (
                statement
                for statement in [*self.module.body, *self.body]
                if isinstance(statement, cst.FunctionDef) and statement.name.value == func.value
            ),
            None,
        )
        if function is None:
            return ""
        inner = seen | {func.value}
        makes = any(CREATES_VARIABLES.match(name) for name in self.calls_in(function.body)) or any(
            isinstance(node, cst.Call) and self.variable_factory(node.func, inner)
            for node in descendants(function.body)
        )
        if not makes:
            return ""
        made: set[str] = set()  # names the function binds to a new variable
        for node in descendants(function.body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                if self.new_variable(node.value, inner):
                    made.add(node.targets[0].target.value)
        returns = [node.value for node in descendants(function.body) if isinstance(node, cst.Return)]
        if returns and all(
            value is not None
            and ((isinstance(value, cst.Name) and value.value in made) or self.new_variable(value, inner))
            for value in returns
        ):
            return "variable"
        return "other"

    def new_variable(self, value: cst.BaseExpression, seen: frozenset[str]) -> bool:
        """``tf.Variable(...)``, or a call of a function of this file that returns one."""
        return isinstance(value, cst.Call) and (
            re.match(r"^tensorflow\.Variable$", self.qualified(value.func) or "") is not None
            or self.variable_factory(value.func, seen) == "variable"
        )

    def check_imported_calls(self, node: cst.CSTNode, line: int) -> None:
        """A function imported from another module may make variables at each call: not proven here."""
        for found in descendants(node):
            if not isinstance(found, cst.Call):
                continue
            name = self.qualified(found.func)
            if name is not None and not name.startswith(TRUSTED_MODULES):
                raise Fallback(line, f"the graph calls `{name}`, whose variables (if it makes any) are not traced here")

    def module_plan(self, name: str, line: int) -> ModulePlan:
        """The tf.Module plan for model function ``name``, or a Fallback saying why it cannot be one."""
        if not hasattr(self, "module_plans"):
            self.module_plans = {}
        if name in self.module_plans:
            return self.module_plans[name]
        function = next(
            (
                statement
                for statement in [*self.module.body, *self.body]
                if isinstance(statement, cst.FunctionDef) and statement.name.value == name
            ),
            None,
        )
        if function is None:
            raise Fallback(line, f"`{name}` makes variables and is not a function of this file")
        where = self.line(function)
        params = function.params
        if (
            function.decorators
            or params.posonly_params
            or params.kwonly_params
            or not isinstance(params.star_arg, cst.MaybeSentinel)
            or params.star_kwarg is not None
        ):
            raise Fallback(where, f"`{name}` makes variables and has decorators or */** parameters")
        parameters = [param.name.value for param in params.params]
        assert isinstance(function.body, cst.IndentedBlock)
        statements, reuse = self.straight_line(function, list(function.body.body))
        if not statements or not isinstance(statements[-1].body[0], cst.Return):
            raise Fallback(where, f"`{name}` makes variables and does not end with one `return`")
        graph = self.graph_names()
        init: list[cst.SimpleStatementLine] = []
        calls: list[cst.SimpleStatementLine] = []
        attributes: dict[str, str] = {}  # local variable -> self attribute
        locals_: set[str] = set(parameters)
        layer_counts: dict[str, int] = {}
        for position, statement in enumerate(statements):
            if isinstance(statement, cst.If):  # a branch on parameters (parameter_branch): computed at each call
                calls.append(self.layers_to_members(statement, init, layer_counts, set(parameters), locals_))
                locals_.update(bound_names(statement))
                continue
            small = statement.body[0]
            if position == 0 and isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString):
                calls.append(statement)  # the docstring says what a call computes
                continue
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and self.makes_variable(small.value):
                targets = target_names(small.targets[0].target) if len(small.targets) == 1 else None
                if targets is None or len(targets) != 1 or targets[0] in attributes:
                    raise Fallback(
                        self.line(statement), f"`{name}` binds a variable to something other than a new name"
                    )
                if names_read(small.value) & (locals_ - set(parameters)):
                    raise Fallback(
                        self.line(statement), f"`{name}` makes a variable from what it computed (not made once here)"
                    )
                attribute = targets[0] + ("_" if targets[0] in _MODULE_MEMBERS else "")
                attributes[targets[0]] = attribute
                init.append(self.as_member(statement, targets[0], attribute))
                locals_.add(targets[0])
                continue
            if isinstance(small, (cst.Assign, cst.Return)) or (
                isinstance(small, cst.Expr) and not isinstance(small.value, cst.SimpleString)
            ):
                if isinstance(small, cst.Assign):
                    if len(small.targets) != 1 or target_names(small.targets[0].target) is None:
                        raise Fallback(self.line(statement), f"`{name}` assigns to something other than names")
                    if set(target_names(small.targets[0].target) or ()) & set(attributes):
                        raise Fallback(self.line(statement), f"`{name}` rebinds one of its variables")
                built = self.layers_to_members(statement, init, layer_counts, set(parameters), locals_)
                calls.append(built)
                locals_.update(bound_names(statement))
                continue
            raise Fallback(self.line(statement), f"`{name}` makes variables and holds a statement not rewritten here")
        calls = [self.with_members(statement, attributes) for statement in calls]
        for statement in calls:
            for called in self.calls_in(statement):
                if CREATES_VARIABLES.match(called):
                    raise Fallback(self.line(function), f"`{name}` makes variables with `{called}`, not rewritten here")
            self.check_imported_calls(statement, self.line(function))
            read = names_read(statement) - locals_ - {"self"}
            if read & graph:
                raise Fallback(self.line(function), f"`{name}` reads graph tensors as globals")
            for other in read:
                if self.variable_factory(cst.Name(other)):
                    raise Fallback(self.line(function), f"`{name}` calls `{other}`, which makes variables too")
        init_read = set().union(set(), *(names_read(statement.body[0]) for statement in init))
        call_read = set().union(set(), *(names_read(statement) for statement in calls))
        init_params = [param for param in parameters if param in init_read and param != reuse]
        call_params = [param for param in parameters if param in call_read and param != reuse]
        class_name = self.fresh("".join(part.title() for part in name.split("_") if part) or "Model")
        rendered = self.render_module(function, class_name, init_params, call_params, init, calls)
        if reuse is not None and attributes and layer_counts:
            # reuse=True shares tf.layers' variables (made by get_variable) and never tf.Variable's.
            raise Fallback(where, f"`{name}` mixes tf.Variable and tf.layers under variable_scope reuse")
        plan = ModulePlan(function, class_name, init_params, call_params, reuse, rendered, not attributes)
        self.module_plans[name] = plan
        if any(statement is function for statement in self.body):
            self.replacements[id(function)] = (rendered,)
        else:
            self.module_replacements[id(function)] = rendered
        self.changes.append(
            CompatChange(
                where,
                1,
                f"`{name}` makes variables and returns what it computes from them -> tf.Module `{class_name}`: "
                "the variables are made once with the instance, a call computes the result",
            )
        )
        return plan

    def straight_line(
        self, function: cst.FunctionDef, statements: list[cst.BaseStatement]
    ) -> tuple[list[cst.SimpleStatementLine], str | None]:
        """The function's statements with scope blocks opened, and the parameter given as ``reuse=``."""
        name = function.name.value
        parameters = {param.name.value for param in function.params.params}
        flat: list[cst.SimpleStatementLine] = []
        reuse: str | None = None
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                flat.append(statement)
                continue
            if isinstance(statement, cst.With) and len(statement.items) == 1 and statement.items[0].asname is None:
                call = statement.items[0].item
                if isinstance(call, cst.Call) and self.qualified(call.func) in _SCOPES:
                    for arg in call.args:
                        keyword = arg.keyword.value if arg.keyword is not None else None
                        if keyword == "reuse":
                            if not (isinstance(arg.value, cst.Name) and arg.value.value in parameters):
                                raise Fallback(
                                    self.line(statement), f"`{name}`'s variable_scope reuse= is not a parameter"
                                )
                            reuse = arg.value.value
                        elif keyword not in (None, "name", "name_or_scope", "default_name", "values"):
                            raise Fallback(self.line(statement), f"`{name}`'s scope with {keyword}= is not rewritten")
                    assert isinstance(statement.body, cst.IndentedBlock)
                    inner, inner_reuse = self.straight_line(function, list(statement.body.body))
                    flat += inner
                    reuse = reuse or inner_reuse
                    continue
            if isinstance(statement, cst.If) and self.parameter_branch(statement, parameters):
                flat.append(statement)  # type: ignore[arg-type]  # computed in __call__, as it stands
                continue
            raise Fallback(
                self.line(statement), f"`{name}` makes variables in a loop, branch or block (not a straight line)"
            )
        return flat, reuse

    def makes_variable(self, call: cst.Call) -> bool:
        """``tf.Variable(...)``, or a call of a function of this file that returns a new variable."""
        qualified = self.qualified(call.func) or ""
        return bool(re.match(r"^tensorflow\.(compat\.v1\.)?Variable$", qualified)) or (
            self.variable_factory(call.func) == "variable"
        )

    def parameter_branch(self, statement: cst.If, parameters: set[str]) -> bool:
        """``if activation_function is None: out = z else: out = activation_function(z)``: a branch on
        the function's parameters (Python values at every call) that makes no variable and whose
        blocks only assign: the same choice at each call, so it stays as it is in ``__call__``."""
        if names_read(statement.test) - parameters - {"None", "True", "False"}:
            return False
        for node in descendants(statement):
            if isinstance(node, cst.Call) and (self.makes_variable(node) or self.variable_factory(node.func)):
                return False
            if isinstance(node, (cst.For, cst.While, cst.With, cst.Try, cst.Return, cst.FunctionDef, cst.ClassDef)):
                return False
        return True

    def as_member(self, statement: cst.SimpleStatementLine, local: str, attribute: str) -> cst.SimpleStatementLine:
        small = statement.body[0]
        assert isinstance(small, cst.Assign)
        target = cst.AssignTarget(cst.Attribute(cst.Name("self"), cst.Name(attribute)))
        return statement.with_changes(body=[small.with_changes(targets=[target])])

    def layers_to_members(
        self,
        statement: cst.SimpleStatementLine,
        init: list[cst.SimpleStatementLine],
        counts: dict[str, int],
        parameters: set[str],
        locals_: set[str],
    ) -> cst.SimpleStatementLine:
        """``tf.layers.dense(h, 10)`` -> ``self.dense_1(h)``, with ``self.dense_1 = keras.layers.Dense(10)`` made once."""
        rewrite = self
        line = self.line(statement)

        class Layers(cst.CSTTransformer):
            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                qualified = rewrite.qualified(original.func) or ""
                if not (qualified == FLATTEN or qualified.startswith(LAYER_MODULES)):
                    return updated
                hoisted: list[cst.BaseStatement] = []
                holders = len(rewrite.holders)
                expression = rewrite.layer_call(qualified, updated, line, hoisted)
                del rewrite.holders[holders:]  # the layer is the instance's: the Checkpoint reaches it there
                if not hoisted:
                    return expression  # dropout that never drops: tf.identity
                made = hoisted[0]
                assert isinstance(made, cst.SimpleStatementLine) and isinstance(made.body[0], cst.Assign)
                if names_read(made.body[0].value) & (locals_ - parameters):
                    raise Fallback(line, "a layer's settings read what the function computed (not made once here)")
                member = qualified.rpartition(".")[2]
                counts[member] = counts.get(member, 0) + 1
                attribute = f"{member}_{counts[member]}"
                init.append(
                    made.with_changes(
                        body=[
                            made.body[0].with_changes(
                                targets=[cst.AssignTarget(cst.Attribute(cst.Name("self"), cst.Name(attribute)))]
                            )
                        ]
                    )
                )
                assert isinstance(expression, cst.Call)
                return expression.with_changes(func=cst.Attribute(cst.Name("self"), cst.Name(attribute)))

        new = statement.visit(Layers())
        assert isinstance(new, (cst.SimpleStatementLine, cst.If))
        return new

    def with_members(self, statement: cst.SimpleStatementLine, attributes: dict[str, str]) -> cst.SimpleStatementLine:
        """The function's variables read as the instance's members (``W`` -> ``self.W``)."""
        reads: set[int] = set()

        class Reads(ValueReader):
            def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
                return False

            def visit_Name(self, node: cst.Name) -> None:
                if node.value in attributes:
                    reads.add(id(node))

        statement.visit(Reads())

        class Members(cst.CSTTransformer):
            def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
                if id(original) in reads:
                    return cst.Attribute(cst.Name("self"), cst.Name(attributes[original.value]))
                return updated

        new = statement.visit(Members())
        assert isinstance(new, (cst.SimpleStatementLine, cst.If))
        return new

    def render_module(
        self,
        function: cst.FunctionDef,
        class_name: str,
        init_params: list[str],
        call_params: list[str],
        init: list[cst.SimpleStatementLine],
        calls: list[cst.SimpleStatementLine],
    ) -> cst.ClassDef:
        tf = self.tf
        defaults = {
            param.name.value: self.code(param.default) for param in function.params.params if param.default is not None
        }

        def signature(names: list[str]) -> str:
            return ", ".join(["self", *(f"{n}={defaults[n]}" if n in defaults else n for n in names)])

        skeleton = cst.parse_statement(
            f"class {class_name}({tf}.Module):\n"
            f'    """`{function.name.value}` of the TF1 script: its variables are made once, with the instance; a call\n'
            '    computes what the function returned from their current values (TF1 recomputed it at every run)."""\n'
            "\n"
            f"    def __init__({signature(init_params)}):\n"
            "        super().__init__()\n"
            "\n"
            f"    def __call__({signature(call_params)}):\n"
            "        pass\n"
        )
        assert isinstance(skeleton, cst.ClassDef) and isinstance(skeleton.body, cst.IndentedBlock)
        docstring, init_def, call_def = skeleton.body.body
        assert isinstance(init_def, cst.FunctionDef) and isinstance(init_def.body, cst.IndentedBlock)
        assert isinstance(call_def, cst.FunctionDef) and isinstance(call_def.body, cst.IndentedBlock)
        first = [line.with_changes(indent=True) for line in calls[0].leading_lines] if calls else []
        body_init = [*init_def.body.body, *(s.with_changes(leading_lines=s.leading_lines) for s in init)]
        body_call = [calls[0].with_changes(leading_lines=first), *calls[1:]] if calls else list(call_def.body.body)
        init_def = init_def.with_changes(body=init_def.body.with_changes(body=body_init))
        call_def = call_def.with_changes(body=call_def.body.with_changes(body=body_call))
        comments = list(function.leading_lines)
        while comments and comments[0].comment is None:
            comments.pop(0)
        top_level = any(statement is function for statement in self.module.body)
        blank = [cst.EmptyLine(indent=False)] * 2 if top_level else self.blank_lines()
        return skeleton.with_changes(
            leading_lines=[*blank, *comments],
            body=skeleton.body.with_changes(body=[docstring, init_def, call_def]),
        )

    def check_model_uses(self) -> None:
        """A model function may only be called in the graph's definitions (they become instance calls)."""
        plans = getattr(self, "module_plans", {})
        if not plans:
            return
        owner = self.scope_owner
        outside = [s for s in self.module.body if s is not owner] if owner is not None else []
        for statement in [*self.body, *outside]:
            if id(statement) in self.removed or any(statement is plan.function for plan in plans.values()):
                continue
            for node in descendants(statement):
                if isinstance(node, cst.Name) and node.value in plans:
                    raise Fallback(
                        self.line(node), f"model function `{node.value}` is used outside the graph's definitions"
                    )

    # --- calls of a model function in the graph -> an instance made once, called in the steps ----------
    def helper_call(
        self, original: cst.Call, updated: cst.Call, line: int, hoisted: list[cst.BaseStatement]
    ) -> cst.BaseExpression:
        func = original.func
        if not (isinstance(func, cst.Name) and func.value in getattr(self, "module_plans", {})):
            return updated
        name = func.value
        plan = self.module_plans[name]
        parameters = [param.name.value for param in plan.function.params.params]
        given: dict[str, cst.BaseExpression] = {}
        for position, arg in enumerate(updated.args):
            if arg.star:
                raise Fallback(line, f"`{name}` called with * or ** arguments")
            key = (
                arg.keyword.value
                if arg.keyword is not None
                else parameters[position]
                if position < len(parameters)
                else ""
            )
            if key not in parameters:
                raise Fallback(line, f"`{name}` called with arguments it does not take")
            given[key] = arg.value
        graph = self.graph_names()
        for param in plan.init_params:
            value = given.get(param)
            if value is not None and names_read(value) & graph:
                raise Fallback(line, f"`{name}`'s variables are made from `{param}`, a graph tensor here")
            if (
                value is not None
                and param in plan.call_params
                and any(isinstance(node, cst.Call) for node in descendants(value))
            ):
                raise Fallback(line, f"`{name}` gets `{param}` from a call, which the rewrite would run twice")
        reuse = given.get(plan.reuse_param) if plan.reuse_param else None
        if reuse is None and plan.reuse_param:
            default = next(p.default for p in plan.function.params.params if p.name.value == plan.reuse_param)
            reuse = default
        reuse_code = self.code(reuse) if reuse is not None else "None"
        shares = plan.shared_by_reuse and (
            reuse_code == "True" or (reuse_code.endswith("AUTO_REUSE") and bool(plan.instances))
        )
        if not plan.shared_by_reuse and reuse_code not in ("None", "False"):
            reuse_code = "None"  # TF1's tf.Variable ignores variable_scope reuse: each call made new ones
        if shares:
            if not plan.instances:
                raise Fallback(line, f"`{name}` called with reuse=True before any call made its variables")
            instance = plan.instances[-1]  # TF1 shared the variables of the scope's earlier call
        elif reuse_code in ("None", "False") or reuse_code.endswith("AUTO_REUSE"):
            instance = name if not plan.instances else self.fresh(f"{name}_{len(plan.instances) + 1}")
            plan.instances.append(instance)
            arguments = self.arguments(plan.init_params, given)
            hoisted.append(cst.parse_statement(f"{instance} = {plan.class_name}({arguments})\n"))
            self.holders.append((instance, -1))
        else:
            raise Fallback(line, f"`{name}` called with reuse={reuse_code}, which is not read here")
        return cst.parse_expression(f"{instance}({self.arguments(plan.call_params, given)})")

    def arguments(self, params: list[str], given: dict[str, cst.BaseExpression]) -> str:
        """The given arguments for ``params``: positional while none is left out, then by keyword."""
        rendered: list[str] = []
        positional = True
        for param in params:
            if param not in given:
                positional = False
                continue
            value = self.code(given[param])
            rendered.append(value if positional else f"{param}={value}")
        return ", ".join(rendered)
