"""What a name refers to at a given place in a file: the binding layer rules share.

Names in TensorFlow tutorials are rebound all the time (a notebook defines ``model`` as a
function in one cell and as a ``keras.Sequential`` three cells later) and models travel into
functions as parameters (``train_step(mlp_model, ...)``). A rule that judges ``model(x)`` by
the name alone is wrong on such code. ``Bindings`` answers "which expressions can this name
hold here" the way Python would execute the file:

- a parameter holds the arguments that the file's call sites pass (or its default);
- a name assigned in the enclosing function holds what that function assigned;
- a module-level name used in module code holds its last binding above the use; used inside a
  function, it holds the binding in force where the module calls that function (the last one
  in the file when no module-level call is seen);
- ``self.x`` holds whatever any method assigned to ``self.x``.

``kinds`` then classifies the values: a Keras model or layer, a ``tf.Module``, a plain function
or class of this file, and so on. Everything is built lazily on the first question (one walk of
the tree), so files whose rules never ask pay nothing.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from tfpilot.lint.apis import keras_name
from tfpilot.lint.local_modules import imported_function
from tfpilot.lint.nodes import walk_nodes

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

__all__ = ["Bindings", "UNKNOWN", "KERAS", "TF_MODULE", "PLAIN_FUNCTION", "PLAIN_CLASS"]

# What a value is. A name whose values are all of the "not Keras" kinds is certainly no model.
KERAS = "keras"  # a Keras model or layer: takes training=, is saved with model.export
TF_MODULE = "tf-module"  # a tf.Module that is no Keras object
PLAIN_FUNCTION = "plain-function"  # a def of this file
PLAIN_CLASS = "plain-class"  # an instance of a class of this file with no (or an unknown) base
UNKNOWN = "unknown"

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# Keras factories whose result is certainly a Keras model.
_KERAS_FACTORIES = frozenset(
    {"Sequential", "models.Sequential", "Model", "models.Model", "models.clone_model", "models.load_model"}
)
_MAX_DEPTH = 4

# Nodes the index never needs to look at: names and constants (a binding's target is read from its
# statement), expression contexts and operators. They are about half of a file's nodes.
_LEAVES = frozenset(
    {ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del}
    | {cls for base in (ast.operator, ast.unaryop, ast.cmpop, ast.boolop) for cls in base.__subclasses__()}
)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _children(node: ast.AST) -> list[ast.AST]:
    """``child_nodes(node)`` without the leaves above, in the same order."""
    kind = node.__class__
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(name for name in kind._fields if name != "ctx")
    children: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if value.__class__ is list:
            children.extend(item for item in value if isinstance(item, ast.AST) and item.__class__ not in _LEAVES)
        elif isinstance(value, ast.AST) and value.__class__ not in _LEAVES:
            children.append(value)
    return children


class LoopElement(ast.expr):
    """What a loop target unpacked from ``zip(a, b)`` or ``enumerate(a)`` holds: an element of ``iterable``.

    ``for layer, past in zip(self.decoder_layers, pasts)`` binds ``layer`` to an element of
    ``self.decoder_layers``; the kind of that element is the kind of what the list was built from.
    """

    _fields = ("iterable",)
    iterable: ast.expr

    def __init__(self, iterable: ast.expr, loop: ast.AST, owner: ast.AST | None) -> None:
        super().__init__()
        self.iterable = iterable
        self.loop = loop
        self.owner = owner
        ast.copy_location(self, loop)


class Bindings:
    """Lazy index of every binding and call site in one file (see the module docstring)."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self._built = False
        # name -> [(line, value)] for module-level bindings, in file order
        self._module: dict[str, list[tuple[int, ast.AST]]] = {}
        # id(function) -> name -> values assigned in that function's own body
        self._local: dict[int, dict[str, list[ast.AST]]] = {}
        # "self.x" -> values assigned anywhere in the file
        self._attributes: dict[str, list[tuple[ast.AST, ast.AST | None]]] = {}
        # id(method) -> its class, so `__init__` parameters read the class's instantiations
        self._method_class: dict[int, ast.ClassDef] = {}
        # function name -> [(call, innermost enclosing function or None, top-level statement line)]
        self._calls: dict[str, list[tuple[ast.Call, ast.AST | None, int]]] = {}
        # id(function) -> the function enclosing it (None at module level)
        self._enclosing: dict[int, ast.AST | None] = {}
        # id(for loop) -> the function it runs in (None at module level): where its iterable's names are read
        self._loop_owner: dict[int, ast.AST | None] = {}

    # --- index ----------------------------------------------------------------------------------

    def _build(self) -> None:
        self._built = True
        for statement in self.context.tree.body:
            self._index(statement, None, getattr(statement, "lineno", 0))

    def _bind(self, target: ast.AST, value: ast.AST, function: ast.AST | None, line: int) -> None:
        if isinstance(target, ast.Name):
            if function is None:
                self._module.setdefault(target.id, []).append((line, value))
            else:
                self._local.setdefault(id(function), {}).setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Attribute):
            dotted = self.context.dotted(target)
            if dotted is not None and dotted.startswith("self."):
                self._attributes.setdefault(dotted, []).append((value, function))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:  # unpacking: the element's value is unknown
                self._bind(element.value if isinstance(element, ast.Starred) else element, target, function, line)

    def _index(self, node: ast.AST, function: ast.AST | None, top_line: int) -> None:
        # an explicit stack: deeply nested expressions must not hit the recursion limit
        stack: list[tuple[ast.AST, ast.AST | None]] = [(node, function)]
        while stack:
            current, owner = stack.pop()
            kind = current.__class__
            if kind is ast.Assign:
                for target in current.targets:  # type: ignore[attr-defined]
                    self._bind(target, current.value, owner, current.lineno)  # type: ignore[attr-defined]
            elif kind is ast.AnnAssign and current.value is not None:  # type: ignore[attr-defined]
                self._bind(current.target, current.value, owner, current.lineno)  # type: ignore[attr-defined]
            elif kind in (ast.For, ast.AsyncFor):
                self._loop_owner[id(current)] = owner
                unpacked = _unpacked_elements(current)  # type: ignore[arg-type]
                if unpacked:
                    for target, iterable in unpacked:
                        self._bind(target, LoopElement(iterable, current, owner), owner, current.lineno)  # type: ignore[attr-defined]
                else:
                    self._bind(current.target, current, owner, current.lineno)  # type: ignore[attr-defined]
            elif kind in (ast.With, ast.AsyncWith):
                for item in current.items:  # type: ignore[attr-defined]
                    if item.optional_vars is not None:
                        self._bind(item.optional_vars, current, owner, current.lineno)  # type: ignore[attr-defined]
            elif kind in (ast.Import, ast.ImportFrom):
                for alias in current.names:  # type: ignore[attr-defined]
                    local = (alias.asname or alias.name).split(".")[0]
                    self._bind(ast.Name(id=local), current, owner, current.lineno)  # type: ignore[attr-defined]
            elif kind is ast.Call:
                func = current.func  # type: ignore[attr-defined]
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
                if name is not None:
                    self._calls.setdefault(name, []).append((current, owner, top_line))  # type: ignore[arg-type]
            if kind is ast.ClassDef:
                for item in current.body:  # type: ignore[attr-defined]
                    if isinstance(item, _FUNCTIONS):
                        self._method_class[id(item)] = current  # type: ignore[assignment]
            if kind in _FUNCTIONS or kind is ast.ClassDef:
                self._bind(ast.Name(id=current.name), current, owner, current.lineno)  # type: ignore[attr-defined]
            if kind in _SCOPES:
                self._enclosing[id(current)] = owner
                body = current.body  # type: ignore[attr-defined]
                inside = {id(child) for child in body} if isinstance(body, list) else {id(body)}
                for child in _children(current):
                    # decorators, defaults and annotations run in the enclosing scope
                    stack.append((child, current if id(child) in inside else owner))
                continue
            stack.extend((child, owner) for child in _children(current))

    # --- questions ------------------------------------------------------------------------------

    def class_of(self, function: ast.AST) -> ast.ClassDef | None:
        """The class whose body defines ``function`` (None: not a method)."""
        if not self._built:
            self._build()
        return self._method_class.get(id(function))

    def values(self, name: str, at: ast.AST, function: ast.AST | None, depth: int = 0) -> list[ast.AST]:
        """The expressions ``name`` (``model``, ``self.encoder``) may hold at node ``at``, which is
        inside ``function`` (None or a Module: module level). Empty: unknown (not bound here)."""
        if not self._built:
            self._build()
        if depth > _MAX_DEPTH:
            return []
        if isinstance(function, ast.Module):
            function = None
        if name.startswith("self."):
            assignments = self._attributes.get(name, [])
            own = self._same_class(assignments, function)
            held = self._attribute_values(name, own, depth)
            if not held and len(own) < len(assignments):
                # its own class's value is unknown: what the file's other classes assign is the best guess
                held = self._attribute_values(name, assignments, depth)
            return held
        if "." in name:
            return []
        while function is not None:
            if isinstance(function, _SCOPES):
                arguments = function.args
                names = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
                if name in names or name in [a.arg for a in arguments.kwonlyargs]:
                    return self._arguments(function, name, depth)
                local = self._local.get(id(function), {}).get(name)
                if local:
                    return list(local)
            function = self._enclosing.get(id(function))
            if function is None:
                break
        bindings = self._module.get(name, [])
        if not bindings:
            return []
        line = getattr(at, "lineno", 0)
        outer = self._outermost(at)
        if outer is None:
            above = [value for bound_line, value in bindings if bound_line < line]
            return above[-1:] if above else []
        # inside a function: the bindings in force where module code calls it
        found: list[ast.AST] = []
        for _call, owner, call_line in self._calls.get(getattr(outer, "name", ""), ()):
            if owner is None:
                above = [value for bound_line, value in bindings if bound_line < call_line]
                if above and above[-1] not in found:
                    found.append(above[-1])
        return found or [bindings[-1][1]]

    def _attribute_values(
        self, name: str, assignments: list[tuple[ast.AST, ast.AST | None]], depth: int
    ) -> list[ast.AST]:
        held: list[ast.AST] = []
        for value, owner in assignments:
            # `self.encoder = encoder`: what the method's parameter receives
            inner = self.context.dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
            resolved = self.values(inner, value, owner, depth + 1) if inner and inner != name else [value]
            held.extend(v for v in resolved if v not in held)
        return held

    def _same_class(
        self, assignments: list[tuple[ast.AST, ast.AST | None]], function: ast.AST | None
    ) -> list[tuple[ast.AST, ast.AST | None]]:
        """``self.model`` read in a method: what the methods of its own class (and classes related
        to it by inheritance) assign, not another class's ``self.model`` (an Actor's and a
        Critic's). Unchanged when the class of either side is not known."""
        klass = self._method_class.get(id(function)) if function is not None else None
        if klass is None:
            return assignments
        kept = []
        for value, owner in assignments:
            other = self._method_class.get(id(owner)) if owner is not None else None
            if other is None or other is klass or _related(klass, other):
                kept.append((value, owner))
        return kept or assignments

    def top_level_of(self, at: ast.AST) -> ast.AST:
        """The top-level function or class holding ``at``, or the module itself."""
        if not self._built:
            self._build()
        return self._outermost(at) or self.context.tree

    def _outermost(self, at: ast.AST) -> ast.AST | None:
        """The top-level function or class that contains ``at`` (None: module-level code). For a
        method, the module-level calls of its class (the instantiations) stand for its calls."""
        line = getattr(at, "lineno", 0)
        for statement in self.context.tree.body:
            if isinstance(statement, (*_FUNCTIONS, ast.ClassDef)):
                if statement.lineno <= line <= (statement.end_lineno or statement.lineno):
                    return statement
        return None

    def _arguments(self, function: ast.AST, name: str, depth: int) -> list[ast.AST]:
        """What the file's call sites pass for parameter ``name`` of ``function``."""
        arguments = function.args  # type: ignore[attr-defined]
        positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
        defaults = parameter_defaults(function)
        function_name = getattr(function, "name", None)
        if function_name is None:
            return []
        method = bool(positional) and positional[0] in ("self", "cls")
        found: list[ast.AST] = []
        calls = self._calls.get(function_name, [])
        klass = self._method_class.get(id(function))
        constructor = function_name == "__init__" and klass is not None
        explicit: set[int] = set()
        if constructor:
            # `__init__(self, encoder)` receives what `VAE(encoder, ...)` passes, and what a subclass
            # passes to `VAE.__init__(self, encoder)` or `super().__init__(encoder)`
            calls = [c for c in self._calls.get(klass.name, []) if isinstance(c[0].func, ast.Name)]  # type: ignore[union-attr]
            for call, owner, line in self._calls.get("__init__", []):
                receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
                if isinstance(receiver, ast.Name) and receiver.id == klass.name:  # type: ignore[union-attr]
                    explicit.add(id(call))
                    calls.append((call, owner, line))
                elif (
                    isinstance(receiver, ast.Call)
                    and isinstance(receiver.func, ast.Name)
                    and receiver.func.id == "super"
                    and owner is not None
                    and (caller := self._method_class.get(id(owner))) is not None
                    and any(isinstance(b, ast.Name) and b.id == klass.name for b in caller.bases)  # type: ignore[union-attr]
                ):
                    calls.append((call, owner, line))
        for call, owner, _line in calls:
            # `obj.step(x)` calls a method, `step(x)` a plain function: the other kind is another def
            if not constructor and isinstance(call.func, ast.Attribute) != method:
                continue
            if method and not constructor and klass is not None and self._other_class_self_call(call, owner, klass):
                continue
            if owner is function:
                continue  # a call inside the function itself passes on what its own callers passed
            passed: ast.AST | None = None
            index = positional.index(name) if name in positional else -1
            if method and id(call) not in explicit:
                index -= 1
            for keyword in call.keywords:
                if keyword.arg == name:
                    passed = keyword.value
            if passed is None and 0 <= index < len(call.args):
                passed = call.args[index]
                if any(isinstance(arg, ast.Starred) for arg in call.args[: index + 1]):
                    return []
            if passed is None:
                if any(keyword.arg is None for keyword in call.keywords) or any(
                    isinstance(arg, ast.Starred) for arg in call.args
                ):
                    return []  # *args / **kwargs: unknown
                passed = defaults.get(name)
            if passed is None:
                continue
            if isinstance(passed, (ast.Name, ast.Attribute)):
                dotted = self.context.dotted(passed)
                resolved = self.values(dotted, call, owner, depth + 1) if dotted else []
                if not resolved:
                    return []  # one unknown argument makes the whole parameter unknown
                found.extend(v for v in resolved if v not in found)
            elif passed not in found:
                found.append(passed)
        return found

    def passed(self, function: ast.AST, name: str) -> list[tuple[ast.AST | None, ast.AST | None]] | None:
        """What each of the file's call sites of ``function`` passes for its parameter ``name``,
        unresolved, with the function holding the call (None where a site leaves the default);
        None when a site passes ``*args`` / ``**kwargs``."""
        if not self._built:
            self._build()
        arguments = function.args  # type: ignore[attr-defined]
        positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
        method = bool(positional) and positional[0] in ("self", "cls")
        index = positional.index(name) - (1 if method else 0) if name in positional else -1
        found: list[tuple[ast.AST | None, ast.AST | None]] = []
        for call, owner, _line in self._calls.get(getattr(function, "name", ""), []):
            if isinstance(call.func, ast.Attribute) != method or owner is function:
                continue
            if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
                return None
            value: ast.AST | None = next((k.value for k in call.keywords if k.arg == name), None)
            if value is None and 0 <= index < len(call.args):
                value = call.args[index]
            found.append((value, owner))
        return found

    def _other_class_self_call(self, call: ast.Call, owner: ast.AST | None, klass: ast.ClassDef) -> bool:
        """``self.compute_loss(...)`` in a method of another class (an Actor's and a Critic's
        ``compute_loss`` are two functions) that does not inherit from ``klass``."""
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if not (isinstance(receiver, ast.Name) and receiver.id == "self") or owner is None:
            return False
        caller = self._method_class.get(id(owner))
        if caller is None or caller is klass:
            return False
        return not any(isinstance(base, ast.Name) and base.id == klass.name for base in caller.bases)

    def method_calls(self, method: str) -> list[tuple[ast.Call, ast.AST | None]]:
        """Every ``receiver.method(...)`` call in the file, with its enclosing function."""
        if not self._built:
            self._build()
        return [(c, owner) for c, owner, _ in self._calls.get(method, ()) if isinstance(c.func, ast.Attribute)]

    def only_called_directly(self, class_name: str, method: str, compiled: frozenset[str]) -> bool:
        """Instances of ``class_name`` have ``method`` called directly (``m.train_step(batch)``)
        and none of them, nor any receiver of unknown value, ever reaches a ``compiled`` entry
        point (``fit``, ``evaluate``, ...): the method runs as plain eager Python."""

        def holds_instance(call: ast.Call, owner: ast.AST | None) -> bool | None:
            receiver = self.context.dotted(call.func.value)  # type: ignore[attr-defined]
            values = self.values(receiver, call, owner) if receiver else []
            if not values:
                return None  # unknown receiver
            return any(
                isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == class_name for v in values
            )

        direct = [holds_instance(call, owner) for call, owner in self.method_calls(method)]
        if not any(direct):
            return False
        for entry in compiled:
            for call, owner in self.method_calls(entry):
                if holds_instance(call, owner) is not False:
                    return False
        return True

    def kinds(self, name: str, at: ast.AST, function: ast.AST | None) -> set[str]:
        """The kinds of every value ``name`` may hold at ``at``; ``{UNKNOWN}`` when unbound."""
        values = self.values(name, at, function)
        if not values:
            return {UNKNOWN}
        return {self.kind_of(value) for value in values}

    def kind_of(self, value: ast.AST, depth: int = 0) -> str:
        """KERAS, TF_MODULE, PLAIN_FUNCTION, PLAIN_CLASS or UNKNOWN for one bound value."""
        context = self.context
        if isinstance(value, _FUNCTIONS):
            return PLAIN_FUNCTION
        if isinstance(value, ast.Lambda):
            # `model = lambda x: w * x + b`: a plain function, unless it takes `training` itself
            names = {a.arg for a in (*value.args.posonlyargs, *value.args.args, *value.args.kwonlyargs)}
            return UNKNOWN if "training" in names or value.args.kwarg is not None else PLAIN_FUNCTION
        if isinstance(value, LoopElement):
            return self.element_kind(value.iterable, value, value.owner, depth + 1)
        if isinstance(value, (ast.For, ast.AsyncFor)) and isinstance(value.target, ast.Name):
            return self.element_kind(value.iter, value, self._loop_owner.get(id(value)), depth + 1)
        if not isinstance(value, ast.Call):
            return UNKNOWN
        found = keras_name(context.qualname(value.func))
        if found is not None and (
            found[1] in _KERAS_FACTORIES
            or found[1].startswith("applications.")
            or (found[1].startswith("layers.") and found[1] != "layers.Input")
        ):
            return KERAS
        if isinstance(value.func, ast.Name) and depth < _MAX_DEPTH:
            for definition in self.values(value.func.id, value, None, depth + 1) or []:
                if isinstance(definition, ast.ClassDef):
                    kind = context.class_kind(definition)
                    if kind in ("keras-model", "keras-layer"):
                        return KERAS
                    if kind == "tf-module":
                        return TF_MODULE
                    if not definition.bases or all(
                        isinstance(base, ast.Name) and base.id == "object" for base in definition.bases
                    ):
                        return PLAIN_CLASS
                    return UNKNOWN
                if isinstance(definition, _FUNCTIONS):
                    return self.returned_kind(definition, depth + 1)
                if isinstance(definition, ast.ImportFrom):
                    # a class of the project's own modules (`from network import VGG16`)
                    kind = context.class_kind(value.func.id)
                    if kind in ("keras-model", "keras-layer"):
                        return KERAS
                    if kind == "tf-module":
                        return TF_MODULE
                    # a model factory of the project's own modules (`from models import YoloV3`)
                    factory = imported_function(context, value.func.id)
                    if factory is not None:
                        return factory[1].bindings.returned_kind(factory[0], depth + 1)
        return UNKNOWN

    def element_kind(self, iterable: ast.AST, at: ast.AST, owner: ast.AST | None, depth: int) -> str:
        """The kind of every element of ``iterable`` (a list of layers built in a comprehension, ``model.layers``);
        UNKNOWN unless they all have one kind."""
        if depth > _MAX_DEPTH:
            return UNKNOWN
        if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
            kinds = {self.kind_of(element, depth) for element in iterable.elts}
        elif isinstance(iterable, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            kinds = {self.kind_of(iterable.elt, depth)}
        elif (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id in ("list", "tuple", "reversed", "sorted")
            and len(iterable.args) == 1
        ):
            return self.element_kind(iterable.args[0], at, owner, depth + 1)
        elif isinstance(iterable, ast.Attribute) and iterable.attr == "layers":
            # `for layer in model.layers` of a Keras model: Keras layers
            receiver = self.context.dotted(iterable.value)
            held = self.values(receiver, at, owner, depth + 1) if receiver else []
            kinds = {self.kind_of(v, depth + 1) for v in held} or {UNKNOWN}
            return KERAS if kinds == {KERAS} else UNKNOWN
        elif isinstance(iterable, (ast.Name, ast.Attribute)):
            name = self.context.dotted(iterable)
            held = self.values(name, at, owner, depth + 1) if name else []
            kinds = {self.element_kind(v, at, owner, depth + 1) for v in held} or {UNKNOWN}
        else:
            return UNKNOWN
        return kinds.pop() if len(kinds) == 1 else UNKNOWN

    def returned_kind(self, function: ast.FunctionDef | ast.AsyncFunctionDef, depth: int) -> str:
        """The kind a factory function returns (``def get_model(): ...; return model``)."""
        kinds: set[str] = set()
        for node in walk_nodes(function):
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if isinstance(value, ast.Name):
                    local = self._local.get(id(function), {}).get(value.id, [])
                    kinds.update(self.kind_of(v, depth) for v in local) if local else kinds.add(UNKNOWN)
                else:
                    kinds.add(self.kind_of(value, depth))
        return kinds.pop() if len(kinds) == 1 else UNKNOWN


def parameter_defaults(function: ast.AST) -> dict[str, ast.expr]:
    """Parameter name -> its default expression, for the parameters that have one."""
    arguments = function.args  # type: ignore[attr-defined]
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    defaults = dict(zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True))
    defaults.update(
        {a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d is not None}
    )
    return defaults


def _unpacked_elements(loop: ast.For | ast.AsyncFor) -> list[tuple[ast.Name, ast.expr]]:
    """(target name, iterable) for ``for a, b in zip(xs, ys)`` and the second name of ``for i, x in enumerate(xs)``."""
    target, iterated = loop.target, loop.iter
    if not (isinstance(target, ast.Tuple) and isinstance(iterated, ast.Call) and isinstance(iterated.func, ast.Name)):
        return []
    if iterated.keywords or any(isinstance(argument, ast.Starred) for argument in iterated.args):
        return []
    names = target.elts
    if iterated.func.id == "zip" and len(iterated.args) == len(names):
        pairs = list(zip(names, iterated.args, strict=True))
    elif iterated.func.id == "enumerate" and len(iterated.args) == 1 and len(names) == 2:
        pairs = [(names[1], iterated.args[0])]
    else:
        return []
    return [(name, iterable) for name, iterable in pairs if isinstance(name, ast.Name)]


def _related(first: ast.ClassDef, second: ast.ClassDef) -> bool:
    """One class names the other as a base (or they share a base of this file's naming)."""
    first_bases = {b.id for b in first.bases if isinstance(b, ast.Name)}
    second_bases = {b.id for b in second.bases if isinstance(b, ast.Name)}
    return second.name in first_bases or first.name in second_bases or bool(first_bases & second_bases - {"object"})
