"""NumPy names that no longer exist on the NumPy TensorFlow 2.21 installs, and what replaces each.

TensorFlow 2.21 requires NumPy >= 1.26, and pip installs NumPy 2 with it. NumPy 1.24 removed the
aliases of Python's types (``np.int``, ``np.float``, ...), NumPy 2.0 removed dozens of aliases
(``np.Inf``, ``np.NaN``, ``np.float_``, ``np.product``, ...), and NumPy 2.4 removed ``np.trapz`` and
``np.in1d``: each raises AttributeError. Every row was checked absent on the installed NumPy
(``test_lint_round16.py`` runs the premise); ``np.bool`` and ``np.long`` came back in NumPy 2 and are
not listed. Shared by TFP514 (lint) and ``tfpilot migrate`` (a rename where one name replaces another).
"""

from __future__ import annotations

import dataclasses

__all__ = ["NUMPY_LIB_KEPT", "NUMPY_REMOVED", "RemovedNumpyName", "removed_from_numpy_lib"]


@dataclasses.dataclass(frozen=True)
class RemovedNumpyName:
    name: str  # the attribute of numpy that is gone
    removed_in: str  # the NumPy release that removed it
    replacement: str  # what to write instead (``numpy.x`` where another name of numpy replaces it)
    rename: bool = True  # the replacement is a name that means the same: migrate substitutes it


def _rows() -> tuple[RemovedNumpyName, ...]:
    rows: list[RemovedNumpyName] = []
    for name, builtin in (("int", "int"), ("float", "float"), ("object", "object"), ("str", "str")):
        rows.append(RemovedNumpyName(name, "1.24", builtin))
    rows += [
        RemovedNumpyName("unicode", "1.24", "str"),
        RemovedNumpyName("complex", "1.24", "complex"),
        RemovedNumpyName("asscalar", "1.23", "`a.item()`", rename=False),
        RemovedNumpyName("alen", "1.23", "len"),
    ]
    for name in ("Inf", "Infinity", "infty", "PINF"):
        rows.append(RemovedNumpyName(name, "2.0", "numpy.inf"))
    rows.append(RemovedNumpyName("NINF", "2.0", "`-numpy.inf`", rename=False))
    for name in ("NaN", "NAN"):
        rows.append(RemovedNumpyName(name, "2.0", "numpy.nan"))
    renamed = {
        "float_": "numpy.float64",
        "complex_": "numpy.complex128",
        "cfloat": "numpy.complex128",
        "singlecomplex": "numpy.complex64",
        "longfloat": "numpy.longdouble",
        "clongfloat": "numpy.clongdouble",
        "longcomplex": "numpy.clongdouble",
        "string_": "numpy.bytes_",
        "unicode_": "numpy.str_",
        "bool8": "numpy.bool_",
        "int0": "numpy.intp",
        "uint0": "numpy.uintp",
        "object0": "numpy.object_",
        "str0": "numpy.str_",
        "bytes0": "numpy.bytes_",
        "void0": "numpy.void",
        "product": "numpy.prod",
        "cumproduct": "numpy.cumprod",
        "sometrue": "numpy.any",
        "alltrue": "numpy.all",
        "round_": "numpy.round",
        "mat": "numpy.asmatrix",
        "issubclass_": "issubclass",
    }
    rows += [RemovedNumpyName(name, "2.0", new) for name, new in renamed.items()]
    rows += [
        RemovedNumpyName("asfarray", "2.0", "`numpy.asarray(a, dtype=float)`", rename=False),
        RemovedNumpyName("msort", "2.0", "`numpy.sort(a, axis=0)`", rename=False),
        RemovedNumpyName("find_common_type", "2.0", "`numpy.result_type`", rename=False),
        RemovedNumpyName("PZERO", "2.0", "`0.0`", rename=False),
        RemovedNumpyName("NZERO", "2.0", "`-0.0`", rename=False),
        RemovedNumpyName("trapz", "2.4", "numpy.trapezoid"),
        # in1d flattened its result; isin keeps the input's shape
        RemovedNumpyName("in1d", "2.4", "`numpy.isin(a, b).ravel()`", rename=False),
    ]
    return tuple(rows)


NUMPY_REMOVED: dict[str, RemovedNumpyName] = {row.name: row for row in _rows()}


# What `numpy.lib` still holds in NumPy 2 (NEP 52): its submodules and a few tools. NumPy 1 also exported
# there every function of its lib modules (`np.lib.pad`, `np.lib.isin`), which 2.0 left at the top level only.
NUMPY_LIB_KEPT = frozenset(
    {"Arrayterator", "NumpyVersion", "add_docstring", "add_newdoc", "array_utils", "format", "introspect", "mixins",
     "npyio", "scimath", "stride_tricks", "tracemalloc_domain", "recfunctions", "user_array", "test"}
)  # fmt: skip


def removed_from_numpy_lib(attribute: str) -> RemovedNumpyName | None:
    """`lib.pad` (numpy.lib.pad) and the like: a name NumPy 2 no longer exports from numpy.lib."""
    parts = attribute.split(".")
    if len(parts) != 2 or parts[0] != "lib" or parts[1] in NUMPY_LIB_KEPT or parts[1].startswith("_"):
        return None
    return RemovedNumpyName(attribute, "2.0", f"numpy.{parts[1]}")
