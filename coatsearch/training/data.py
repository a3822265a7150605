"""Datasets as in-memory tensors: Fashion-MNIST, MNIST, CIFAR, ImageFolder, synthetic.

Every dataset is decoded once per process into a uint8 tensor (N, C, H, W) (`_raw`, cached), then shaped to
the requested image size and channel count and normalized with the train pool's per-channel mean/std (`load`,
cached). Subsets of the loaded pools are index selections on those tensors (training.subsets).
"""

from __future__ import annotations

import functools
import gzip
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

from coatsearch.errors import UserError
from coatsearch.vocab import datasets, kinds
from coatsearch.vocab.specs import DataSpec

_PAD_MAX = 4  # targets at most this many pixels larger than the native size are zero-padded, not resized
LUMA = (0.299, 0.587, 0.114)  # ITU-R BT.601 weights for RGB -> gray
FASHION_SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")  # Debian package dataset-fashion-mnist
FASHION_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
_IDX_DTYPES: dict[int, npt.DTypeLike] = {
    0x08: np.uint8,
    0x09: np.int8,
    0x0B: ">i2",
    0x0C: ">i4",
    0x0D: ">f4",
    0x0E: ">f8",
}  # IDX type byte -> numpy dtype


@dataclass(frozen=True, eq=False)
class TensorData:
    """Images and labels held in memory; `classes[label]` is the original class id of each label."""

    x: torch.Tensor  # (N, C, H, W) float32, normalized (uint8 inside `_raw` only)
    y: torch.Tensor  # (N,) int64 labels 0..len(classes)-1
    classes: tuple[int, ...]  # original class ids, in label order
    hflip: bool = True  # whether a horizontal flip keeps the label (False for digits)
    ids: torch.Tensor | None = None  # (N,) int64 index of each image in the loaded pool; None = the pool itself
    # the per-channel (mean, std) subtracted and divided on [0, 1] pixels (`load`); None where not recorded
    norm: tuple[tuple[float, ...], tuple[float, ...]] | None = None

    def __len__(self) -> int:
        """Number of images."""
        return int(self.y.shape[0])

    @property
    def num_classes(self) -> int:
        """Number of labels."""
        return len(self.classes)


# ---------------------------------------------------------------------------------------------- decoding


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read one IDX file (gzipped or not) into a numpy array of its stored shape and type."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise UserError(f"{path}: not an IDX file (bad magic number)")
    ndim = raw[3]
    dims = tuple(int(d) for d in np.frombuffer(raw, ">i4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    offset = 4 + 4 * ndim
    if len(raw) - offset != math.prod(dims) * dtype.itemsize:
        raise UserError(f"{path}: IDX size does not match its header {dims} (truncated download?)")
    return np.frombuffer(raw, dtype, offset=offset).reshape(dims).astype(dtype.newbyteorder("="))


def _find_idx(folder: Path, stem: str) -> Path | None:
    """The IDX file `stem` in `folder` (or its torchvision FashionMNIST/raw), gzipped or not."""
    for sub in (folder, folder / "FashionMNIST" / "raw"):
        for name in (stem + ".gz", stem):
            if (sub / name).is_file():
                return sub / name
    return None


def fashion_mnist_dirs(root: str | None) -> list[Path]:
    """Folders searched for the Fashion-MNIST IDX files, in order."""
    dirs = [Path(root).expanduser()] if root else []
    if os.environ.get("COATSEARCH_DATA"):
        dirs.append(Path(os.environ["COATSEARCH_DATA"]).expanduser() / "fashion-mnist")
    dirs += [_cache_dir("fashion-mnist"), FASHION_SYSTEM_DIR]
    return dirs


def _cache_dir(name: str) -> Path:
    """Per-user download folder for dataset `name`."""
    return Path("~/.cache/coatsearch").expanduser() / name


def _read_fashion(folder: Path) -> tuple[torch.Tensor, ...] | None:
    """(train x, train y, test x, test y) from `folder` if all four IDX files are there."""
    files = [_find_idx(folder, stem) for split in ("train", "test") for stem in FASHION_FILES[split]]
    if any(f is None for f in files):
        return None
    arrays = [read_idx(f) for f in files if f is not None]
    return tuple(torch.from_numpy(a.astype(np.int64) if a.ndim == 1 else a[:, None]) for a in arrays)


def _download_fashion(dest: Path) -> None:
    """Download Fashion-MNIST into `dest` with torchvision (raises when offline)."""
    from torchvision.datasets import FashionMNIST

    for train in (True, False):
        FashionMNIST(str(dest), train=train, download=True)


def _load_fashion_mnist(root: str | None, size: int | None) -> tuple[torch.Tensor, ...]:
    """Fashion-MNIST from the first folder that has it, else a torchvision download into the cache."""
    dirs = fashion_mnist_dirs(root)
    for folder in dirs:
        found = _read_fashion(folder)
        if found is not None:
            return found
    cache = _cache_dir("fashion-mnist")
    try:
        _download_fashion(cache)
        found = _read_fashion(cache)
    except Exception as err:  # offline, proxy, disk full: all end in the same advice
        found, reason = None, f"{type(err).__name__}: {err}"
    else:
        reason = "the download left no IDX files"
    if found is None:
        looked = ", ".join(str(d) for d in dirs)
        raise UserError(
            f"Fashion-MNIST not found (looked in {looked}) and could not be downloaded ({reason}). "
            f"Get it with `apt-get install dataset-fashion-mnist`, or put the four IDX files "
            f"(train-images-idx3-ubyte.gz, ...) in {cache}, or set the dataset's root to their folder."
        )
    return found


def _load_torchvision(name: str, root: str | None, size: int | None) -> tuple[torch.Tensor, ...]:
    """MNIST / CIFAR-10 / CIFAR-100 through torchvision, downloading into the root when missing."""
    import torchvision.datasets as tvd

    cls = {"mnist": tvd.MNIST, "cifar10": tvd.CIFAR10, "cifar100": tvd.CIFAR100}[name]
    folder = Path(root).expanduser() if root else _cache_dir(name)
    out = []
    for train in (True, False):
        try:
            ds = cls(str(folder), train=train, download=True)
        except Exception as err:
            raise UserError(
                f"{name}: not found in {folder} and could not be downloaded ({type(err).__name__}: {err}). "
                f"Put the torchvision copy of {name} in {folder}, or set the dataset's root to it."
            ) from err
        x = torch.as_tensor(np.asarray(ds.data))
        x = x[:, None] if x.ndim == 3 else x.permute(0, 3, 1, 2)  # (N, H, W[, C]) -> (N, C, H, W)
        out += [x.contiguous(), torch.as_tensor(np.asarray(ds.targets), dtype=torch.int64)]
    return tuple(out)


def _decode_images(paths: list[str], size: int) -> torch.Tensor:
    """Decode image files as uint8 RGB (N, 3, S, S) on their true range (`coatsearch.training.images.decode`)."""
    from coatsearch.training.images import decode

    return decode(paths, size)


def _load_imagefolder(name: str, root: str | None, size: int | None) -> tuple[torch.Tensor, ...]:
    """ImageFolder: root/train + root/(val|test) when present, else a stratified 80/20 split (seed 0)."""
    from torchvision.datasets import ImageFolder

    from coatsearch.training.images import check_split, check_tree

    if size is None:  # load() always passes the space's image size for imagefolder
        raise ValueError("imagefolder decodes at an image size; none was given")
    if not root or not Path(root).expanduser().is_dir():
        raise UserError(f"imagefolder: root {root!r} is not a folder (expected root/<class>/<image> files)")
    base = Path(root).expanduser()
    check_tree(base)  # no folder links (loops, one class's images in another), no FIFOs
    held = next((base / s for s in ("val", "test") if (base / s).is_dir()), None)
    try:
        if (base / "train").is_dir() and held is not None:
            tr, te = ImageFolder(str(base / "train")), ImageFolder(str(held))
            unknown = set(te.classes) - set(tr.classes)
            if unknown:
                raise UserError(f"imagefolder: {held} has classes not in train/: {sorted(unknown)}")
            remap = [tr.class_to_idx[c] for c in te.classes]
            train_s = [(p, t) for p, t in tr.samples]
            test_s = [(p, remap[t]) for p, t in te.samples]
        else:
            tr = ImageFolder(str(base))
            train_s, test_s = _split_samples(tr.samples, 0.8)
            check_split(base, tr.classes, train_s, test_s)  # every class in both parts of the 80/20 split
    except (FileNotFoundError, RuntimeError) as err:  # ImageFolder: no class folders / no images
        raise UserError(f"imagefolder {base}: {err}") from err
    out = []
    for samples in (train_s, test_s):
        out += [_decode_images([p for p, _ in samples], size), torch.tensor([t for _, t in samples])]
    return tuple(out)


def _split_samples(samples: list[tuple[str, int]], frac: float) -> tuple[list, list]:
    """Stratified deterministic split of (path, label) pairs: `frac` of each class to the first part."""
    gen = torch.Generator().manual_seed(0)
    first, second = [], []
    for label in sorted({t for _, t in samples}):
        items = [s for s in samples if s[1] == label]
        order = torch.randperm(len(items), generator=gen).tolist()
        cut = round(frac * len(items))
        first += [items[i] for i in sorted(order[:cut])]
        second += [items[i] for i in sorted(order[cut:])]
    return first, second


# ---------------------------------------------------------------------------------------------- synthetic

SYNTH_SIZE, SYNTH_TRAIN, SYNTH_TEST, SYNTH_CLASSES = 32, 2000, 500, 10


def synthetic_images(n: int, seed: int, size: int = SYNTH_SIZE) -> tuple[torch.Tensor, torch.Tensor]:
    """n noisy gray pattern images, class i % 10: 5 pattern kinds x 2 frequencies, each flip-invariant.

    Kinds: horizontal grating, vertical grating, rings, checkerboard, diagonal cross-hatch; phase, centre,
    frequency (+-10%) and contrast are random, Gaussian noise (sd 0.12) on top. A horizontal flip maps each
    kind to itself, so flip augmentation is label-preserving.
    """
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % SYNTH_CLASSES
    kind, high = y % 5, y // 5
    u = torch.linspace(-1, 1, size).view(1, 1, size)  # x coordinate
    v = u.view(1, size, 1)  # y coordinate

    def rnd(lo: float, hi: float) -> torch.Tensor:
        return (lo + (hi - lo) * torch.rand(n, generator=g)).view(n, 1, 1)

    freq = torch.where(high.view(n, 1, 1) == 1, 2.5, 1.0) * rnd(0.9, 1.1) * (2 * math.pi)
    ph1, ph2 = rnd(0, 2 * math.pi), rnd(0, 2 * math.pi)
    cu, cv = rnd(-0.3, 0.3), rnd(-0.3, 0.3)
    r = ((u - cu) ** 2 + (v - cv) ** 2).sqrt()
    d1, d2 = (u + v) / math.sqrt(2), (u - v) / math.sqrt(2)
    patterns = torch.stack(
        [
            torch.sin(freq * v + ph1).expand(n, size, size),
            torch.sin(freq * u + ph1).expand(n, size, size),
            torch.sin(freq * r + ph1),
            torch.sin(freq * u + ph1) * torch.sin(freq * v + ph2),
            0.5 * (torch.sin(freq * d1 + ph1) + torch.sin(freq * d2 + ph2)),
        ]
    )  # (5, n, S, S)
    img = patterns[kind, torch.arange(n)] * rnd(0.25, 0.4) + 0.5
    img = img + 0.12 * torch.randn(n, size, size, generator=g)
    return (img.clamp(0, 1) * 255).round().to(torch.uint8)[:, None], y


def _load_synthetic(name: str, root: str | None, size: int | None) -> tuple[torch.Tensor, ...]:
    """The synthetic train/test pools (2000/500 images, 10 classes, fixed seeds)."""
    return (*synthetic_images(SYNTH_TRAIN, seed=1), *synthetic_images(SYNTH_TEST, seed=2))


# ---------------------------------------------------------------------------------------------- loading


def load_fashion(name: str, root: str | None, size: int | None) -> tuple[torch.Tensor, ...]:
    """The fashion_mnist entry's loader (vocab.datasets.DATASETS): `_load_fashion_mnist` under the loader's call."""
    return _load_fashion_mnist(root, size)


@functools.lru_cache(maxsize=4)
def _raw(dataset: str, root: str | None, size: int | None) -> tuple[torch.Tensor, ...]:
    """Decoded (train x, train y, test x, test y) as uint8 images and int64 labels (cached per process)."""
    return kinds.load(_kind(dataset).loader)(dataset, root, size)


def _kind(dataset: str) -> datasets.DatasetKind:
    """The registered dataset (vocab.datasets.DATASETS); a one-line UserError names the known ones."""
    try:
        return datasets.DATASETS.entry(dataset)
    except ValueError as err:
        raise UserError(str(err)) from None


def _shape(x: torch.Tensor, size: int, channels: int, chunk: int = 4096) -> torch.Tensor:
    """uint8 (N, C, H, W) -> float32 (N, channels, size, size) in [0, 1]: pad or resize, then convert."""
    n, c, h, w = x.shape
    out = torch.empty((n, channels, size, size), dtype=torch.float32)
    pad = 0 <= size - h <= _PAD_MAX and size - h == size - w
    for i in range(0, n, chunk):
        b = x[i : i + chunk].float().div_(255)
        if pad and size != h:
            lo = (size - h) // 2
            b = F.pad(b, (lo, size - h - lo, lo, size - h - lo))
        elif not pad:
            b = F.interpolate(b, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
        if c == 1 and channels == 3:
            b = b.expand(-1, 3, -1, -1)
        elif c == 3 and channels == 1:
            b = torch.einsum("nchw,c->nhw", b, torch.tensor(LUMA))[:, None]
        out[i : i + chunk] = b
    return out


def load(spec: DataSpec, image_size: int, channels: int) -> tuple[TensorData, TensorData]:
    """(train pool, test pool) as normalized float tensors of shape (N, channels, image_size, image_size).

    Images up to _PAD_MAX pixels smaller than image_size (28 -> 32) are zero-padded, centred; others are
    resized (bilinear, antialiased). 1 -> 3 channels repeats, 3 -> 1 takes BT.601 luminance. Both pools are
    normalized with the train pool's per-channel mean and std. Cached per process by (dataset, root, size,
    channels): treat the tensors as read-only.
    """
    if image_size < 1 or channels not in (1, 3):
        raise UserError(f"need image_size >= 1 and channels 1 or 3, got {image_size} and {channels}")
    if spec.root and Path(spec.root).expanduser().exists() and not Path(spec.root).expanduser().is_dir():
        raise UserError(f"{spec.dataset}: root {spec.root} is a file, not a folder")
    return _shaped(spec.dataset, spec.root, image_size, channels)


@functools.lru_cache(maxsize=4)
def _shaped(dataset: str, root: str | None, image_size: int, channels: int) -> tuple[TensorData, TensorData]:
    """`load`'s cached body (eval_size and other DataSpec fields do not change the pools)."""
    kind = _kind(dataset)
    xtr, ytr, xte, yte = _raw(dataset, root, image_size if kind.sized else None)
    xtr, xte = _shape(xtr, image_size, channels), _shape(xte, image_size, channels)
    std, mean = torch.std_mean(xtr, dim=(0, 2, 3), keepdim=True)
    std = std.clamp_min(1e-6)
    xtr.sub_(mean).div_(std)
    xte.sub_(mean).div_(std)
    classes = tuple(range(int(max(ytr.max(), yte.max())) + 1))
    norm = (tuple(mean.flatten().tolist()), tuple(std.flatten().tolist()))
    return TensorData(xtr, ytr, classes, kind.hflip, norm=norm), TensorData(xte, yte, classes, kind.hflip, norm=norm)
