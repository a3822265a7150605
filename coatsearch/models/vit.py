"""ViT_P / ViT_C: timm VisionTransformer with a patchify stem or the ViT_C convolutional stem."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from timm.layers import HybridEmbed, PatchEmbed, get_act_layer
from timm.models.vision_transformer import VisionTransformer
from torch import nn

from coatsearch.models.stems import build_stem
from coatsearch.vocab.specs import ModelSpec


def build_vit(spec: ModelSpec) -> VisionTransformer:
    """timm VisionTransformer for a one-T-stage spec (class token, learned absolute positions, token pool).

    A patch stem is timm's own patch embedding (ViT_P); any other stem is HybridEmbed's backbone, with
    patch_size=1 and proj=False so its output map is the tokens (ViT_C).
    """
    stage, b = spec.stages[0], spec.block
    embed_layer: Callable[..., nn.Module] = PatchEmbed  # timm's default: the ViT_P patchify stem
    patch_size = spec.stem.patch_size if spec.stem.kind == "patch" else 1
    if patch_size == 1:
        backbone = build_stem(spec.stem, spec.in_chans, stage.width, b.conv_norm, b.act)
        embed_layer = partial(HybridEmbed, backbone=backbone, proj=False)
    return VisionTransformer(
        img_size=spec.image_size,
        patch_size=patch_size,
        in_chans=spec.in_chans,
        num_classes=spec.num_classes,
        global_pool="token",
        class_token=True,
        embed_dim=stage.width,
        depth=stage.depth,
        num_heads=stage.width // b.head_size,
        mlp_ratio=b.mlp_ratio,
        drop_path_rate=b.drop_path,
        act_layer=get_act_layer(b.act),
        embed_layer=embed_layer,
    )
