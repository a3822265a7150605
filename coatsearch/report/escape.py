"""Text that reaches the report's Markdown (and the dashboard note) from a space, a trial or a record, escaped.

Names, reasons and descriptions are the user's (or another client's) text: a newline or `|` in a table
cell splits the row, an unclosed code fence turns the rest of the report into one code block. Every table
cell goes through `cell`, free text through `block`; the escapes are CommonMark backslash escapes.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})", re.M)  # a line that opens or closes a fenced code block


def cell(text: object) -> str:
    """A table cell: one line (breaks become spaces), `|` escaped; code spans stay (a row is one line)."""
    return " ".join(str(text).splitlines()).replace("|", "\\|")


def block(text: object) -> str:
    """Free Markdown text (a description): kept as written, but no line can open or close a code fence."""
    return _FENCE.sub(lambda m: m.group(1) + "\\" + m.group(2), str(text))
