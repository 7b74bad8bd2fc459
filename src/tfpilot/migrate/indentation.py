"""Tabs in a file's indentation, expanded so that libcst (which the rewrites use) can read it.

Why: Python reads a file that indents some blocks with tabs and others with spaces as long as
no block is ambiguous (tabs advance to the next multiple of 8, as here), but libcst's tokenizer
refuses the mix ("no matching outer block for dedent"). TF1 tutorials edited in several editors
have it; one such file used to stop `tfpilot migrate` for the whole tree.
"""

from __future__ import annotations

import io
import tokenize

import libcst as cst

__all__ = ["expand_indentation_tabs", "libcst_reads"]


def libcst_reads(text: str) -> bool:
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        return False
    return True


def expand_indentation_tabs(text: str) -> str:
    """`text` with the leading tabs of its code lines expanded to 8-column stops (Python's own
    rule for indentation); lines inside a multi-line string are left as they are."""
    inside_strings: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside_strings.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines, start=1):
        if number in inside_strings:
            continue
        body = line.lstrip(" \t")
        indent = line[: len(line) - len(body)]
        if "\t" in indent:
            lines[number - 1] = indent.expandtabs(8) + body
    return "".join(lines)
