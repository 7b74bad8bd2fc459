"""What the TF1 source needs before tf_upgrade_v2 reads it.

* A UTF-8 byte order mark goes (Windows editors write one; Python runs such a file, tf_upgrade_v2
  fails to parse U+FEFF).
* TF 0.x's positional cross-entropy calls get their keywords: ``softmax_cross_entropy_with_logits(y,
  y_)`` meant (logits, labels) before TF 1.0, and TF 1.x refused positional arguments there (a
  ``_sentinel`` parameter), so a positional call is TF 0.x code. tf_upgrade_v2 reads it with the 1.x
  order (labels first) and swaps logits and labels without a word: the loss then has no gradient
  for the model (`No gradients provided`), or the wrong one.
* ``import tensorflow.contrib as tf_contrib`` (or ``from tensorflow import contrib``): its uses are
  spelled ``tf.contrib.layers.l2_regularizer`` through the file's own TensorFlow name, which is how
  tf_upgrade_v2 and migrate's contrib table recognise them; the alias import goes (it fails on TF 2).
* ``tf.nn.dropout(x, keep_prob, noise_shape)`` with TF 1's positional order gets its keywords: tf_upgrade_v2
  rewrites keep_prob but leaves the third argument in TF 2's `rate` slot.
* Python 2 source (TF1 books and tutorials were written for it: ``print x``, ``except E, e:``) is
  converted with 2to3's default fixers when, and only when, the file does not parse as Python 3
  and the converted one does: neither tf_upgrade_v2 nor Python 3 reads it otherwise.
"""

from __future__ import annotations

import ast
import codecs
import warnings

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tfpilot.migrate.compat import CONTRIB_INITIALIZERS
from tfpilot.migrate.native.syntax import descendants

__all__ = ["prepare"]

# function -> the keywords its first two positional arguments had before TF 1.0
_PRE_1_0_ORDER = {
    "softmax_cross_entropy_with_logits": ("logits", "labels"),
    "sparse_softmax_cross_entropy_with_logits": ("logits", "labels"),
    "sigmoid_cross_entropy_with_logits": ("logits", "labels"),  # TF 0.x called the second `targets`
}


class _Keywords(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, tensorflow_names: frozenset[str]) -> None:
        super().__init__()
        self.changed: list[tuple[int, str]] = []
        # bare names that are TensorFlow's (`from tensorflow.nn import softmax_cross_entropy_with_logits`);
        # any other bare name is the project's own function (DCGAN's wrapper `sigmoid_cross_entropy_with_logits(x,
        # y)` that tries both keyword spellings), whose parameters are not TF's
        self.tensorflow_names = tensorflow_names

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if isinstance(func, cst.Attribute):
            if isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
                return updated  # a method of the project's class
            name = func.attr.value
        elif isinstance(func, cst.Name) and func.value in self.tensorflow_names:
            name = func.value
        else:
            return updated
        if name == "dropout" and isinstance(func, cst.Attribute) and _dotted(func.value).endswith("nn"):
            return self._dropout_keywords(original, updated)
        order = _PRE_1_0_ORDER.get(name)
        if order is None:
            return updated
        positional = [arg for arg in updated.args if arg.keyword is None and not arg.star]
        if len(positional) < 2 or updated.args[0].keyword is not None:
            return updated
        args = list(updated.args)
        for index, keyword in enumerate(order):
            args[index] = args[index].with_changes(
                keyword=cst.Name(keyword), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
            )
        line = self.get_metadata(PositionProvider, original).start.line
        self.changed.append((line, name))
        return updated.with_changes(args=args)

    def _dropout_keywords(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``tf.nn.dropout(x, keep_prob, noise_shape)``: TF 1's positional order after `x` was keep_prob,
        noise_shape, seed, name. tf_upgrade_v2 turns the keep probability into ``rate=1 - (keep_prob)`` but
        leaves the third argument where TF 2's `rate` is (PointNet's ``tf.nn.dropout(inputs, keep_prob,
        noise_shape)`` then raises "multiple values for argument 'rate'"); named, each keeps its meaning."""
        args = list(updated.args)
        positional = [index for index, arg in enumerate(args) if arg.keyword is None and not arg.star]
        if len(positional) < 3 or positional != list(range(len(positional))):
            return updated  # two arguments tf_upgrade_v2 reads right; a star argument nobody can name
        for index in positional[1:5]:
            args[index] = args[index].with_changes(
                keyword=cst.Name(_TF1_DROPOUT_ORDER[index - 1]),
                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
            )
        self.changed.append((self.get_metadata(PositionProvider, original).start.line, "dropout"))
        return updated.with_changes(args=args)


# tf.nn.dropout's parameters after `x` in TF 1.x
_TF1_DROPOUT_ORDER = ("keep_prob", "noise_shape", "seed", "name")


def _python2_converted(data: bytes) -> tuple[bytes, int] | None:
    """(the source converted by 2to3's default fixers, the first line Python 3 refused) for Python 2
    source; None when it parses already, or when the conversion does not parse either."""
    try:
        ast.parse(data)
        return None
    except SyntaxError as error:
        first = error.lineno or 1
    except ValueError:
        return None  # a NUL byte: not Python 2 either
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lib2to3 is deprecated (gone in Python 3.13)
        try:
            from lib2to3.refactor import RefactoringTool, get_fixers_from_package
        except ImportError:
            return None
        try:
            text = data.decode("utf-8")
            tool = RefactoringTool(get_fixers_from_package("lib2to3.fixes"))
            converted = str(tool.refactor_string(text if text.endswith("\n") else text + "\n", "<source>"))
        except Exception:  # noqa: BLE001 - lib2to3 raises its own ParseError and others: not Python 2
            return None
    try:
        ast.parse(converted)
    except SyntaxError:
        return None
    return converted.encode("utf-8"), first


def prepare(data: bytes) -> tuple[bytes, list[tuple[int, str]]]:
    """The bytes tf_upgrade_v2 should read, and (line, what) for each change made for it."""
    changes: list[tuple[int, str]] = []
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    python2 = _python2_converted(data)
    if python2 is not None:
        data, line = python2
        changes.append(
            (
                line,
                "Python 2 source (Python 3 refuses this line): converted with 2to3's default fixers "
                "(print statements, `except E, e`, integer division is NOT changed: check `/` on ints)",
            )
        )
    if b"contrib" in data:
        data = _contrib_aliases(data, changes)
    if b"contrib" in data and (b"variance_scaling_initializer" in data or b"xavier_initializer" in data):
        data = _contrib_initializers(data, changes)
    if not any(name.encode() in data for name in (*_PRE_1_0_ORDER, "nn.dropout")):
        return data, changes
    try:
        module = cst.parse_module(data)
    except cst.ParserSyntaxError:
        return data, changes  # tf_upgrade_v2 says what does not parse
    keywords = _Keywords(_tensorflow_names(module))
    rewritten = MetadataWrapper(module).visit(keywords)
    for line, name in keywords.changed:
        changes.append(
            (
                line,
                "positional `tf.nn.dropout(x, keep_prob, noise_shape, ...)`: TF 1's order, named before "
                "tf_upgrade_v2 (which makes keep_prob `rate=1 - keep_prob` and would leave noise_shape where TF 2's "
                "rate is)"
                if name == "dropout"
                else f"positional `{name}(a, b)` is TF 0.x's (logits, labels) order (TF 1.x refused positional "
                "arguments there) -> `logits=a, labels=b`, before tf_upgrade_v2 (which reads labels first)",
            )
        )
    return rewritten.bytes, changes


def _tensorflow_names(module: cst.Module) -> frozenset[str]:
    """The bare names the module imports from TensorFlow (`from tensorflow.nn import sigmoid_cross_entropy_with_logits`)."""
    names: set[str] = set()
    for node in descendants(module):
        if not isinstance(node, cst.ImportFrom) or node.module is None or isinstance(node.names, cst.ImportStar):
            continue
        if module.code_for_node(node.module).startswith("tensorflow"):
            for alias in node.names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                if isinstance(bound, cst.Name):
                    names.add(bound.value)
    return frozenset(names)


class _ContribInitializers(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.changed: list[int] = []

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        new = CONTRIB_INITIALIZERS.get(updated.attr.value)
        value = updated.value
        if (
            new is None
            or not isinstance(value, cst.Attribute)
            or value.attr.value != "layers"
            or not isinstance(value.value, cst.Attribute)
            or value.value.attr.value != "contrib"
        ):
            return updated
        self.changed.append(self.get_metadata(PositionProvider, original).start.line)
        return updated.with_changes(attr=cst.Name(new))


def _contrib_initializers(data: bytes, changes: list[tuple[int, str]]) -> bytes:
    try:
        module = cst.parse_module(data)
    except cst.ParserSyntaxError:
        return data
    renamer = _ContribInitializers()
    rewritten = MetadataWrapper(module).visit(renamer)
    changes += [
        (
            line,
            "contrib's initializer kept as contrib's (tf_upgrade_v2 would write Keras' VarianceScaling, whose "
            "truncated normal is 0.3% narrower)",
        )
        for line in renamer.changed
    ]
    return rewritten.bytes


def _contrib_aliases(data: bytes, changes: list[tuple[int, str]]) -> bytes:
    """``tf_contrib.layers.x`` -> ``tf.contrib.layers.x`` for a name bound to tensorflow.contrib by an import."""
    try:
        module = cst.parse_module(data)
    except cst.ParserSyntaxError:
        return data
    tf_name: str | None = None
    aliases: dict[str, int] = {}  # alias -> line of its import
    wrapper = MetadataWrapper(module)
    positions = wrapper.resolve(PositionProvider)
    for node in descendants(wrapper.module):
        if isinstance(node, cst.Import):
            for alias in node.names:
                name = _dotted(alias.name)
                if name == "tensorflow" and alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    tf_name = tf_name or alias.asname.name.value
                elif name == "tensorflow" and alias.asname is None:
                    tf_name = tf_name or "tensorflow"
                elif (
                    name == "tensorflow.contrib"
                    and alias.asname is not None
                    and isinstance(alias.asname.name, cst.Name)
                ):
                    aliases[alias.asname.name.value] = positions[node].start.line
        elif isinstance(node, cst.ImportFrom) and node.module is not None and _dotted(node.module) == "tensorflow":
            if isinstance(node.names, cst.ImportStar):
                continue
            for alias in node.names:
                if _dotted(alias.name) == "contrib":
                    local = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(local, cst.Name):
                        aliases[local.value] = positions[node].start.line
    if tf_name is None or not aliases:
        return data
    # Every use must be `alias.member`: anything else (passed on, rebound) keeps the file as it is.
    members = {
        id(n.value) for n in descendants(module) if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name)
    }
    for node in descendants(module):
        if isinstance(node, cst.Name) and node.value in aliases and id(node) not in members:
            if not _in_import(module, node):
                return data

    tensorflow = cst.parse_expression(tf_name)

    class Respell(cst.CSTTransformer):
        def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
            if isinstance(updated.value, cst.Name) and updated.value.value in aliases:
                return updated.with_changes(value=cst.Attribute(tensorflow, cst.Name("contrib")))
            return updated

        def leave_Import(self, original: cst.Import, updated: cst.Import) -> cst.Import | cst.RemovalSentinel:
            kept = [a for a in updated.names if not (a.asname is not None and _asname(a) in aliases)]
            if len(kept) == len(updated.names):
                return updated
            return updated.with_changes(names=_commas(kept)) if kept else cst.RemoveFromParent()

        def leave_ImportFrom(
            self, original: cst.ImportFrom, updated: cst.ImportFrom
        ) -> cst.ImportFrom | cst.RemovalSentinel:
            if isinstance(updated.names, cst.ImportStar) or updated.module is None:
                return updated
            if _dotted(updated.module) != "tensorflow":
                return updated
            kept = [a for a in updated.names if _dotted(a.name) != "contrib"]
            if len(kept) == len(updated.names):
                return updated
            return updated.with_changes(names=_commas(kept)) if kept else cst.RemoveFromParent()

    rewritten = module.visit(Respell())
    for name, line in sorted(aliases.items(), key=lambda item: item[1]):
        changes.append(
            (
                line,
                f"`{name}` (tensorflow.contrib) -> `{tf_name}.contrib`, before tf_upgrade_v2, which knows contrib by that name",
            )
        )
    return rewritten.code.encode("utf-8")


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _asname(alias: cst.ImportAlias) -> str | None:
    return alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else None


def _commas(aliases: list[cst.ImportAlias]) -> list[cst.ImportAlias]:
    return [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in aliases]


def _in_import(module: cst.Module, name: cst.Name) -> bool:
    """The name is the one an import statement binds (its `as` name or its `contrib`)."""
    for node in descendants(module):
        if isinstance(node, cst.Import | cst.ImportFrom) and any(inner is name for inner in descendants(node)):
            return True
    return False
