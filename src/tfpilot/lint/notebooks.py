"""Jupyter notebooks as the Python IPython runs: ``tfpilot lint`` reads ``.ipynb`` files directly.

Most TensorFlow code people write first lives in notebooks (Colab, keras-io, the TF tutorials). A
notebook's code cells are joined in order, each made plain Python line for line the way IPython
runs it: shell (``!pip``) and magic (``%time``) lines become ``pass  # ...`` at their own indent,
non-Python cell magics (``%%bash``) are commented out, ``name?`` help lines and automagics too.
Line counts never change, so a finding's line maps back to its code cell and the line in it, which
the finding names. Comments stay, so ``# tfpilot: noqa[...]`` in a cell works as in a file.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re

__all__ = ["NotebookSource", "cell_to_python", "notebook_to_python"]


# Cell magics whose body is still Python (IPython runs it); every other cell magic (%%bash,
# %%writefile, %%html, ...) holds something else and is commented out whole.
PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture", "%%prun", "%%tensorflow_version")


HELP_LINE = re.compile(r"^[\w.\[\]()]+\?{1,2}$")
# IPython's automagics: `ls ./data` at the start of a statement is a shell call there, not Python
AUTOMAGIC_LINE = re.compile(r"^(ls|cd|pwd|pip|cat|mkdir|rm|cp|mv|env|less|more|clear)(\s+(?!=|[-+*/%<>!]=)\S|$)")


def open_brackets(line: str, depth: int, quote: str) -> tuple[int, str]:
    """Bracket depth and open string quote after `line`: enough to tell a `%` that starts a magic
    from one that continues a `print("..."\n % x)` expression."""
    i = 0
    while i < len(line):
        if quote:
            if line[i] == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
        elif line[i] == "#":
            break
        elif line[i] in "\"'":
            quote = line[i] * 3 if line.startswith(line[i] * 3, i) else line[i]
            i += len(quote)
            continue
        elif line[i] in "([{":
            depth += 1
        elif line[i] in ")]}":
            depth = max(0, depth - 1)
        i += 1
    return depth, quote if len(quote) == 3 else ""  # a one-quote string cannot span lines


def cell_to_python(lines: list[str]) -> list[str]:
    """One code cell as plain Python, line for line, the way IPython would run it: the cell's
    first line's indent removed, shell (!) and magic (%) lines and `name?` help lines turned into
    `pass  # ...` at their own indent (a comment alone would leave an `if` without a body), and
    non-Python cell magics commented out. Line counts never change, so findings map back."""
    first = next((line for line in lines if line.strip()), "")
    # IPython's leading_indent: the first line's indent is removed from every line that has it
    lead = first[: len(first) - len(first.lstrip())]
    if lead:
        lines = [line[len(lead) :] if line.startswith(lead) else line for line in lines]
        first = first[len(lead) :]
    if first.startswith("%%") and not first.startswith(PYTHON_CELL_MAGICS):
        return ["# " + line for line in lines]
    out: list[str] = []
    in_magic = False
    depth, quote = 0, ""
    previous_continues = False
    for line in lines:
        stripped = line.strip()
        statement_start = not previous_continues and depth == 0 and not quote
        if in_magic or (
            statement_start
            and (stripped.startswith(("!", "%")) or HELP_LINE.match(stripped) or AUTOMAGIC_LINE.match(stripped))
        ):
            indent = line[: len(line) - len(line.lstrip())]
            # a continued magic line's tail is not Python either; its indent is meaningless
            out.append(("# " if in_magic else f"{indent}pass  # ") + stripped)
            in_magic = stripped.endswith("\\")
            continue
        out.append(line)
        depth, quote = open_brackets(line, depth, quote)
        previous_continues = stripped.endswith("\\") and not stripped.startswith("#")
    return out


@dataclasses.dataclass(frozen=True)
class NotebookSource:
    """A notebook's code as one module; ``cells`` holds each code cell's first line in it."""

    source: str
    cells: tuple[int, ...]
    # Code cells that do not parse on their own (an exercise's function left with no body for the reader), each as (first line in
    # ``source``, the parser's message): commented out, so that the other cells are still checked.
    unparsed: tuple[tuple[int, str], ...] = ()

    def where(self, line: int) -> tuple[int, int]:
        """(code cell number, line in that cell), both 1-based, for a line of ``source``."""
        number = 0
        for index, first in enumerate(self.cells):
            if first <= line:
                number = index
        return number + 1, line - self.cells[number] + 1 if self.cells else line


def notebook_to_python(text: str, *, isolate_broken_cells: bool = False) -> NotebookSource:
    """Code cells joined in order (a blank line between two), each made plain Python by
    cell_to_python. Raises ValueError when ``text`` is not a notebook's JSON. With
    ``isolate_broken_cells``, a cell that does not parse on its own is commented out (see below):
    asked for only when the joined module does not parse, so a notebook that does is parsed once."""
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not a Jupyter notebook: invalid JSON ({error.msg}, line {error.lineno})") from error
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells", []), list):
        raise ValueError("not a Jupyter notebook: no list of cells")
    chunks: list[str] = []
    starts: list[int] = []
    line = 1
    for cell in notebook.get("cells", []):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        lines = "".join(source).splitlines() if isinstance(source, list) else str(source).splitlines()
        converted = cell_to_python(lines)
        starts.append(line)
        chunks.append("\n".join(converted))
        line += len(converted) + 1  # the cell's lines and the blank line that joins the next
    if isolate_broken_cells:
        # Jupyter parses and runs each cell on its own: one broken cell (an exercise left to the
        # reader) stops only itself. Comment it out, line for line, and check the rest.
        unparsed: list[tuple[int, str]] = []
        for index, chunk in enumerate(chunks):
            try:
                ast.parse(chunk)
            except (SyntaxError, ValueError) as error:
                unparsed.append((starts[index], getattr(error, "msg", None) or str(error)))
                chunks[index] = "\n".join("# " + text for text in chunk.split("\n"))
        return NotebookSource("\n\n".join(chunks) + "\n", tuple(starts), tuple(unparsed))
    return NotebookSource("\n\n".join(chunks) + "\n", tuple(starts))
