"""TFP514: a NumPy name that NumPy 1.24, 2.0 or 2.4 removed (`np.float_`, `np.Inf`, `np.int`)."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.context import FileContext
from tfpilot.lint.numpy_removed import NUMPY_REMOVED, removed_from_numpy_lib
from tfpilot.lint.patterns import under_feature_check
from tfpilot.lint.rule import Invalid, Rule


class NumpyRemovedName(Rule):
    """TensorFlow 2.21 runs on NumPy >= 1.26 and pip installs NumPy 2 with it, where the aliases TF1-
    and TF2-era code used are gone: ``np.int`` / ``np.float`` (removed in 1.24), ``np.Inf``,
    ``np.NaN``, ``np.float_``, ``np.product`` (2.0), ``np.trapz`` (2.4), and the functions NumPy 1 also
    exported from ``np.lib`` (``np.lib.pad``: 2.0 kept only submodules and a few tools there). Each raises AttributeError
    where it runs, often far from the model (``self.best = np.Inf`` in a checkpoint callback stops
    ``fit`` before the first epoch). Reported once per name and file; not under a feature check
    (``hasattr(np, "float_")``, ``try`` / ``except AttributeError``) or in a branch only TensorFlow 1
    runs, and a note where the file installs TensorFlow 1 itself (which pins an old NumPy).
    """

    code = "TFP514"
    name = "numpy-removed-name"
    message = "a NumPy name that NumPy 1.24 / 2.0 / 2.4 removed (AttributeError on TF 2.21's NumPy)"
    fix_hint = "Use the name the message gives (np.Inf -> np.inf, np.float_ -> np.float64, np.int -> int)"
    severity = Severity.ERROR
    category = "numpy 2"
    tokens = ("numpy",)
    VALID = [
        """
import numpy as np

best = np.inf
x = np.zeros(3, dtype=np.float64).astype(int)
total = np.prod([2, 3])
flag = np.bool_(True)
""",
        # written for old and new NumPy alike
        """
import numpy as np

if hasattr(np, "float_"):
    FLOAT = np.float_
else:
    FLOAT = np.float64
try:
    trapezoid = np.trapezoid
except AttributeError:
    trapezoid = np.trapz
""",
    ]
    INVALID = [
        Invalid(
            """
import numpy as np

class Checkpoint:
    def __init__(self):
        self.best = np.Inf
""",
            line=6,
        ),
        Invalid(
            """
import numpy as np

labels = np.asarray([0, 1], dtype=np.int)
""",
            line=4,
        ),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._seen: set[str] = set()

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        if not qualname.startswith("numpy."):
            return
        attribute = qualname[len("numpy.") :]
        removed = NUMPY_REMOVED.get(attribute) or removed_from_numpy_lib(attribute)
        if removed is None or attribute in self._seen:
            return
        if under_feature_check(self.context, attribute):
            return
        self._seen.add(attribute)
        shown = self.context.dotted(node) or qualname
        replacement = removed.replacement
        if removed.rename and replacement.startswith("numpy."):
            alias = shown[: -(len(attribute) + 1)] if shown.endswith("." + attribute) else "numpy"
            replacement = f"`{alias}.{replacement[len('numpy.') :]}`"
        elif removed.rename:
            replacement = f"`{replacement}`"
        where = (
            "on every NumPy TensorFlow 2.21 supports"
            if removed.removed_in.startswith("1.")
            else "on the NumPy 2 pip installs with TensorFlow 2.21"
        )
        self.report(
            node, f"`{shown}` was removed in NumPy {removed.removed_in} (AttributeError {where}): use {replacement}"
        )
