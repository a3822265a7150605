"""Which trials a study holds (the grid of candidates x seeds x samples) and its study-level record; no torch.

Named apart from the API's planner, `coatsearch.plan(space, ...)` (coatsearch.api.plan), which sizes a study.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from coatsearch.errors import UserError
from coatsearch.space.objects import Space
from coatsearch.vocab.specs import SAMPLES_MAX

SPACE_ATTR = "space"  # the study attribute holding the whole space record (one dict)


@dataclass(frozen=True)
class PlanItem:
    """One planned trial: a candidate, a seed, and which sample of its search dimensions."""

    candidate: str
    seed: int
    sample: int = 0

    @property
    def key(self) -> str:
        """Stable identity used to resume: a key that completed is never run again."""
        return f"{self.candidate}/seed={self.seed}/sample={self.sample}"


REEVAL = SAMPLES_MAX  # a re-evaluation trial's sample index: REEVAL + the rank of the architecture it retrains


def plan(space: Space) -> tuple[PlanItem, ...]:
    """Grid over named candidates × seeds × (samples, for candidates that have search dimensions); then, with
    `study.reevaluate`, every named candidate and the top architectures of each searched one on fresh seeds."""
    main = tuple(
        PlanItem(c.name, seed, k)
        for c in space.candidates
        for seed in space.study.seeds
        for k in range(space.study.samples if c.dims else 1)
    )
    top = space.study.reevaluate.top if space.study.reevaluate else 0
    again = tuple(
        PlanItem(c.name, seed, REEVAL + rank if c.dims else 0)
        for c in space.candidates
        if not c.dims or any(d.path.startswith("model.") for d in c.dims)
        for seed in space.study.fresh_seeds
        for rank in range(top if c.dims else 1)
    )
    return main + again


def fixed_choices(space: Space) -> dict[str, list[Any]]:
    """The choices every trial fixes (`candidate`, `seed`) as the space plans them, re-evaluation seeds included:
    what a trial suggests (storage.sampling) and what the resume check compares a study's trials with."""
    return {"candidate": [c.name for c in space.candidates], "seed": [*space.study.seeds, *space.study.fresh_seeds]}


def space_record(space: Space) -> dict:
    """The study-level record of what was run: space file text, profile, scale and settings."""
    from coatsearch import fsafe
    from coatsearch.space.load import MAX_BYTES

    try:  # the file the space was loaded from, read with the space file's bound
        raw = fsafe.read_named(Path(space.source), MAX_BYTES, "space file") if space.source else b""
    except UserError:
        raw = b""
    text = raw.decode("utf-8", errors="replace")
    return {
        "space": space.name,
        "source": space.source,
        "profile": space.profile,
        "description": space.description,
        "scale": space.scale,
        "input": [space.image_size, space.channels, space.classes],
        "data": asdict(space.data),
        "scores": json.loads(json.dumps(asdict(space.scores))),
        "study": asdict(space.study),
        "candidates": [c.name for c in space.candidates],
        "untestable": dict(space.untestable),
        "pilots": list(space.pilots),
        "space_yaml": text,
        "space_sha256": hashlib.sha256(raw).hexdigest() if raw else None,  # the file's bytes, as run
        "space_content_sha256": _content_sha256(text, space.source) if raw else None,  # its identity (space.identity)
        **({"reseeded": True} if space.reseeded else {}),  # `study.seeds` and `data.test_draw` are not the file's
    }


def _content_sha256(text: str, source: str | None) -> str | None:
    """The space's identity (space.identity.content_sha256); None when the file read no longer parses."""
    from coatsearch.space.identity import content_sha256

    try:
        return content_sha256(text, source or "space file")
    except UserError:
        return None


def stored_space_record(user_attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The space record a study was run with (`space_record` as `run` stored it in the study's attributes), or
    what readable attributes of an older study give."""
    stored = user_attrs.get(SPACE_ATTR)
    if isinstance(stored, Mapping):
        return dict(stored)
    keys = {"space.name": "space", "space.source": "source", "space.profile": "profile", "space.scale": "scale"}
    return {field: user_attrs[key] for key, field in keys.items() if key in user_attrs}


def space_form(space: Space) -> dict:
    """The space in a canonical, comparable JSON form: everything that changes what its trials run and record."""
    form = {
        "input": [space.image_size, space.channels, space.classes],
        "data": asdict(space.data),
        "study": asdict(space.study),
        "candidates": {c.name: asdict(c.definition) for c in space.candidates},
    }
    return json.loads(json.dumps(form, sort_keys=True, default=str))


def space_changes(old: dict, new: dict) -> list[str]:
    """What differs from `old` to `new` (two `space_form`s), e.g. 'train.lr of candidate C-T: 0.003 -> 0.01'."""
    was, now = old.get("candidates", {}), new.get("candidates", {})
    out = [f"candidate removed: {n}" for n in was if n not in now] + [
        f"candidate added: {n}" for n in now if n not in was
    ]
    for name in (n for n in now if n in was):
        out += [f"{k} of candidate {name}: {a} -> {b}" for k, a, b in diff(was[name], now[name])]
    was_rest, now_rest = ({k: v for k, v in f.items() if k != "candidates"} for f in (old, new))
    return out + [f"{k}: {a} -> {b}" for k, a, b in diff(was_rest, now_rest)]


def diff(old: Any, new: Any, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """(dotted key, old, new) for every leaf that differs; a missing key reads as None."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [] if old == new else [(prefix.rstrip(".") or "(value)", _short(old), _short(new))]
    return [d for k in dict.fromkeys([*old, *new]) for d in diff(old.get(k), new.get(k), f"{prefix}{k}.")]


def _short(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, list | dict) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_space(stored: dict, space: Space, name: str, force: bool) -> bool:
    """Whether `space` differs from the study's recorded space (a UserError unless `force`)."""
    if stored.get("space") != space.name or stored.get("profile") != space.profile:
        raise UserError(
            f"study '{name}' holds space '{stored.get('space')}' profile '{stored.get('profile')}', "
            f"not '{space.name}' profile '{space.profile}'; pick another --study name"
        )
    if "form" not in stored:  # recorded before spaces were compared: nothing to compare with
        return False
    changes = space_changes(stored["form"], space_form(space))
    if changes and not force:
        more = f" (and {len(changes) - 3} more)" if len(changes) > 3 else ""
        raise UserError(
            f"study '{name}' was run with another version of this space: {'; '.join(changes[:3])}{more}; "
            "use --study NEW for a new study, or --force-new-space to record this space and keep the old trials"
        )
    return bool(changes)


@dataclass(frozen=True)
class RunSummary:
    """What one `coatsearch run` did: the study's trials by outcome against the plan (store.summary counts them)."""

    study: str
    storage: str
    planned: int
    complete: int
    failed: int
    pruned: int
    ran_now: int
    seconds: float
