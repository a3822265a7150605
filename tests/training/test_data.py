"""Tests for training.data and training.subsets: IDX reading, loading, shaping, subsets, synthetic data, errors."""

from __future__ import annotations

import dataclasses
import gzip
import struct

import numpy as np
import pytest
import torch

from coatsearch.errors import UserError
from coatsearch.training import data, subsets
from coatsearch.vocab.specs import DataSpec

SYSTEM = data.FASHION_SYSTEM_DIR
has_system_copy = pytest.mark.skipif(
    not (SYSTEM / "train-images-idx3-ubyte.gz").is_file(), reason="dataset-fashion-mnist not installed"
)


@pytest.fixture(autouse=True)
def fresh_caches():
    """Each test sees uncached loaders (monkeypatched paths must not hit an earlier result)."""
    data._raw.cache_clear()
    data._shaped.cache_clear()
    yield
    data._raw.cache_clear()
    data._shaped.cache_clear()


def write_idx(path, array: np.ndarray, gz: bool = True) -> None:
    """Write `array` (uint8) as an IDX file."""
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}i", *array.shape)
    (gzip.open if gz else open)(path, "wb").write(header + array.astype(np.uint8).tobytes())


def fake_fashion(folder, n_train: int = 30, n_test: int = 20, gz: bool = True) -> None:
    """A miniature Fashion-MNIST (28x28, labels i % 10) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    ext = ".gz" if gz else ""
    for (img, lab), n in zip(data.FASHION_FILES.values(), (n_train, n_test), strict=True):
        write_idx(folder / (img + ext), rng.integers(0, 256, (n, 28, 28)), gz)
        write_idx(folder / (lab + ext), np.arange(n) % 10, gz)


@has_system_copy
def test_idx_reader_on_debian_fashion_mnist():
    x = data.read_idx(SYSTEM / "train-images-idx3-ubyte.gz")
    y = data.read_idx(SYSTEM / "train-labels-idx1-ubyte.gz")
    xt = data.read_idx(SYSTEM / "t10k-images-idx3-ubyte.gz")
    yt = data.read_idx(SYSTEM / "t10k-labels-idx1-ubyte.gz")
    assert x.shape == (60000, 28, 28) and x.dtype == np.uint8
    assert xt.shape == (10000, 28, 28) and y.shape == (60000,) and yt.shape == (10000,)
    assert set(np.unique(y)) == set(range(10)) and set(np.unique(yt)) == set(range(10))
    assert np.bincount(y).tolist() == [6000] * 10


@has_system_copy
def test_load_fashion_mnist_from_system_copy(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # empty cache: the Debian folder is the one found
    monkeypatch.delenv("COATSEARCH_DATA", raising=False)
    tr, te = data.load(DataSpec("fashion_mnist"), 28, 1)
    assert tr.x.shape == (60000, 1, 28, 28) and te.x.shape == (10000, 1, 28, 28)
    assert tr.x.dtype == torch.float32 and tr.y.dtype == torch.int64
    assert abs(float(tr.x.mean())) < 1e-3 and abs(float(tr.x.std()) - 1) < 1e-3
    assert tr.classes == tuple(range(10)) and tr.hflip


def test_read_idx_plain_and_bad(tmp_path):
    arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    write_idx(tmp_path / "a", arr, gz=False)
    assert (data.read_idx(tmp_path / "a") == arr).all()
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04rest")
    with pytest.raises(UserError, match="not an IDX"):
        data.read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes((tmp_path / "a").read_bytes()[:-3])
    with pytest.raises(UserError, match="truncated"):
        data.read_idx(tmp_path / "short")


@pytest.mark.parametrize("gz", [True, False])
def test_root_is_searched_first_and_shaping(tmp_path, gz):
    fake_fashion(tmp_path / "fm", gz=gz)
    spec = DataSpec("fashion_mnist", root=str(tmp_path / "fm"))
    tr, te = data.load(spec, 28, 1)
    assert len(tr) == 30 and len(te) == 20 and tr.y.tolist()[:3] == [0, 1, 2]
    assert data.load(spec, 28, 1)[0] is tr  # cached per process
    assert data.load(dataclasses.replace(spec, eval_size=7), 28, 1)[0] is tr  # eval_size: same pools
    padded, _ = data.load(spec, 32, 1)  # 28 -> 32: zero border, the centre is the image
    raw = torch.from_numpy(data.read_idx(next((tmp_path / "fm").glob("train-images*")))).float()
    centre = padded.x[:, 0, 2:30, 2:30]
    corr = torch.corrcoef(torch.stack([centre.flatten(), raw.flatten()]))[0, 1]
    assert corr > 0.999 and torch.allclose(padded.x[:, :, 0], padded.x[0, 0, 0, 0])
    small, _ = data.load(spec, 16, 3)  # resized, gray repeated into 3 channels
    assert small.x.shape == (30, 3, 16, 16)
    assert torch.equal(small.x[:, 0], small.x[:, 1]) and torch.equal(small.x[:, 1], small.x[:, 2])


def test_rgb_to_gray_by_luminance():
    rgb = torch.zeros(1, 3, 2, 2, dtype=torch.uint8)
    rgb[0, 1] = 255  # pure green
    gray = data._shape(rgb, 2, 1)
    assert gray.shape == (1, 1, 2, 2) and torch.allclose(gray, torch.full_like(gray, data.LUMA[1]))


def test_missing_fashion_mnist_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setattr(data, "FASHION_SYSTEM_DIR", tmp_path / "nowhere")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("COATSEARCH_DATA", raising=False)

    def offline(dest):
        raise OSError("network unreachable")

    monkeypatch.setattr(data, "_download_fashion", offline)
    with pytest.raises(UserError) as err:
        data.load(DataSpec("fashion_mnist"), 28, 1)
    msg = str(err.value)
    assert "apt-get install dataset-fashion-mnist" in msg and str(tmp_path / ".cache") in msg
    assert "network unreachable" in msg


def test_coatsearch_data_env_is_searched(monkeypatch, tmp_path):
    fake_fashion(tmp_path / "fashion-mnist", n_train=10, n_test=10)
    monkeypatch.setenv("COATSEARCH_DATA", str(tmp_path))
    assert tmp_path / "fashion-mnist" in data.fashion_mnist_dirs(None)[:1]
    assert len(data.load(DataSpec("fashion_mnist"), 28, 1)[0]) == 10


def test_other_missing_datasets_are_user_errors(monkeypatch, tmp_path):
    import torchvision.datasets as tvd

    def offline(*args, **kwargs):
        raise RuntimeError("Dataset not found. You can use download=True to download it")

    monkeypatch.setattr(tvd, "MNIST", offline)
    with pytest.raises(UserError, match="mnist"):
        data.load(DataSpec("mnist", root=str(tmp_path)), 28, 1)
    with pytest.raises(UserError, match="imagefolder"):
        data.load(DataSpec("imagefolder", root=str(tmp_path / "none")), 16, 3)
    with pytest.raises(UserError, match="allowed: fashion_mnist"):
        data.load(DataSpec("imagenet"), 16, 3)
    with pytest.raises(UserError):
        data.load(DataSpec("synthetic"), 16, 2)


def write_images(folder, n: int, color: tuple[int, int, int]) -> None:
    """n small PNGs of one colour."""
    from PIL import Image

    folder.mkdir(parents=True)
    for i in range(n):
        Image.new("RGB", (10 + i, 12), color).save(folder / f"{i}.png")


def test_imagefolder_split_and_train_val(tmp_path):
    write_images(tmp_path / "flat" / "cat", 5, (255, 0, 0))
    write_images(tmp_path / "flat" / "dog", 10, (0, 0, 255))
    tr, te = data.load(DataSpec("imagefolder", root=str(tmp_path / "flat")), 8, 3)
    assert tr.x.shape == (12, 3, 8, 8) and te.x.shape == (3, 3, 8, 8)
    assert torch.bincount(tr.y).tolist() == [4, 8] and torch.bincount(te.y).tolist() == [1, 2]
    assert (tr.x[tr.y == 0, 0] > tr.x[tr.y == 0, 2]).all()  # cats are red, whatever the normalization
    again = data._load_imagefolder("imagefolder", str(tmp_path / "flat"), 8)[0]
    assert torch.equal(again, data._raw("imagefolder", str(tmp_path / "flat"), 8)[0])  # deterministic split
    write_images(tmp_path / "tv" / "train" / "a", 3, (0, 255, 0))
    write_images(tmp_path / "tv" / "train" / "b", 3, (9, 9, 9))
    write_images(tmp_path / "tv" / "val" / "b", 2, (9, 9, 9))
    tr, te = data.load(DataSpec("imagefolder", root=str(tmp_path / "tv")), 8, 1)
    assert len(tr) == 6 and te.y.tolist() == [1, 1] and te.x.shape[1] == 1


def test_synthetic_is_deterministic_and_balanced():
    x1, y1 = data.synthetic_images(100, seed=3)
    x2, y2 = data.synthetic_images(100, seed=3)
    assert torch.equal(x1, x2) and torch.equal(y1, y2) and x1.dtype == torch.uint8
    assert not torch.equal(x1, data.synthetic_images(100, seed=4)[0])
    tr, te = data.load(DataSpec("synthetic"), 32, 1)
    assert tr.x.shape == (2000, 1, 32, 32) and te.x.shape == (500, 1, 32, 32)
    assert torch.bincount(tr.y).tolist() == [200] * 10 and tr.hflip


def pool_index(pool: data.TensorData, part: data.TensorData) -> torch.Tensor:
    """Index in `pool` of each image of `part` (images are distinct)."""
    rows = [(pool.x.flatten(1) == img.flatten()).all(1).nonzero().flatten() for img in part.x]
    assert all(len(r) == 1 for r in rows)
    return torch.cat(rows)


def test_subset_determinism_remapping_and_nesting():
    tr, _ = data.load(DataSpec("synthetic"), 32, 1)
    a = subsets.subset(tr, 20, (7, 2), seed=0)
    b = subsets.subset(tr, 20, (7, 2), seed=0)
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y) and a.classes == (7, 2)
    assert torch.bincount(a.y).tolist() == [20, 20]
    orig = tr.y[pool_index(tr, a)]
    assert torch.equal(orig, torch.tensor(a.classes)[a.y])  # label i is original class classes[i]
    assert not torch.equal(a.x, subsets.subset(tr, 20, (7, 2), seed=1).x)
    small = set(pool_index(tr, subsets.subset(tr, 5, (7, 2), seed=0)).tolist())
    assert small <= set(pool_index(tr, a).tolist())  # nested in the size
    sub_of_sub = subsets.subset(a, 3, (2,), seed=0)
    assert sub_of_sub.classes == (2,) and sub_of_sub.y.tolist() == [0, 0, 0]
    assert subsets.subset(tr, 1, None, seed=0).classes == tuple(range(10))


def test_subset_short_class_and_bad_classes():
    tr, _ = data.load(DataSpec("synthetic"), 32, 1)
    with pytest.warns(UserWarning, match="class 3: 200/500"):
        s = subsets.subset(tr, 500, (3, 4), seed=0)
    assert len(s) == 400
    with pytest.raises(UserError):
        subsets.subset(tr, 5, (3, 11), seed=0)
    with pytest.raises(UserError):
        subsets.subset(tr, 5, (3, 3), seed=0)
    with pytest.raises(UserError):
        subsets.subset(tr, 0, None, seed=0)


def test_eval_subset_balanced():
    _, te = data.load(DataSpec("synthetic"), 32, 1)
    e = subsets.eval_subset(te, 55, None, seed=0)
    assert torch.bincount(e.y).tolist() == [6] * 5 + [5] * 5
    assert torch.equal(e.x, subsets.eval_subset(te, 55, None, seed=0).x)
    e2 = subsets.eval_subset(te, 9, (5, 0, 9), seed=0)
    assert e2.classes == (5, 0, 9) and torch.bincount(e2.y).tolist() == [3, 3, 3]
    assert len(subsets.eval_subset(te, 0, (1, 2), seed=0)) == 100
