"""Datasets as in-memory tensors: Fashion-MNIST, MNIST, CIFAR, ImageFolder, synthetic; subsets and class splits.

Every dataset is decoded once per process into a uint8 tensor (N, C, H, W) (`_raw`, cached), then shaped to
the requested image size and channel count and normalized with the train pool's per-channel mean/std (`load`,
cached). Subsets are index selections on those tensors; no per-sample Python runs after decoding.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import math
import os
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

from coatsearch.errors import UserError
from coatsearch.vocab import datasets, kinds
from coatsearch.vocab.specs import DataSpec

EVAL_SEED = 0  # the one draw of a study's eval set: fixed, never the trial seed, so every run sees the same images
PROBE_MAX = 2000  # images in the fixed probe of a training subset that step-level curves measure
PAD_MAX = 4  # targets at most this many pixels larger than the native size are zero-padded, not resized
LUMA = (0.299, 0.587, 0.114)  # ITU-R BT.601 weights for RGB -> gray
FASHION_SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")  # Debian package dataset-fashion-mnist
FASHION_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
IDX_DTYPES: dict[int, npt.DTypeLike] = {
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
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in IDX_DTYPES:
        raise UserError(f"{path}: not an IDX file (bad magic number)")
    ndim = raw[3]
    dims = tuple(int(d) for d in np.frombuffer(raw, ">i4", count=ndim, offset=4))
    dtype = np.dtype(IDX_DTYPES[raw[2]])
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
        return datasets.dataset_kind(dataset)
    except ValueError as err:
        raise UserError(str(err)) from None


def _shape(x: torch.Tensor, size: int, channels: int, chunk: int = 4096) -> torch.Tensor:
    """uint8 (N, C, H, W) -> float32 (N, channels, size, size) in [0, 1]: pad or resize, then convert."""
    n, c, h, w = x.shape
    out = torch.empty((n, channels, size, size), dtype=torch.float32)
    pad = 0 <= size - h <= PAD_MAX and size - h == size - w
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

    Images up to PAD_MAX pixels smaller than image_size (28 -> 32) are zero-padded, centred; others are
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
    hflip = kind.hflip
    return TensorData(xtr, ytr, classes, hflip), TensorData(xte, yte, classes, hflip)


# ---------------------------------------------------------------------------------------------- subsets


def _labels_of(data: TensorData, classes: tuple[int, ...] | None) -> tuple[int, ...]:
    """Original class ids to keep (validated), in output label order."""
    if classes is None:
        return data.classes
    classes = tuple(classes)
    missing = [c for c in classes if c not in data.classes]
    if missing or len(set(classes)) != len(classes):
        raise UserError(f"classes {classes}: need distinct ids among {data.classes}; bad: {missing}")
    return classes


def _every(data: TensorData, keep: tuple[int, ...]) -> dict[int, int]:
    """Counts that take every image of each class in `keep` (original ids)."""
    counts = torch.bincount(data.y, minlength=data.num_classes)
    return {c: int(counts[data.classes.index(c)]) for c in keep}


def _class_gen(seed: int, c: int) -> torch.Generator:
    """The generator of class c's permutation under `seed` (`_select`, `split`)."""
    return torch.Generator().manual_seed((seed * 1_000_003 + c) % 2**63)


def _select(
    data: TensorData, counts: dict[int, int], seed: int, what: str, start: dict[int, int] | None = None
) -> TensorData:
    """Keep counts[c] images of each original class c (seeded, nested in the count) and relabel 0..k-1.

    Each class draws from its own generator (seed, class id), so the images picked for n per class are a
    prefix of those picked for a larger n: subsets of growing size are nested. `start[c]`: skip that many of
    class c's permutation first (the test images after the validation prefix, `split`).
    """
    keep, labels, short = [], [], []
    for new, c in enumerate(counts):
        idx = (data.y == data.classes.index(c)).nonzero().flatten()
        gen = _class_gen(seed, c)
        lo = (start or {}).get(c, 0)
        take = max(0, min(counts[c], len(idx) - lo))
        if take < counts[c]:
            short.append(f"class {c}: {take}/{counts[c]}")
        keep.append(idx[torch.randperm(len(idx), generator=gen)[lo : lo + take]])
        labels.append(torch.full((take,), new, dtype=torch.int64))
    if short:
        warnings.warn(f"{what}: fewer images than asked, took all there are ({', '.join(short)})", stacklevel=3)
    idx, y = torch.cat(keep), torch.cat(labels)
    order = idx.argsort()  # keep the pool's order (classes interleaved as in the source)
    return _take(data, idx[order], y=y[order], classes=tuple(counts))


def _take(
    data: TensorData, idx: torch.Tensor, y: torch.Tensor | None = None, classes: tuple[int, ...] | None = None
) -> TensorData:
    """The images `idx` of `data` with their pool ids; labels and classes as given, else `data`'s."""
    ids = idx if data.ids is None else data.ids[idx]
    y = data.y[idx] if y is None else y
    return replace(data, x=data.x[idx], y=y, classes=classes or data.classes, ids=ids)


def image_ids(data: TensorData) -> torch.Tensor:
    """Index in the loaded pool of each image of `data` (0..N-1 for a pool itself)."""
    return torch.arange(len(data)) if data.ids is None else data.ids


def fingerprint(data: TensorData) -> str:
    """A short hash of which pool images `data` holds, in order, and its class ids: equal iff the same data."""
    h = hashlib.sha1(image_ids(data).to(torch.int64).numpy().tobytes())
    h.update(repr(data.classes).encode())
    return h.hexdigest()[:12]


def subset(data: TensorData, per_class: int | None, classes: tuple[int, ...] | None, seed: int) -> TensorData:
    """`per_class` images of each of `classes` (original ids; None = all), relabelled 0..k-1 in that order.

    per_class None takes every image of each class (the whole split when classes is None too). A class with
    fewer images contributes all it has (with a warning) rather than failing, so one space file works on
    datasets of different sizes. Same seed, same images.
    """
    keep = _labels_of(data, classes)
    if per_class is None:
        return _select(data, _every(data, keep), seed, "subset")
    if per_class < 1:
        raise UserError(f"per_class must be >= 1, got {per_class}")
    return _select(data, dict.fromkeys(keep, per_class), seed, "subset")


def eval_subset(test: TensorData, size: int, classes: tuple[int, ...] | None, seed: int = EVAL_SEED) -> TensorData:
    """A balanced `size`-image evaluation set from `classes` (size <= 0 = all), relabelled like `subset`.

    Each class gets size // k images, the first size % k classes one more; classes with too few images
    contribute all they have. Leave `seed` at EVAL_SEED: one eval set per study, the same images for every
    candidate and trial seed, so results pair by image.
    """
    keep = _labels_of(test, classes)
    if size <= 0:
        return _select(test, _every(test, keep), seed, "eval_subset")
    return _select(test, _balanced(size, keep), seed, "eval_subset")


def _balanced(size: int, keep: tuple[int, ...]) -> dict[int, int]:
    """`size` images over the classes `keep`: size // k each, the first size % k one more."""
    base, extra = divmod(size, len(keep))
    return {c: base + (i < extra) for i, c in enumerate(keep)}


@dataclass(frozen=True)
class SplitPlan:
    """Per original class: validation images, test images per draw, and where the asked test draw starts."""

    validation: dict[int, int]
    test: dict[int, int]
    start: dict[int, int]  # validation + test_draw x test: the draw's first position in the class's permutation
    draw: int
    per_seed: bool = False  # test images sampled per trial seed from the positions after validation (`split`)


def split_plan(test: TensorData, spec: DataSpec, classes: tuple[int, ...] | None, where: str = "data") -> SplitPlan:
    """How the test pool splits into validation and test images for `classes` (None = all); one-line UserError
    naming `where`.test_size when the asked test draw does not fit.

    Validation: eval_size images, exactly `eval_subset`'s draw (eval_size 0: half of each class, rounded down).
    Test: test_size images (None: as many as validation; with eval_size 0 the rest of each class), draw k at
    positions [v + k t, v + (k + 1) t) of each class's permutation, so validation and every draw are disjoint.
    """
    keep = _labels_of(test, classes)
    have = _every(test, keep)
    if spec.eval_size <= 0:
        val = {c: have[c] // 2 for c in keep}
        per = {c: have[c] - val[c] for c in keep} if spec.test_size is None else _balanced(spec.test_size, keep)
    else:
        val = _balanced(spec.eval_size, keep)
        per = _balanced(spec.test_size or spec.eval_size, keep)
    if spec.test_sampling == "per_seed":  # every seed samples from the pool outside validation: one draw's room
        start = {c: val[c] for c in keep}
        if any(start[c] + per[c] > have[c] for c in keep):
            left = sum(max(0, have[c] - val[c]) for c in keep)
            raise UserError(
                f"{where}.test_size: {sum(per.values())} test images asked per seed, {left} left after the "
                f"validation images (allowed: eval_size + test_size within the {sum(have.values())} test-split "
                f"images of these {len(keep)} classes, balanced per class)"
            )
        return SplitPlan(val, per, start, spec.test_draw, per_seed=True)
    start = {c: val[c] + spec.test_draw * per[c] for c in keep}
    if any(start[c] + per[c] > have[c] for c in keep):
        left = sum(max(0, have[c] - start[c]) for c in keep)
        used = sum(min(val[c], have[c]) for c in keep)
        raise UserError(
            f"{where}.test_size: {sum(per.values())} test images asked for draw {spec.test_draw}, {left} left after "
            f"{used} validation images and {spec.test_draw} earlier draw(s) (allowed: eval_size + test_size x "
            f"(test_draw + 1) within the {sum(have.values())} test-split images of these {len(keep)} classes, "
            f"balanced per class)"
        )
    return SplitPlan(val, per, start, spec.test_draw)


def split(
    test: TensorData, spec: DataSpec, classes: tuple[int, ...] | None, where: str = "data", seed: int = 0
) -> tuple[TensorData, TensorData]:
    """(validation images, test images) of the test pool for `classes`, relabelled like `subset` (`split_plan`).

    Both come from the same per-class permutations (seed EVAL_SEED): validation is the prefix, so it never
    shares an image with the test images and equals the study's old eval set. Shared test sampling: the test
    draw is the slice after it, the same for every trial seed. Per-seed (`DataSpec.test_sampling`): trial seed
    `seed` samples its test images from everything after the prefix (generator seed, draw, class), so every
    candidate of a seed reads the same images and each seed reads its own.
    """
    plan = split_plan(test, spec, classes, where)
    validation = _select(test, plan.validation, EVAL_SEED, "validation images")
    if not plan.per_seed:
        return validation, _select(test, plan.test, EVAL_SEED, "test images", plan.start)
    keep = []
    for c in plan.test:
        idx = (test.y == test.classes.index(c)).nonzero().flatten()
        rest = idx[torch.randperm(len(idx), generator=_class_gen(EVAL_SEED, c))[plan.start[c] :]]
        gen = torch.Generator().manual_seed((((seed + 1) * 1_000_003 + c) * 1_009 + plan.draw) % 2**63)
        keep.append(rest[torch.randperm(len(rest), generator=gen)[: plan.test[c]]])
    idx = torch.cat(keep)
    y = torch.cat([torch.full((n,), i, dtype=torch.int64) for i, n in enumerate(plan.test.values())])
    order = idx.argsort()
    return validation, _take(test, idx[order], y=y[order], classes=tuple(plan.test))


def probe_index(y: torch.Tensor, size: int = PROBE_MAX) -> torch.Tensor:
    """Indices of the fixed probe of a training subset with labels `y`: all images when at most `size`, else
    `size` images balanced over labels, evenly spaced within each label (deterministic, no seed)."""
    if size < 1:
        raise UserError(f"probe size must be >= 1, got {size}")
    if len(y) <= size:
        return torch.arange(len(y))
    labels = y.unique().tolist()
    base, extra = divmod(size, len(labels))
    keep = []
    for i, label in enumerate(labels):
        idx = (y == label).nonzero().flatten()
        take = min(len(idx), base + (i < extra))
        keep.append(idx[torch.linspace(0, len(idx) - 1, take).round().long()] if take else idx[:0])
    return torch.cat(keep).sort().values


def probe(train: TensorData, size: int = PROBE_MAX) -> TensorData:
    """The fixed probe of a training subset (see `probe_index`), labels and pool ids carried along."""
    return _take(train, probe_index(train.y, size))
