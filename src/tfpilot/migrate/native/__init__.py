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
  get no gradient there either); ``minimize(loss, global_step=step)`` then adds 1 to ``step``.
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

import ast
import dataclasses

from tfpilot.migrate.compat import CompatChange
from tfpilot.migrate.native.classes import inline_graph_classes
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
    refused: list[tuple[int, str]] = []
    source, decided = decide_version_checks(source, refused=refused)
    changes: list[CompatChange] = [
        CompatChange(line, 1, f"the version check `{test}` is decided: the branch TF 2.21 runs is kept")
        for line, test in decided
    ] + [
        CompatChange(
            line,
            1,
            f"removed `if {test}:` and the exit under it: it refused TensorFlow 2, which the migrated code runs on",
        )
        for line, test in refused
    ]
    source, inlined = inline_graph_classes(source)
    changes += inlined
    notes: list[CompatChange] = []
    try:
        owners = Rewrite(source).session_functions() or []
        if len(owners) < 2:
            code = _rewrite_one(source, None, changes, notes)
        else:
            code = _rewrite_each(source, owners, changes, notes)
        left = v1_left(code)
        if left is not None:
            raise Fallback(left[0], f"`{left[1]}` has no native rewrite here")
        random = random_line(source)
        if random is not None:
            notes.append(
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
    except Exception as error:  # noqa: BLE001 - a shape the rewrite did not foresee: the compat output still runs
        first = str(error).splitlines()[0][:200] if str(error) else ""
        return NativeResult(original, False, f"the native rewrite failed here ({type(error).__name__}: {first})", 1)
    return NativeResult(
        code,
        True,
        changes=tuple(sorted(changes, key=lambda change: change.line)),
        notes=tuple(notes),
    )


def _rewrite_one(source: str, owner: str | None, changes: list[CompatChange], notes: list[CompatChange]) -> str:
    """One rewrite of the module, or of the one Session function ``owner`` (the others left as they are)."""
    rewrite = Rewrite(source, owner=owner)
    rewrite.prescan_static()
    rewrite.find_scope()
    rewrite.flatten()
    rewrite.analyse()
    rewrite.find_feed_bindings()
    rewrite.find_sites()
    rewrite.check()
    code = rewrite.generate()
    changes += rewrite.changes
    notes += rewrite.notes
    return code


def _rewrite_each(source: str, owners: list[str], changes: list[CompatChange], notes: list[CompatChange]) -> str:
    """A file of self-contained programs, one per function (``def train(): ... with Session()``,
    ``def evaluate(): ...``): each function built its own graph and ran it in its own Session, so
    each is rewritten on its own, from the last to the first, each pass on the previous one's output.

    A change's line is moved back to the input's numbering by how far its function moved (an
    import the rewrite added above it). A function of the file that builds graph state for more
    than one of them (a model function becomes one tf.Module class) keeps the file on compat."""
    original_lines = _function_lines(source)
    code = source
    for owner in reversed(owners):
        current_lines = _function_lines(code)
        shift = current_lines[owner] - original_lines[owner]
        these: list[CompatChange] = []
        code = _rewrite_one(code, owner, these, notes)
        changes += [dataclasses.replace(change, line=max(change.line - shift, 1)) for change in these]
    read, bound = _names_read_and_bound(code)
    gone = (set(original_lines) - set(_function_lines(code))) & (read - bound)
    if gone:
        name = sorted(gone)[0]
        raise Fallback(original_lines[name], f"`{name}` builds graph state for more than one Session function")
    return code


def _function_lines(source: str) -> dict[str, int]:
    """Module-level function names and the line each is defined on."""
    return {
        node.name: node.lineno
        for node in ast.parse(source).body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def _names_read_and_bound(source: str) -> tuple[set[str], set[str]]:
    """Names the code reads, and names it binds anywhere (assignments, parameters, definitions)."""
    read: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return read, bound
