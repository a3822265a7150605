"""Architecture search: which sampled points are admissible (constraints, then the budget solve), a trial's
structural identity (its solved model), and the architectures a finite space holds (what `show` counts).

A point is admitted before any training: a constraint is checked on the resolved layout (no solve needed), then
the budget solve runs; either failing raises `Rejected`, which the engines record as a rejected point (no trial
trained, never a failure). One rule, used at sampling and again before training, so no point escapes it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from coatsearch.vocab import kinds, specs

if TYPE_CHECKING:
    from coatsearch.budget.prepare import Prepared
    from coatsearch.space.objects import Baseline, Candidate, Dim, Space

POINTS_MAX = specs.POINTS_MAX  # points of a finite space `show --all` and the grid sampler enumerate
SURVEY_S = 60.0  # seconds `show` spends solving the points of one searched candidate at most
REJECT_MAX = 50  # rejected samples in a row for one planned trial before it is recorded as failed
UNTRAINED = frozenset({"REJECTED", "REUSED"})  # record states of sampled points that trained nothing


class Rejected(Exception):
    """A sampled point the constraints or the budget solve refuse (it costs no training)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def searches_model(cand: Any) -> bool:
    """Whether a candidate samples structural (`model.*`) fields: its trials are architectures, not one model."""
    return any(d.path.startswith("model.") for d in getattr(cand, "dims", ()))


def admit(space: Space, cand: Candidate | Baseline, params: Mapping[str, Any]) -> Prepared:
    """The matched model of `cand` at `params`, or Rejected: a constraint first (cheap), then the budget solve."""
    from coatsearch.budget.prepare import prepare

    try:
        model, _, _ = cand.resolve(params)
    except ValueError as exc:
        raise Rejected(f"invalid point: {exc}") from None
    if why := kinds.constraint_problem(space.conv_before_attention, model.layout):
        raise Rejected(f"constraint: {why}")
    prep = prepare(cand, params)
    if not prep.ok:
        raise Rejected(f"budget not met: {prep.reason}")
    return prep


def _block_text(block: specs.BlockSpec) -> str:
    """The block options that differ from the defaults, e.g. 'head_size=8 downsample=dw rel_pos=False'."""
    base = specs.BlockSpec()
    return " ".join(
        f"{f.name}={getattr(block, f.name)}" for f in fields(block) if getattr(block, f.name) != getattr(base, f.name)
    )


_ATTENTION_OPTIONS = frozenset({"head_size", "mlp_ratio", "attn_norm", "rel_pos", "window_size", "grid_size"})
_MBCONV_OPTIONS = frozenset({"expand_ratio", "se_ratio", "downsample"})  # downsample: strided MBConv blocks only


def structure(model: specs.ModelSpec) -> str:
    """A solved model's structural identity: arch, stem, per-stage kind/depth/width/stride, and the block options
    some block of it reads (`identity`)."""
    from coatsearch.budget.prepare import stages_text, stem_text

    return identity(f"{model.arch} {stem_text(model)} | {stages_text(model)} | {_block_text(model.block)}")


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


def sampled(cand: Candidate, params: Mapping[str, Any]) -> dict[str, Any]:
    """A trial's sampled values by dimension path (constants included), from its stored Optuna params."""
    out = {}
    for d in cand.dims:
        if d.kind == "choice" and len(d.choices or ()) == 1:
            out[d.path] = (d.choices or ())[0]
        elif d.path in params:
            out[d.path] = _value_of(d, params[d.path])
    return out


def model_dims(cand: Candidate | Baseline) -> tuple[Dim, ...]:
    """The structural dimensions (`model.*`): the ones that make architectures (`train.*` ones do not)."""
    return tuple(d for d in cand.dims if d.path.startswith("model."))


def size(cand: Candidate | Baseline) -> int | None:
    """How many structural points the candidate's `model.*` dimensions hold (None when one is continuous)."""
    total = 1
    for d in model_dims(cand):
        values = d.values()
        if values is None:
            return None
        total *= len(values)
    return total


def points(cand: Candidate) -> Iterator[dict[str, Any]]:
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


@dataclass(frozen=True)
class Survey:
    """What a finite (or sampled) space holds after the constraints and the budget solve."""

    points: int  # points looked at
    total: int | None  # points the space holds (None: continuous)
    rejected: Mapping[str, int]  # why -> count
    architectures: Mapping[str, tuple[dict, Prepared]] = field(default_factory=dict)  # name -> (first point, prep)
    stopped: str = ""  # why it looked at fewer than `total` points ("": it looked at all)


def survey(space: Space, cand: Candidate, limit: int | None = None, seconds: float = SURVEY_S) -> Survey:
    """Admit every point (or the first `limit`, at most POINTS_MAX, for at most `seconds`), counting rejections by
    kind and distinct architectures; `stopped` says why it looked at fewer points than the space holds."""
    import time

    rejected: Counter[str] = Counter()
    archs: dict[str, tuple[dict, Prepared]] = {}
    seen, cap, began, stopped = 0, min(limit if limit is not None else POINTS_MAX, POINTS_MAX), time.monotonic(), ""
    for point in points(cand):
        if seen >= cap:
            stopped = f"at the first {cap:,} points (POINTS_MAX)" if cap == POINTS_MAX else f"at the first {cap:,}"
            break
        if time.monotonic() - began > seconds:
            stopped = f"after {seconds:g} s"
            break
        seen += 1
        try:
            prep = admit(space, cand, point)
        except Rejected as exc:
            rejected[exc.reason.split(":", 1)[0]] += 1
            continue
        archs.setdefault(arch_name(prep.model.layout, structure(prep.model)), (point, prep))
    return Survey(seen, size(cand), dict(rejected), archs, stopped)


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


def grid(cand: Candidate | Baseline, seed: int) -> list[dict[str, Any]]:
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
