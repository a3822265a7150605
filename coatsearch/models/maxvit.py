"""Stage kind M: MaxViT multi-axis attention (Tu et al. 2022) from timm's PartitionAttention2d blocks."""

from __future__ import annotations

from dataclasses import replace

import torch
from timm.models.maxxvit import PartitionAttention2d
from torch import nn

from coatsearch.models.coatnet import transformer_cfg
from coatsearch.vocab.kinds import maxvit_partitions
from coatsearch.vocab.specs import BlockSpec


class MaxVitBlock(nn.Module):
    """Window attention then grid attention, each pre-norm attention + FFN with relative-position bias.

    (B, dim, H, W) -> [2x2 pool when strided] -> [1x1 conv when the width changes] -> (B, dim_out, s, s)
    -> block attention inside each window x window tile -> grid attention across tiles (tokens `s / grid`
    apart form one grid x grid group). Unlike timm's MaxxVitBlock there is no MBConv in front: the C stages
    of a layout play that part, so an M stage is comparable with a T stage of the same width.
    """

    def __init__(self, dim: int, dim_out: int, stride: int, side: int, block: BlockSpec, dpr: float):
        super().__init__()
        window, grid = maxvit_partitions(side, block)
        cfg = replace(
            transformer_cfg(block),
            window_size=(window, window),
            grid_size=(grid, grid),
            rel_pos_type="bias" if block.rel_pos else "",
        )
        pool = nn.MaxPool2d if block.pool == "max" else nn.AvgPool2d
        self.down = pool(2, 2) if stride == 2 else nn.Identity()
        self.proj = nn.Conv2d(dim, dim_out, 1) if dim != dim_out else nn.Identity()
        self.window = PartitionAttention2d(dim_out, "block", cfg, drop_path=dpr)
        self.grid = PartitionAttention2d(dim_out, "grid", cfg, drop_path=dpr)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.proj(self.down(x))  # (B, dim_out, s, s)
        return self.grid(self.window(x))


def maxvit_block(dim: int, dim_out: int, stride: int, side: int, block: BlockSpec, dpr: float) -> MaxVitBlock:
    """Registry builder for stage kind "M"."""
    return MaxVitBlock(dim, dim_out, stride, side, block, dpr)
