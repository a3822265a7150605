"""What the training and curve tests share: the CPU device, a tiny plain convnet, and one intra-op thread."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn

CPU = torch.device("cpu")


def tiny_net(seed: int = 0) -> nn.Module:
    """A 2-layer convnet for 1x32x32 inputs, 10 classes."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    )


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """One intra-op thread: tiny nets gain nothing from more, and on a busy shared CPU two spin-waiting
    OpenMP threads can run these tests ten times slower. A module that imports it gets it for every test."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
