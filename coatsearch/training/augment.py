"""Batch augmentation on the device: random shifts, horizontal flips and brightness/contrast jitter per image."""

from __future__ import annotations

import torch
import torch.nn.functional as F

SHIFT_FRACTION = 8  # random shifts move images by up to size // SHIFT_FRACTION pixels
JITTER = 0.2  # per-image brightness/contrast jitter, in normalized units


def augment_batch(x: torch.Tensor, gen: torch.Generator, hflip: bool = True) -> torch.Tensor:
    """Light batch augmentation: random shift (zero pad + crop), horizontal flip, brightness/contrast.

    All images in one gather; the zero padding is the dataset mean once inputs are normalized.
    """
    return augment_apply(x, augment_draws(x.shape, gen, hflip, x.device))


def augment_draws(
    shape: torch.Size | tuple[int, ...], gen: torch.Generator, hflip: bool, device: torch.device,
    out: tuple[torch.Tensor, ...] | None = None,
) -> tuple[torch.Tensor, ...]:  # fmt: skip
    """The random draws of `augment_batch` for a batch of `shape`: (row shift, column shift, flip, scale, shift),
    flip an empty tensor without `hflip`; into the tensors `out` when given (a captured step's static inputs)."""
    b, _, h, _ = shape
    p = max(1, h // SHIFT_FRACTION)
    o = out or (None,) * 5
    dy = torch.randint(0, 2 * p + 1, (b, 1, 1), generator=gen, device=device, out=o[0])
    dx = torch.randint(0, 2 * p + 1, (b, 1, 1), generator=gen, device=device, out=o[1])
    flip = torch.rand((b, 1, 1), generator=gen, device=device, out=o[2]) if hflip else torch.empty(0, device=device)
    scale = torch.rand((b, 1, 1, 1), generator=gen, device=device, out=o[3])
    shift = torch.rand((b, 1, 1, 1), generator=gen, device=device, out=o[4])
    return dy, dx, flip, scale, shift


def augment_apply(x: torch.Tensor, draws: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """`augment_batch` of `x` with the given `augment_draws` (no random generator: it can be captured)."""
    b, c, h, w = x.shape
    p, dev = max(1, h // SHIFT_FRACTION), x.device
    dy, dx, flip, scale, shift = draws
    xp = F.pad(x, (p, p, p, p)).flatten(2)  # (B, C, (H+2p)(W+2p))
    cols = torch.arange(w, device=dev).view(1, 1, w)
    if flip.numel():
        cols = torch.where(flip < 0.5, w - 1 - cols, cols)
    rows = dy + torch.arange(h, device=dev).view(1, h, 1)
    idx = (rows * (w + 2 * p) + dx + cols).flatten(1)  # (B, H*W) into the padded image
    out = xp.gather(2, idx[:, None].expand(b, c, h * w)).view(b, c, h, w)
    return out * (1 + JITTER * (2 * scale - 1)) + JITTER * (2 * shift - 1)
