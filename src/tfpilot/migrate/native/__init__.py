"""``--mode native``: rewrite a TF1 placeholder + Session training script into TF2 idioms.

Input is tf_upgrade_v2's output (``tf.compat.v1.placeholder``, ``tf.compat.v1.Session`` ...).
The rewrite is all or nothing per file: when any part of the file falls outside what is proven
here, :func:`rewrite_native` returns ``converted=False`` with the first reason, and migrate keeps
the compat output (which runs as a TF1 graph) for that file.

What is rewritten, and why each step keeps the program's meaning:

* The scope that holds the Session is the module, one function (``main()`` under ``tf.app.run``)
  or the ``if __name__ == "__main__":`` block; Graph, name-scope and naming variable-scope blocks are
  opened. In a function the generated steps are its locals: made once per call, as its graph was.
* Every tensor that depends on a placeholder or a ``tf.Variable`` (the graph) is moved into the
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
* What several steps compute in common becomes one ``forward`` helper they call; TF1 summaries
  become a dict of tensors a step returns and a ``write_summaries`` helper over a TF2 file writer.
* Nothing of ``tf.compat.v1`` may be left: what has no TF2 spelling here keeps the file on compat.

Layout: ``tables`` (what TF1 calls become), ``syntax`` (names a node reads and binds), ``parts``
(definitions, sess.run sites, forward helpers), ``base`` (the parsed module and shared state),
``calls`` (one-call rewrites), ``analysis`` (the scope, the graph, the sites, the checks that keep
the meaning) and ``codegen`` (the steps, the helpers, the new module).

Everything here works on source text with libcst and imports no TensorFlow.
"""

from __future__ import annotations

import dataclasses

from tfpilot.migrate.compat import CompatChange
from tfpilot.migrate.native.codegen import Rewrite
from tfpilot.migrate.native.parts import Fallback
from tfpilot.migrate.native.syntax import estimator_line, random_line, v1_left
from tfpilot.migrate.native.tables import ESTIMATOR_REASON
from tfpilot.migrate.native.version_checks import decide_version_checks

__all__ = ["NativeResult", "rewrite_native"]


@dataclasses.dataclass(frozen=True)
class NativeResult:
    source: str  # the rewritten file (the input when not converted)
    converted: bool
    reason: str = ""  # why the file stays on compat (first obstacle)
    reason_line: int = 1
    changes: tuple[CompatChange, ...] = ()
    notes: tuple[CompatChange, ...] = ()  # non-blocking: check these by hand


def rewrite_native(source: str) -> NativeResult:
    """tf_upgrade_v2's output -> TF2 code (tf.function, GradientTape, Keras), or why not."""
    estimator = estimator_line(source)
    if estimator is not None:
        return NativeResult(source, False, ESTIMATOR_REASON, estimator)
    original = source
    source, decided = decide_version_checks(source)
    try:
        rewrite = Rewrite(source)
        for line, test in decided:
            rewrite.changes.append(
                CompatChange(line, 1, f"the version check `{test}` is decided: the branch TF 2.21 runs is kept")
            )
        rewrite.prescan_static()
        rewrite.find_scope()
        rewrite.flatten()
        rewrite.analyse()
        rewrite.find_feed_bindings()
        rewrite.find_sites()
        rewrite.check()
        code = rewrite.generate()
        left = v1_left(code)
        if left is not None:
            raise Fallback(left[0], f"`{left[1]}` has no native rewrite here")
        random = random_line(source)
        if random is not None:
            rewrite.notes.append(
                CompatChange(
                    random,
                    1,
                    "TF2 draws random numbers (initial weights, dropout masks, samples) from another stream than "
                    "TF1 under the same seed: what the program prints after training matches TF1 in distribution, "
                    "not digit for digit",
                    blocks_run=False,
                )
            )
    except Fallback as fallback:
        return NativeResult(original, False, fallback.message, fallback.line)
    return NativeResult(
        code,
        True,
        changes=tuple(sorted(rewrite.changes, key=lambda change: change.line)),
        notes=tuple(rewrite.notes),
    )
