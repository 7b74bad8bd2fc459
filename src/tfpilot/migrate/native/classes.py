"""A model class that builds the graph in ``__init__`` -> that graph, built where the instance was made.

The commonest TF1 layout after the plain script: ``class Model: def __init__(self, ...):
self.x = tf.placeholder(...) ... self.train_op = opt.minimize(self.loss)``, one instance made in
``main()``, and the Session loop feeding ``model.x`` and fetching ``model.train_op``. In TF1 making
the instance ran ``__init__`` once, which put placeholders, variables and ops into the default graph;
the object only kept handles to them. So building the same statements where the instance is made,
with each ``self.attr`` handle a plain name (``model.loss`` -> ``loss``), puts the same graph in the
same place, and the rest of the native rewrite (placeholders -> step parameters, Session loop ->
tf.function calls) then applies as to any script.

Only the plain shape is taken, every condition checked, and anything else leaves the source as it
was (the native rewrite then keeps the file on compat with its own reason): no base class but
``object``; methods only ``__init__`` and builders it calls as ``self.build()`` statements without
arguments; one instance, ``NAME = Model(...)``, whose only uses in its scope are reads of attributes
``__init__`` set; ``self`` used for nothing else; no ``return``, nested definitions, ``global``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import cast

import libcst as cst

from tfpilot.migrate.compat import CompatChange
from tfpilot.migrate.native.syntax import descendants

__all__ = ["inline_graph_classes"]

_TF_CALL = re.compile(r"\btf\.")


class _Refuse(Exception):
    """This class is not the plain shape: leave the source as it is."""


@dataclasses.dataclass
class _Plan:
    cls: cst.ClassDef
    init: cst.FunctionDef
    builders: dict[str, cst.FunctionDef]
    attrs: list[str]  # attributes set on self, in order of first assignment
    aliases: dict[str, str]  # attribute -> the parameter it is set to, its only assignment


def inline_graph_classes(source: str) -> tuple[str, list[CompatChange]]:
    """Each plain graph-building class with one instance is built where its instance is made."""
    changes: list[CompatChange] = []
    for _ in range(8):  # one class per pass; a file rarely has more than one or two
        try:
            module = cst.parse_module(source)
        except cst.ParserSyntaxError:
            return source, changes
        done = False
        for statement in module.body:
            if not isinstance(statement, cst.ClassDef):
                continue
            try:
                source, change = _inline(module, statement)
            except _Refuse:
                continue
            changes.append(change)
            done = True
            break
        if not done:
            break
    return source, changes


def _plan(cls: cst.ClassDef, module: cst.Module) -> _Plan:
    for base in cls.bases:
        if not (isinstance(base.value, cst.Name) and base.value.value == "object") or base.keyword is not None:
            raise _Refuse
    if cls.decorators or not isinstance(cls.body, cst.IndentedBlock):
        raise _Refuse
    methods: dict[str, cst.FunctionDef] = {}
    for index, member in enumerate(cls.body.body):
        if isinstance(member, cst.FunctionDef):
            if member.decorators or member.asynchronous is not None:
                raise _Refuse
            methods[member.name.value] = member
        elif not (index == 0 and _is_docstring(member)) and not _is_pass(member):
            raise _Refuse
    init = methods.pop("__init__", None)
    if init is None or not _TF_CALL.search(module.code_for_node(cls)):
        raise _Refuse
    params = init.params
    if params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or params.star_kwarg or params.kwonly_params:
        raise _Refuse
    if params.posonly_params or not params.params or params.params[0].name.value != "self":
        raise _Refuse
    builders: dict[str, cst.FunctionDef] = {}
    order: list[str] = []

    def take(function: cst.FunctionDef, seen: tuple[str, ...]) -> None:
        for statement in _body(function):
            called = _builder_call(statement)
            if called is not None:
                if called in seen or called not in methods:
                    raise _Refuse
                method = methods[called]
                if len(method.params.params) != 1 or method.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT):
                    raise _Refuse
                builders[called] = method
                take(method, (*seen, called))
        for node in descendants(function.body):
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Global, cst.Nonlocal, cst.Yield)):
                raise _Refuse
            if isinstance(node, cst.Return):
                raise _Refuse
            if isinstance(node, cst.Attribute) and _is_self(node.value):
                if node.attr.value in methods and node.attr.value not in builders:
                    raise _Refuse
            if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Attribute):
                if _is_self(node.target.value) and node.target.attr.value not in order:
                    order.append(node.target.attr.value)
            if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Attribute):
                if _is_self(node.target.value) and node.target.attr.value not in order:
                    order.append(node.target.attr.value)

    take(init, ("__init__",))
    if set(methods) - set(builders):
        raise _Refuse  # a method the program calls on the instance: the object is more than graph handles
    parameters = {param.name.value for param in params.params[1:]}
    rebound = _bound_in([init, *builders.values()])
    assignments: dict[str, list[cst.SimpleStatementLine]] = {}
    for function in [init, *builders.values()]:
        for node in descendants(function.body):
            if isinstance(node, cst.SimpleStatementLine):
                attr = _assigned_attr(node)
                if attr is not None:
                    assignments.setdefault(attr, []).append(node)
    aliases: dict[str, str] = {}
    augmented = {  # `self.attr += ...`: assigned more than once
        n.target.attr.value
        for f in [init, *builders.values()]
        for n in descendants(f.body)
        if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Attribute) and _is_self(n.target.value)
    }
    for attr in order:
        statements = assignments.get(attr, [])
        if len(statements) == 1 and attr not in augmented:
            small = statements[0].body[0]
            assert isinstance(small, cst.Assign)
            if isinstance(small.value, cst.Name) and small.value.value in parameters - rebound:
                aliases[attr] = small.value.value
    return _Plan(cls, init, builders, order, aliases)


def _sole_assign(statement: cst.CSTNode) -> cst.Assign | None:
    """The statement when it is one assignment to one target (``a = ...``, ``self.a = ...``), else None."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            return small
    return None


def _assigned_attr(statement: cst.CSTNode) -> str | None:
    """``self.attr = ...`` as the whole statement: the attribute's name."""
    assign = _sole_assign(statement)
    target = assign.targets[0].target if assign is not None else None
    return target.attr.value if isinstance(target, cst.Attribute) and _is_self(target.value) else None


def _inline(module: cst.Module, cls: cst.ClassDef) -> tuple[str, CompatChange]:
    plan = _plan(cls, module)
    class_name = cls.name.value
    # The one instance: NAME = Class(...) as a statement of a function body or of the module.
    sites: list[tuple[cst.SimpleStatementLine, str, cst.Call]] = []
    other_uses = 0
    for node in descendants(module):
        if isinstance(node, cst.Name) and node.value == class_name:
            other_uses += 1
        assign = _sole_assign(node)
        if (
            assign is not None
            and isinstance(assign.targets[0].target, cst.Name)
            and isinstance(assign.value, cst.Call)
            and isinstance(assign.value.func, cst.Name)
            and assign.value.func.value == class_name
        ):
            assert isinstance(node, cst.SimpleStatementLine)
            sites.append((node, assign.targets[0].target.value, assign.value))
    if len(sites) != 1 or other_uses != 2:  # the class's own name and the one call
        raise _Refuse
    site, instance, call = sites[0]
    scope = _scope_of(module, site)
    taken = _all_names(module, skip=cls)
    names: dict[str, str] = {}

    def fresh(base: str) -> str:
        for candidate in [base, f"{instance}_{base}", *(f"{instance}_{base}_{i}" for i in range(2, 99))]:
            if candidate not in taken and candidate.isidentifier():
                taken.add(candidate)
                return candidate
        raise _Refuse

    # Parameters: a Name or literal argument is used as it is; anything else is bound once first.
    params = plan.init.params.params[1:]
    given: dict[str, cst.BaseExpression] = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            raise _Refuse
        if arg.keyword is None:
            if index >= len(params):
                raise _Refuse
            given[params[index].name.value] = arg.value
        else:
            given[arg.keyword.value] = arg.value
    functions = [plan.init, *plan.builders.values()]
    body_locals = _bound_in(functions)
    scope_bound = _bound_in([scope]) if isinstance(scope, cst.FunctionDef) else set()
    free = _read_in(functions) - body_locals - {p.name.value for p in params} - {"self"}
    if free & scope_bound:
        raise _Refuse  # the body reads a global the instance's function shadows
    taken |= free
    substitute: dict[str, cst.BaseExpression] = {}
    bindings: list[cst.BaseStatement] = []
    for param in params:
        name = param.name.value
        value = given.pop(name, None)
        if value is None:
            if param.default is None:
                raise _Refuse
            value = param.default
        if name not in body_locals and _is_simple(value):
            substitute[name] = value
        else:
            local = fresh(name)
            substitute[name] = cst.Name(local)
            bindings.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(local))], value)]))
    if given:
        raise _Refuse
    # `self.config = config` of a parameter given a name: `model.config` is that name itself.
    attrs: dict[str, cst.BaseExpression] = {}  # attribute -> what `self.attr` / `instance.attr` becomes
    aliased: set[str] = set()
    for attr in plan.attrs:
        parameter = plan.aliases.get(attr)
        if parameter is not None and isinstance(substitute.get(parameter), (cst.Name, cst.Attribute)):
            attrs[attr] = substitute[parameter]
            aliased.add(attr)
        else:
            names[attr] = fresh(attr)
            attrs[attr] = cst.Name(names[attr])
    for local in sorted(body_locals - set(substitute)):
        substitute[local] = cst.Name(fresh(local))
    # Everything the instance is used for in its scope must be reading an attribute __init__ set.
    uses = _AttributeUses(instance, attrs)
    new_scope = cast(cst.CSTNode, scope.visit(uses))
    if uses.refused:
        raise _Refuse
    if sum(1 for node in descendants(new_scope) if isinstance(node, cst.Name) and node.value == instance) != 1:
        raise _Refuse  # the instance itself is used (passed to a function, printed ...): more than handles
    body = [statement for statement in _expand(plan.init, plan) if _assigned_attr(statement) not in aliased]
    renamer = _Renamer(attrs, substitute)
    statements = [cast(cst.BaseStatement, statement.visit(renamer)) for statement in body]
    if renamer.refused:
        raise _Refuse
    statements = [s for s in statements if not _is_self_assignment(s)]
    comment = cst.EmptyLine(
        comment=cst.Comment(
            f"# tfpilot migrate: `{instance} = {class_name}(...)` built its graph here in TF1; "
            f"its statements now stand here, `{instance}.attr` as plain names"
        )
    )
    new: list[cst.BaseStatement] = [*bindings, *statements]
    if not new:
        raise _Refuse
    new[0] = new[0].with_changes(leading_lines=[*site.leading_lines, comment])
    replaced = cast(cst.CSTNode, new_scope.visit(_Replace(site, new)))
    result = module.visit(_Swap(scope, replaced, cls))
    line = _line_of(module, cls)
    change = CompatChange(
        line,
        1,
        f"class `{class_name}` only built the graph in `__init__` and kept handles to it: its statements are built "
        f"where `{instance}` was made, `{instance}.x` -> plain names (e.g. {_examples(names)})",
    )
    return result.code, change


def _examples(names: dict[str, str]) -> str:
    pairs = [f"`{attr}` -> `{value}`" for attr, value in list(names.items())[:3]]
    return ", ".join(pairs)


def _line_of(module: cst.Module, node: cst.CSTNode) -> int:
    return module.code[: module.code.find(module.code_for_node(node).lstrip())].count("\n") + 1


def _expand(function: cst.FunctionDef, plan: _Plan) -> list[cst.BaseStatement]:
    """The function's statements with each ``self.build()`` replaced by the builder's statements."""
    out: list[cst.BaseStatement] = []
    for statement in _body(function):
        called = _builder_call(statement)
        if called is not None:
            out.extend(_expand(plan.builders[called], plan))
        elif not _is_docstring(statement):
            out.append(statement)
    return out


def _body(function: cst.FunctionDef) -> list[cst.BaseStatement]:
    if not isinstance(function.body, cst.IndentedBlock):
        raise _Refuse
    return list(function.body.body)


def _builder_call(statement: cst.BaseStatement) -> str | None:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and not small.value.args:
            func = small.value.func
            if isinstance(func, cst.Attribute) and _is_self(func.value):
                return func.attr.value
    return None


def _is_self(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "self"


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_pass(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(isinstance(s, cst.Pass) for s in statement.body)


def _is_simple(value: cst.BaseExpression) -> bool:
    if isinstance(value, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, (cst.Integer, cst.Float)):
        return True
    return isinstance(value, cst.Attribute) and _is_simple(value.value)


def _is_self_assignment(statement: cst.BaseStatement) -> bool:
    """``x = x``, what ``self.x = x`` becomes when both are the same name."""
    assign = _sole_assign(statement)
    return (
        assign is not None
        and isinstance(assign.targets[0].target, cst.Name)
        and isinstance(assign.value, cst.Name)
        and assign.targets[0].target.value == assign.value.value
    )


def _all_names(module: cst.Module, skip: cst.CSTNode) -> set[str]:
    """Every variable name of the module outside the class (attribute members and keywords are no names)."""
    names: set[str] = set()
    members: set[int] = set()

    class Collect(cst.CSTVisitor):
        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            names.add(node.name.value)
            return node is not skip

        def visit_Attribute(self, node: cst.Attribute) -> None:
            members.add(id(node.attr))

        def visit_Arg(self, node: cst.Arg) -> None:
            if node.keyword is not None:
                members.add(id(node.keyword))

        def visit_Name(self, node: cst.Name) -> None:
            if id(node) not in members:
                names.add(node.value)

    module.visit(Collect())
    return names


def _bound_in(nodes: Sequence[cst.CSTNode]) -> set[str]:
    bound: set[str] = set()
    for root in nodes:
        body = root.body if isinstance(root, cst.FunctionDef) else root
        for node in descendants(body):
            target = None
            if isinstance(node, cst.AssignTarget):
                target = node.target
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                target = node.target
            elif isinstance(node, (cst.For, cst.CompFor)):
                target = node.target
            elif isinstance(node, cst.AsName):
                target = node.name
            if target is not None:
                for inner in descendants(target):
                    if isinstance(inner, cst.Name) and not _is_member(target, inner):
                        bound.add(inner.value)
    return bound


def _is_member(target: cst.CSTNode, name: cst.Name) -> bool:
    """The name is an attribute's member (``self.x``'s ``x``), not a variable."""
    for node in descendants(target):
        if isinstance(node, cst.Attribute) and node.attr is name:
            return True
    return False


def _read_in(functions: Sequence[cst.FunctionDef]) -> set[str]:
    read: set[str] = set()
    for function in functions:
        members = {id(n.attr) for n in descendants(function.body) if isinstance(n, cst.Attribute)}
        keywords = {
            id(n.keyword) for n in descendants(function.body) if isinstance(n, cst.Arg) and n.keyword is not None
        }
        for node in descendants(function.body):
            if isinstance(node, cst.Name) and id(node) not in members and id(node) not in keywords:
                read.add(node.value)
    return read


def _scope_of(module: cst.Module, site: cst.CSTNode) -> cst.CSTNode:
    """The module-level function holding the site, or the module."""
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and any(node is site for node in descendants(statement)):
            return statement
    if any(node is site for node in descendants(module)):
        return module
    raise _Refuse


class _AttributeUses(cst.CSTTransformer):
    """``instance.attr`` -> the attribute's new name; any other use of the instance is stray."""

    def __init__(self, instance: str, names: dict[str, cst.BaseExpression]) -> None:
        self.instance = instance
        self.names = names
        self.refused = False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        if isinstance(node.target, cst.Attribute) and isinstance(node.target.value, cst.Name):
            if node.target.value.value == self.instance:
                self.refused = True  # the program sets an attribute: more than graph handles
        return True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if isinstance(updated.value, cst.Name) and updated.value.value == self.instance:
            new = self.names.get(updated.attr.value)
            if new is None:
                self.refused = True
                return updated
            return new
        return updated


class _Renamer(cst.CSTTransformer):
    """Inside the inlined body: ``self.attr`` -> its name, parameters and locals -> theirs."""

    def __init__(self, attrs: dict[str, cst.BaseExpression], names: dict[str, cst.BaseExpression]) -> None:
        self.attrs = attrs
        self.names = names
        self.refused = False
        self.member_ids: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.member_ids.add(id(node.attr))
        if _is_self(node.value):
            self.member_ids.add(id(node.value))  # replaced with the whole attribute on the way out
        return True

    def visit_Arg(self, node: cst.Arg) -> bool:
        if node.keyword is not None:
            self.member_ids.add(id(node.keyword))
        return True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if _is_self(updated.value):
            new = self.attrs.get(updated.attr.value)
            if new is None:
                self.refused = True
                return updated
            return new
        return updated

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if id(original) in self.member_ids:
            return updated
        if original.value == "self":
            self.refused = True
            return updated
        return self.names.get(original.value, updated)


class _Replace(cst.CSTTransformer):
    def __init__(self, site: cst.CSTNode, new: list[cst.BaseStatement]) -> None:
        self.site = site
        self.new = new
        self.done = False

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        if original.deep_equals(self.site) and not self.done:
            self.done = True
            return cst.FlattenSentinel(self.new)
        return updated


class _Swap(cst.CSTTransformer):
    """The scope replaced by its rewritten copy, the class removed."""

    def __init__(self, scope: cst.CSTNode, replaced: cst.CSTNode, cls: cst.ClassDef) -> None:
        self.scope = scope
        self.replaced = replaced
        self.cls = cls

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        base = self.replaced if original is self.scope else updated
        assert isinstance(base, cst.Module)
        return base.with_changes(
            body=[s for s in base.body if not (isinstance(s, cst.ClassDef) and s.name.value == self.cls.name.value)]
        )

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.BaseStatement:
        if original is self.scope:
            assert isinstance(self.replaced, cst.FunctionDef)
            return self.replaced
        return updated
