"""ViT_P / ViT_C: timm VisionTransformer with a patchify stem or the ViT_C convolutional stem."""

from __future__ import annotations

from functools import partial

from timm.layers import HybridEmbed, get_act_layer
from timm.models.vision_transformer import VisionTransformer

from coatsearch.models.stems import VitcStem
from coatsearch.spec import ATTN, ModelSpec


def build_vit(spec: ModelSpec) -> VisionTransformer:
    """timm VisionTransformer for a one-T-stage spec (class token, learned absolute positions, token pool)."""
    if len(spec.stages) != 1 or spec.stages[0].kind != ATTN:
        raise ValueError(f"arch vit takes exactly one T stage, got layout {spec.layout!r}")
    stage, b = spec.stages[0], spec.block
    if stage.width % b.head_size:
        raise ValueError(f"T width {stage.width} is not a multiple of head size {b.head_size}")
    if spec.stem.kind == "patch" and spec.image_size % spec.stem.patch_size:
        raise ValueError(f"image size {spec.image_size} is not a multiple of patch size {spec.stem.patch_size}")
    kwargs = {}
    if spec.stem.kind == "patch":
        patch_size = spec.stem.patch_size
    elif spec.stem.kind == "vitc":
        # The conv stem is HybridEmbed's backbone; patch_size=1 and proj=False keep its output as the tokens.
        backbone = VitcStem(spec.in_chans, tuple(spec.stem.channels), tuple(spec.stem.strides), stage.width)
        kwargs["embed_layer"] = partial(HybridEmbed, backbone=backbone, proj=False)
        patch_size = 1
    else:
        raise ValueError(f"arch vit takes stem kind patch or vitc, not {spec.stem.kind!r}")
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
        **kwargs,
    )
