"""Classes added in the eighteenth session beside held-out lint round 17: SciPy's removed scipy.misc names
(TFP515), which TF1-era programs use to read, resize and save images (round 17 had `scipy.misc.imresize` in two
of DeepRL-Agents' files; migrate round 15's DCGAN saved its samples with `scipy.misc.imsave`)."""

from __future__ import annotations

import textwrap

import pytest

from tfpilot.lint.engine import lint_source
from tfpilot.lint.rules.tfp515_scipy_removed_name import SCIPY_MISC_REMOVED


def test_premise_every_listed_scipy_misc_name_is_gone_from_the_installed_scipy():
    misc = pytest.importorskip("scipy.misc")
    assert [name for name in SCIPY_MISC_REMOVED if hasattr(misc, name)] == []
    special = pytest.importorskip("scipy.special")
    for name in ("comb", "factorial", "logsumexp"):
        assert hasattr(special, name), name  # where the message sends them


def test_each_removed_name_is_reported_once_at_the_import_or_its_first_use():
    source = textwrap.dedent(
        """
        import scipy.misc
        from scipy.misc import imread, imresize
        from scipy import misc
        image = imresize(imread("a.png"), (4, 4))
        scipy.misc.imsave("b.png", image)
        scipy.misc.imsave("c.png", image)
        misc.toimage(image)
        """
    )
    found = [f for f in lint_source(source, path="case.py") if f.code == "TFP515"]
    assert [int(f.location.split(":")[-2]) for f in found] == [3, 6, 8]
    assert "imageio" in found[0].message and "PIL.Image.fromarray" in found[2].message
