"""Regime baselines: a linear classifier on pixels and a small plain CNN, never budget-matched.

A layout that trains worse than a linear model on raw pixels is out of the regime the papers describe;
the report uses `baseline-linear` as that floor and shows both baselines beside every candidate.
"""

from __future__ import annotations

import torch
from torch import nn

from coatsearch.vocab.specs import ModelSpec

_CNN_WIDTHS = (16, 32, 64)  # channels of the three 3x3 conv layers; the first two are followed by a 2x2 max pool


class LinearBaseline(nn.Module):
    """Logistic regression on the flattened pixels: (B, C, S, S) -> (B, C·S·S) -> (B, classes)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.head = nn.Linear(spec.in_chans * spec.image_size**2, spec.num_classes)

    def get_classifier(self) -> nn.Module:
        """The classifier (timm convention), re-initialized for fine-tuning."""
        return self.head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(x.flatten(1))  # (B, num_classes)


class SmallCNN(nn.Module):
    """A plain CNN: three conv-BN-ReLU layers (_CNN_WIDTHS), max pools between them, global average pool, linear."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        layers: list[nn.Module] = []
        dim = spec.in_chans
        for i, width in enumerate(_CNN_WIDTHS):
            layers += [nn.Conv2d(dim, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
            if i < len(_CNN_WIDTHS) - 1:
                layers.append(nn.MaxPool2d(2, ceil_mode=True))  # S -> ceil(S/2)
            dim = width
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(dim, spec.num_classes)

    def get_classifier(self) -> nn.Module:
        """The classifier (timm convention), re-initialized for fine-tuning."""
        return self.head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)  # (B, 64, S/4, S/4)
        return self.head(x.mean((2, 3)))  # (B, num_classes)


def build_linear(spec: ModelSpec) -> LinearBaseline:
    """The linear-on-pixels baseline for `spec`'s input and classes."""
    return LinearBaseline(spec)


def build_cnn(spec: ModelSpec) -> SmallCNN:
    """The small plain CNN baseline for `spec`'s input and classes."""
    return SmallCNN(spec)
