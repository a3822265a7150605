"""Which test images a run reads, as an identity: `draw_of` (docs/verdicts.md, "Fresh test images").

training.subsets.split draws a run's test images deterministically from its data spec, its classes and, with
`test_sampling: per_seed`, its trial seed. So the draw a run reads is named by those values alone, before any
image is loaded: two runs with the same DrawId read the same images (the same `test_fp` in a report). `shares`
says which different draws still read common images by construction (a smaller per-seed draw of the same seed and
draw index is a prefix of a larger one); `shared` draws of one split and size that differ in `draw` are disjoint,
and other per-seed draws are independent samples of the images outside validation, which share images by chance
only (`chance_overlap`). Pure: no torch, no files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coatsearch.space.objects import Space

TEST_SPLIT = {"fashion_mnist": 10_000}  # test-split images of the data sets whose size the chance overlap needs


@dataclass(frozen=True)
class DrawId:
    """The identity of the test images one run reads (training.subsets.split): equal iff the same images."""

    dataset: str
    classes: tuple[int, ...] | None  # original class ids (None: every class)
    eval_size: int | None  # validation images before the draw (0: half of each class; None: not recorded)
    test_size: int | None  # test images of the draw (None: the rest of each class, or not recorded)
    sampling: str  # "shared" (one draw for every seed) or "per_seed"
    draw: int  # data.test_draw
    seed: int | None  # per_seed: the trial seed whose sample it is; shared: None

    @property
    def label(self) -> str:
        """One line, and the form records store: `fashion_mnist v1000 t4000 per_seed d1 s5`."""
        classes = "" if self.classes is None else "[" + ",".join(map(str, self.classes)) + "]"
        seed = "" if self.seed is None else f" s{self.seed}"
        return f"{self.dataset}{classes} v{self.eval_size} t{self.test_size} {self.sampling} d{self.draw}{seed}"


def draw_of(data: Mapping[str, Any], seed: int | None, classes: Iterable[int] | None = None) -> DrawId:
    """The draw a run with data spec `data` (DataSpec fields), trial seed `seed` and `classes` reads."""
    eval_size, test_size = data.get("eval_size"), data.get("test_size")
    if test_size is None and isinstance(eval_size, int) and eval_size > 0:
        test_size = eval_size  # subsets.split_plan: as many as validation
    sampling = str(data.get("test_sampling") or "shared")
    return DrawId(
        str(data.get("dataset")),
        None if classes is None else tuple(int(c) for c in classes),
        eval_size,
        test_size,
        sampling,
        int(data.get("test_draw") or 0),
        int(seed) if sampling == "per_seed" and seed is not None else None,
    )


def _subsets(node: Any) -> Iterator[Mapping[str, Any]]:
    """Each training subset (a mapping with `per_class`) of a scores record, at any depth."""
    if isinstance(node, Mapping):
        if "per_class" in node:
            yield node
            return
        for sub in node.values():
            yield from _subsets(sub)


def draws_of_record(record: Mapping[str, Any], seeds: Iterable[int]) -> frozenset[DrawId]:
    """Every draw a study of space record `record` (its `data` and `scores`) reads on trial seeds `seeds`."""
    base = dict(record.get("data") or {})
    out = set()
    for sub in list(_subsets(record.get("scores"))) or [{}]:
        other = sub.get("dataset")
        data = dict(other) if isinstance(other, Mapping) else base
        out |= {draw_of(data, s, sub.get("classes")) for s in seeds}
    return frozenset(out)


def draws_of_space(space: Space) -> frozenset[DrawId]:
    """Every draw a study of `space` reads: its seeds and its re-evaluation's fresh seeds."""
    seeds = (*space.study.seeds, *space.study.fresh_seeds)
    return draws_of_record({"data": asdict(space.data), "scores": asdict(space.scores)}, seeds)


def draws_of_summary(summary: Mapping[str, Any]) -> frozenset[DrawId]:
    """Every draw a report's summary.json records its runs read (environment: data, subsets, seeds run)."""
    env = summary.get("environment") or {}
    data = dict(env.get("data") or {})
    seeds = env.get("seeds") or (env.get("study") or {}).get("seeds") or ()
    out = set()
    for sub in env.get("subsets") or [{}]:
        name = sub.get("dataset")  # a transfer target: only its name is recorded, so its sizes are unknown
        spec = data if not name else {"dataset": name, "eval_size": None, "test_size": None}
        out |= {draw_of(spec, s, sub.get("classes")) for s in seeds}
    return frozenset(out)


def parse(label: str) -> DrawId:
    """The DrawId of a `label` (its inverse); ValueError on any other text."""
    head, *rest = label.split(" ")
    name, _, classes = head.partition("[")
    if len(rest) not in (4, 5) or not rest[0].startswith("v") or not rest[1].startswith("t"):
        raise ValueError(f"{label!r}: not a test draw label")

    def size(text: str) -> int | None:
        return None if text == "None" else int(text)

    return DrawId(name, tuple(int(c) for c in classes.rstrip("]").split(",")) if classes else None,
                  size(rest[0][1:]), size(rest[1][1:]), rest[2], int(rest[3].lstrip("d")),
                  int(rest[4][1:]) if len(rest) == 5 else None)  # fmt: skip


def shares(a: DrawId, b: DrawId) -> bool:
    """Whether draws `a` and `b` read some of the same images by construction (subsets.split): the same draw; two
    per_seed draws of one split, draw index and seed (the smaller test size reads a prefix of the larger's sample);
    two shared draws of one split whose positions after validation overlap. Draws that differ otherwise are
    disjoint (shared draws of one split) or independent samples (`chance_overlap`)."""
    if a == b:
        return True
    if (a.dataset, a.classes, a.eval_size, a.sampling) != (b.dataset, b.classes, b.eval_size, b.sampling):
        return False
    if a.sampling == "per_seed":
        return (a.draw, a.seed) == (b.draw, b.seed)
    if a.test_size is None or b.test_size is None:
        return a.test_size == b.test_size and a.draw == b.draw
    return a.draw * a.test_size < (b.draw + 1) * b.test_size and b.draw * b.test_size < (a.draw + 1) * a.test_size


def chance_overlap(a: DrawId, b: DrawId) -> float:
    """Expected share of `a`'s images that draw `b` also reads when they share none by construction (`shares`): 0
    for shared draws of one split, else test_size(b) / the test-split images outside `a`'s validation images
    (independent samples; 1.0 when the sizes are not known)."""
    split = (a.dataset, a.classes, a.eval_size) == (b.dataset, b.classes, b.eval_size)
    if split and a.sampling == b.sampling == "shared":
        return 0.0
    total = TEST_SPLIT.get(a.dataset) if a.classes is None else None
    if total is None or not a.eval_size or not b.test_size or b.dataset != a.dataset:
        return 1.0
    return min(1.0, b.test_size / (total - a.eval_size))
