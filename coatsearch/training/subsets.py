"""Subsets of a loaded pool: seeded per-class subsets, the balanced eval set, validation/test splits, the probe.

Every selection is an index selection on the pool's tensors (training.data) that carries the pool ids of its
images along, so `fingerprint` names exactly which images a run read. Each class draws from its own generator,
so subsets of growing size are nested and the validation images never meet the test images.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, replace

import torch

from coatsearch.errors import UserError
from coatsearch.training.data import TensorData
from coatsearch.vocab.specs import DataSpec

EVAL_SEED = 0  # the one draw of a study's eval set: fixed, never the trial seed, so every run sees the same images
PROBE_MAX = 2000  # images in the fixed probe of a training subset that step-level curves measure


def _labels_of(data: TensorData, classes: tuple[int, ...] | None) -> tuple[int, ...]:
    """Original class ids to keep (validated), in output label order."""
    if classes is None:
        return data.classes
    classes = tuple(classes)
    missing = [c for c in classes if c not in data.classes]
    if missing or len(set(classes)) != len(classes):
        raise UserError(f"classes {classes}: need distinct ids among {data.classes}; bad: {missing}")
    return classes


def _every(data: TensorData, keep: tuple[int, ...]) -> dict[int, int]:
    """Counts that take every image of each class in `keep` (original ids)."""
    counts = torch.bincount(data.y, minlength=data.num_classes)
    return {c: int(counts[data.classes.index(c)]) for c in keep}


def _class_gen(seed: int, c: int) -> torch.Generator:
    """The generator of class c's permutation under `seed` (`_select`, `split`)."""
    return torch.Generator().manual_seed((seed * 1_000_003 + c) % 2**63)


def _select(
    data: TensorData, counts: dict[int, int], seed: int, what: str, start: dict[int, int] | None = None
) -> TensorData:
    """Keep counts[c] images of each original class c (seeded, nested in the count) and relabel 0..k-1.

    Each class draws from its own generator (seed, class id), so the images picked for n per class are a
    prefix of those picked for a larger n: subsets of growing size are nested. `start[c]`: skip that many of
    class c's permutation first (the test images after the validation prefix, `split`).
    """
    keep, labels, short = [], [], []
    for new, c in enumerate(counts):
        idx = (data.y == data.classes.index(c)).nonzero().flatten()
        gen = _class_gen(seed, c)
        lo = (start or {}).get(c, 0)
        take = max(0, min(counts[c], len(idx) - lo))
        if take < counts[c]:
            short.append(f"class {c}: {take}/{counts[c]}")
        keep.append(idx[torch.randperm(len(idx), generator=gen)[lo : lo + take]])
        labels.append(torch.full((take,), new, dtype=torch.int64))
    if short:
        warnings.warn(f"{what}: fewer images than asked, took all there are ({', '.join(short)})", stacklevel=3)
    idx, y = torch.cat(keep), torch.cat(labels)
    order = idx.argsort()  # keep the pool's order (classes interleaved as in the source)
    return _take(data, idx[order], y=y[order], classes=tuple(counts))


def _take(
    data: TensorData, idx: torch.Tensor, y: torch.Tensor | None = None, classes: tuple[int, ...] | None = None
) -> TensorData:
    """The images `idx` of `data` with their pool ids; labels and classes as given, else `data`'s."""
    ids = idx if data.ids is None else data.ids[idx]
    y = data.y[idx] if y is None else y
    return replace(data, x=data.x[idx], y=y, classes=classes or data.classes, ids=ids)


def image_ids(data: TensorData) -> torch.Tensor:
    """Index in the loaded pool of each image of `data` (0..N-1 for a pool itself)."""
    return torch.arange(len(data)) if data.ids is None else data.ids


def fingerprint(data: TensorData) -> str:
    """A short hash of which pool images `data` holds, in order, and its class ids: equal iff the same data."""
    h = hashlib.sha1(image_ids(data).to(torch.int64).numpy().tobytes())
    h.update(repr(data.classes).encode())
    return h.hexdigest()[:12]


def subset(data: TensorData, per_class: int | None, classes: tuple[int, ...] | None, seed: int) -> TensorData:
    """`per_class` images of each of `classes` (original ids; None = all), relabelled 0..k-1 in that order.

    per_class None takes every image of each class (the whole split when classes is None too). A class with
    fewer images contributes all it has (with a warning) rather than failing, so one space file works on
    datasets of different sizes. Same seed, same images.
    """
    keep = _labels_of(data, classes)
    if per_class is None:
        return _select(data, _every(data, keep), seed, "subset")
    if per_class < 1:
        raise UserError(f"per_class must be >= 1, got {per_class}")
    return _select(data, dict.fromkeys(keep, per_class), seed, "subset")


def eval_subset(test: TensorData, size: int, classes: tuple[int, ...] | None, seed: int = EVAL_SEED) -> TensorData:
    """A balanced `size`-image evaluation set from `classes` (size <= 0 = all), relabelled like `subset`.

    Each class gets size // k images, the first size % k classes one more; classes with too few images
    contribute all they have. Leave `seed` at EVAL_SEED: one eval set per study, the same images for every
    candidate and trial seed, so results pair by image.
    """
    keep = _labels_of(test, classes)
    if size <= 0:
        return _select(test, _every(test, keep), seed, "eval_subset")
    return _select(test, _balanced(size, keep), seed, "eval_subset")


def _balanced(size: int, keep: tuple[int, ...]) -> dict[int, int]:
    """`size` images over the classes `keep`: size // k each, the first size % k one more."""
    base, extra = divmod(size, len(keep))
    return {c: base + (i < extra) for i, c in enumerate(keep)}


@dataclass(frozen=True)
class SplitPlan:
    """Per original class: validation images, test images per draw, and where the asked test draw starts."""

    validation: dict[int, int]
    test: dict[int, int]
    start: dict[int, int]  # validation + test_draw x test: the draw's first position in the class's permutation
    draw: int
    per_seed: bool = False  # test images sampled per trial seed from the positions after validation (`split`)


def split_plan(test: TensorData, spec: DataSpec, classes: tuple[int, ...] | None, where: str = "data") -> SplitPlan:
    """How the test pool splits into validation and test images for `classes` (None = all); one-line UserError
    naming `where`.test_size when the asked test draw does not fit.

    Validation: eval_size images, exactly `eval_subset`'s draw (eval_size 0: half of each class, rounded down).
    Test: test_size images (None: as many as validation; with eval_size 0 the rest of each class), draw k at
    positions [v + k t, v + (k + 1) t) of each class's permutation, so validation and every draw are disjoint.
    """
    keep = _labels_of(test, classes)
    have = _every(test, keep)
    if spec.eval_size <= 0:
        val = {c: have[c] // 2 for c in keep}
        per = {c: have[c] - val[c] for c in keep} if spec.test_size is None else _balanced(spec.test_size, keep)
    else:
        val = _balanced(spec.eval_size, keep)
        per = _balanced(spec.test_size or spec.eval_size, keep)
    if spec.test_sampling == "per_seed":  # every seed samples from the pool outside validation: one draw's room
        start = {c: val[c] for c in keep}
        if any(start[c] + per[c] > have[c] for c in keep):
            left = sum(max(0, have[c] - val[c]) for c in keep)
            raise UserError(
                f"{where}.test_size: {sum(per.values())} test images asked per seed, {left} left after the "
                f"validation images (allowed: eval_size + test_size within the {sum(have.values())} test-split "
                f"images of these {len(keep)} classes, balanced per class)"
            )
        return SplitPlan(val, per, start, spec.test_draw, per_seed=True)
    start = {c: val[c] + spec.test_draw * per[c] for c in keep}
    if any(start[c] + per[c] > have[c] for c in keep):
        left = sum(max(0, have[c] - start[c]) for c in keep)
        used = sum(min(val[c], have[c]) for c in keep)
        raise UserError(
            f"{where}.test_size: {sum(per.values())} test images asked for draw {spec.test_draw}, {left} left after "
            f"{used} validation images and {spec.test_draw} earlier draw(s) (allowed: eval_size + test_size x "
            f"(test_draw + 1) within the {sum(have.values())} test-split images of these {len(keep)} classes, "
            f"balanced per class)"
        )
    return SplitPlan(val, per, start, spec.test_draw)


def split(
    test: TensorData, spec: DataSpec, classes: tuple[int, ...] | None, where: str = "data", seed: int = 0
) -> tuple[TensorData, TensorData]:
    """(validation images, test images) of the test pool for `classes`, relabelled like `subset` (`split_plan`).

    Both come from the same per-class permutations (seed EVAL_SEED): validation is the prefix, so it never
    shares an image with the test images and equals the study's old eval set. Shared test sampling: the test
    draw is the slice after it, the same for every trial seed. Per-seed (`DataSpec.test_sampling`): trial seed
    `seed` samples its test images from everything after the prefix (generator seed, draw, class), so every
    candidate of a seed reads the same images and each seed reads its own.
    """
    plan = split_plan(test, spec, classes, where)
    validation = _select(test, plan.validation, EVAL_SEED, "validation images")
    if not plan.per_seed:
        return validation, _select(test, plan.test, EVAL_SEED, "test images", plan.start)
    keep = []
    for c in plan.test:
        idx = (test.y == test.classes.index(c)).nonzero().flatten()
        rest = idx[torch.randperm(len(idx), generator=_class_gen(EVAL_SEED, c))[plan.start[c] :]]
        gen = torch.Generator().manual_seed((((seed + 1) * 1_000_003 + c) * 1_009 + plan.draw) % 2**63)
        keep.append(rest[torch.randperm(len(rest), generator=gen)[: plan.test[c]]])
    idx = torch.cat(keep)
    y = torch.cat([torch.full((n,), i, dtype=torch.int64) for i, n in enumerate(plan.test.values())])
    order = idx.argsort()
    return validation, _take(test, idx[order], y=y[order], classes=tuple(plan.test))


def probe_index(y: torch.Tensor, size: int = PROBE_MAX) -> torch.Tensor:
    """Indices of the fixed probe of a training subset with labels `y`: all images when at most `size`, else
    `size` images balanced over labels, evenly spaced within each label (deterministic, no seed)."""
    if size < 1:
        raise UserError(f"probe size must be >= 1, got {size}")
    if len(y) <= size:
        return torch.arange(len(y))
    labels = y.unique().tolist()
    base, extra = divmod(size, len(labels))
    keep = []
    for i, label in enumerate(labels):
        idx = (y == label).nonzero().flatten()
        take = min(len(idx), base + (i < extra))
        keep.append(idx[torch.linspace(0, len(idx) - 1, take).round().long()] if take else idx[:0])
    return torch.cat(keep).sort().values


def probe(train: TensorData, size: int = PROBE_MAX) -> TensorData:
    """The fixed probe of a training subset (see `probe_index`), labels and pool ids carried along."""
    return _take(train, probe_index(train.y, size))
