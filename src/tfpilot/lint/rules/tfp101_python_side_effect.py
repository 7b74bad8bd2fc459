"""TFP101: Python side effects inside a traced function."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.patterns import walk_body
from tfpilot.lint.rule import Invalid, Rule

_MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "add", "update", "setdefault", "discard", "appendleft"}
)
_CONTAINER_CALLS = frozenset({"list", "dict", "set", "defaultdict", "OrderedDict", "deque", "Counter"})
_TF_PRINT_KEYWORDS = frozenset({"sep", "end"})
# Python's and NumPy's random draws: in a traced function they run once, while tracing.
_DRAWS = frozenset(
    {
        "random",
        "uniform",
        "randint",
        "randrange",
        "choice",
        "choices",
        "shuffle",
        "sample",
        "gauss",
        "normalvariate",
        "rand",
        "randn",
        "random_sample",
        "normal",
        "permutation",
        "binomial",
        "poisson",
        "beta",
        "gamma",
        "exponential",
        "standard_normal",
        "integers",
        "lognormal",
        "triangular",
    }
)


def _is_container(value: ast.AST | None) -> bool:
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return name in _CONTAINER_CALLS
    return False


def _containers_bound_in(statements: list[ast.stmt]) -> set[str]:
    """Names bound to a list/dict/set by plain assignments among ``statements`` (not nested)."""
    names: set[str] = set()
    for statement in statements:
        if isinstance(statement, ast.Assign) and _is_container(statement.value):
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
        elif isinstance(statement, ast.AnnAssign) and _is_container(statement.value):
            if isinstance(statement.target, ast.Name):
                names.add(statement.target.id)
    return names


class PythonSideEffectInTfFunction(Rule):
    """Python side effects in a tf.function run once, while tracing, not on every call.

    A tf.function runs its Python body only to trace a graph. ``print`` prints once,
    ``history.append(loss)`` appends one symbolic tensor, and a dict written from the function
    holds graph tensors that cannot be used outside it. The same holds for Keras' train_step /
    test_step and for functions passed to ``dataset.map``. Appending to a list created inside
    the function is fine: it is local trace-time bookkeeping.
    """

    code = "TFP101"
    name = "python-side-effect-in-tf-function"
    message = "Python side effect inside a traced function runs once per trace, not once per call"
    fix_hint = (
        "Use tf.print instead of print; keep state that must change per step in a tf.Variable "
        "(assign/assign_add) or a tf.TensorArray, and return values instead of appending to "
        "outer lists"
    )
    category = "tf.function"
    tokens = ("tensorflow", "keras")
    calls = _MUTATORS | _DRAWS | {"print", "next"}
    fixable = True
    VALID = [
        """
import tensorflow as tf

@tf.function
def step(x):
    tf.print("loss", x)
    outputs = []
    for i in range(3):
        outputs.append(x * i)
    return tf.stack(outputs)
""",
        """
import tensorflow as tf

history = []

def eager_step(x):
    history.append(x)
    print(x)
""",
        """
import tensorflow as tf

@tf.function
def replicate(fn, x):
    result = [None]

    def replica_fn(value):
        result[0] = fn(value)
        return result[0]

    return replica_fn(x)
""",
        """
import tensorflow as tf

class Counter(tf.Module):
    def __init__(self):
        self.count = tf.Variable(0)

    @tf.function
    def __call__(self):
        self.count.assign_add(1)
        return self.count
""",
        # next() on a tf.data iterator inside a tf.function is the distributed-training idiom
        """
import tensorflow as tf

dataset = tf.data.Dataset.range(10)

@tf.function
def train_fn(iterator):
    return next(iterator) * 2

train_fn(iter(dataset))
""",
    ]
    INVALID = [
        # next() on a Python iterator passed in: evaluated once, at trace time
        Invalid(
            """
import tensorflow as tf

@tf.function
def consume_next(iterator):
    tf.print("Value:", next(iterator))

consume_next(iter([1, 2, 3]))
""",
            line=6,
        ),
        Invalid(
            """
import tensorflow as tf

@tf.function
def step(x):
    print("loss", x)
    return x
""",
            line=6,
            fixed="""
import tensorflow as tf

@tf.function
def step(x):
    tf.print("loss", x)
    return x
""",
        ),
        Invalid(
            """
import tensorflow as tf

losses = []

@tf.function
def step(x):
    loss = tf.reduce_mean(x)
    losses.append(loss)
    return loss
""",
            line=9,
        ),
        Invalid(
            """
import keras

class Classifier(keras.Model):
    def __init__(self):
        super().__init__()
        self.seen = {}

    def train_step(self, data):
        self.seen["last"] = data
        return {}
""",
            line=10,
        ),
        Invalid(
            """
import tensorflow as tf

class Trainer:
    def __init__(self):
        self.steps = 0

    @tf.function
    def step(self, x):
        self.steps += 1
        return x
""",
            line=10,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._class_containers: dict[int, set[str]] = {}
        self._scope_containers: dict[int, set[str]] = {}

    def visit_Call(self, node: ast.Call) -> None:
        scope = self.context.scope
        if not scope.is_graph:
            return
        func = node.func
        if isinstance(func, ast.Name) and func.id == "print" and "print" not in self.context.imports:
            if _is_trace_marker(node) or self._printed_by_tf_print_too(node):
                # print("Tracing!") counts traces on purpose, and print(x) next to tf.print(x)
                # shows the difference: right in letter, no defect; --fix would break the point
                self.report(
                    node,
                    f"print() in a {scope.graph_reason} runs once per trace: a deliberate trace marker here",
                    severity=Severity.INFO,
                )
                return
            alias = self.context.local_alias("tensorflow")
            simple = all(k.arg in _TF_PRINT_KEYWORDS for k in node.keywords)
            self.report(
                node,
                f"print() in a {scope.graph_reason} runs only while tracing; tf.print runs every call",
                fix_data={"tf": alias} if alias and simple else None,
            )
        elif isinstance(func, ast.Name) and func.id == "next" and len(node.args) == 1:
            if self._python_iterator(node.args[0], node):
                self.report(
                    node,
                    f"next() on a Python iterator in a {scope.graph_reason} runs once, while tracing: "
                    "every call gets the element it got then",
                )
        elif (qualname := self.context.qualname(func) or "").startswith(("random.", "numpy.random.")) and (
            qualname.rsplit(".", 1)[-1] in _DRAWS
        ):
            module = "np.random" if qualname.startswith("numpy.") else "random"
            message = (
                f"{module}.{qualname.rsplit('.', 1)[-1]}() in a {scope.graph_reason} draws once, while tracing: "
                "every call (every element of a map) reuses that draw; use tf.random (or a tf.random.Generator)"
            )
            if self._builds_a_constant():
                # `tf.constant(np.random.randn(n, n))`: a fixed random constant, which is what tracing makes of it.
                self.report(node, f"{message}; a note here: it builds a constant", severity=Severity.INFO)
            else:
                self.report(node, message)
        elif isinstance(func, ast.Attribute) and func.attr in _MUTATORS and self._is_outer(func.value):
            target = self.context.dotted(func.value)
            self.report(
                node,
                f"`{target}.{func.attr}()` changes Python state from a {scope.graph_reason}: "
                "it runs once per trace, not once per step",
            )

    def _builds_a_constant(self) -> bool:
        """The draw is the value of tf.constant / tf.Variable / tf.convert_to_tensor (its nearest enclosing call)."""
        for ancestor in self.context.ancestors():
            if isinstance(ancestor, ast.Call):
                qualname = self.context.qualname(ancestor.func) or ""
                return qualname in ("tensorflow.constant", "tensorflow.Variable", "tensorflow.convert_to_tensor")
            if isinstance(ancestor, ast.stmt):
                return False
        return False

    def visit_Assign(self, node: ast.Assign) -> None:
        if not self.context.scope.is_graph:
            return
        for target in node.targets:
            if isinstance(target, ast.Subscript) and self._is_outer(target.value):
                self.report(
                    target,
                    f"writing `{self.context.dotted(target.value)}[...]` from a "
                    f"{self.context.scope.graph_reason} stores a symbolic tensor once per trace",
                )

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        scope = self.context.scope
        if not scope.is_graph:
            return
        target = node.target
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            self.report(
                node,
                f"`self.{target.attr} {_operator(node.op)}= ...` in a {scope.graph_reason} updates a "
                "Python attribute once per trace; use a tf.Variable and assign_add",
            )
        elif isinstance(target, ast.Subscript) and self._is_outer(target.value):
            self.report(node, f"updating an outer Python container from a {scope.graph_reason}")

    def visit_Global(self, node: ast.Global) -> None:
        self._report_rebinding(node, "global")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self._report_rebinding(node, "nonlocal")

    def _report_rebinding(self, node: ast.Global | ast.Nonlocal, keyword: str) -> None:
        scope = self.context.scope
        if not scope.is_graph:
            return
        names = ", ".join(node.names)
        if all("trac" in name.lower() for name in node.names):
            self.report(
                node,
                f"`{keyword} {names}` in a {scope.graph_reason} changes once per trace: a deliberate trace counter here",
                severity=Severity.INFO,
            )
        elif _lazily_created(scope.node, set(node.names)):
            # `if g is None: g = tf.random.Generator(...)`: the create-once-on-first-trace pattern
            # the tf.function guide recommends for variables and generators
            self.report(
                node,
                f"`{keyword} {names}` in a {scope.graph_reason} is created once, on the first trace "
                "(`if ... is None`): the documented create-once pattern",
                severity=Severity.INFO,
            )
        else:
            self.report(
                node,
                f"`{keyword} {names}` in a {scope.graph_reason}: the rebinding happens once per trace, not once per call",
            )

    def _python_iterator(self, argument: ast.AST, at: ast.AST) -> bool:
        """``argument`` holds a Python iterator (``iter([1, 2])``, a generator), not a tf.data one,
        by what the file passes for it or binds it to."""
        name = self.context.dotted(argument)
        values = self.context.bindings.values(name, at, self.context.scope.node) if name else [argument]
        for value in values:
            if isinstance(value, ast.GeneratorExp):
                return True
            if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name):
                continue
            if value.func.id == "iter" and value.args:
                source = value.args[0]
                if isinstance(source, (ast.List, ast.Tuple, ast.ListComp, ast.Set)) or (
                    isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id == "range"
                ):
                    return True
            elif any(
                isinstance(n, (ast.Yield, ast.YieldFrom))
                for d in self.context.function_defs(value.func.id)
                for n in walk_body(getattr(d, "body", []))
            ):
                return True  # a call of a generator function of this file
        return False

    def _printed_by_tf_print_too(self, call: ast.Call) -> bool:
        """The same function also tf.prints the same arguments: print is there for contrast."""
        body = getattr(self.context.scope.node, "body", None)
        if not call.args or not isinstance(body, list):
            return False
        wanted = [ast.dump(arg) for arg in call.args]
        for inner in walk_body(body):
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and inner.func.attr == "print"
                and self.context.qualname(inner.func) == "tensorflow.print"
                and [ast.dump(arg) for arg in inner.args] == wanted
            ):
                return True
        return False

    def _is_outer(self, node: ast.AST) -> bool:
        """A list/dict/set that lives outside the traced function (module, closure or self)."""
        context = self.context
        if isinstance(node, ast.Name):
            if node.id in context.scope.local_names():
                return False
            for scope in reversed(context.scopes[:-1]):
                containers = self._scope_containers.get(id(scope.node))
                if containers is None:
                    body = getattr(scope.node, "body", None)
                    containers = _containers_bound_in(body) if isinstance(body, list) else set()
                    self._scope_containers[id(scope.node)] = containers
                if node.id in containers:
                    # A list made by an enclosing traced function is trace-time bookkeeping too.
                    return not scope.is_graph
            return False
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            klass = context.current_class()
            if klass is None:
                return False
            containers = self._class_containers.get(id(klass))
            if containers is None:
                containers = set()
                methods = [n for n in klass.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
                for method in methods:
                    for inner in walk_body(method.body):
                        if isinstance(inner, ast.Assign) and _is_container(inner.value):
                            containers.update(
                                t.attr
                                for t in inner.targets
                                if isinstance(t, ast.Attribute)
                                and isinstance(t.value, ast.Name)
                                and t.value.id == "self"
                            )
                self._class_containers[id(klass)] = containers
            return node.attr in containers
        return False

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        import libcst as cst

        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            return node.with_changes(func=cst.Attribute(value=cst.Name(data["tf"]), attr=cst.Name("print")))
        return None


def _is_trace_marker(call: ast.Call) -> bool:
    """print("Tracing with", x), print(f"tracing {n}"): a message about tracing itself."""
    first = call.args[0] if call.args else None
    parts = first.values if isinstance(first, ast.JoinedStr) else [first]
    return any(
        isinstance(part, ast.Constant) and isinstance(part.value, str) and "trac" in part.value.lower()
        for part in parts
    )


def _lazily_created(function: ast.AST, names: set[str]) -> bool:
    """Each of ``names`` is tested with ``if name is None:`` in ``function`` (the create-once guard)."""
    body = getattr(function, "body", None)
    if not isinstance(body, list):
        return False
    guarded: set[str] = set()
    for inner in walk_body(body):
        if (
            isinstance(inner, ast.If)
            and isinstance(inner.test, ast.Compare)
            and isinstance(inner.test.left, ast.Name)
            and inner.test.left.id in names
            and len(inner.test.ops) == 1
            and isinstance(inner.test.ops[0], ast.Is)
            and isinstance(inner.test.comparators[0], ast.Constant)
            and inner.test.comparators[0].value is None
        ):
            guarded.add(inner.test.left.id)
    return guarded == names


def _operator(op: ast.operator) -> str:
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}.get(type(op), "?")
