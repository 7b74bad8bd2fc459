"""Which TensorFlow a file installs for itself: notebooks pin their own, line by line.

A Colab or Jupyter notebook often starts with ``!pip install tensorflow==1.14`` or
``%tensorflow_version 1.x`` and runs its TF1 code on that TensorFlow, on purpose; a later cell may
install TensorFlow 2 for what follows (convert the TF1 checkpoint, then export with TF 2). A TF1
API in the cells that run on TensorFlow 1 is right in letter for TF 2.21 but no defect of that
notebook, so those findings are notes that name the install, as for a project whose packaging pins
an old TensorFlow (``lint.project``).

Read from the source's lines: a notebook exported to Python keeps its shell lines as comments
(``# !pip install ...``, jupytext) or ``pass  # !pip install ...``, and a script's comment that
says ``pip install tensorflow==1.15`` says the same.
"""

from __future__ import annotations

import re

__all__ = ["tf_installs", "installed_tf1_at"]

# `%tensorflow_version 1.x`, `pip install tensorflow-gpu==1.15.0`, `pip install "tensorflow<2"`
_INSTALL = re.compile(
    r"%tensorflow_version\s+(?P<magic>[12])\b"
    r"|pip3?\s+install\b[^\n]*?\btensorflow(?:[-_]gpu|[-_]cpu)?\s*(?P<op>==|<=?|~=)\s*['\"]?(?P<major>[12])(?:\.|\b)"
)


def tf_installs(source: str) -> list[tuple[int, int, str]]:
    """(line, TensorFlow major version, the line's text) for each install the source states, in order."""
    if "tensorflow" not in source:
        return []
    found: list[tuple[int, int, str]] = []
    for number, line in enumerate(source.splitlines(), start=1):
        if "tensorflow" not in line:
            continue
        match = _INSTALL.search(line)
        if match is None:
            continue
        if match["magic"]:
            major = int(match["magic"])
        else:
            major = int(match["major"])
            if match["op"] == "<" and major == 2:
                major = 1  # tensorflow<2
        found.append((number, major, line.strip()))
    return found


def installed_tf1_at(installs: list[tuple[int, int, str]], line: int) -> tuple[int, str] | None:
    """The TensorFlow 1 install in force at ``line`` (its line and text), or None: the last install
    above the line decides; code above every install runs on whatever the first one installs."""
    current: tuple[int, int, str] | None = installs[0] if installs else None
    for install in installs:
        if install[0] > line:
            break
        current = install
    if current is None or current[1] != 1:
        return None
    return current[0], current[2]
