"""``--mode native``: rewrite a TF1 placeholder + Session training script into TF2 idioms.

Input is tf_upgrade_v2's output (``tf.compat.v1.placeholder``, ``tf.compat.v1.Session`` ...).
The rewrite is all or nothing per file: when any part of the file falls outside what is proven
here, :func:`rewrite_native` returns ``converted=False`` with the first reason, and migrate keeps
the compat output (which runs as a TF1 graph) for that file.

What is rewritten, and why each step keeps the program's meaning:

* Every module-level tensor that depends on a placeholder (the graph) is moved into the
  functions that fetch it. One ``tf.function`` per distinct ``sess.run`` / ``Tensor.eval`` call
  (same fetches, same placeholders) computes exactly what that call fetched, each tensor once per
  call, from the values the call fed: what ``Session.run`` did.
* Placeholders become the function's parameters. A placeholder that is only ever fed Python
  literals (``keep_prob: 0.8``, ``is_training: True``) stays a Python value, so ``tf.function``
  traces once per value, as a TF1 graph would branch; any other is cast to the placeholder's dtype,
  as ``feed_dict`` converted it.
* ``opt.minimize(loss)`` with a ``tf.compat.v1.train`` optimizer becomes a Keras optimizer with the
  same update rule and a ``GradientTape`` step over the trainable variables the loss read
  (``tape.watched_variables()``; TF1 took all trainable variables, and those the loss never reads
  get no gradient there either).
* ``tf.layers.*`` calls in the graph become Keras layers created once at module level (the line
  the TF1 layer was on) and called in the functions, so train and evaluation share weights.
* ``tf.train.Saver()`` becomes ``tf.train.Checkpoint`` over every variable holder and optimizer
  defined before it (TF1's Saver saved all global variables, optimizer slots included);
  ``save`` / ``restore`` become ``write`` / ``read(...).assert_consumed()``.
* Sessions and initializers go: TF2 variables hold their value from creation. A second Session
  only keeps TF1's meaning when it starts by restoring the checkpoint, so that is required.

Everything here works on source text with libcst and imports no TensorFlow.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from tfpilot.migrate.compat import CompatChange, dotted_name, import_bindings, qualified_name

__all__ = ["NativeResult", "rewrite_native"]

_V1 = "tensorflow.compat.v1."

# TF1 optimizer -> (Keras class, TF1 positional parameter names, TF1 keyword -> Keras keyword,
# keywords Keras needs to match TF1's defaults).
_OPTIMIZERS: dict[str, tuple[str, tuple[str, ...], dict[str, str], dict[str, str]]] = {
    "GradientDescentOptimizer": ("SGD", ("learning_rate",), {"learning_rate": "learning_rate"}, {}),
    "AdamOptimizer": (
        "Adam",
        ("learning_rate", "beta1", "beta2", "epsilon"),
        {"learning_rate": "learning_rate", "beta1": "beta_1", "beta2": "beta_2", "epsilon": "epsilon"},
        {"epsilon": "1e-08"},
    ),
    "MomentumOptimizer": (
        "SGD",
        ("learning_rate", "momentum", "use_locking", "name", "use_nesterov"),
        {"learning_rate": "learning_rate", "momentum": "momentum", "use_nesterov": "nesterov"},
        {},
    ),
}
_IGNORED_OPTIMIZER_ARGS = frozenset({"name"})

# tf.layers function -> (Keras class, TF1 positional parameters after `inputs`, allowed keywords).
_LAYERS: dict[str, tuple[str, tuple[str, ...], frozenset[str]]] = {
    "dense": (
        "Dense",
        ("units", "activation", "use_bias", "kernel_initializer", "bias_initializer"),
        frozenset({"units", "activation", "use_bias", "kernel_initializer", "bias_initializer", "name"}),
    ),
    "conv2d": (
        "Conv2D",
        ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "activation", "use_bias"),
        frozenset(
            {"filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "activation", "use_bias"}
            | {"kernel_initializer", "bias_initializer", "name"}
        ),
    ),
    "max_pooling2d": (
        "MaxPooling2D",
        ("pool_size", "strides", "padding", "data_format"),
        frozenset({"pool_size", "strides", "padding", "data_format", "name"}),
    ),
    "average_pooling2d": (
        "AveragePooling2D",
        ("pool_size", "strides", "padding", "data_format"),
        frozenset({"pool_size", "strides", "padding", "data_format", "name"}),
    ),
    "flatten": ("Flatten", (), frozenset({"name"})),
}
# tf.compat.v1 call -> (its parameters, all required; the TF2 expression that computes the same).
# The losses are TF1's defaults (weights=1.0, SUM_BY_NONZERO_WEIGHTS: the mean over every element).
_V1_CALLS: dict[str, tuple[tuple[str, ...], str]] = {
    "set_random_seed": (("seed",), "{tf}.random.set_seed({seed})"),
    "losses.mean_squared_error": (("labels", "predictions"), "{tf}.reduce_mean({tf}.square({labels} - {predictions}))"),
    "losses.softmax_cross_entropy": (
        ("onehot_labels", "logits"),
        "{tf}.reduce_mean({tf}.nn.softmax_cross_entropy_with_logits(labels={onehot_labels}, logits={logits}))",
    ),
    "losses.sparse_softmax_cross_entropy": (
        ("labels", "logits"),
        "{tf}.reduce_mean({tf}.nn.sparse_softmax_cross_entropy_with_logits(labels={labels}, logits={logits}))",
    ),
}
# Modules whose functions the graph may call: they make no variables behind the rewrite's back.
_TRUSTED_MODULES = ("tensorflow.", "keras.", "numpy.", "math.", "tensorflow", "numpy", "math")
_SUMMARY_KINDS = frozenset({"scalar", "histogram", "image", "audio", "text"})
_ASSIGNS = frozenset({_V1 + "assign", _V1 + "assign_add", _V1 + "assign_sub"})
_LAYER_MODULES = ("tensorflow.layers.", "tensorflow.compat.v1.layers.")
_FLATTEN = "tensorflow.contrib.layers.flatten"
# Calls that create variables: inside a tf.function they would make new ones on every trace.
_CREATES_VARIABLES = re.compile(
    r"^tensorflow\.(Variable|compat\.v1\.(Variable|get_variable)|get_variable|compat\.v1\.layers\.|layers\.|contrib\.|"
    r"nn\.rnn_cell\.|compat\.v1\.nn\.rnn_cell\.|keras\.layers\.)|^keras\.layers\."
)
# Graph state made at module level: with the Session in a function, the rewrite would leave it there.
_MODULE_GRAPH = re.compile(
    r"^tensorflow\.(compat\.v1\.)?(placeholder|Variable|get_variable|layers\.|train\.\w*Optimizer|"
    r"global_variables_initializer|summary\.|nn\.rnn_cell\.)"
)


@dataclasses.dataclass(frozen=True)
class NativeResult:
    source: str  # the rewritten file (the input when not converted)
    converted: bool
    reason: str = ""  # why the file stays on compat (first obstacle)
    reason_line: int = 1
    changes: tuple[CompatChange, ...] = ()
    notes: tuple[CompatChange, ...] = ()  # non-blocking: check these by hand


class _Fallback(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


@dataclasses.dataclass
class _Definition:
    index: int  # position in the flattened module body
    statement: cst.SimpleStatementLine
    targets: tuple[str, ...]
    deps: list[_Definition | str]  # reaching definitions and placeholder names it reads
    line: int
    function_form: cst.SimpleStatementLine | None = None  # the statement as it runs in a tf.function
    module_form: tuple[cst.BaseStatement, ...] = ()  # what stays at module level (hoisted layers)
    train: tuple[str, str] | None = None  # (keras optimizer name, loss name) for `T = opt.minimize(loss)`


@dataclasses.dataclass
class _Helper:
    """A forward pass that several steps share: one function they call."""

    root: _Definition
    definitions: list[_Definition]
    params: list[str]
    name: str = ""
    users: set[tuple[int, ...]] = dataclasses.field(default_factory=set)
    returns: set[str] = dataclasses.field(default_factory=set)

    def ordered_returns(self) -> list[str]:
        return [name for d in self.definitions for name in d.targets if name in self.returns]


@dataclasses.dataclass
class _Site:
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


def _names_read(node: cst.CSTNode) -> set[str]:
    """Every Name the node reads (attribute members and keyword names excluded)."""
    found: set[str] = set()

    class Reader(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
            if not isinstance(node.target, (cst.Name, cst.Tuple, cst.List)):
                node.target.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    node.visit(Reader())
    return found


def _target_names(target: cst.BaseExpression) -> tuple[str, ...] | None:
    if isinstance(target, cst.Name):
        return (target.value,)
    if isinstance(target, (cst.Tuple, cst.List)):
        names: list[str] = []
        for element in target.elements:
            inner = _target_names(element.value)
            if inner is None:
                return None
            names += inner
        return tuple(names)
    return None


def _bound_names(statement: cst.CSTNode) -> list[str]:
    """Names a module-scope statement binds (assignments, loops, with-as, defs, imports)."""
    bound: list[str] = []

    class Binder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            bound.append(node.name.value)
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            bound.append(node.name.value)
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            bound.extend(_target_names(node.target) or ())

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            bound.extend(_target_names(node.target) or ())

        def visit_For(self, node: cst.For) -> None:
            bound.extend(_target_names(node.target) or ())

        def visit_AsName(self, node: cst.AsName) -> None:
            bound.extend(_target_names(node.name) or ())

    statement.visit(Binder())
    return bound


def _descendants(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            found.append(node)
            return True

    node.visit(Collect())
    return found


def _is_main_test(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` (either order, either quotes)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    sides = {type(test.left), type(target.comparator)}
    names = [side for side in (test.left, target.comparator) if isinstance(side, cst.Name)]
    strings = [side for side in (test.left, target.comparator) if isinstance(side, cst.SimpleString)]
    return (
        isinstance(target.operator, cst.Equal)
        and sides == {cst.Name, cst.SimpleString}
        and names[0].value == "__name__"
        and strings[0].evaluated_value == "__main__"
    )


def _indent(code: str, prefix: str) -> str:
    return "".join(prefix + line if line.strip() else line for line in code.splitlines(keepends=True))


class _Rewrite:
    def __init__(self, source: str) -> None:
        self.module = cst.parse_module(source)
        self.wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self.positions = self.wrapper.resolve(PositionProvider)
        self.parents = self.wrapper.resolve(ParentNodeProvider)
        self.bindings = import_bindings(self.module)
        self.changes: list[CompatChange] = []
        self.notes: list[CompatChange] = []
        self.layer_counts: dict[str, int] = {}
        self.used_names = _names_read(self.module) | {
            name for statement in self.module.body for name in _bound_names(statement)
        }
        tf_aliases = [local for local, full in self.bindings.items() if full == "tensorflow"]
        if not tf_aliases:
            raise _Fallback(1, "no `import tensorflow as tf` at module level")
        self.tf = tf_aliases[0]
        self.keras = next((local for local, full in self.bindings.items() if full == "keras"), None)

    # --- helpers -------------------------------------------------------------------------
    def line(self, node: cst.CSTNode) -> int:
        try:
            return self.positions[node].start.line
        except KeyError:
            return 1

    def qualified(self, node: cst.BaseExpression) -> str | None:
        return qualified_name(node, self.bindings)

    def fresh(self, base: str) -> str:
        name, counter = base, 1
        while name in self.used_names:
            counter += 1
            name = f"{base}_{counter}"
        self.used_names.add(name)
        return name

    def keras_name(self) -> str:
        if self.keras is None:
            self.keras = "keras"
        return self.keras

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    # --- the scope that holds the Session, with its Session and Graph blocks opened ------
    def find_scope(self) -> None:
        """The statements the rewrite works on: the module, or the one function / main block with the Session.

        TensorFlow's own tutorials build the graph and run it inside ``main()`` (started by
        ``tf.app.run``) or under ``if __name__ == "__main__":``; the rewrite then stays inside that
        function, and its tf.functions and layers become locals of it, made once per call as the
        TF1 graph was.
        """
        self.scope_owner: cst.FunctionDef | cst.If | None = None
        self.scope: Sequence[cst.BaseStatement] = self.module.body
        if self.holds_session(self.module.body):
            return
        owners: list[cst.FunctionDef | cst.If] = []
        for statement in self.module.body:
            if isinstance(statement, cst.ClassDef) and self.holds_session_anywhere(statement):
                raise _Fallback(
                    self.line(statement),
                    f"the Session lives in class `{statement.name.value}` (graph and Session as attributes "
                    "are not rewritten)",
                )
            if isinstance(statement, (cst.FunctionDef, cst.If)) and self.holds_session_anywhere(statement):
                owners.append(statement)
        if not owners:
            raise _Fallback(1, "no tf.compat.v1.Session in the module, a function or the main block")
        if len(owners) > 1:
            raise _Fallback(self.line(owners[1]), "Sessions in more than one function or block")
        owner = owners[0]
        if isinstance(owner, cst.If) and (owner.orelse is not None or not _is_main_test(owner.test)):
            raise _Fallback(self.line(owner), "a Session inside an `if` other than `if __name__ == '__main__':`")
        if isinstance(owner, cst.FunctionDef) and owner.decorators:
            raise _Fallback(self.line(owner), f"a Session in the decorated function `{owner.name.value}`")
        assert isinstance(owner.body, cst.IndentedBlock)
        if not self.holds_session(owner.body.body):
            raise _Fallback(self.line(owner), "a Session nested in a loop or branch of its function")
        self.check_module_graph_free(owner)
        self.scope_owner = owner
        self.scope = owner.body.body

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
        return False

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
            for name in self.calls_in(statement):
                if _MODULE_GRAPH.match(name):
                    raise _Fallback(
                        self.line(statement), f"`{name}` at module level while the Session runs in a function"
                    )

    def flatten(self) -> None:
        self.body: list[cst.BaseStatement] = []
        self.sessions: list[tuple[str, int]] = []  # (name, index of its first statement)
        self.session_name: str | None = None
        self.tag_prefixes: dict[int, str] = {}  # id(statement) -> the name scopes it was in, "a/b/"
        self.open(self.scope)
        if not self.sessions:
            raise _Fallback(1, "no tf.compat.v1.Session at module level")

    def open(self, statements: Sequence[cst.BaseStatement], prefix: str = "") -> None:
        for statement in statements:
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
                        raise _Fallback(self.line(statement), "a Session used without `as NAME`")
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
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and self.is_session(small.value):
                    target = small.targets[0].target
                    if not isinstance(target, cst.Name):
                        raise _Fallback(self.line(statement), "a Session bound to something other than a name")
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
        if name not in ("tensorflow.name_scope", _V1 + "name_scope", _V1 + "variable_scope"):
            return None
        if any(arg.keyword is not None and arg.keyword.value not in ("name", "default_name") for arg in call.args):
            return None
        if name == _V1 + "variable_scope" and any(
            found.startswith(_V1 + "get_variable") or found == _V1 + "AUTO_REUSE" for found in self.calls_in(statement)
        ):
            return None
        if item.asname is not None:
            if not isinstance(item.asname.name, cst.Name) or item.asname.name.value in _names_read(statement.body):
                return None
        first = call.args[0].value if call.args else None
        if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str):
            return first.evaluated_value
        return "" if first is None else None

    def is_graph_block(self, node: cst.BaseExpression) -> bool:
        """``tf.Graph().as_default()``."""
        return (
            isinstance(node, cst.Call)
            and not node.args
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "as_default"
            and isinstance(node.func.value, cst.Call)
            and not node.func.value.args
            and self.qualified(node.func.value.func) in ("tensorflow.Graph", _V1 + "Graph")
        )

    def is_session(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Call) and self.qualified(node.func) in (
            _V1 + "Session",
            "tensorflow.Session",
            _V1 + "InteractiveSession",
        )

    def use_session(self, name: str, call: cst.BaseExpression, statement: cst.CSTNode) -> None:
        if self.session_name not in (None, name):
            raise _Fallback(self.line(statement), "Sessions under different names")
        self.session_name = name
        assert isinstance(call, cst.Call)
        for arg in call.args:
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
                raise _Fallback(self.line(statement), "a Session with a target or graph argument")

    # --- the graph: placeholders and the tensors computed from them ----------------------
    def analyse(self) -> None:
        self.placeholders: dict[str, tuple[int, str]] = {}  # name -> (order, dtype code)
        self.definitions: list[_Definition] = []
        self.reaching: dict[str, list[_Definition | str]] = {}
        self.init_names: set[str] = set()
        self.removed: set[int] = set()  # id() of statements to drop
        self.optimizers: dict[str, tuple[str, int]] = {}  # TF1 optimizer object name -> (keras expr, line)
        self.saver: str | None = None
        self.holders: list[tuple[str, int]] = []  # (name, index): variables, layers, optimizers
        # tf.Variable names, bound once: a tensor computed from one is recomputed at every run, as in TF1.
        self.variables: set[str] = set()
        self.summaries: list[tuple[str, str, str]] = []  # (kind, tag code, tensor code), in program order
        self.summary_ops: set[str] = set()  # names bound to TF1 summary ops (gone)
        self.summary_names: set[str] = set()  # names bound to merge_all(): a dict of tensors
        self.summary_writer_helper = ""
        self.writers: set[str] = set()
        self.summary_adds: set[int] = set()  # id() of writer.add_summary(...) calls
        self.binds: dict[str, int] = {}
        for statement in self.body:
            for name in _bound_names(statement):
                self.binds[name] = self.binds.get(name, 0) + 1
        for index, statement in enumerate(self.body):
            self.statement(index, statement)

    def graph_names(self) -> set[str]:
        return set(self.reaching)

    def statement(self, index: int, statement: cst.BaseStatement) -> None:
        graph = self.graph_names()
        if not isinstance(statement, cst.SimpleStatementLine):
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                return  # checked when a graph statement calls it
            bound = set(_bound_names(statement))
            if bound & graph or self.assigns_graph(statement, graph):
                raise _Fallback(self.line(statement), "a graph tensor is defined inside a loop or block")
            return
        if len(statement.body) != 1:
            if _names_read(statement) & graph:
                raise _Fallback(self.line(statement), "several statements on one line use the graph")
            return
        small = statement.body[0]
        line = self.line(statement)
        if self.summary(index, statement, small):
            return
        if not isinstance(small, cst.Assign):
            return
        if len(small.targets) != 1:
            if _names_read(small.value) & graph:
                raise _Fallback(line, "a chained assignment of a graph tensor")
            return
        targets = _target_names(small.targets[0].target)
        value = small.value
        if self.is_feed_dict(value):
            return  # a feed_dict built ahead of its sess.run: see named_feed
        call_name = self.qualified(value.func) if isinstance(value, cst.Call) else None
        if call_name in (_V1 + "placeholder", "tensorflow.placeholder"):
            assert isinstance(value, cst.Call)
            if targets is None or len(targets) != 1:
                raise _Fallback(line, "a placeholder bound to something other than a name")
            dtype = next((arg for arg in value.args if arg.keyword is None or arg.keyword.value == "dtype"), None)
            if dtype is None:
                raise _Fallback(line, "a placeholder without a dtype")
            self.placeholders[targets[0]] = (len(self.placeholders), self.code(dtype.value))
            self.reaching.setdefault(targets[0], []).append(targets[0])
            self.removed.add(id(statement))
            self.changes.append(CompatChange(line, 1, f"placeholder `{targets[0]}` -> a tf.function argument"))
            return
        if call_name in (_V1 + "global_variables_initializer", _V1 + "initialize_all_variables"):
            if targets is None or len(targets) != 1:
                raise _Fallback(line, "an initializer bound to something other than a name")
            self.init_names.update(targets)
            self.removed.add(id(statement))
            self.changes.append(
                CompatChange(line, 1, "removed the variable initializer: TF2 variables start initialized")
            )
            return
        if call_name == _V1 + "train.Saver":
            assert isinstance(value, cst.Call) and targets is not None
            if value.args or len(targets) != 1:
                raise _Fallback(line, "tf.train.Saver with arguments (a var_list, max_to_keep ...)")
            self.saver = targets[0]
            self.saver_index = index
            self.saver_statement = statement
            return
        optimizer = self.optimizer_expression(value, line) if isinstance(value, cst.Call) else None
        if optimizer is not None and targets is not None and len(targets) == 1:
            self.optimizers[targets[0]] = (optimizer, line)
            self.holders.append((targets[0], index))
            self.replacements[id(statement)] = (cst.parse_statement(f"{targets[0]} = {optimizer}\n"),)
            return
        if call_name is not None and re.match(r"^tensorflow\.(compat\.v1\.)?Variable$", call_name):
            self.holders.extend((name, index) for name in targets or ())
            if targets is not None and len(targets) == 1 and self.binds.get(targets[0], 0) == 1:
                self.variables.add(targets[0])
        elif isinstance(value, (cst.Dict, cst.List, cst.Tuple)) and "Variable" in self.code(value):
            self.holders.extend((name, index) for name in targets or ())
        elif call_name == _V1 + "nn.rnn_cell.BasicRNNCell" and targets is not None and len(targets) == 1:
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
        read = self.reads_outside_sites(value, graph)
        if not read & (graph | self.variables):
            return
        if targets is None:
            raise _Fallback(line, "a graph tensor assigned to something other than names")
        # `T = opt.minimize(loss)`, with opt a TF1 optimizer (a name or made right here).
        train = self.minimize(value, index, line)
        deps: list[_Definition | str] = [self.reaching[name][-1] for name in sorted(read & graph)]
        definition = _Definition(index, statement, targets, deps, line, train=train)
        if train is None:
            self.hoist(definition)
        self.definitions.append(definition)
        for name in targets:
            self.reaching.setdefault(name, []).append(definition)
        self.removed.add(id(statement))

    # --- TF1 summaries -> tf.summary v2 -------------------------------------------------------
    def summary(self, index: int, statement: cst.SimpleStatementLine, small: cst.BaseSmallStatement) -> bool:
        """A summary op, ``merge_all()`` or a ``FileWriter``: recorded, and the statement replaced."""
        value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
        if not isinstance(value, cst.Call):
            return False
        name = self.qualified(value.func) or ""
        member = name.rpartition(".")[2]
        if name.rpartition(".")[0] not in ("tensorflow.summary", _V1 + "summary"):
            return False
        line = self.line(statement)
        targets = _target_names(small.targets[0].target) if isinstance(small, cst.Assign) else ()
        if isinstance(small, cst.Assign) and (len(small.targets) != 1 or targets is None or len(targets) != 1):
            raise _Fallback(line, f"tf.summary.{member} bound to something other than one name")
        assert targets is not None
        if member in _SUMMARY_KINDS:
            args = {
                arg.keyword.value if arg.keyword is not None else ("name", "tensor")[position]: arg.value
                for position, arg in enumerate(value.args[:2])
            }
            if len(value.args) != 2 or set(args) - {"name", "tensor", "values"}:
                raise _Fallback(line, f"tf.summary.{member} with options (collections, family ...)")
            tag, tensor = args["name"], args.get("tensor", args.get("values"))
            assert tensor is not None
            prefix = self.tag_prefixes.get(id(statement), "")
            if isinstance(tag, cst.SimpleString) and isinstance(tag.evaluated_value, str):
                tag_code = repr(prefix + tag.evaluated_value)
            else:
                tag_code = f"{prefix!r} + {self.code(tag)}" if prefix else self.code(tag)
            self.summaries.append((member, tag_code, self.code(tensor)))
            self.summary_ops.update(targets)
            self.removed.add(id(statement))
            self.changes.append(
                CompatChange(line, 1, f"tf.summary.{member} -> written with tf.summary v2 where merge_all's result is")
            )
            return True
        if member == "merge_all":
            key = value.args[0].value if value.args else None
            if key is not None and not (isinstance(key, cst.SimpleString) and key.evaluated_value == "summaries"):
                raise _Fallback(line, "merge_all of a collection other than the summaries")
            if not self.summaries or len(targets) != 1:
                raise _Fallback(line, "merge_all() with no summary before it (TF1 returned None)")
            kinds: dict[str, list[str]] = {}
            for kind, tag_code, tensor_code in self.summaries:
                kinds.setdefault(kind, []).append(f"{tag_code}: {tensor_code}")
            rendered = ", ".join(f"{kind!r}: {{{', '.join(entries)}}}" for kind, entries in kinds.items())
            merged = cst.parse_statement(f"{targets[0]} = {{{rendered}}}\n")
            assert isinstance(merged, cst.SimpleStatementLine)
            replaced = statement.with_changes(body=merged.body)
            self.summary_names.add(targets[0])
            read = _names_read(merged) & self.graph_names()
            definition = _Definition(
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
                    lines += [
                        f"        for tag, value in summaries[{kind!r}].items():\n",
                        f"            {self.tf}.summary.{kind}(tag, value)\n",
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
                raise _Fallback(line, "a FileWriter not bound to a name, or without its log directory first")
            extra = value.args[1:]
            if len(extra) > 1 or any(arg.keyword is not None and arg.keyword.value != "graph" for arg in extra):
                raise _Fallback(line, "a FileWriter with options (flush_secs, max_queue ...)")
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
        raise _Fallback(line, f"tf.summary.{member} has no native rewrite here")

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
                raise _Fallback(line, f"feed_dict `{name}` is not bound to a {{placeholder: value}} literal before")
            if isinstance(parent, (cst.IndentedBlock, cst.Module)) and isinstance(node, cst.BaseStatement):
                siblings = list(parent.body)
                at = next(index for index, statement in enumerate(siblings) if statement is node)
                for back in range(at - 1, -1, -1):
                    statement = siblings[back]
                    if name not in _bound_names(statement):
                        continue
                    binding = self.feed_bindings.get(id(statement))
                    if binding is None:
                        raise _Fallback(line, f"feed_dict `{name}` is not bound to a {{placeholder: value}} literal")
                    values = binding[1]
                    read = set().union(*(_names_read(element.value) for element in values.elements))
                    for between in siblings[back + 1 : at + 1]:
                        if set(_bound_names(between)) & read:
                            raise _Fallback(line, f"feed_dict `{name}` reads names rebound before the sess.run")
                    if any(isinstance(found, cst.Call) for found in _descendants(values)):
                        raise _Fallback(line, f"feed_dict `{name}` calls a function in its values")
                    return values
            node = parent

    def reads_outside_sites(self, node: cst.BaseExpression, graph: set[str]) -> set[str]:
        """Names ``node`` reads, not counting what sess.run / Tensor.eval calls inside it fetch and feed."""
        session = self.session_name
        found: set[str] = set()

        class Reader(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> bool:
                func = node.func
                return not (
                    isinstance(func, cst.Attribute)
                    and func.attr.value in ("run", "eval")
                    and isinstance(func.value, cst.Name)
                    and (func.value.value == session or func.value.value in graph)
                )

            def visit_Attribute(self, node: cst.Attribute) -> bool:
                node.value.visit(self)
                return False

            def visit_Arg(self, node: cst.Arg) -> bool:
                node.value.visit(self)
                return False

            def visit_Name(self, node: cst.Name) -> None:
                found.add(node.value)

        node.visit(Reader())
        return found

    def assigns_graph(self, statement: cst.CSTNode, graph: set[str]) -> bool:
        rewrite = self
        found = False
        session = self.session_name

        class Finder(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> bool:
                func = node.func
                # sess.run / Tensor.eval read the graph by design: they are the call sites.
                return not (
                    isinstance(func, cst.Attribute)
                    and func.attr.value in ("run", "eval")
                    and isinstance(func.value, cst.Name)
                    and (func.value.value == session or func.value.value in graph)
                )

            def visit_Assign(self, node: cst.Assign) -> None:
                nonlocal found
                if rewrite.is_feed_dict(node.value):
                    return
                if not isinstance(node.value, cst.Call) or self.visit_Call(node.value):
                    found = found or bool(_names_read(node.value) & graph)

        statement.visit(Finder())
        return found

    def expression(self, code: str) -> cst.BaseExpression:
        return cst.parse_expression(code)

    def optimizer_expression(self, call: cst.Call, line: int) -> str | None:
        name = self.qualified(call.func)
        if name is None or not name.startswith(_V1 + "train."):
            return None
        kind = name[len(_V1 + "train.") :]
        if not kind.endswith("Optimizer"):
            return None
        if kind not in _OPTIMIZERS:
            raise _Fallback(line, f"tf.compat.v1.train.{kind} has no Keras optimizer with the same update rule here")
        keras_class, positional, renames, defaults = _OPTIMIZERS[kind]
        arguments: dict[str, str] = {}
        for position, arg in enumerate(call.args):
            key = arg.keyword.value if arg.keyword is not None else positional[position]
            if key in _IGNORED_OPTIMIZER_ARGS:
                continue
            if key not in renames:
                raise _Fallback(line, f"{kind}({key}=...) has no Keras counterpart here")
            arguments[renames[key]] = self.code(arg.value)
        for key, value in defaults.items():
            arguments.setdefault(key, value)
        rendered = ", ".join(f"{key}={value}" for key, value in arguments.items())
        self.changes.append(
            CompatChange(line, 1, f"tf.compat.v1.train.{kind} -> keras.optimizers.{keras_class} (same update rule)")
        )
        return f"{self.keras_name()}.optimizers.{keras_class}({rendered})"

    def minimize(self, value: cst.BaseExpression, index: int, line: int) -> tuple[str, str] | None:
        if not (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "minimize"
        ):
            return None
        if (
            len(value.args) != 1
            or value.args[0].keyword not in (None,)
            or not isinstance(value.args[0].value, cst.Name)
        ):
            raise _Fallback(line, "minimize() with more than the loss (global_step, var_list ...)")
        loss = value.args[0].value.value
        owner = value.func.value
        if isinstance(owner, cst.Name) and owner.value in self.optimizers:
            return owner.value, loss
        if isinstance(owner, cst.Call):
            expression = self.optimizer_expression(owner, line)
            if expression is not None:
                return expression, loss
        raise _Fallback(line, "minimize() on something other than a tf.compat.v1.train optimizer")

    # --- tf.layers calls -> Keras layers made once ---------------------------------------
    def hoist(self, definition: _Definition) -> None:
        rewrite = self
        hoisted: list[cst.BaseStatement] = []

        class Hoister(cst.CSTTransformer):
            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                name = rewrite.qualified(original.func)
                if name is None:
                    return updated
                if name == _FLATTEN or any(name.startswith(prefix) for prefix in _LAYER_MODULES):
                    return rewrite.layer_call(name, updated, definition.line, hoisted)
                if name in (_V1 + "nn.dynamic_rnn",):
                    return rewrite.rnn_call(updated, definition.line, hoisted)
                if name in _ASSIGNS:
                    return rewrite.assign_call(name, updated, definition.line)
                return updated

        before = len(self.holders)
        new = definition.statement.visit(Hoister())
        self.holders[before:] = [(name, definition.index) for name, _ in self.holders[before:]]
        assert isinstance(new, cst.SimpleStatementLine)
        definition.function_form = new
        definition.module_form = tuple(hoisted)

    def assign_call(self, name: str, call: cst.Call, line: int) -> cst.BaseExpression:
        method = name.rpartition(".")[2]
        if len(call.args) != 2 or any(arg.keyword is not None for arg in call.args):
            raise _Fallback(line, f"tf.compat.v1.{method} with options (use_locking, validate_shape ...)")
        variable, value = (arg.value for arg in call.args)
        self.changes.append(CompatChange(line, 1, f"tf.compat.v1.{method}(ref, value) -> ref.{method}(value)"))
        return cst.Call(cst.Attribute(variable, cst.Name(method)), [cst.Arg(value)])

    def layer_call(self, name: str, call: cst.Call, line: int, hoisted: list[cst.BaseStatement]) -> cst.BaseExpression:
        member = "flatten" if name == _FLATTEN else name.rpartition(".")[2]
        if not call.args or call.args[0].keyword is not None:
            raise _Fallback(line, f"tf.layers.{member} without its input as the first argument")
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
                raise _Fallback(
                    line, "tf.layers.dropout(training=...) fed a tensor (Keras Dropout wants a Python bool)"
                )
            options = {key: value for key, value in given.items() if key in ("rate", "noise_shape", "seed")}
            keras_class = "Dropout"
            call_suffix = f", training={training.value}"
        else:
            if member not in _LAYERS:
                raise _Fallback(line, f"tf.layers.{member} has no Keras rewrite here")
            keras_class, positional, allowed = _LAYERS[member]
            options = {}
            for position, arg in enumerate(call.args[1:]):
                if arg.keyword is None and position >= len(positional):
                    raise _Fallback(line, f"tf.layers.{member} with more positional arguments than it takes")
                key = arg.keyword.value if arg.keyword is not None else positional[position]
                if key not in allowed:
                    raise _Fallback(line, f"tf.layers.{member}({key}=...) has no Keras rewrite here")
                options[key] = arg.value
            call_suffix = ""
        for value in options.values():
            if _names_read(value) & graph:
                raise _Fallback(line, f"tf.layers.{member}'s settings depend on a graph tensor")
            for node_name in self.calls_in(value):
                if node_name.startswith("tensorflow.contrib") or node_name.startswith(_V1):
                    raise _Fallback(line, f"tf.layers.{member} with a TF1-only argument ({node_name})")
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
        arguments = {
            arg.keyword.value if arg.keyword else ("cell", "inputs")[i]: arg.value for i, arg in enumerate(call.args)
        }
        cell = arguments.get("cell")
        if not (isinstance(cell, cst.Name) and cell.value in cells) or set(arguments) - {"cell", "inputs", "dtype"}:
            raise _Fallback(line, "dynamic_rnn with a cell other than a module-level BasicRNNCell, or extra options")
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

    def calls_in(self, node: cst.CSTNode) -> list[str]:
        names: list[str] = []
        rewrite = self

        class Calls(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute) -> None:
                name = rewrite.qualified(node)
                if name:
                    names.append(name)

        node.visit(Calls())
        return names

    # --- sess.run / Tensor.eval call sites -----------------------------------------------
    def find_sites(self) -> None:
        self.sites: list[_Site] = []
        self.session_uses: list[tuple[cst.Call, int, str]] = []  # init runs and saver calls: (call, top, kind)
        rewrite = self
        graph = self.graph_names()
        session = self.session_name

        for top, statement in enumerate(self.body):
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                if session in _names_read(statement):
                    raise _Fallback(self.line(statement), f"a function uses the Session `{session}`")
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
                    if isinstance(owner, cst.Name) and owner.value == session and method == "run":
                        rewrite.site(
                            node,
                            rewrite.current_top,
                            line,
                            fetch=node.args[0].value if node.args else None,
                            args=node.args[1:],
                        )
                        self.handled.add(id(owner))
                    elif method == "eval" and isinstance(owner, cst.Name) and owner.value in graph:
                        rewrite.site(node, rewrite.current_top, line, fetch=owner, args=node.args)
                        self.handled.add(id(owner))
                    elif (
                        method == "run"
                        and not node.args
                        and (
                            (isinstance(owner, cst.Name) and owner.value in rewrite.init_names)
                            or (
                                isinstance(owner, cst.Call)
                                and rewrite.qualified(owner.func) == _V1 + "global_variables_initializer"
                            )
                        )
                    ):
                        rewrite.session_uses.append((node, rewrite.current_top, "init"))
                    elif isinstance(owner, cst.Name) and owner.value in rewrite.writers:
                        if method == "add_summary":
                            if len(node.args) != 2 or any(arg.keyword is not None for arg in node.args):
                                raise _Fallback(line, "add_summary without a step (tf.summary v2 needs one)")
                            if not rewrite.summary_writer_helper:
                                raise _Fallback(line, "add_summary of something other than merge_all()'s result")
                            rewrite.summary_adds.add(id(node))
                        elif method not in ("close", "flush"):
                            raise _Fallback(line, f"FileWriter.{method} has no native rewrite here")
                    elif isinstance(owner, cst.Name) and owner.value == rewrite.saver and method in ("save", "restore"):
                        if len(node.args) != 2 or not (
                            isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == session
                        ):
                            raise _Fallback(line, f"saver.{method} with arguments other than (session, path)")
                        rewrite.session_uses.append((node, rewrite.current_top, method))
                        self.handled.add(id(node.args[0].value))

                def visit_Name(self, node: cst.Name) -> None:
                    if id(node) in self.handled:
                        return
                    if node.value == session:
                        raise _Fallback(rewrite.line(node), f"the Session `{session}` is used outside sess.run")

            if id(statement) in self.removed:
                continue
            self.current_top = top
            statement.visit(Finder())

    def site(
        self, call: cst.Call, top: int, line: int, *, fetch: cst.BaseExpression | None, args: Sequence[cst.Arg]
    ) -> None:
        if fetch is None:
            raise _Fallback(line, "sess.run() without fetches")
        if (isinstance(fetch, cst.Name) and fetch.value in self.init_names) or (
            isinstance(fetch, cst.Call)
            and self.qualified(fetch.func) in (_V1 + "global_variables_initializer", _V1 + "initialize_all_variables")
        ):
            if args:
                raise _Fallback(line, "the initializer run with a feed")
            self.session_uses.append((call, top, "init"))
            return
        single = isinstance(fetch, cst.Name)
        elements = (
            [fetch]
            if single
            else [e.value for e in fetch.elements]
            if isinstance(fetch, (cst.List, cst.Tuple))
            else None
        )
        if elements is None or not all(isinstance(element, cst.Name) for element in elements):
            raise _Fallback(line, "sess.run fetches other than a name or a list of names")
        names = tuple(element.value for element in elements if isinstance(element, cst.Name))
        feed: cst.BaseExpression | None = None
        for position, arg in enumerate(args):
            if arg.keyword is None and position == 0 or arg.keyword is not None and arg.keyword.value == "feed_dict":
                feed = arg.value
            elif arg.keyword is not None and arg.keyword.value == "session":
                if not (isinstance(arg.value, cst.Name) and arg.value.value == self.session_name):
                    raise _Fallback(line, "eval(session=...) with another session")
            else:
                raise _Fallback(line, "sess.run with options or run_metadata")
        feeds: dict[str, cst.BaseExpression] = {}
        if isinstance(feed, cst.Name) and feed.value in self.feed_names:
            self.feed_arguments.add(id(feed))
            feed = self.named_feed(call, feed.value, line)
        if feed is not None:
            if not isinstance(feed, cst.Dict):
                raise _Fallback(line, "a feed_dict that is not a {placeholder: value} literal")
            for element in feed.elements:
                if not (isinstance(element, cst.DictElement) and isinstance(element.key, cst.Name)):
                    raise _Fallback(line, "a feed_dict that is not a {placeholder: value} literal")
                if element.key.value not in self.placeholders:
                    raise _Fallback(line, f"feeds `{element.key.value}`, which is not a placeholder")
                feeds[element.key.value] = element.value
        for name in names:
            if name not in self.graph_names() and name not in self.variables:
                raise _Fallback(line, f"sess.run fetches `{name}`, which is not built from placeholders or variables")
        self.sites.append(_Site(call, top, line, names, single, feeds, as_tuple=isinstance(fetch, cst.Tuple)))

    def resolve(self, name: str, top: int) -> _Definition | str | None:
        """The definition of ``name`` that a fetch at top-level statement ``top`` sees (None: a variable)."""
        if name in self.variables and name not in self.reaching:
            return None
        for definition in reversed(self.reaching[name]):
            if isinstance(definition, str) or definition.index < top:
                return definition
        raise _Fallback(1, f"`{name}` is fetched before it is defined")

    @staticmethod
    def closure(roots: Iterable[_Definition | str]) -> tuple[list[_Definition], set[str]]:
        seen: dict[int, _Definition] = {}
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
                if _CREATES_VARIABLES.match(name):
                    raise _Fallback(definition.line, f"`{name}` in the graph would create new variables on every call")
            self.check_imported_calls(node, definition.line)
            for name in _names_read(node) - graph:
                if name in functions:
                    self.check_function(functions[name], functions, graph, set())
                elif self.binds.get(name, 0) > 1 and name not in self.holders_names():
                    raise _Fallback(
                        definition.line, f"the graph reads `{name}`, which the script rebinds (TF1 read it once)"
                    )
        # A graph tensor may only be read by the graph itself and by sess.run / eval.
        rewrite = self
        for statement in self.body:
            if id(statement) in self.removed or isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                continue

            class Uses(cst.CSTVisitor):
                def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
                    return id(node) not in rewrite.feed_bindings  # its keys are placeholders, by design

                def visit_Call(self, node: cst.Call) -> bool:
                    if any(site.call is node for site in rewrite.sites):
                        for arg in node.args:
                            if isinstance(arg.value, cst.Dict):
                                for element in arg.value.elements:
                                    if isinstance(element, cst.DictElement):
                                        element.value.visit(self)
                        return False
                    return True

                def visit_Attribute(self, node: cst.Attribute) -> bool:
                    node.value.visit(self)
                    return False

                def visit_Arg(self, node: cst.Arg) -> bool:
                    node.value.visit(self)
                    return False

                def visit_Name(self, node: cst.Name) -> None:
                    if node.value in graph and node.value not in rewrite.optimizers:
                        raise _Fallback(
                            rewrite.line(node), f"graph tensor `{node.value}` is used outside sess.run / eval"
                        )

            statement.visit(Uses())
        # A named feed_dict is inlined into its calls: it may not be read anywhere else.
        for top_statement in self.body:
            for found in _descendants(top_statement):
                if (
                    isinstance(found, cst.Name)
                    and found.value in self.feed_names
                    and id(found) not in self.feed_arguments
                    and not isinstance(self.parents.get(found), cst.AssignTarget)
                ):
                    raise _Fallback(self.line(found), f"feed_dict `{found.value}` is used other than as a feed_dict")
        # Later Sessions start from fresh variables in TF1; here only a restore gives the same state.
        for _name, start in self.sessions[1:]:
            uses = sorted(
                [(top, kind) for _, top, kind in self.session_uses if top >= start]
                + [(site.top, "run") for site in self.sites if site.top >= start]
            )
            kinds = [kind for _, kind in uses if kind != "init"]
            if not kinds or kinds[0] != "restore":
                raise _Fallback(
                    self.line(self.body[start]) if start < len(self.body) else 1,
                    "a second Session starts from fresh variables (TF1) unless it restores a checkpoint first",
                )

    def check_imported_calls(self, node: cst.CSTNode, line: int) -> None:
        """A function imported from another module may make variables at each call: not proven here."""
        for found in _descendants(node):
            if not isinstance(found, cst.Call):
                continue
            name = self.qualified(found.func)
            if name is not None and not name.startswith(_TRUSTED_MODULES):
                raise _Fallback(
                    line, f"the graph calls `{name}`, whose variables (if it makes any) are not traced here"
                )

    def holders_names(self) -> set[str]:
        return {name for name, _ in self.holders}

    def check_function(
        self, function: cst.FunctionDef, functions: dict[str, cst.FunctionDef], graph: set[str], seen: set[str]
    ) -> None:
        if function.name.value in seen:
            return
        seen.add(function.name.value)
        parameters = {param.name.value for param in function.params.params}
        line = self.line(function)
        for name in self.calls_in(function.body):
            if _CREATES_VARIABLES.match(name):
                raise _Fallback(
                    line, f"`{function.name.value}` creates variables ({name}) each call: make them once, outside"
                )
        read = _names_read(function.body)
        local = set(_bound_names(function.body)) | parameters
        if (read - local) & graph:
            raise _Fallback(line, f"`{function.name.value}` reads graph tensors as globals")
        for name in read - local:
            if name in functions:
                self.check_function(functions[name], functions, graph, seen)

    # --- the new module -------------------------------------------------------------------
    def generate(self) -> str:
        tf = self.tf
        # `T = Adam(...).minimize(loss)`: the optimizer gets a name where T was.
        for definition in self.definitions:
            if definition.train is not None and definition.train[0] not in self.optimizers:
                target = definition.targets[0]
                name = target if "optim" in target.lower() else self.fresh("optimizer")
                definition.module_form = (cst.parse_statement(f"{name} = {definition.train[0]}\n"),)
                self.holders.append((name, definition.index))
                definition.train = (name, definition.train[1])
        for definition in self.definitions:
            if definition.module_form:
                self.module_forms[id(definition.statement)] = definition.module_form
        functions: dict[tuple[int, ...], tuple[str, list[str], cst.FunctionDef, int]] = {}
        call_code: dict[int, str] = {}
        assign_targets: dict[int, str] = {}
        self.plan_forward()
        for site in self.sites:
            resolved = [self.resolve(name, site.top) for name in site.fetches]
            if all(item is None for item in resolved):  # variables only: read their values
                values = [f"{name}.numpy()" for name in site.fetches]
                call_code[id(site.call)] = (
                    values[0]
                    if site.single
                    else f"({values[0]},)"
                    if site.as_tuple and len(values) == 1
                    else f"({', '.join(values)})"
                    if site.as_tuple
                    else f"[{', '.join(values)}]"
                )
                continue
            trains = [item for item in resolved if isinstance(item, _Definition) and item.train is not None]
            if len(trains) > 1:
                raise _Fallback(site.line, "one sess.run with two train ops")
            train = trains[0] if trains else None
            others = [(name, item) for name, item in zip(site.fetches, resolved, strict=True) if item is not train]
            key = tuple(id(item) for item in resolved)  # the same fetches of the same definitions
            if key not in functions:
                functions[key] = self.function(site, train, others)
            name, params, _, _ = functions[key]
            missing = [param for param in params if param not in site.feeds]
            if missing:
                raise _Fallback(site.line, f"sess.run does not feed `{missing[0]}`, which its fetches need")
            call = f"{name}({', '.join(self.code(site.feeds[param]) for param in params)})"
            assign = self.assign_of.get(id(site.call))
            in_statement = id(site.call) in self.expression_calls
            if train is not None:
                if in_statement:
                    call_code[id(site.call)] = call
                    continue
                position = site.fetches.index(train.targets[0])
                fetched = assign.targets[0].target if assign is not None and len(assign.targets) == 1 else None
                if site.single or not isinstance(fetched, (cst.Tuple, cst.List)):
                    raise _Fallback(site.line, "the result of running the train op is used")
                elements = [element.value for element in fetched.elements]
                dropped = elements[position]
                if not (isinstance(dropped, cst.Name) and dropped.value == "_"):
                    raise _Fallback(site.line, "the train op's result (None) is assigned to a name")
                kept = [self.code(element) for index, element in enumerate(elements) if index != position]
                kept_fetches = [fetch for index, fetch in enumerate(site.fetches) if index != position]
                assert assign is not None
                assign_targets[id(assign)] = kept[0] if len(kept) == 1 else ", ".join(kept)
                if len(kept) == 1:
                    call_code[id(site.call)] = call if kept_fetches[0] in self.summary_names else f"{call}.numpy()"
                else:
                    self.no_summary_in_list(site)
                    call_code[id(site.call)] = f"[value.numpy() for value in {call}]"
                continue
            if in_statement:
                call_code[id(site.call)] = call
            elif site.single:
                # merge_all()'s dict of tensors goes to write_summaries as it is
                call_code[id(site.call)] = call if site.fetches[0] in self.summary_names else f"{call}.numpy()"
            else:
                self.no_summary_in_list(site)
                call_code[id(site.call)] = f"[value.numpy() for value in {call}]"
        init_calls = {id(call) for call, _, kind in self.session_uses if kind == "init"}
        saver_calls = {id(call): kind for call, _, kind in self.session_uses if kind in ("save", "restore")}
        rewrite = self

        class Sites(cst.CSTTransformer):
            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                if id(original) in call_code:
                    return cst.parse_expression(call_code[id(original)])
                if id(original) in rewrite.summary_adds:
                    assert isinstance(updated.func, cst.Attribute)
                    return updated.with_changes(
                        func=cst.Name(rewrite.summary_writer_helper),
                        args=[cst.Arg(updated.func.value, comma=cst.MaybeSentinel.DEFAULT), *updated.args],
                    )
                kind = saver_calls.get(id(original))
                if kind is not None:
                    path = rewrite.code(original.args[1].value)
                    assert rewrite.saver is not None
                    if kind == "save":
                        return cst.parse_expression(f"{rewrite.saver}.write({path})")
                    return cst.parse_expression(f"{rewrite.saver}.read({path}).assert_consumed()")
                return updated

            def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
                if id(original) in assign_targets:
                    target = cst.parse_expression(assign_targets[id(original)])
                    assert isinstance(target, (cst.Name, cst.Tuple))
                    return updated.with_changes(targets=[cst.AssignTarget(target)])
                return updated

            def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
                if not updated.body:
                    return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
                return updated

            def leave_SimpleStatementLine(
                self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
            ) -> cst.BaseStatement | cst.RemovalSentinel:
                if id(original) in rewrite.feed_bindings:
                    return cst.RemoveFromParent()  # its values are passed to the step where it was fed
                if len(original.body) == 1 and isinstance(original.body[0], cst.Expr):
                    value = original.body[0].value
                    if id(value) in init_calls:
                        return cst.RemoveFromParent()
                return updated

        for init_call, _, kind in self.session_uses:
            if kind == "init" and id(init_call) not in self.expression_calls:
                raise _Fallback(self.line(init_call), "the initializer's run is used as a value")
        by_top: dict[int, list[cst.FunctionDef]] = {}
        for helper in self.helpers.values():
            first_top = min(functions[key][3] for key in helper.users)
            by_top.setdefault(first_top, []).append(self.render_helper(helper))
        for _, _, function, top in functions.values():
            by_top.setdefault(top, []).append(function)
        new_body: list[cst.BaseStatement] = []
        generated: set[int] = set()
        for top, statement in enumerate(self.body):
            for function in by_top.get(top, []):
                new_body.append(function)
                generated.add(id(function))
            emitted: list[cst.BaseStatement] = []
            if id(statement) in self.removed:
                emitted += self.module_forms.get(id(statement), ())
            elif id(statement) in self.replacements:
                emitted += self.replacements[id(statement)]
            elif self.saver is not None and statement is self.saver_statement:
                holders = [name for name, index in self.holders if index < self.saver_index]
                arguments = ", ".join(f"{name}={name}" for name in holders)
                checkpoint = cst.parse_statement(f"{self.saver} = {tf}.train.Checkpoint({arguments})\n")
                assert isinstance(checkpoint, cst.SimpleStatementLine)
                emitted.append(statement.with_changes(body=checkpoint.body))
                self.changes.append(
                    CompatChange(
                        self.line(statement),
                        1,
                        f"tf.train.Saver() -> tf.train.Checkpoint over {', '.join(holders) or 'nothing'} "
                        "(what the Saver saved: every variable and optimizer slot made before it)",
                    )
                )
            else:
                visited = statement.visit(Sites())
                if isinstance(visited, cst.BaseStatement):
                    emitted.append(visited)
            if by_top.get(top) and emitted:  # PEP 8: two blank lines after a function
                first = emitted[0]
                assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
                leading: list[cst.EmptyLine] = list(first.leading_lines)
                while leading and leading[0].comment is None:
                    leading.pop(0)  # the blank lines after a function are the generated ones
                emitted[0] = first.with_changes(leading_lines=[*self.blank_lines(), *leading])
            new_body += emitted
        module_body = self.splice(new_body)
        if self.keras is not None and "keras" not in self.bindings.values():
            at = next(
                index
                for index, statement in enumerate(module_body)
                if isinstance(statement, cst.SimpleStatementLine)
                and any(isinstance(small, cst.Import) for small in statement.body)
                and self.tf in set(_bound_names(statement)) | {self.code(statement).split()[-1]}
            )
            module_body.insert(at + 1, cst.parse_statement(f"import {self.keras}\n"))
        module_body = self.rewrite_v1_calls(self.rewrite_app(module_body))
        module = self.module.with_changes(body=module_body)
        # Nothing of the TF1 graph may be left at module level.
        left = (
            (
                set(self.placeholders)
                | self.init_names
                | {self.session_name or ""}
                | self.graph_names()
                | self.summary_ops
            )
            - set(self.optimizers)
            - self.holders_names()
            - {name for name, _, _, _ in functions.values()}  # a train op's name reused by its step
        )
        for statement in new_body:
            if id(statement) in generated or isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                continue
            for name in _names_read(statement) & left:
                raise _Fallback(
                    1, f"`{name}` is still used at module level after the rewrite: {rewrite.code(statement)[:80]!r}"
                )
        return module.code

    def rewrite_v1_calls(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """The tf.compat.v1 calls with a TF2 spelling that computes the same (``_V1_CALLS``)."""
        rewrite = self

        class Calls(cst.CSTTransformer):
            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                name = rewrite.qualified(original.func) or ""
                if not name.startswith(_V1) or name[len(_V1) :] not in _V1_CALLS:
                    return updated
                parameters, template = _V1_CALLS[name[len(_V1) :]]
                given: dict[str, str] = {}
                for position, arg in enumerate(updated.args):
                    if arg.keyword is None and position >= len(parameters) or arg.star:
                        return updated
                    key = arg.keyword.value if arg.keyword is not None else parameters[position]
                    if key == "scope" or key == "name":
                        continue  # names a graph op: nothing to name in TF2
                    if key not in parameters:
                        raise _Fallback(
                            rewrite.line(original), f"tf.compat.v1.{name[len(_V1) :]}({key}=...) is not rewritten"
                        )
                    given[key] = rewrite.code(arg.value)
                if set(given) != set(parameters):
                    raise _Fallback(rewrite.line(original), f"tf.compat.v1.{name[len(_V1) :]} without all its inputs")
                rewrite.changes.append(
                    CompatChange(
                        rewrite.line(original), 1, f"tf.compat.v1.{name[len(_V1) :]} -> {template.split('(')[0]}"
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
                if name in (_V1 + "flags", _V1 + "app.flags"):
                    uses_flags = True
                    return False
                return True

            def visit_Call(self, node: cst.Call) -> None:
                if rewrite.qualified(node.func) == _V1 + "app.run":
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
                raise _Fallback(self.line(runs[0]) if runs else 1, "`app` or `flags` is already a name in the file")
        elif "sys" not in self.bindings:
            imports.append("import sys\n")

        class Replace(cst.CSTTransformer):
            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                return replacements.get(id(original), updated)

            def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
                if rewrite.qualified(original) in (_V1 + "flags", _V1 + "app.flags"):
                    return cst.Name("flags")
                return updated

        new: list[cst.BaseStatement] = list(module.visit(Replace()).body)
        at = next(
            index
            for index, statement in enumerate(new)
            if isinstance(statement, cst.SimpleStatementLine)
            and any(isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body)
        )
        return new[: at + 1] + [cst.parse_statement(line) for line in imports] + new[at + 1 :]

    def blank_lines(self) -> list[cst.EmptyLine]:
        """PEP 8: two blank lines around a module-level function, one around a nested one."""
        return [cst.EmptyLine(indent=False)] * (2 if self.scope_owner is None else 1)

    def no_summary_in_list(self, site: _Site) -> None:
        if set(site.fetches) & self.summary_names:
            raise _Fallback(site.line, "merge_all()'s result fetched in a list with values read as numbers")

    def splice(self, new_body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """The module's statements with the rewritten scope in place of the old one."""
        owner = self.scope_owner
        if owner is None:
            return new_body
        assert isinstance(owner.body, cst.IndentedBlock)
        if not new_body:
            new_body = [cst.SimpleStatementLine([cst.Pass()])]
        replaced = owner.with_changes(body=owner.body.with_changes(body=new_body))
        return [replaced if statement is owner else statement for statement in self.module.body]

    def parts(
        self, train: _Definition | None, others: list[tuple[str, _Definition | str | None]]
    ) -> tuple[list[_Definition], list[_Definition], set[str]]:
        """What a step computes under the tape (the loss), what after, and the placeholders it reads."""
        tape_part, tape_placeholders = self.closure(train.deps if train is not None else [])
        rest_all, rest_placeholders = self.closure(item for _, item in others if item is not None)
        in_tape = {id(definition) for definition in tape_part}
        rest = [definition for definition in rest_all if id(definition) not in in_tape]
        return tape_part, rest, tape_placeholders | rest_placeholders

    # --- one forward pass, shared by the steps that compute it ----------------------------
    def plan_forward(self) -> None:
        """Definitions that two or more steps compute become one helper function they all call.

        A helper is rooted at the last shared tensor of a step (the model's output, the loss):
        everything that tensor depends on is shared too, so each step keeps only what is its own.
        """
        self.helpers: dict[int, _Helper] = {}
        self.closure_ids: dict[int, set[int]] = {}
        self.step_members: dict[tuple[int, ...], list[_Definition]] = {}
        self.step_returns: dict[tuple[int, ...], set[str]] = {}
        for site in self.sites:
            resolved = [self.resolve(name, site.top) for name in site.fetches]
            if all(item is None for item in resolved):
                continue
            trains = [item for item in resolved if isinstance(item, _Definition) and item.train is not None]
            train = trains[0] if len(trains) == 1 else None
            others = [(name, item) for name, item in zip(site.fetches, resolved, strict=True) if item is not train]
            key = tuple(id(item) for item in resolved)
            if key not in self.step_members:
                tape_part, rest, _ = self.parts(train, others)
                self.step_members[key] = tape_part + rest
                returns = {name for name, _ in others}
                if train is not None and train.train is not None:
                    returns.add(train.train[1])
                self.step_returns[key] = returns
        users: dict[int, set[tuple[int, ...]]] = {}
        for key, members in self.step_members.items():
            for definition in members:
                users.setdefault(id(definition), set()).add(key)
                self.closure_ids[id(definition)] = {id(d) for d in self.closure([definition])[0]}
        shared = [d for members in self.step_members.values() for d in members if len(users[id(d)]) > 1]
        shared_ids = {id(d) for d in shared}
        for key, members in self.step_members.items():
            for root in self.maximal([d for d in members if id(d) in shared_ids]):
                if id(root) not in self.helpers:
                    definitions, placeholders = self.closure([root])
                    params = sorted(placeholders, key=lambda name: self.placeholders[name][0])
                    self.helpers[id(root)] = _Helper(root, definitions, params)
                self.helpers[id(root)].users.add(key)
        for helper in self.helpers.values():
            base = "forward" if len(self.helpers) == 1 else f"forward_{helper.root.targets[0]}"
            helper.name = self.fresh(base)
        for key, members in self.step_members.items():
            self.layout(members, self.step_returns[key], collect=True)

    def maximal(self, members: list[_Definition]) -> list[_Definition]:
        """The members no other member depends on."""
        return [d for d in members if not any(o is not d and id(d) in self.closure_ids[id(o)] for o in members)]

    def layout(
        self,
        definitions: list[_Definition],
        returns: set[str],
        *,
        prefix: str = "",
        collect: bool = False,
        own: _Definition | None = None,
    ) -> list[str]:
        """The lines that compute ``definitions``, with a call of a forward helper for what is shared.

        With ``collect``, only records what each helper must return: the names its caller reads.
        """
        calls = self.maximal([d for d in definitions if id(d) in self.helpers and d is not own])
        covered = set().union(*(self.closure_ids[id(d)] for d in calls)) if calls else set()
        read = set(returns)
        for definition in definitions:
            if id(definition) not in covered:
                read |= _names_read(definition.function_form or definition.statement)
        lines: list[str] = []
        for definition in definitions:
            if definition in calls:
                helper = self.helpers[id(definition)]
                if collect:
                    inside = {name for d in helper.definitions for name in d.targets}
                    helper.returns.update((inside & read) | set(definition.targets))
                    continue
                targets = [name if name in read else "_" for name in helper.ordered_returns()]
                lines.append(f"{prefix}{', '.join(targets)} = {helper.name}({', '.join(helper.params)})\n")
            elif id(definition) not in covered and not collect:
                form = definition.function_form or definition.statement
                lines.append(_indent(self.code(form).lstrip("\n"), prefix))
        return lines

    def own_reads(self, definitions: list[_Definition]) -> set[str]:
        """Names read by the definitions a step computes itself (not through a forward helper)."""
        calls = self.maximal([d for d in definitions if id(d) in self.helpers])
        covered = set().union(*(self.closure_ids[id(d)] for d in calls)) if calls else set()
        read: set[str] = set()
        for definition in definitions:
            if id(definition) not in covered:
                read |= _names_read(definition.function_form or definition.statement)
        return read

    def render_helper(self, helper: _Helper) -> cst.FunctionDef:
        returned = helper.ordered_returns()
        lines = [
            f"def {helper.name}({', '.join(helper.params)}):\n",
            f'    """The forward pass the steps below share (it computes {", ".join(returned)})."""\n',
            *self.layout(helper.definitions, set(returned), prefix="    ", own=helper.root),
            f"    return {', '.join(returned)}\n",
        ]
        function = cst.parse_module("".join(lines)).body[0]
        assert isinstance(function, cst.FunctionDef)
        self.changes.append(
            CompatChange(helper.root.line, 1, f"the graph that several sess.run calls shared -> `{helper.name}`")
        )
        return function.with_changes(leading_lines=self.blank_lines())

    def function(
        self, site: _Site, train: _Definition | None, others: list[tuple[str, _Definition | str | None]]
    ) -> tuple[str, list[str], cst.FunctionDef, int]:
        tf = self.tf
        tape_part, rest, placeholders = self.parts(train, others)
        params = sorted(placeholders, key=lambda name: self.placeholders[name][0])
        if train is not None:
            # The train op's own name is free once its definition is gone (nothing else may read it).
            name = train.targets[0] if train.targets == ("train_step",) else self.fresh("train_step")
        else:
            name = self.fresh("compute_" + "_".join(site.fetches))
        lines = [f"@{tf}.function\n", f"def {name}({', '.join(params)}):\n"]
        for param in params:
            if param not in self.static:
                lines.append(f"    {param} = {tf}.cast({param}, {self.placeholders[param][1]})\n")

        returns = {fetch for fetch, _ in others} | ({train.train[1]} if train is not None and train.train else set())
        returns |= self.own_reads(tape_part + rest)  # the part after the tape reads what the tape computed

        def body(definitions: Iterable[_Definition], prefix: str) -> None:
            lines.extend(self.layout(list(definitions), returns, prefix=prefix))

        if train is not None:
            optimizer, loss = train.train or ("", "")
            lines.append(f"    with {tf}.GradientTape() as tape:\n")
            body(tape_part, "        ")
            lines.append("    variables = tape.watched_variables()\n")
            lines.append(f"    {optimizer}.apply_gradients(zip(tape.gradient({loss}, variables), variables))\n")
        body(rest, "    ")
        returned = [fetch for fetch, _ in others]
        if train is not None and not returned:
            returned = [train.train[1]] if train.train else []
        if returned:
            lines.append(
                f"    return {', '.join(returned)}\n"
                if len(returned) > 1 or not site.single
                else f"    return {returned[0]}\n"
            )
        text = "".join(lines)
        if len(returned) == 1 and not site.single and train is None:
            text = text.replace(f"    return {returned[0]}\n", f"    return ({returned[0]},)\n")
        function = cst.parse_module(text).body[0]
        assert isinstance(function, cst.FunctionDef)
        function = function.with_changes(leading_lines=self.blank_lines())
        what = "train step (GradientTape + Keras optimizer)" if train is not None else "direct call"
        self.changes.append(
            CompatChange(site.line, 1, f"sess.run of {', '.join(site.fetches)} -> `{name}`, a tf.function {what}")
        )
        return name, params, function, site.top

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
        self.replacements: dict[int, tuple[cst.BaseStatement, ...]] = {}
        self.assign_of: dict[int, cst.Assign] = {}
        self.expression_calls: set[int] = set()
        self.module_forms: dict[int, tuple[cst.BaseStatement, ...]] = {}


def _v1_left(source: str) -> tuple[int, str] | None:
    """The first tf.compat.v1 or tf.contrib use left in ``source`` (line, dotted name), if any.

    The native output promises TF2 code: a file that still needs tf.compat.v1 after the rewrite
    keeps the compat output instead, which runs the whole program the TF1 way.
    """
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    bindings = import_bindings(module)
    found: list[tuple[int, str]] = []

    class Finder(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            name = qualified_name(node, bindings)
            if name is not None and (name.startswith(_V1) or name.startswith("tensorflow.contrib")):
                found.append((positions[node].start.line, dotted_name(node) or name))
                return False
            return True

    module.visit(Finder())
    return min(found) if found else None


# A tf.estimator program stays on compat output, where the Estimator shim runs its model_fn in a
# TF1 graph with checkpoints in model_dir; porting a model_fn to keras.Model + fit is not automated.
_ESTIMATOR_MODULES = ("tensorflow.estimator", "tensorflow.compat.v1.estimator")
_ESTIMATOR_REASON = (
    "a tf.estimator program: it runs on the Estimator shim (tf1_compat_shims._tf1_estimator); porting the "
    "model_fn to a keras.Model trained with fit is not automated"
)


def _estimator_line(source: str) -> int | None:
    """The first line that uses tf.estimator (code, not strings), or None."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    aliases = {"tf": "tensorflow", "tensorflow": "tensorflow"}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(_ESTIMATOR_MODULES):
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute):
            parts: list[str] = []
            current: ast.expr = node
            while isinstance(current, ast.Attribute):
                parts.insert(0, current.attr)
                current = current.value
            if isinstance(current, ast.Name) and current.id in aliases:
                name = ".".join([aliases[current.id], *parts])
                if any(name == module or name.startswith(module + ".") for module in _ESTIMATOR_MODULES):
                    lines.append(node.lineno)
    return min(lines, default=None)


def rewrite_native(source: str) -> NativeResult:
    """tf_upgrade_v2's output -> TF2 code (tf.function, GradientTape, Keras), or why not."""
    estimator = _estimator_line(source)
    if estimator is not None:
        return NativeResult(source, False, _ESTIMATOR_REASON, estimator)
    try:
        rewrite = _Rewrite(source)
        rewrite.prescan_static()
        rewrite.find_scope()
        rewrite.flatten()
        rewrite.analyse()
        rewrite.find_feed_bindings()
        rewrite.find_sites()
        rewrite.check()
        code = rewrite.generate()
        left = _v1_left(code)
        if left is not None:
            raise _Fallback(left[0], f"`{left[1]}` has no native rewrite here")
    except _Fallback as fallback:
        return NativeResult(source, False, fallback.message, fallback.line)
    return NativeResult(
        code,
        True,
        changes=tuple(sorted(rewrite.changes, key=lambda change: change.line)),
        notes=tuple(rewrite.notes),
    )
