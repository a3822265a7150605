"""Search dimensions and the names they make: a candidate's dimensions and the points a finite one holds, a point's
values as Optuna stores them, and an architecture's identity and row name, read from a solved model's structure.

Everything here reads a candidate through its dimensions alone (`HasDims`) and a trial through its record, so the
run record (storage.record) can name a row without the space. Which sampled points are admissible, a solved
model's structure and the survey of a finite space are in space/admission.py.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from coatsearch.vocab import specs

POINTS_MAX = specs.POINTS_MAX  # points of a finite space `show --all` and the grid sampler enumerate
UNTRAINED = frozenset({"REJECTED", "REUSED"})  # record states of sampled points that trained nothing


@dataclass(frozen=True)
class Dim(specs.SearchDim):
    """One search dimension over a dotted field path (`model.block.head_size`, `train.lr`)."""

    path: str = ""


class HasDims(Protocol):
    """What this module reads of a candidate or baseline (space.objects.Candidate, Baseline): its dimensions."""

    @property
    def dims(self) -> tuple[Dim, ...]: ...


def searches_model(cand: Any) -> bool:
    """Whether a candidate samples structural (`model.*`) fields: its trials are architectures, not one model."""
    return any(d.path.startswith("model.") for d in getattr(cand, "dims", ()))


_ATTENTION_OPTIONS = frozenset({"head_size", "mlp_ratio", "attn_norm", "rel_pos", "window_size", "grid_size"})
_MBCONV_OPTIONS = frozenset({"expand_ratio", "se_ratio", "downsample"})  # downsample: strided MBConv blocks only


def identity(struct: str) -> str:
    """A structure string without the block options no block of its stages reads, so that two points that build
    the same network are one architecture: attention options without a T or M stage, MBConv options without a C
    stage, the MBConv downsampling variant without a strided C stage. Records made before the rule read the same
    way through it (`architecture`)."""
    parts = [p.strip() for p in struct.split("|")]
    if len(parts) != 3:
        return struct.strip()
    stages = parts[1].split()
    kinds = {s[0] for s in stages if s}
    unused = set() if kinds & {"T", "M"} else set(_ATTENTION_OPTIONS)
    if "C" not in kinds:
        unused |= _MBCONV_OPTIONS
    elif not any(s.startswith("C") and not s.endswith("/1") for s in stages):
        unused.add("downsample")
    kept = " ".join(o for o in parts[2].split() if o.partition("=")[0] not in unused)
    return f"{parts[0]} | {parts[1]} | {kept}".strip()


def arch_name(layout: str, struct: str) -> str:
    """A row name for one architecture: its layout and a short hash of its structure, e.g. 'C-T-T-T_3fa2c1'."""
    return f"{layout or 'model'}_{hashlib.sha1(struct.encode()).hexdigest()[:6]}"


def label(value: Any) -> Any:
    """A choice as Optuna stores it: scalars as they are, lists and mappings as JSON text."""
    return value if isinstance(value, str | int | float | bool) else json.dumps(value)


def _value_of(dim: specs.SearchDim, stored: Any) -> Any:
    """The choice a stored Optuna value stands for (the inverse of `label`); numbers as they are."""
    if dim.kind != "choice":
        return stored
    for choice in dim.choices or ():
        if label(choice) == stored:
            return choice
    return stored


def sampled(cand: HasDims, params: Mapping[str, Any]) -> dict[str, Any]:
    """A trial's sampled values by dimension path (constants included), from its stored Optuna params."""
    out = {}
    for d in cand.dims:
        if d.kind == "choice" and len(d.choices or ()) == 1:
            out[d.path] = (d.choices or ())[0]
        elif d.path in params:
            out[d.path] = _value_of(d, params[d.path])
    return out


def model_dims(cand: HasDims) -> tuple[Dim, ...]:
    """The structural dimensions (`model.*`): the ones that make architectures (`train.*` ones do not)."""
    return tuple(d for d in cand.dims if d.path.startswith("model."))


def size(cand: HasDims) -> int | None:
    """How many structural points the candidate's `model.*` dimensions hold (None when one is continuous)."""
    total = 1
    for d in model_dims(cand):
        values = d.values()
        if values is None:
            return None
        total *= len(values)
    return total


def points(cand: HasDims) -> Iterator[dict[str, Any]]:
    """Every structural point of a finite space, in a fixed order (the `model.*` dimensions sorted by path; the
    last varies fastest, as itertools.product), made one at a time: nothing is listed ahead (a product would
    first copy every dimension's values)."""
    dims = model_dims(cand)
    values = [d.values() or () for d in dims]
    if not all(values):
        return
    at = [0] * len(values)
    while True:
        yield {d.path: v[i] for d, v, i in zip(dims, values, at, strict=True)}
        k = len(at) - 1
        while k >= 0 and at[k] == len(values[k]) - 1:
            at[k] = 0
            k -= 1
        if k < 0:
            return
        at[k] += 1


def architecture(run: Any) -> str:
    """The row name of a trial's solved model (`arch_name`), "" when it recorded no structure."""
    model = getattr(run, "model", None)
    return arch_name(model.layout, identity(model.structure)) if model is not None and model.structure else ""


def regroup(records: Sequence[Any]) -> list[Any]:
    """Records with every trial of a candidate that samples `model.*` fields renamed to its architecture, so
    the report's rows are architectures (`train.*` samples of one architecture stay in its row)."""
    import dataclasses

    out = []
    for r in records:
        name = architecture(r.run) if any(str(k).startswith("model.") for k in r.params) else ""
        if name:
            ident = dataclasses.replace(r.run.identity, candidate=name)
            r = dataclasses.replace(r, run=dataclasses.replace(r.run, identity=ident))
        out.append(r)
    return out


def grid(cand: HasDims, seed: int) -> list[dict[str, Any]]:
    """Every point of a finite candidate over all its dimensions, as Optuna labels, in a seeded shuffled order
    (the `grid` sampler hands them out in turn, each once per seed)."""
    import random

    dims = [d for d in cand.dims if not (d.kind == "choice" and len(d.choices or ()) == 1)]
    out = [
        {d.path: label(v) for d, v in zip(dims, combo, strict=True)}
        for combo in itertools.product(*(d.values() or [] for d in dims))
    ]
    random.Random(seed).shuffle(out)
    return out
