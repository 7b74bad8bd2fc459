"""TFP515: a scipy.misc name that SciPy removed (`scipy.misc.imread`, `imresize`, `imsave`, `comb`)."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.context import FileContext
from tfpilot.lint.patterns import under_feature_check
from tfpilot.lint.rule import Invalid, Rule

# scipy.misc name -> what to use instead. The image functions were PIL wrappers, deprecated in SciPy 1.0 and
# removed in 1.2; the math ones moved to scipy.special (gone from misc in 1.3); the sample images moved to
# scipy.datasets and `derivative` went in 1.12. Each is checked absent from the installed SciPy by
# tests/unit/lint/test_lint_round18.py.
SCIPY_MISC_REMOVED = {
    "imread": "`imageio.v2.imread(path)` or `np.asarray(PIL.Image.open(path))`",
    "imsave": "`imageio.v2.imwrite(path, image)` or `PIL.Image.fromarray(image).save(path)` (scale floats to uint8 "
    "yourself: scipy rescaled each image from its own minimum and maximum)",
    "imresize": "`np.asarray(PIL.Image.fromarray(image).resize((width, height)))` or `tf.image.resize`",
    "imrotate": "`PIL.Image.fromarray(image).rotate(angle)` or `scipy.ndimage.rotate`",
    "imfilter": "`PIL.ImageFilter` or `scipy.ndimage`",
    "imshow": "`matplotlib.pyplot.imshow`",
    "toimage": "`PIL.Image.fromarray`",
    "fromimage": "`np.asarray(image)`",
    "bytescale": "`((x - x.min()) / (x.max() - x.min()) * 255).astype(np.uint8)`",
    "comb": "`scipy.special.comb`",
    "factorial": "`scipy.special.factorial`",
    "logsumexp": "`scipy.special.logsumexp`",
    "face": "`scipy.datasets.face`",
    "ascent": "`scipy.datasets.ascent`",
    "electrocardiogram": "`scipy.datasets.electrocardiogram`",
    "derivative": "a finite difference of your own (`(f(x + h) - f(x - h)) / (2 * h)`)",
}


class ScipyRemovedName(Rule):
    """TF1-era programs read, resize and save their images with ``scipy.misc`` (``imread``, ``imresize``,
    ``imsave``, ``toimage``), PIL wrappers SciPy removed in 1.2; its ``comb`` / ``factorial`` / ``logsumexp``
    moved to ``scipy.special``. On the SciPy that installs beside TensorFlow 2.21 each raises AttributeError
    (or ImportError) where it runs, often at the end of training when samples are saved. One finding per name
    and file; not under a feature check (``hasattr(scipy.misc, "imread")``, ``try`` / ``except``), a note where
    the file installs TensorFlow 1 itself. ``tfpilot migrate`` runs the image functions on a helper that does
    what SciPy 1.1 did.
    """

    code = "TFP515"
    name = "scipy-removed-name"
    message = "a scipy.misc name SciPy removed (AttributeError on the SciPy installed beside TF 2.21)"
    fix_hint = "Use the replacement the message gives (imageio / Pillow for images, scipy.special for the math)"
    severity = Severity.ERROR
    category = "numpy 2"
    tokens = ("scipy",)
    VALID = [
        """
import numpy as np
from scipy import special, ndimage

total = special.logsumexp(np.zeros(3))
blurred = ndimage.gaussian_filter(np.zeros((4, 4)), 1.0)
""",
        """
import scipy.misc

if hasattr(scipy.misc, "imread"):
    read = scipy.misc.imread
""",
    ]
    INVALID = [
        Invalid(
            """
import scipy.misc

def save_images(images, path):
    scipy.misc.imsave(path, images[0])
""",
            line=5,
        ),
        Invalid(
            """
from scipy.misc import imread, imresize

image = imresize(imread("cat.png"), (64, 64))
""",
            line=2,
        ),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._seen: set[str] = set()

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        """`from scipy.misc import imread`: the import itself fails (ImportError); once, for its first such name."""
        if node.level or node.module != "scipy.misc":
            return
        gone = [alias.name for alias in node.names if alias.name in SCIPY_MISC_REMOVED]
        if not gone or any(under_feature_check(self.context, name) for name in gone):
            return
        self._seen.update(gone)
        advice = "; ".join(f"`{name}`: {SCIPY_MISC_REMOVED[name]}" for name in gone)
        self.report(
            node,
            f"`from scipy.misc import {', '.join(gone)}` fails (ImportError on the SciPy installed beside TF 2.21): "
            f"use {advice}",
        )

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        if not qualname.startswith("scipy.misc."):
            return
        attribute = qualname[len("scipy.misc.") :].split(".")[0]
        replacement = SCIPY_MISC_REMOVED.get(attribute)
        if replacement is None or attribute in self._seen or under_feature_check(self.context, attribute):
            return
        self._seen.add(attribute)
        shown = self.context.dotted(node) or qualname
        self.report(
            node,
            f"`{shown}` is gone from SciPy (`scipy.misc.{attribute}`: AttributeError / ImportError on the SciPy "
            f"installed beside TF 2.21): use {replacement}",
        )
