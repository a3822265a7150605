"""The dataset registry: what `data.dataset` may name, and how training.data loads and augments it.

No torch here: a loader is named as "module:function" and imported on first use (training.data reads it), so
spec code stays light. A new dataset is one entry in DATASETS; the spec check and the loader read it when they run.
"""

from __future__ import annotations

from dataclasses import dataclass

from coatsearch.vocab.registry import Registry


@dataclass(frozen=True)
class DatasetKind:
    """One dataset: its loader and how its images may be handled."""

    text: str  # what it is, for docs and errors
    # "module:function": load(name, root, size) -> (train x, train y, test x, test y), uint8 (N, C, H, W) images
    # and int64 labels 0..classes-1; `size` is the space's image size for a `sized` dataset, else None
    loader: str
    hflip: bool = True  # a horizontal flip keeps the label (False for digits)
    sized: bool = False  # decoded at the space's image size (files of any size), not at a native size


DATASETS: Registry[DatasetKind] = Registry(
    "dataset",
    {
        "fashion_mnist": DatasetKind("Fashion-MNIST, 28x28 gray, 10 classes", "coatsearch.training.data:load_fashion"),
        "mnist": DatasetKind("MNIST digits, 28x28 gray", "coatsearch.training.data:_load_torchvision", hflip=False),
        "cifar10": DatasetKind("CIFAR-10, 32x32 RGB", "coatsearch.training.data:_load_torchvision"),
        "cifar100": DatasetKind("CIFAR-100, 32x32 RGB", "coatsearch.training.data:_load_torchvision"),
        "imagefolder": DatasetKind(
            "root/<class>/<image> files (train/ and val/ or test/, else a split)",
            "coatsearch.training.data:_load_imagefolder",
            sized=True,
        ),
        "synthetic": DatasetKind(
            "generated shapes, 10 classes, 2000/500 images", "coatsearch.training.data:_load_synthetic"
        ),
    },
)


def check_dataset(name: str) -> str:
    """`name` when it is a registered dataset (the spec's check of `data.dataset`), else ValueError."""
    DATASETS.entry(name)
    return name
