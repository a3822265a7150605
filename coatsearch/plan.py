"""The plan of a study (which trials exist) and its study-level record; no torch, cheap to import."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from coatsearch.space import Space


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


def plan(space: Space) -> tuple[PlanItem, ...]:
    """Grid over named candidates × seeds × (samples, for candidates that have search dimensions)."""
    return tuple(
        PlanItem(c.name, seed, k)
        for c in space.candidates
        for seed in space.study.seeds
        for k in range(space.study.samples if c.dims else 1)
    )


def space_record(space: Space) -> dict:
    """The study-level record of what was run: space file text, profile, scale and settings."""
    try:
        text = Path(space.source).read_text(encoding="utf-8")
    except OSError:
        text = ""
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
        "space_yaml": text,
    }
