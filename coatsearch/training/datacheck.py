"""The data must match the space: enough classes, as many as `input.classes`, score class ids inside the dataset,
and room in each test split for the validation images and the asked test draw."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import fields, is_dataclass

from coatsearch.errors import UserError
from coatsearch.training.data import TensorData, load
from coatsearch.training.subsets import split_plan
from coatsearch.vocab.specs import DataSpec

Subset = tuple[str, DataSpec | None, tuple[int, ...] | None]  # (field path, its own dataset, its class ids)


def _score_classes(scores: object) -> list[Subset]:
    """(field path, its own dataset or None, its class ids or None) for every subset a `ScoresSpec` trains on.

    A subset is any section spec with a `classes` field (and maybe a `dataset`), found at any depth.
    """
    return list(_subsets(scores, ""))


def _subsets(node: object, path: str) -> Iterator[Subset]:
    if not is_dataclass(node):
        return
    values = {f.name: getattr(node, f.name) for f in fields(node)}
    if "classes" in values:
        yield path, values.get("dataset"), values["classes"]
    for name, value in values.items():
        yield from _subsets(value, f"{path}.{name}" if path else name)


def check_matches(
    classes: int,
    spec: DataSpec,
    image_size: int,
    channels: int,
    scores: Iterable[object] = (),  # ScoresSpec instances (coatsearch.scores)
    source: str = "space",
) -> None:
    """Load the space's datasets and check them against it: >= 2 classes, `classes` of them, score ids inside.

    Raises a one-line UserError naming both numbers (or the ids) on the first mismatch.
    """
    pool, test = load(spec, image_size, channels)
    if pool.num_classes < 2:
        raise UserError(f"{source}: dataset {_name(spec)} has {pool.num_classes} class; a classifier needs >= 2")
    if pool.num_classes != classes:
        raise UserError(
            f"{source}: field 'input.classes': the space says {classes} classes, dataset {_name(spec)} has "
            f"{pool.num_classes}"
        )
    split_plan(test, spec, None, f"{source}: data")  # the validation and test images fit the test split
    for sc in scores:
        for name, own, ids in _score_classes(sc):
            data, held = load(own, image_size, channels) if own is not None else (pool, test)
            _check_ids(f"{source}: field 'scores.{name}.classes'", ids, data, own or spec)
            where = f"{source}: scores.{name}.dataset" if own is not None else f"{source}: data"
            split_plan(held, own or spec, ids, where)  # each subset's classes split as its runs will


def _check_ids(where: str, ids: tuple[int, ...] | None, data: TensorData, spec: DataSpec) -> None:
    """Class ids of one score: at least 2 of them, all in the dataset."""
    if data.num_classes < 2:
        raise UserError(f"{where}: dataset {_name(spec)} has {data.num_classes} class; a classifier needs >= 2")
    if ids is None:
        return
    outside = sorted({c for c in ids if c not in data.classes})
    if outside:
        raise UserError(
            f"{where}: class ids {outside} are outside dataset {_name(spec)}, which has {data.num_classes} "
            f"classes (ids 0..{data.num_classes - 1})"
        )
    if len(set(ids)) < 2:
        raise UserError(f"{where}: {len(set(ids))} distinct class id(s) {list(ids)}; a classifier needs >= 2")


def _name(spec: DataSpec) -> str:
    return spec.dataset + (f" ({spec.root})" if spec.root else "")
