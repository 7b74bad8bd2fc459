"""TFP508: `model.trainable = False` after compiling it and before it first trains (Keras 3 GANs)."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.rule import Invalid, Rule

_TRAIN_METHODS = frozenset({"train_on_batch", "fit", "fit_generator"})


class TrainableAfterCompile(Rule):
    """Keras 3 fixes which weights a model trains when its train function is first built.

    The Keras 2 GAN recipe compiles the discriminator, sets ``discriminator.trainable = False``,
    builds and compiles the combined model, and then alternates ``discriminator.train_on_batch``
    with ``adversarial.train_on_batch``: Keras 2 had read the flag at ``compile``. Keras 3 reads
    it when the discriminator's own train function is built, at its first ``train_on_batch``, by
    which time it is False: the discriminator never trains (Keras only warns "The model does not
    have any trainable weights"), and the GAN learns nothing useful. ``test_lint_tf_premises.py``
    runs it on the installed Keras.

    The mirror image is reported too: ``d.trainable = False``, compile the combined model, then
    ``d.trainable = True`` again (Keras 2's way to freeze ``d`` inside the combined model only).
    Keras 3 reads the flag when the combined model first trains, so its steps train ``d`` as well
    (also run by ``test_lint_tf_premises.py``).
    """

    code = "TFP508"
    name = "trainable-after-compile"
    message = "trainable = False after compile and before the first train_on_batch freezes the model in Keras 3"
    fix_hint = (
        "Write the GAN as a keras.Model with a custom train_step that applies the discriminator's and the "
        "generator's gradients separately (the Keras 3 DCGAN example), or run the discriminator's first "
        "train_on_batch before setting trainable = False"
    )
    severity = Severity.WARNING
    category = "keras 3"
    keras3_only = True
    tokens = (".trainable =",)
    calls = frozenset({"compile", *_TRAIN_METHODS})
    VALID = [
        # Keras 3's way: one model, its own train_step
        """
import keras

discriminator = build_discriminator()
discriminator.compile(loss="binary_crossentropy", optimizer="adam")
discriminator.fit(x, y)
discriminator.trainable = False
""",
        # freezing a base model and compiling again afterwards is what fine-tuning does
        """
import keras

base = build_base()
base.compile(loss="mse")
base.trainable = False
base.compile(loss="mse")
base.fit(x, y)
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

def build(generator, discriminator, noise):
    discriminator.compile(loss="binary_crossentropy", optimizer="rmsprop")
    discriminator.trainable = False
    adversarial = keras.Model(noise, discriminator(generator(noise)))
    adversarial.compile(loss="binary_crossentropy", optimizer="rmsprop")
    return adversarial

def train(generator, discriminator, adversarial, x, y):
    discriminator.train_on_batch(x, y)
    adversarial.train_on_batch(x, y)
""",
            line=6,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._trained: set[str] = set()  # receivers whose own training is in this file
        self._unfrozen: set[str] = set()  # receivers set trainable = True somewhere (toggled by hand)
        # per scope (a function or the module): receiver -> [(line, compile / train / freeze, node)]
        self._events: dict[int, dict[str, list[tuple[int, str, ast.AST]]]] = {}

    def _record(self, receiver: str, kind: str, node: ast.AST) -> None:
        scope = self._events.setdefault(id(self.context.scope.node), {})
        scope.setdefault(receiver, []).append((getattr(node, "lineno", 0), kind, node))

    def visit_Call(self, node: ast.Call) -> None:
        if not isinstance(node.func, ast.Attribute):
            return
        receiver = self.context.dotted(node.func.value)
        if receiver is None:
            return
        kind = "compile" if node.func.attr == "compile" else "train"
        self._record(receiver, kind, node)
        if kind == "train":
            self._trained.add(receiver)

    def visit_Assign(self, node: ast.Assign) -> None:
        if not isinstance(node.value, ast.Constant) or not isinstance(node.value.value, bool):
            return
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == "trainable":
                receiver = self.context.dotted(target.value)
                if receiver is None:
                    continue
                if node.value.value:
                    self._unfrozen.add(receiver)
                    self._record(receiver, "unfreeze", node)
                else:
                    self._record(receiver, "freeze", node)

    def finish(self) -> None:
        trained, unfrozen = self._trained, self._unfrozen
        suspects: list[tuple[str, int, ast.AST]] = []
        for scope_events in self._events.values():
            suspects.extend(_frozen_after_compile(scope_events))
            for receiver, combined, compile_line, node in _unfrozen_after_combined_compile(scope_events):
                if combined in trained:
                    self.report(
                        node,
                        f"`{receiver}.trainable = True` again after `{combined}.compile(...)` (line {compile_line}): "
                        f"Keras 3 fixes the trainable weights when `{combined}`'s train function is first built "
                        f"(its first train_on_batch), when `{receiver}` is trainable again, so `{combined}`'s steps "
                        f"train `{receiver}` too (Keras 2 had frozen it at compile)",
                    )
        for receiver, compile_line, node in suspects:
            if receiver in trained and receiver not in unfrozen:
                self.report(
                    node,
                    f"`{receiver}.trainable = False` after `{receiver}.compile(...)` (line {compile_line}) and "
                    f"before its first train_on_batch: Keras 3 fixes the trainable weights when the train "
                    f"function is first built, so `{receiver}` never trains ('The model does not have any "
                    "trainable weights')",
                )


def _frozen_after_compile(events: dict[str, list[tuple[int, str, ast.AST]]]) -> list[tuple[str, int, ast.AST]]:
    """(receiver, compile line, freeze) where the freeze directly follows the compile in one
    scope (no training call between them) and the model is not compiled again after it."""
    found: list[tuple[str, int, ast.AST]] = []
    for receiver, items in events.items():
        items.sort(key=lambda item: item[0])
        for index, (_line, kind, node) in enumerate(items):
            if kind != "freeze" or index == 0 or items[index - 1][1] != "compile":
                continue
            if all(later_kind != "compile" for _, later_kind, _ in items[index + 1 :]):
                found.append((receiver, items[index - 1][0], node))
    return found


def _unfrozen_after_combined_compile(
    events: dict[str, list[tuple[int, str, ast.AST]]],
) -> list[tuple[str, str, int, ast.AST]]:
    """(model, combined model, its compile line, the unfreeze) where, in one scope, a model is
    set untrainable, another model is compiled, and the first is set trainable again with no
    training call of the combined model in between: the Keras 2 way to freeze it inside the
    combined model only."""
    compiles = sorted(
        (line, other, kind) for other, items in events.items() for line, kind, _node in items if kind != "freeze"
    )
    found: list[tuple[str, str, int, ast.AST]] = []
    for receiver, items in events.items():
        ordered = sorted(items, key=lambda item: item[0])
        for index, (line, kind, node) in enumerate(ordered):
            if kind != "unfreeze" or index == 0 or ordered[index - 1][1] != "freeze":
                continue
            frozen_at = ordered[index - 1][0]
            between = [(at, other, what) for at, other, what in compiles if frozen_at < at < line and other != receiver]
            combined = next((other for at, other, what in between if what == "compile"), None)
            if combined is None or any(other == combined and what == "train" for _at, other, what in between):
                continue
            compile_line = next(at for at, other, what in between if other == combined and what == "compile")
            first_step = min(
                (at for at, other, what in compiles if other == combined and what == "train" and at > line),
                default=None,
            )
            if first_step is not None and any(
                later_kind == "freeze" and line < later_line < first_step for later_line, later_kind, _ in ordered
            ):
                continue  # toggled by hand: frozen again before the combined model's first step
            found.append((receiver, combined, compile_line, node))
    return found
