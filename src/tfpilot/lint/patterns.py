"""AST predicates several rules share (keyword lookup, literal values, model-like callees)."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from tfpilot.lint.naming import is_model_name
from tfpilot.lint.nodes import child_nodes

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

__all__ = [
    "keyword",
    "has_keyword",
    "has_star_kwargs",
    "string_value",
    "path_literal",
    "is_constant",
    "callee_name",
    "is_model_call",
    "is_keras_model_expr",
    "walk_body",
]

_KERAS_MODEL_FACTORIES = ("Sequential", "Model", "load_model", "clone_model", "Functional")


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    for item in call.keywords:
        if item.arg == name:
            return item
    return None


def has_keyword(call: ast.Call, name: str) -> bool:
    return any(item.arg == name for item in call.keywords)


def has_star_kwargs(call: ast.Call) -> bool:
    return any(item.arg is None for item in call.keywords)


def is_constant(node: ast.AST | None, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def string_value(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def path_literal(node: ast.AST | None) -> str | None:
    """The known tail of a path expression: ``"m.keras"``, ``f"{d}/m.h5"``, ``os.path.join(d, "m")``."""
    if node is None:
        return None
    text = string_value(node)
    if text is not None:
        return text
    if isinstance(node, ast.JoinedStr) and node.values:
        tail = string_value(node.values[-1])
        if tail is None and len(node.values) > 1:
            last = node.values[-1]
            numeric = isinstance(last, ast.FormattedValue) and numeric_field(
                string_value(last.format_spec) if last.format_spec is not None else "", last.value
            )
            return _checkpoint_template(string_value(node.values[-2]), numeric=numeric)
        return tail
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and string_value(node.func.value) is not None
    ):
        template = string_value(node.func.value) or ""
        tail = template.rsplit("}", 1)[-1] if "}" in template else template
        if tail:
            return tail
        field = _LAST_FIELD.search(template)
        numeric = False
        if field is not None:
            key, spec = field.group(1), field.group(2) or ""
            if key == "" and len(node.args) == template.count("{") - 2 * template.count("{{"):
                argument: ast.expr | None = node.args[-1] if node.args else None
            elif key.isdigit() and int(key) < len(node.args):
                argument = node.args[int(key)]
            else:
                argument = next((k.value for k in node.keywords if k.arg == key), None)
            numeric = numeric_field(spec, argument)
        return _checkpoint_template(template.rsplit("{", 1)[0], numeric=numeric)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)):
        return path_literal(node.right)
    if isinstance(node, ast.IfExp):
        # `f"{d}_{{epoch}}_{{val_loss}}.h5" if validate else f"{d}_{{epoch}}.h5"`: known where both ends agree
        body, other = path_literal(node.body), path_literal(node.orelse)
        if body is not None and other is not None and _ending(body) == _ending(other):
            return body
        return None
    if isinstance(node, ast.Call) and node.args:
        name = callee_name(node)
        if name in ("join", "Path", "PurePath", "fspath", "str"):
            return path_literal(node.args[-1])
    return None


def _ending(path: str) -> tuple[bool, str]:
    """What the path rules read from a name's end: `.weights.h5`, and the last extension."""
    return path.endswith(".weights.h5"), path.rsplit("/", 1)[-1].rsplit(".", 1)[-1] if "." in path else ""


def _checkpoint_template(prefix: str | None, *, numeric: bool = False) -> str | None:
    """``f"model.ckpt-{step}"``, ``"ckpt/model.ckpt-{}".format(n)``: the name ends in a step
    number after a TF-checkpoint stem, so its suffix is known not to be a Keras one; so does
    ``"weights_step_{}".format(step)`` or ``"model_epoch_{:d}"`` (a number ends the name)."""
    if prefix is not None and (numeric or ".ckpt" in prefix.rsplit("/", 1)[-1]):
        return prefix + "N"
    return None


# the last replacement field of a str.format template: {}, {0}, {name}, {:d}, {0:04d}
_LAST_FIELD = re.compile(r"\{([\w]*)(?:![rsa])?(?::([^{}]*))?\}$")
# names that hold a step or epoch counter
_COUNTER = re.compile(
    r"^(i|j|k|n|e|ep|it|epoch|epochs|step|steps|iteration|iterations|iter|count|counter)$"
    r"|(_step|_steps|_epoch|_iter|_iteration|_count)$|^(epoch|step|iter|iteration)_"
)


def numeric_field(spec: str | None, argument: ast.AST | None) -> bool:
    """A replacement field that certainly renders a number: an integer or float format spec
    (``:d``, ``:04d``, ``:.2f``), an int literal or ``i + 1``, or a step / epoch counter's name."""
    if spec and spec[-1] in "bdoxXneEfFgG%":
        return True
    if spec:
        return False
    if isinstance(argument, ast.Constant):
        return isinstance(argument.value, int) and not isinstance(argument.value, bool)
    if isinstance(argument, ast.BinOp) and isinstance(argument.op, (ast.Add, ast.Sub, ast.Mult)):
        return any(
            isinstance(side, ast.Constant) and isinstance(side.value, int) for side in (argument.left, argument.right)
        )
    name = (
        argument.id if isinstance(argument, ast.Name) else argument.attr if isinstance(argument, ast.Attribute) else ""
    )
    return bool(name) and _COUNTER.search(name.lower()) is not None


def path_literals(node: ast.AST | None, context: FileContext) -> list[str]:
    """The known tails of the paths ``node`` may hold: ``path_literal`` of the expression, or of
    every value a plain variable was assigned (``checkpoint_path = "ckpt/cp"``). Empty unless
    every value is known, so a rule never judges a path it only partly sees."""
    if node is None:
        return []
    direct = path_literal(node)
    if direct is not None:
        return [direct]
    if not isinstance(node, ast.Name) or not re.search(rf"\b{re.escape(node.id)}\s*=[^=]", context.source):
        return []  # never assigned in this file (a parameter, an import): no binding to build
    values = context.bindings.values(node.id, node, context.scope.node)
    tails = [path_literal(value) for value in values]
    known = [tail for tail in tails if tail is not None]
    return known if known and len(known) == len(tails) else []


def callee_name(call: ast.Call) -> str | None:
    """Last identifier of the called expression: ``self.model.fit`` -> ``fit``."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def is_model_call(call: ast.Call, context: FileContext) -> bool:
    """``model(x)``, ``self.encoder(x)`` or ``self(x)`` inside a Keras Model subclass."""
    func = call.func
    if isinstance(func, ast.Name):
        if func.id == "self":
            klass = context.current_class()
            return klass is not None and any("model" in (context.dotted(base) or "").lower() for base in klass.bases)
        if _assigned_non_model(func.id, context):
            return False
        return is_model_name(func.id) or _assigned_model(func.id, context)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        key = f"self.{func.attr}"
        if _assigned_non_model(key, context):
            return False
        return is_model_name(func.attr) or _assigned_model(key, context)
    return False


def _assigned_non_model(key: str, context: FileContext) -> bool:
    """Assigned from a known call that is not a Keras model factory (tf.saved_model.load, ...).
    A class of the project's own modules (``from network import VGG16``) is judged by its
    definition instead: a Keras subclass there is a model."""
    qualname = context.assigned_calls.get(key)
    if qualname is None or _assigned_model(key, context):
        return False
    callee = qualname.rsplit(".", 1)[-1]
    if callee in context.local_imports and context.class_kind(callee) != "unknown":
        return context.class_kind(callee) == "tf-module"
    return True


def _assigned_model(key: str, context: FileContext) -> bool:
    qualname = context.assigned_calls.get(key)
    return (
        qualname is not None
        and qualname.split(".")[-1] in _KERAS_MODEL_FACTORIES
        and (qualname.startswith(("keras.", "tensorflow.keras.")))
    )


def is_keras_model_expr(node: ast.AST, context: FileContext) -> bool:
    """A name assigned from a Keras model factory, or a model-like name in a Keras-using file."""
    key = context.dotted(node)
    if key is None:
        return False
    if _assigned_model(key, context):
        return True
    last = key.split(".")[-1].lower()
    if any(word in last for word in ("checkpoint", "ckpt", "manager", "module", "saver")):
        return False
    return is_model_name(last) and _uses_keras(context)


def _uses_keras(context: FileContext) -> bool:
    return any(
        value == "keras" or value.startswith(("keras.", "tensorflow.keras")) or value == "tensorflow"
        for value in context.imports.values()
    )


def walk_body(statements: list[ast.stmt]) -> list[ast.AST]:
    """All nodes under ``statements`` except inside nested function and class definitions."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(reversed(statements))
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(child_nodes(node))))
    return found


_GUARD_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "Exception"})
_MISSING_API_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError"})


def _caught_names(caught: ast.expr | None) -> set[str] | None:
    """The exception names an except clause lists; None for a bare `except:`."""
    if caught is None:
        return None
    return {n.id for n in (caught.elts if isinstance(caught, ast.Tuple) else [caught]) if isinstance(n, ast.Name)}


def catches_missing_api(handler: ast.ExceptHandler) -> bool:
    """A handler for a missing API: AttributeError / ImportError / ModuleNotFoundError, Exception, or a bare one."""
    names = _caught_names(handler.type)
    return names is None or bool(names & _GUARD_ERRORS)


def under_feature_check(context: FileContext, name: str) -> bool:
    """The node being visited only runs where ``name`` exists: under ``if hasattr(tf, "contrib")``
    (or a version test naming it; also ``a if hasattr(np, "float_") else b``), in the body of a ``try``
    that catches ImportError / AttributeError, or in such a handler, the fallback for older versions
    (code written to run on both TF1 and TF2)."""
    child: ast.AST = context.stack[-1]
    for ancestor in context.ancestors():
        if isinstance(ancestor, ast.If | ast.IfExp) and child is not ancestor.test:
            test = ast.unparse(ancestor.test)
            if name in test and ("hasattr" in test or "version" in test.lower()):
                return True
        if isinstance(ancestor, ast.ExceptHandler) and (_caught_names(ancestor.type) or set()) & _MISSING_API_ERRORS:
            return True  # the fallback of `try: np.trapezoid except AttributeError: np.trapz`: runs where the new name is not
        if isinstance(ancestor, ast.Try) and child in ancestor.body:
            if any(catches_missing_api(handler) for handler in ancestor.handlers):
                return True
        child = ancestor
    return False


# `training`, `is_training`, `phase_train`, `train_mode`: names of a flag. Not every name with
# "train" in it: `x_train`, `train_ds` and `self.model.trainable_variables` are data and weights.
_DATA_WORDS = frozenset(
    {"x", "y", "ds", "data", "dataset", "set", "images", "labels", "loader", "gen", "generator", "iter",
     "variables", "weights", "vars", "params", "steps", "step", "size", "loss", "acc", "op", "files", "paths",
     "examples", "batch", "batches", "split", "dir", "path", "len", "count", "samples"}
)  # fmt: skip


def _flag_name(name: str) -> bool:
    words = set(re.split(r"[_\W]+", name.lower()))
    # any word with "train" in it (`is_trainig`, a typo seen in a tutorial, is still the flag)
    return any("train" in word for word in words) and not words & _DATA_WORDS


def training_flag(argument: ast.expr) -> str | None:
    """A positional argument that is the training flag: `True` / `False`, or a name that says so
    (`is_training`, `self.training`); None otherwise."""
    if isinstance(argument, ast.Constant) and isinstance(argument.value, bool):
        return repr(argument.value)
    name = (
        argument.id if isinstance(argument, ast.Name) else argument.attr if isinstance(argument, ast.Attribute) else ""
    )
    return name if _flag_name(name) else None
