"""Numbers from a space file, a flag or an API argument: one validation, one wording, for all three.

A count is an integer (never a bool: `True` is not 1) within its bounds; a real is finite (no NaN, no
infinity; never a bool) within its bounds. Every check raises ValueError with the same clause, "VALUE is
not allowed; allowed: WHAT": the DSL turns it into `file:line: field 'x': ...`, argparse into
`argument --x: ...`, the API into a UserError naming the argument; each exits 2 before anything is written.
"""

from __future__ import annotations

import math
import re
from typing import Any

_SUFFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12}


def _refuse(value: Any, allowed: str) -> ValueError:
    return ValueError(f"{value!r} is not allowed; allowed: {allowed}")


def count(value: Any, low: int, high: int) -> int:
    """`value` if it is an integer (not a bool) in low..high; ValueError stating the range otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _refuse(value, f"an integer {low}..{high}")
    return value


def real(value: Any, low: float = 0.0, high: float = math.inf, *, above: bool = True) -> float:
    """`value` if it is a finite number (not a bool) > low (>= low unless `above`) and <= high."""
    bound = f"> {low:g}" if above else f">= {low:g}"
    allowed = f"a finite number {bound}" + ("" if math.isinf(high) else f" and <= {_plain(high)}")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _refuse(value, allowed)
    if value < low or (above and value == low) or value > high:
        raise _refuse(value, allowed)
    return float(value)


def _plain(x: float) -> str:
    """A bound as written: 100, 31,622,400, 0.5."""
    return f"{x:,.0f}" if x == int(x) else f"{x:g}"


def parse_int(text: str, low: int, high: int) -> int:
    """A flag's text as an integer in low..high (`count`'s wording)."""
    try:
        value = int(text)
    except ValueError:
        raise _refuse(text, f"an integer {low}..{high}") from None
    return count(value, low, high)


def parse_real(text: str, low: float = 0.0, high: float = math.inf) -> float:
    """A flag's text as a finite number > low (`real`'s wording)."""
    try:
        value = float(text)
    except ValueError:
        raise _refuse(text, "a finite number > 0") from None
    return real(value, low, high)


def parse_count(value: Any, high: int) -> int:
    """A MACs or params count: 30000000, 3e7, '30M', '4.2G'; a whole number of at least 1, at most `high`."""
    allowed = f"a whole count 1..{high:.0e} like 30000000, 3e7, '30M' or '4.2G'"
    if isinstance(value, bool):
        raise _refuse(value, allowed)
    if isinstance(value, int | float):
        number = float(value)
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([KMGBT]?)\s*", str(value), flags=re.IGNORECASE)
        if not match:
            raise _refuse(value, allowed)
        number = float(match.group(1)) * _SUFFIX.get(match.group(2).upper(), 1)
    if not math.isfinite(number) or number < 1 or number > high or abs(number - round(number)) > 1e-9 * number:
        raise _refuse(value, allowed)
    return int(round(number))
