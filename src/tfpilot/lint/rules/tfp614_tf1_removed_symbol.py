"""TFP614: a TF1 name that TF 2.x removed from the tf namespace (tf.log, tf.gfile.Exists, ...)."""

from __future__ import annotations

import ast
import re

from tfpilot.findings import Severity
from tfpilot.lint.apis import TF1_COVERED, TF1_MODE_SWITCHES, TF1_TRAINING, plain_tf1_match, tf1_name, via_compat_v1
from tfpilot.lint.context import FileContext
from tfpilot.lint.patterns import catches_missing_api, under_feature_check
from tfpilot.lint.rule import Invalid, Rule
from tfpilot.lint.tf1_names import IN_COMPAT_V2, REMOVED, REMOVED_DATASET_METHODS, REMOVED_KEYWORDS, removed_match

# Names a more specific TF1 rule reports (TFP601-TFP613); the mode switches have none under plain tf. The TF1
# training API (optimizers, initializers, collections) is this rule's: under plain `tf` its names are gone like any
# other (a rule of its own, TFP609, called them "graph-mode API" as a note; round 18 read each one as the line the
# script stops at, which it is).
_OWNED = TF1_COVERED - TF1_MODE_SWITCHES - TF1_TRAINING
_OWNED_LINES = _OWNED | {"contrib"}
# Functions with a TF1 keyword TF 2.x refuses, by their last name (the calls visit_Call is asked about).
_KEYWORD_CALLS = frozenset(name.rsplit(".", 1)[-1] for name in REMOVED_KEYWORDS)


# The verdict per qualified name, cached: "" for a name a more specific TF1 rule reports (its
# line gets no TFP614 finding), the REMOVED entry it is (or is inside), or None.
_verdicts: dict[str, str | None] = {}


def _removed_reference(qualname: str) -> str | None:
    if not qualname.startswith("tensorflow.") or via_compat_v1(qualname):
        return None
    if plain_tf1_match(qualname, _OWNED_LINES) is not None:
        return ""
    name = tf1_name(qualname)
    return None if name is None else removed_match(name)


# TF 2.21's tf.losses, tf.metrics, tf.optimizers and tf.initializers are the Keras 3 modules; in a
# file that runs on Keras 2 they are tf_keras's, where `tf.losses.mean_squared_error` exists.
_KERAS_BACKED = frozenset({"losses", "metrics", "optimizers", "initializers"})


# TF1's streaming metrics / graph losses whose names Keras 2 (tf.keras, TF 2.0-2.15) reused for per-example
# functions: TF2-era code calling `tf.metrics.mean_absolute_error(y_true, y_pred)` meant those. TF 2.21's tf.keras
# keeps them as tf.keras.losses.MAE / MSE (keras.metrics.mean_absolute_error under `import keras`).
_KERAS_FUNCTIONS = {
    "metrics.mean_absolute_error": "MAE",
    "metrics.mean_squared_error": "MSE",
    "losses.mean_squared_error": "MSE",
}


# tf.distribute.Strategy methods TF 2.x dropped after their experimental period (absent from TF 2.21's strategies,
# checked on MirroredStrategy and the default strategy). tf_upgrade_v2's tables do not cover methods of objects.
# name -> (message, the replacement a feature check would name)
_REMOVED_STRATEGY_METHODS: dict[str, tuple[str, str]] = {
    "experimental_run_v2": (
        "`strategy.experimental_run_v2()` does not exist in TF 2.21 (AttributeError): TF 2.2 renamed it "
        "`strategy.run(fn, args=...)`, with the same arguments",
        "run",
    ),
    "experimental_make_numpy_dataset": (
        "`strategy.experimental_make_numpy_dataset()` does not exist in TF 2.21 (AttributeError): build "
        "`tf.data.Dataset.from_tensor_slices(arrays)` and pass it to `strategy.experimental_distribute_dataset`",
        "experimental_distribute_dataset",
    ),
}


def _training_advice(name: str) -> str | None:
    """What replaces a TF1 training name (an optimizer, an initializer, a graph collection) in TF2 code."""
    if name.startswith("train.") and name.endswith("Optimizer"):
        keras_name = name[len("train.") : -len("Optimizer")] or "Optimizer"
        keras_name = {"GradientDescent": "SGD", "Momentum": "SGD(momentum=...)"}.get(keras_name, keras_name)
        defaults = " (TF1's Adam epsilon was 1e-8, Keras' is 1e-7)" if keras_name == "Adam" else ""
        return (
            f"use `keras.optimizers.{keras_name}` with tf.GradientTape or model.fit{defaults}, "
            f"or `tf.compat.v1.{name}` in a TF1 graph"
        )
    if name == "reset_default_graph":
        return "TF2 has no default graph to reset: drop it (`keras.backend.clear_session()` resets Keras' state)"
    if "initializer" in name or name == "initialize_all_variables":
        return "TF2 variables initialise when they are created: drop it (tf.compat.v1 keeps it for TF1 graphs)"
    if name.split(".")[0] in {"trainable_variables", "global_variables", "get_collection", "GraphKeys"}:
        return (
            "TF2 has no graph collections: take `model.trainable_variables` (or the tf.Module's); "
            f"`tf.compat.v1.{name}` in a TF1 graph"
        )
    return None


def _advice(name: str) -> str:
    training = _training_advice(name) if plain_tf1_match("tensorflow." + name, TF1_TRAINING) else None
    if training is not None:
        return training
    short = _KERAS_FUNCTIONS.get(name)
    if short is not None:
        function = name.split(".", 1)[1]
        return (
            f"in TF 2 code it was Keras 2's per-example function: `tf.keras.losses.{short}(y_true, y_pred)` "
            f"(`keras.losses.{function}` under `import keras`); TF1's streaming `tf.compat.v1.{name}` returns "
            "(value, update_op) and runs in graph mode only"
        )
    new = REMOVED.get(name)
    if new is None:
        return "TensorFlow's upgrade tables name no replacement"
    if new.startswith("compat.v1."):
        return f"TensorFlow's upgrade tables name no TF2 equivalent; `tf.{new}` still runs on TF 2.21"
    return f"use `tf.{new}`"


class Tf1RemovedSymbol(Rule):
    """TF 2.x removed hundreds of TF1 names from the ``tf`` namespace: under ``import tensorflow
    as tf`` each raises AttributeError on TF 2.21, so the script stops at its first one.

    The table is TensorFlow's own (tf_upgrade_v2's rename tables, checked against the installed
    TensorFlow by ``python -m tfpilot.lint.tf1_names --regenerate``): ``tf.truncated_normal`` ->
    ``tf.random.truncated_normal``, ``tf.gfile.Exists`` -> ``tf.io.gfile.exists``, and the
    ``tf.compat.v1`` spelling where TF 2 has no equivalent (``tf.train.limit_epochs``). The
    Dataset methods ``make_one_shot_iterator`` / ``make_initializable_iterator`` are reported
    where the receiver is known to be a tf.data.Dataset. Left alone: names a more specific TF1
    rule reports (TFP601-TFP613), anything through ``tf.compat.v1`` (TFP607), and code under a
    feature check (``hasattr(tf, ...)``, a version test, ``try`` / ``except AttributeError``).
    """

    code = "TFP614"
    name = "tf1-removed-symbol"
    message = "a TF1 name that TF 2.x removed from the tf namespace (AttributeError)"
    fix_hint = "Use the TF2 name the message gives (tf_upgrade_v2 rewrites most of them)"
    severity = Severity.ERROR
    category = "tf1 -> tf2"
    tokens = ("tensorflow",)
    VALID = [
        """
import tensorflow as tf


def upsample(x, size):
    try:
        return tf.image.resize(x, size)
    except AttributeError:  # TensorFlow 1 had only resize_images
        return tf.image.resize_images(x, size)
""",
        """
import tensorflow as tf

w = tf.random.truncated_normal([3, 3], stddev=0.1)
if tf.io.gfile.exists("/tmp/out"):
    tf.io.gfile.rmtree("/tmp/out")
y = tf.math.log(tf.cast(w, tf.float32) + 2.0)
""",
        # through compat.v1 the TF1 names still run: TFP607's one note covers the file
        """
import tensorflow.compat.v1 as tf

tf.enable_eager_execution()
x = tf.truncated_normal([2])
it = tf.data.Dataset.range(3).make_one_shot_iterator()
""",
        # code written for TF1 and TF2 alike
        """
import tensorflow as tf

if hasattr(tf, "enable_eager_execution"):
    tf.enable_eager_execution()
try:
    exists = tf.gfile.Exists
except AttributeError:
    exists = tf.io.gfile.exists
""",
        # tf.Session has its own rule (TFP601): no second finding here
        """
import tensorflow as tf

with tf.Session() as sess:
    pass
""",
        # tf.losses is Keras's: on tf_keras (Keras 2) it has mean_squared_error
        """
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"
import tensorflow as tf

loss = tf.losses.mean_squared_error([1.0], [0.5])
""",
        # TFP610 reports this line (tf.summary.FileWriter): no second finding for get_default_graph
        """
import tensorflow as tf

writer = tf.summary.FileWriter("/tmp/logs", graph=tf.get_default_graph())
""",
        # tf.compat.v2 keeps enable_v2_behavior (TF 2.21)
        """
import tensorflow.compat.v2 as tf

tf.enable_v2_behavior()
""",
        # not provably a Dataset
        """
import tensorflow as tf

it = reader.make_one_shot_iterator()
""",
        # a strategy's renamed method, chosen by what the installed TensorFlow has
        """
import tensorflow as tf

if hasattr(strategy, "run"):
    result = strategy.run(step, args=(batch,))
else:
    result = strategy.experimental_run_v2(step, args=(batch,))
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()

def distributed_step(batch):
    return strategy.experimental_run_v2(step, args=(batch,))
""",
            line=7,
        ),
        Invalid(
            """
import tensorflow as tf

tf.enable_eager_execution()
""",
            line=4,
        ),
        Invalid(
            """
import tensorflow as tf

w = tf.Variable(tf.truncated_normal([784, 10], stddev=0.1))
""",
            line=4,
        ),
        Invalid(
            """
import tensorflow as tf

if not tf.gfile.Exists("/tmp/logs"):
    tf.gfile.MakeDirs("/tmp/logs")
""",
            line=4,
        ),
        Invalid(
            """
import tensorflow as tf

ds = tf.data.Dataset.from_tensor_slices([1, 2, 3]).batch(2)
batch = ds.make_one_shot_iterator().get_next()
""",
            line=5,
        ),
        Invalid(
            """
from tensorflow import gfile
""",
            line=2,
        ),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._lines: set[int] = set()
        # Lines where a more specific TF1 rule reports a name (`tf.summary.FileWriter(d,
        # graph=tf.get_default_graph())` is TFP610's): no second finding there.
        self._owned_lines: set[int] = set()

    def finish(self) -> None:
        if self._owned_lines:
            self.violations = [v for v in self.violations if v.line not in self._owned_lines]

    def _report_once(self, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 0)
        if line in self._lines:
            return  # one finding per line: `tf.gfile.MakeDirs(tf.gfile.Glob(...))`
        self._lines.add(line)
        self.report(node, message)

    def _guarded(self, name: str) -> bool:
        if any(under_feature_check(self.context, part) for part in name.split(".")):
            return True
        # `if tf.__version__ < "2": ...` (either branch): the file was written for both
        child: ast.AST = self.context.stack[-1]
        for ancestor in self.context.ancestors():
            if isinstance(ancestor, ast.If) and child is not ancestor.test:
                test = ast.unparse(ancestor.test).lower()
                if "version" in test and ("tf" in test or "tensorflow" in test):
                    return True
            # `try: tf.image.resize(...) except AttributeError: tf.image.resize_images(...)`: the
            # TF1 name is the fallback for a TensorFlow without its TF2 replacement, which the try
            # uses; never reached on TF2. (A try whose body fails on TF2 for another reason, a
            # Keras 2 call, does reach its TF1 fallback: still reported.)
            if (
                isinstance(ancestor, ast.ExceptHandler)
                and catches_missing_api(ancestor)
                and self._try_uses_replacement(ancestor, name)
            ):
                return True
            child = ancestor
        return False

    def _try_uses_replacement(self, handler: ast.ExceptHandler, name: str) -> bool:
        replacement = REMOVED.get(name)
        if not replacement or replacement.startswith("compat.v1."):
            return False
        statement = next(
            (a for a in self.context.ancestors() if isinstance(a, ast.Try) and handler in a.handlers), None
        )
        if statement is None:
            return False
        body = "\n".join(ast.unparse(s) for s in statement.body)
        return re.search(rf"\.{re.escape(replacement)}\b(?!_)", body) is not None

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or node.module != "tensorflow":
            return
        for alias in node.names:
            if alias.name in REMOVED and alias.name.split(".")[0] not in _OWNED and not self._guarded(alias.name):
                self._report_once(
                    node,
                    f"`from tensorflow import {alias.name}` fails: TF 2.x removed it; {_advice(alias.name)}",
                )
                return

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        try:
            match = _verdicts[qualname]
        except KeyError:
            match = _verdicts[qualname] = _removed_reference(qualname)
        if not match:
            if match == "":
                self._owned_lines.add(getattr(node, "lineno", 0))
            return
        if match.split(".")[0] in _KERAS_BACKED and self.context.keras2_reason is not None:
            return  # tf.losses & co. are Keras's own: on tf_keras (Keras 2) they hold other names
        binding = self.context.root_binding(node) or ""
        if match in IN_COMPAT_V2 and binding.startswith("tensorflow.compat.v2"):
            return  # `import tensorflow.compat.v2 as tf; tf.enable_v2_behavior()` runs on TF 2.21
        if binding != "tensorflow" and removed_match(binding[len("tensorflow.") :]) is not None:
            return  # `from tensorflow import gfile`: reported once at the import
        if self._guarded(match):
            return
        shown = self.context.dotted(node) or qualname
        self._report_once(node, f"`{shown}` does not exist in TF 2.x (AttributeError): {_advice(match)}")

    calls = frozenset(REMOVED_DATASET_METHODS) | frozenset(_REMOVED_STRATEGY_METHODS) | _KEYWORD_CALLS

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            node.keywords
            and (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) in _KEYWORD_CALLS
        ):
            self._check_keywords(node)
        if not isinstance(func, ast.Attribute):
            return
        if func.attr in _REMOVED_STRATEGY_METHODS:
            # Names no other TensorFlow or Keras object has: the receiver is a tf.distribute strategy.
            message, replacement = _REMOVED_STRATEGY_METHODS[func.attr]
            # `if hasattr(strategy, "run"): ... else: strategy.experimental_run_v2(...)` checks either name.
            if not self._guarded(func.attr) and not under_feature_check(self.context, replacement):
                self._report_once(node, message)
            return
        if func.attr not in REMOVED_DATASET_METHODS:
            return
        if any(value.startswith("tensorflow.compat.v1") for value in self.context.imports.values()):
            return  # tf.compat.v1.data.Dataset still has the method
        if not self.context.pipeline(func.value).is_dataset or self._guarded(func.attr):
            return
        new = REMOVED_DATASET_METHODS[func.attr]
        self._report_once(
            node,
            f"`Dataset.{func.attr}()` does not exist in TF 2.x (AttributeError): iterate the dataset "
            f"(`for batch in ds`, `iter(ds)`), or `tf.{new}(ds)` in TF1-style code",
        )

    def _check_keywords(self, node: ast.Call) -> None:
        """`tf.reduce_sum(x, keep_dims=True)`: a TF1 keyword the TF 2.x function refuses (TypeError)."""
        qualname = self.context.qualname(node.func)
        if not qualname or not qualname.startswith("tensorflow.") or via_compat_v1(qualname):
            return  # tf.compat.v1's functions still take the TF1 keywords
        name = tf1_name(qualname)
        gone = REMOVED_KEYWORDS.get(name or "")
        if not gone:
            return
        keyword = next((keyword for keyword in node.keywords if keyword.arg in gone), None)
        if keyword is not None and keyword.arg is not None and not self._guarded(name or ""):
            refused = keyword.arg
            new = gone[refused]
            advice = f"TF 2.x renamed it `{new}=`" if new else "TF 2.x removed it: drop it"
            self._report_once(
                keyword, f"`tf.{name}({refused}=...)` raises TypeError (unexpected keyword argument): {advice}"
            )
