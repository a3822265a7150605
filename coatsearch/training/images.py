"""ImageFolder files, checked before they are trusted: the tree, the split and each image's pixel range.

- The tree is walked without following links: a folder link (`a/up -> ..`) would make one class's images
  another's, or loop forever; it is refused in one line, and so is a FIFO, device or socket (it would block).
- An 80/20 split that leaves a class without training or evaluation images is refused, naming the class and
  counts (a train/ + val/ layout may leave classes out of val/, as before).
- Images decode to 8-bit RGB on their true range: 16-bit images are scaled by 255/65535, float images
  must lie in 0..1 (else refused); a decompression bomb (more pixels than PIL's MAX_IMAGE_PIXELS) is an error.
"""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:  # PIL is imported where images are opened
    from PIL import Image

from coatsearch.errors import UserError


def check_tree(root: Path) -> None:
    """Refuse any folder link or special file under `root` (walked without following links) in one line."""
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()  # a deterministic walk: the first offending path is always the same
        for name in sorted(dirs + files):
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode) and path.is_dir():
                raise UserError(
                    f"{path}: is a link to a folder ({os.readlink(path)}); coatsearch does not follow folder links "
                    "in an ImageFolder (one class could get another's images, or the walk could loop): copy the files"
                )
            if not (stat.S_ISLNK(mode) or stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise UserError(f"{path}: is not a regular file (a FIFO, device or socket); remove it")


def check_split(root: Path, classes: list[str], train: list, test: list) -> None:
    """Every class needs at least one training and one evaluation image; a one-line UserError naming it."""
    for label, name in enumerate(classes):
        n_train, n_test = sum(t == label for _, t in train), sum(t == label for _, t in test)
        if n_train < 1 or n_test < 1:
            raise UserError(
                f"imagefolder {root}: class '{name}' has {n_train} training and {n_test} evaluation image(s) "
                "after the split; each class needs at least 1 of each (at least 3 images for the 80/20 split)"
            )


def _pixels(im: Image.Image) -> np.ndarray:
    """An opened PIL image as uint8 RGB (H, W, 3) on its true range; a ValueError for unsupported ranges."""
    mode = im.mode
    if mode.startswith("I;16") or mode == "I":
        a = np.asarray(im, dtype=np.float64)
        if a.min() < 0 or a.max() > 65535:
            raise ValueError(f"{mode} image with values {a.min():.0f}..{a.max():.0f}, outside 0..65535")
        return np.repeat((a * 255 / 65535).round().astype(np.uint8)[..., None], 3, axis=2)
    if mode == "F":
        a = np.asarray(im, dtype=np.float64)
        if not np.isfinite(a).all():
            raise ValueError("float image with non-finite values (NaN or infinity)")
        if a.min() < 0 or a.max() > 1:
            raise ValueError(f"float image with values {a.min():.3g}..{a.max():.3g}, expected 0..1")
        return np.repeat((a * 255).round().astype(np.uint8)[..., None], 3, axis=2)
    return np.asarray(im.convert("RGB"))


def decode(paths: list[str], size: int) -> torch.Tensor:
    """Decode image files as RGB, resized to size x size (bilinear, antialiased), into uint8 (N, 3, S, S)."""
    from PIL import Image

    out = torch.empty((len(paths), 3, size, size), dtype=torch.uint8)
    for i, p in enumerate(paths):  # decoding is per file by nature; runs once per process (cached)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(p) as im:
                    rgb = Image.fromarray(_pixels(im)).resize((size, size), Image.Resampling.BILINEAR)
                    out[i] = torch.from_numpy(np.array(rgb)).permute(2, 0, 1)
        except (Image.DecompressionBombWarning, Image.DecompressionBombError) as err:
            raise UserError(f"{p}: refused as a decompression bomb ({err})") from None
        except (OSError, ValueError, SyntaxError) as err:  # corrupt, truncated, unsupported range
            raise UserError(f"{p}: cannot decode this image ({type(err).__name__}: {err})") from None
    return out
