"""Reading back what the typed results' `to_json` wrote: JSON's null for a non-finite number, lists for tuples.

summary.json is written by `tables.jsonable`, which turns NaN and inf into null and tuples into lists; each typed
result's `from_json` undoes that with these helpers, and tolerates the keys an older summary lacks (their defaults).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def number(x: Any, missing: float = math.nan) -> float:
    """A float; `missing` for JSON's null (what a NaN or an infinity was written as)."""
    return missing if x is None else float(x)


def maybe(x: Any) -> float | None:
    """A float, or None for null."""
    return None if x is None else float(x)


def interval(x: Any) -> tuple[float, float] | None:
    """A written [low, high] as a tuple (None for null); a bound written as null (infinite) reads as NaN."""
    return None if x is None else (number(x[0]), number(x[1]))


def mapping(x: Any) -> Mapping[str, Any]:
    """An object as a dict ({} for null); anything else is a damaged summary (TypeError)."""
    if x is None:
        return {}
    if not isinstance(x, Mapping):
        raise TypeError(f"expected an object, found {type(x).__name__}")
    return dict(x)


def items(x: Any) -> list[Any]:
    """A list ([] for null); anything else is a damaged summary (TypeError)."""
    if x is None:
        return []
    if not isinstance(x, list | tuple):
        raise TypeError(f"expected a list, found {type(x).__name__}")
    return list(x)


def before(data: Mapping[str, Any], first: str, second: str) -> bool:
    """Whether key `first` comes before `second` in `data` (a key order to_json keeps; False when either is absent)."""
    keys = list(data)
    return first in keys and second in keys and keys.index(first) < keys.index(second)
