"""What a file path expression may end in, wherever its name was bound.

A save path is rarely a literal at the call: ``filepath = os.path.join(save_dir, "vae.tf")`` a few
lines up (often in one branch of an ``if``/``else``), ``model_name += "-best.h5"``,
``self.weights_file = "dqn.h5"`` in ``__init__``, or an absl / argparse default
(``flags.DEFINE_string("output", "./checkpoints/yolov3.tf", ...)``). ``possible_tails`` answers
"which suffixes may this expression end in here": the values of a local name that *reach* the
use (flow-sensitive within one function: an assignment in the ``else`` branch does not reach a
call in the ``if`` branch, a later assignment does not reach an earlier call), then what
parameters receive from the file's call sites, what methods assign to ``self.x``, and the
defaults of the file's command-line flags. ``None`` in the result stands for a value that
cannot be read (an argument of the user's command line without a default, a computed name).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from tfpilot.lint.bindings import KERAS, parameter_defaults
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.patterns import numeric_field, path_literal, string_value

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

__all__ = ["possible_tails", "possible_values", "reaching_values"]

_MAX_DEPTH = 6
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# `"actor-%s.h5" % fileid`: the text after the last conversion is the known tail
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[diouxXeEfFgGcrsa%]")
_ABSL_DEFINE = re.compile(r"^DEFINE_(?:string|enum)$")


def possible_tails(node: ast.AST | None, context: FileContext) -> list[str | None]:
    """The known tails of every value ``node`` may hold where it is used (None: unknown)."""
    if node is None:
        return []
    return _tails(node, context, _owner_of(node, context.tree), 0)


def _tails(node: ast.AST, context: FileContext, owner: ast.AST | None, depth: int) -> list[str | None]:
    if depth > _MAX_DEPTH:
        return [None]
    direct = path_literal(node)
    if direct is not None:
        return [direct]
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, (ast.Add, ast.Div)):
            return _tails(node.right, context, owner, depth + 1)
        if isinstance(node.op, ast.Mod) and string_value(node.left) is not None:
            tail = _PERCENT_SPEC.split(string_value(node.left) or "")[-1]
            return [tail] if tail else [None]
        return [None]
    if isinstance(node, ast.AugAssign):
        if isinstance(node.op, ast.Add):
            return _tails(node.value, context, owner, depth + 1)
        return [None]
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[-1], ast.FormattedValue):
        last = node.values[-1]
        return _tails(last.value, context, owner, depth + 1) if last.format_spec is None else [None]
    if isinstance(node, ast.Call) and node.args and isinstance(node.func, (ast.Name, ast.Attribute)):
        name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        if name == "str" and len(node.args) == 1 and numeric_field("", node.args[0]):
            # `path + "." + str(epoch)`: the name ends in the counter's digits
            return ["<number>"]
        if name in ("join", "Path", "PurePath", "fspath", "str"):
            return _tails(node.args[-1], context, owner, depth + 1)
        if name in ("basename", "abspath", "normpath", "expanduser", "realpath"):
            return _tails(node.args[0], context, owner, depth + 1)
        if name == "latest_checkpoint":
            return ["<tf.train.latest_checkpoint()>"]  # a TF checkpoint prefix (`ckpt-12`), never a Keras file
        return [None]
    if isinstance(node, ast.Name):
        return _name_tails(node, context, owner, depth)
    if isinstance(node, ast.Attribute):
        return _attribute_tails(node, context, depth)
    return [None]


def _name_tails(node: ast.Name, context: FileContext, owner: ast.AST | None, depth: int) -> list[str | None]:
    scope = owner if owner is not None else context.tree
    reached, complete = reaching_values(node.id, node, scope)
    values: list[ast.AST] = list(reached)
    if not complete:
        # not bound on every path inside the function: a parameter or a module-level name
        outside = context.bindings.values(node.id, node, owner)
        if isinstance(scope, _FUNCTIONS) and not _is_parameter(scope, node.id) and reached:
            outside = []  # a local read before its first assignment on some path: nothing reaches
        elif not outside and isinstance(scope, _FUNCTIONS) and _is_parameter(scope, node.id):
            # what the call sites pass, as written (`create_checkpoint(model_name=model.name)`): the
            # binding layer resolves names only, and an attribute it cannot follow may still have a known tail
            outside = _passed_expressions(scope, node.id, context)
        values.extend(v for v in outside if v not in values)
    if not values:
        return [None]
    tails: list[str | None] = []
    for value in values:
        unpacking = _unpacking(value, context)
        if unpacking is not None:
            # `actor_path, critic_path = paths`: the element of what was unpacked
            for element in _elements(unpacking, node.id, context, depth):
                tails.extend(_tails(element, context, _owner_of(element, context.tree), depth + 1))
        elif isinstance(value, (ast.expr, ast.AugAssign)):
            tails.extend(_tails(value, context, _owner_of(value, context.tree), depth + 1))
        else:
            tails.append(None)  # a loop variable, an import
    return tails


def _unpacking(value: ast.AST, context: FileContext) -> ast.Assign | None:
    """The assignment that unpacks into a name: the statement itself (from ``reaching_values``)
    or the assignment holding the target tuple (from the binding layer)."""
    if isinstance(value, ast.Assign):
        return value if any(isinstance(t, (ast.Tuple, ast.List)) for t in value.targets) else None
    if isinstance(value, (ast.Tuple, ast.List)) and isinstance(value.ctx, ast.Store):
        line = value.lineno
        for node in walk_nodes(context.tree):
            if isinstance(node, ast.Assign) and node.lineno == line and any(t is value for t in node.targets):
                return node
    return None


def _elements(assign: ast.Assign, name: str, context: FileContext, depth: int) -> list[ast.expr]:
    """What ``name`` receives from ``a, name = value``: the element of a tuple literal, of the
    tuple a name holds, or of the tuple a function of this file returns. Empty when unknown."""
    target = next((t for t in assign.targets if isinstance(t, (ast.Tuple, ast.List))), None)
    if target is None or any(isinstance(e, ast.Starred) for e in target.elts):
        return []
    index = next((i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name), None)
    if index is None or depth > _MAX_DEPTH:
        return []
    owner = _owner_of(assign, context.tree)
    found: list[ast.expr] = []
    for source in _tuple_sources(assign.value, owner, context, depth):
        if isinstance(source, (ast.Tuple, ast.List)) and len(source.elts) == len(target.elts):
            found.append(source.elts[index])
        else:
            return []
    return found


def _tuple_sources(value: ast.expr, owner: ast.AST | None, context: FileContext, depth: int) -> list[ast.AST]:
    if isinstance(value, (ast.Tuple, ast.List)):
        return [value]
    if isinstance(value, ast.Name):
        reached, complete = reaching_values(value.id, value, owner if owner is not None else context.tree)
        sources: list[ast.AST] = []
        for item in reached if complete else []:
            unpacking = _unpacking(item, context)
            if unpacking is not None:
                elements = _elements(unpacking, value.id, context, depth + 1)
                for element in elements:
                    sources.extend(_tuple_sources(element, _owner_of(element, context.tree), context, depth + 1))
                if not elements:
                    sources.append(item)
            elif isinstance(item, ast.expr):
                sources.extend(_tuple_sources(item, _owner_of(item, context.tree), context, depth + 1))
            else:
                sources.append(item)
        return sources
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        # `weights, misc = setup_files(args)`: what the module-level function returns
        function = next(
            (d for d in reversed(context.tree.body) if isinstance(d, _FUNCTIONS) and d.name == value.func.id), None
        )
        if function is None:
            return [value]
        returned: list[ast.AST] = []
        for node in walk_nodes(function):
            if isinstance(node, ast.Return) and node.value is not None:
                returned.extend(_tuple_sources(node.value, function, context, depth + 1))
        return returned or [value]
    return [value]


def possible_values(node: ast.Name, context: FileContext, depth: int = 0) -> list[ast.AST]:
    """The expressions a name may hold where it is used, names followed to their values and
    tuple unpacking to the element (``agent, train = setup_agent(args)`` -> each ``agent = ...``
    of setup_agent); a value that cannot be followed is kept as it is."""
    if depth > _MAX_DEPTH:
        return [node]
    owner = _owner_of(node, context.tree)
    scope = owner if owner is not None else context.tree
    reached, complete = reaching_values(node.id, node, scope)
    values: list[ast.AST] = list(reached)
    if not complete:
        values.extend(v for v in context.bindings.values(node.id, node, owner) if v not in values)
    found: list[ast.AST] = []
    for value in values:
        unpacking = _unpacking(value, context)
        expanded: list[ast.AST] = list(_elements(unpacking, node.id, context, depth)) if unpacking else [value]
        for item in expanded or [value]:
            if isinstance(item, ast.Name) and item is not node:
                found.extend(v for v in possible_values(item, context, depth + 1) if v not in found)
            elif item not in found:
                found.append(item)
    return found


def _attribute_tails(node: ast.Attribute, context: FileContext, depth: int) -> list[str | None]:
    dotted = context.dotted(node)
    if dotted is None:
        return [None]
    if dotted.startswith("self.") and dotted.count(".") == 1:
        values = context.bindings.values(dotted, node, None)
        if not values:
            return [None]
        tails: list[str | None] = []
        for value in values:
            if isinstance(value, ast.expr):
                tails.extend(_tails(value, context, _owner_of(value, context.tree), depth + 1))
            else:
                tails.append(None)
        return tails
    default = _flag_defaults(context).get(node.attr)
    if default is not None and dotted != "self." + node.attr:
        return [default]
    if node.attr == "name" and _is_keras_object(node.value, context):
        return [MODEL_NAME_TAIL]
    return [None]


# The tail of `model.name`: a Keras model's or layer's name (`sequential_3`, `model_7`) carries no file extension.
MODEL_NAME_TAIL = "<its Keras name>"


def _is_keras_object(node: ast.expr, context: FileContext) -> bool:
    receiver = context.dotted(node)
    if receiver is None:
        return False
    return context.bindings.kinds(receiver, node, _owner_of(node, context.tree)) == {KERAS}


def _flag_defaults(context: FileContext) -> dict[str, str]:
    """Command-line options of this file with a literal string default: absl's
    ``flags.DEFINE_string("output", "out.tf", ...)`` and argparse's
    ``parser.add_argument("--output", default="out.tf")`` (read as ``FLAGS.output`` /
    ``args.output``)."""
    if context.flag_defaults is not None:
        return context.flag_defaults
    found: dict[str, str] = {}
    if "DEFINE_" in context.source or "add_argument" in context.source:
        for node in walk_nodes(context.tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if _ABSL_DEFINE.match(name):
                flag = string_value(node.args[0]) if node.args else _keyword_string(node, "name")
                default = string_value(node.args[1]) if len(node.args) > 1 else _keyword_string(node, "default")
                if flag and default:
                    found[flag] = default
            elif name == "add_argument" and node.args:
                options = [string_value(a) or "" for a in node.args]
                long = next((o for o in options if o.startswith("--")), options[0])
                dest = _keyword_string(node, "dest") or long.lstrip("-").replace("-", "_")
                default = _keyword_string(node, "default")
                if dest and default:
                    found[dest] = default
    context.flag_defaults = found
    return found


def _keyword_string(call: ast.Call, name: str) -> str | None:
    for item in call.keywords:
        if item.arg == name:
            return string_value(item.value)
    return None


def _passed_expressions(function: ast.AST, name: str, context: FileContext) -> list[ast.AST]:
    """Every expression the file's call sites pass for parameter ``name`` (the default where a site passes
    none); empty when a site passes ``*args`` / ``**kwargs`` or leaves it with no default."""
    sites = context.bindings.passed(function, name)
    if not sites:
        return []
    defaults = parameter_defaults(function)
    found: list[ast.AST] = []
    for value, _owner in sites:
        value = value if value is not None else defaults.get(name)
        if value is None:
            return []
        found.append(value)
    return found


def _is_parameter(function: ast.AST, name: str) -> bool:
    arguments = function.args  # type: ignore[attr-defined]
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return any(a.arg == name for a in every)


def _owner_of(node: ast.AST, tree: ast.Module) -> ast.AST | None:
    """The innermost function whose body holds ``node`` (None: module level)."""
    line = getattr(node, "lineno", 0)
    owner: ast.AST | None = None
    statements: list[ast.stmt] = tree.body
    while True:
        inner = None
        for statement in statements:
            if statement.lineno <= line <= (statement.end_lineno or statement.lineno):
                inner = statement
                break
        if inner is None:
            return owner
        if isinstance(inner, _FUNCTIONS):
            if inner.lineno == line:
                return owner  # the def line itself: decorators and defaults run outside
            owner = inner
            statements = inner.body
            continue
        children = [child for block in _blocks(inner) for child in block]
        if not children:
            return owner
        statements = children


def _blocks(statement: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists directly inside a compound statement."""
    blocks: list[list[ast.stmt]] = []
    for field in ("body", "orelse", "finalbody"):
        value = getattr(statement, field, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            blocks.append(value)
    for handler in getattr(statement, "handlers", []) or []:
        blocks.append(handler.body)
    for case in getattr(statement, "cases", []) or []:
        blocks.append(case.body)
    return blocks


# --- reaching definitions ------------------------------------------------------------------------


def reaching_values(name: str, use: ast.AST, scope: ast.AST) -> tuple[list[ast.AST], bool]:
    """The values of ``name``'s bindings in ``scope`` (a function or the module) that may reach
    ``use``, and whether some binding reaches on every path (False: on some path the name comes
    from outside, a parameter or a global). A value is the assigned expression, the
    ``AugAssign`` itself, or the binding statement (a loop, an import: value unknown)."""
    chain = _chain(getattr(scope, "body", []), getattr(use, "lineno", 0))
    values: list[ast.AST] = []
    for level in range(len(chain) - 1, -1, -1):
        statements, index = chain[level]
        found, definite = _scan(statements[:index], name)
        _extend(values, found)
        if definite:
            return values, True
        if level == 0:
            break
        container = chain[level - 1][0][chain[level - 1][1]]
        if isinstance(container, (ast.For, ast.AsyncFor, ast.While)) and statements is container.body:
            if isinstance(container, (ast.For, ast.AsyncFor)) and _binds(container.target, name):
                _extend(values, [container])
                return values, True
            # the loop's back edge: what the rest of the body binds reaches the next iteration
            _extend(values, _scan(statements[index + 1 :], name)[0])
        if isinstance(container, (ast.With, ast.AsyncWith)) and any(
            item.optional_vars is not None and _binds(item.optional_vars, name) for item in container.items
        ):
            _extend(values, [container])
            return values, True
        for handler in getattr(container, "handlers", []) or []:
            if statements is handler.body and handler.name == name:
                _extend(values, [handler])
                return values, True
    return values, False


def _extend(values: list[ast.AST], found: list[ast.AST]) -> None:
    values.extend(v for v in found if v not in values)


def _chain(statements: list[ast.stmt], line: int) -> list[tuple[list[ast.stmt], int]]:
    """(statement list, index) from the scope's body down to the statement holding ``line``."""
    chain: list[tuple[list[ast.stmt], int]] = []
    while True:
        index = next(
            (i for i, s in enumerate(statements) if s.lineno <= line <= (s.end_lineno or s.lineno)),
            None,
        )
        if index is None:
            return chain
        chain.append((statements, index))
        statement = statements[index]
        if isinstance(statement, (*_FUNCTIONS, ast.ClassDef)):
            return chain
        inner = next(
            (b for b in _blocks(statement) if b[0].lineno <= line <= (b[-1].end_lineno or b[-1].lineno)),
            None,
        )
        if inner is None:
            return chain
        statements = inner


def _scan(statements: list[ast.stmt], name: str) -> tuple[list[ast.AST], bool]:
    """Bindings of ``name`` in a block, last first: (values, whether one is certain)."""
    values: list[ast.AST] = []
    for statement in reversed(statements):
        found, definite = _statement(statement, name)
        _extend(values, found)
        if definite:
            return values, True
    return values, False


def _statement(statement: ast.stmt, name: str) -> tuple[list[ast.AST], bool]:
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            if isinstance(target, ast.Name) and target.id == name:
                return [statement.value], True
            if _binds(target, name):
                return [statement], True  # tuple unpacking: the element's value is unknown
        return [], False
    if isinstance(statement, ast.AnnAssign):
        if statement.value is not None and _binds(statement.target, name):
            return [statement.value], True
        return [], False
    if isinstance(statement, ast.AugAssign):
        return ([statement], True) if _binds(statement.target, name) else ([], False)
    if isinstance(statement, (*_FUNCTIONS, ast.ClassDef)):
        return ([statement], True) if statement.name == name else ([], False)
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        bound = any((a.asname or a.name).split(".")[0] == name for a in statement.names)
        return ([statement], True) if bound else ([], False)
    if isinstance(statement, ast.If):
        body, body_definite = _scan(statement.body, name)
        orelse, orelse_definite = _scan(statement.orelse, name)
        return body + [v for v in orelse if v not in body], body_definite and orelse_definite
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        body, definite = _scan(statement.body, name)
        if not definite and any(i.optional_vars is not None and _binds(i.optional_vars, name) for i in statement.items):
            return [*body, statement], True
        return body, definite
    if isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match)) or hasattr(statement, "handlers"):
        values: list[ast.AST] = []
        if isinstance(statement, (ast.For, ast.AsyncFor)) and _binds(statement.target, name):
            values.append(statement)
        for block in _blocks(statement):
            _extend(values, _scan(block, name)[0])
        final: list[ast.stmt] = getattr(statement, "finalbody", None) or []
        definite = bool(final) and _scan(final, name)[1]
        return values, definite
    return [], False


def _binds(target: ast.AST, name: str) -> bool:
    if isinstance(target, ast.Name):
        return target.id == name
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds(e.value if isinstance(e, ast.Starred) else e, name) for e in target.elts)
    return False
