"""TFP307: `.cache()` after `.shuffle()`."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.chains import method_steps
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.patterns import is_constant, keyword
from tfpilot.lint.rule import Invalid, Rule


def _reshuffles(call: ast.Call) -> bool:
    """shuffle() reshuffles every epoch unless told reshuffle_each_iteration=False."""
    flag = keyword(call, "reshuffle_each_iteration")
    if flag is None:
        return not (len(call.args) >= 3 and is_constant(call.args[2], False))
    return not is_constant(flag.value, False)


def _endless(call: ast.Call) -> bool:
    """repeat() / repeat(None) / repeat(-1): an input with no end."""
    count = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "count"), None)
    return count is None or is_constant(count, None) or is_constant(count, -1)


class CacheAfterShuffle(Rule):
    """``.cache()`` after ``.shuffle()`` records the first epoch's order and replays it.

    Every later epoch then sees the examples in exactly the same order, which is the
    opposite of what the shuffle was for. Cache first, then shuffle, so each epoch reshuffles
    the cached elements. A shuffle with ``reshuffle_each_iteration=False`` (a fixed train/test
    split) is meant to keep its order, and ``take(1).cache().repeat()`` replays one element on
    purpose: neither is reported. Nor is a cache whose result is shuffled again downstream
    (``files.shuffle().interleave(TFRecordDataset).cache()``, then a record-level shuffle in
    the same chain, later in the function, or in the function of this file it is passed to).
    """

    code = "TFP307"
    name = "cache-after-shuffle"
    message = ".cache() after .shuffle() freezes the first epoch's order"
    fix_hint = "Cache before shuffling: ds.cache().shuffle(buffer_size)"
    category = "tf.data"
    tokens = ("cache",)
    calls = frozenset({"cache"})
    VALID = [
        """
import tensorflow as tf

ds = tf.data.Dataset.range(100).cache().shuffle(100).batch(10)
""",
        """
import tensorflow as tf

shuffled = tf.data.Dataset.range(100).shuffle(100, seed=42, reshuffle_each_iteration=False)
test = shuffled.skip(80).batch(10).cache()
fake = shuffled.batch(10).take(1).cache().repeat()
""",
        # files shuffled, records cached, then the records shuffled again by the helper
        """
import tensorflow as tf

def process(dataset, batch_size):
    dataset = dataset.shuffle(10000)
    return dataset.batch(batch_size)

def input_fn(pattern):
    dataset = tf.data.Dataset.list_files(pattern).shuffle(1024)
    dataset = dataset.interleave(tf.data.TFRecordDataset)
    dataset = dataset.cache()
    return process(dataset=dataset, batch_size=32)
""",
    ]
    INVALID = [
        # the cache after an endless repeat grows for ever, whatever came before
        Invalid(
            """
import tensorflow as tf

ds = tf.data.Dataset.range(100).shuffle(100).repeat().cache()
""",
            line=4,
        ),
        Invalid(
            """
import tensorflow as tf

ds = tf.data.Dataset.range(100).shuffle(100).cache().batch(10)
""",
            line=4,
        ),
        # the helper the cached dataset goes to only batches it
        Invalid(
            """
import tensorflow as tf

def process(dataset, batch_size):
    return dataset.batch(batch_size)

def input_fn(pattern):
    dataset = tf.data.Dataset.list_files(pattern).shuffle(1024)
    dataset = dataset.interleave(tf.data.TFRecordDataset)
    dataset = dataset.cache()
    return process(dataset=dataset, batch_size=32)
""",
            line=10,
        ),
    ]

    def _shuffled_downstream(self, node: ast.Call) -> bool:
        context = self.context
        stack = context.stack
        position = len(stack) - 1  # stack[-1] is the cache call
        while position >= 2:  # `.cache().map(f).shuffle(n)` in the same chain
            attribute, call = stack[position - 1], stack[position - 2]
            if not (isinstance(attribute, ast.Attribute) and isinstance(call, ast.Call) and call.func is attribute):
                break
            if attribute.attr == "shuffle":
                return True
            position -= 2
        statement = next((a for a in context.ancestors() if isinstance(a, ast.stmt)), None)
        if not isinstance(statement, ast.Assign) or not isinstance(statement.targets[0], ast.Name):
            return False
        name, end = statement.targets[0].id, statement.end_lineno or statement.lineno
        body = list(getattr(context.scope.node, "body", []))
        if _shuffles(body, name, end):
            return True
        for later in body:
            for call in walk_nodes(later):
                if not isinstance(call, ast.Call) or getattr(call, "lineno", 0) <= end:
                    continue
                callee = call.func.id if isinstance(call.func, ast.Name) else None
                definition = context.resolve_function(callee, call) if callee else None
                if not isinstance(definition, ast.FunctionDef):
                    continue
                params = [a.arg for a in (*definition.args.posonlyargs, *definition.args.args)]
                passed = [params[i] for i, a in enumerate(call.args[: len(params)]) if _is_name(a, name)]
                passed += [k.arg for k in call.keywords if k.arg and _is_name(k.value, name)]
                if any(_shuffles(list(definition.body), param, 0) for param in passed):
                    return True
        return False

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "cache":
            return
        pipeline = self.context.pipeline(func.value)
        if not pipeline.is_dataset:
            return
        steps = pipeline.steps
        for position in range(len(steps) - 1, -1, -1):
            step = steps[position]
            if step.method == "take" and step.call.args and is_constant(step.call.args[0], 1):
                return  # take(1).cache(): one element replayed on purpose (a fake-data loop)
            if (
                step.method == "repeat"
                and _endless(step.call)
                and _same_branch(self.context.scope.node, step.call, node)
            ):
                # the cache never sees the end of its input, so it never completes: it keeps
                # every element of every epoch in memory (the real problem, shuffle or not)
                self.report(
                    node,
                    ".cache() after an endless .repeat(): the cache never completes and grows without bound; "
                    "cache before repeating: ds.cache().shuffle(n).repeat()",
                )
                return
            if step.method == "shuffle":
                if _reshuffles(step.call):
                    if self._shuffled_downstream(node):
                        return  # the cached elements are shuffled again every epoch
                    if not _same_branch(self.context.scope.node, step.call, node):
                        # `if training: shuffle` ... `if not training: cache`: maybe never both
                        self.report(
                            node,
                            ".cache() after a .shuffle() made under another condition: if both run, every "
                            "epoch replays the first epoch's order",
                            severity=Severity.INFO,
                        )
                        return
                    self.report(node, ".cache() after .shuffle(): every epoch replays the first epoch's order")
                    return
                # reshuffle_each_iteration=False: a fixed split or order, meant to stay as it is


def _shuffles(statements: list[ast.AST], name: str, after: int) -> bool:
    """A ``name.....shuffle(...)`` chain below line ``after`` in ``statements``."""
    for statement in statements:
        for node in walk_nodes(statement):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "shuffle"
                and getattr(node, "lineno", 0) > after
            ):
                root, _steps = method_steps(node.func.value)
                if isinstance(root, ast.Name) and root.id == name:
                    return True
    return False


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _same_branch(scope: ast.AST, first: ast.AST, second: ast.AST) -> bool:
    """False when the two calls can never run together: one in an ``if``'s body and the other in
    its ``else``, or under ``if X:`` and ``if not X:`` (``if training: shuffle`` ...
    ``if not training: cache``). A conditional shuffle before an unconditional cache runs with it."""
    guards: dict[int, list[tuple[ast.expr, bool]]] = {id(first): [], id(second): []}
    for node in walk_nodes(scope):
        if not isinstance(node, ast.If):
            continue
        in_body = {id(n) for statement in node.body for n in walk_nodes(statement)}
        in_else = {id(n) for statement in node.orelse for n in walk_nodes(statement)}
        for call in (first, second):
            if id(call) in in_body:
                guards[id(call)].append((node.test, True))
            elif id(call) in in_else:
                guards[id(call)].append((node.test, False))
    for test_a, positive_a in guards[id(first)]:
        for test_b, positive_b in guards[id(second)]:
            if test_a is test_b and positive_a != positive_b:
                return False  # the two branches of one `if`
            if _negates(test_a, test_b) or _negates(test_b, test_a):
                return False
    return True


def _negates(test: ast.expr, other: ast.expr) -> bool:
    """``other`` is ``not test`` (or starts with it: ``not training and ...``)."""
    if isinstance(other, ast.BoolOp) and isinstance(other.op, ast.And):
        other = other.values[0]
    return (
        isinstance(other, ast.UnaryOp) and isinstance(other.op, ast.Not) and ast.dump(other.operand) == ast.dump(test)
    )
