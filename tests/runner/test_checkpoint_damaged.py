"""A damaged checkpoint costs one note and a fresh start, never a failed run: its header, position and values are
checked against the run before anything is loaded, and the file is set aside beside it."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from tests.support.checkpoint import fit_under

FILE = "fit1.safetensors"


def _edit_meta(path: Path, **fields) -> None:
    """Rewrite the checkpoint at `path` with its metadata's fields replaced."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(path), framework="pt") as f:
        meta = json.loads(f.metadata()["state"])
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    meta.update(fields)
    path.unlink()
    save_file(tensors, str(path), metadata={"state": json.dumps(meta)})


def _edit_tensor(path: Path, name: str, value) -> None:
    """Rewrite the checkpoint at `path` with tensor `name` replaced by `value` (None: left out)."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    tensors = {k: (value if k == name else v) for k, v in tensors.items() if not (k == name and value is None)}
    path.unlink()
    save_file(tensors, str(path), metadata=meta)


def _huge_sparse(path: Path, declared: int, size: int) -> None:
    """A sparse file of `size` bytes whose header declares one float32 tensor of `declared` values."""
    head = json.dumps({"model.x": {"dtype": "F32", "shape": [declared], "data_offsets": [0, declared * 4]},
                       "__metadata__": {"state": "{}"}}).encode()  # fmt: skip
    path.unlink()
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(head)) + head)
        fh.truncate(size)


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside").write_text("x")


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _tensor(name, value):
    return lambda p: _edit_tensor(p, name, value)


def _meta(**fields):
    return lambda p: _edit_meta(p, **fields)


CASES = {
    "step not a number": (_meta(step="x"), "field 'step'"),
    "epoch past the run": (_meta(epoch=999), "field 'epoch': 999 is outside this run"),
    "negative epoch": (_meta(epoch=-1), "field 'epoch'"),
    "done past the epoch": (_meta(done=7), "field 'done': 7 is outside epoch"),
    "step off its position": (_meta(step=3), "field 'step': 3 is not"),
    "rows for another epoch": (_meta(rows=[]), "field 'rows'"),
    "points damaged": (_meta(points=[{"nope": 1}]), "its metadata is damaged"),
    "optimizer scalars of another parameter": (_meta(opt_scalars={"99": {}}), "field 'opt_scalars'"),
    "a folder in its place": (_folder, "is a folder"),
    "a FIFO in its place": (_fifo, "is a FIFO"),
    "a sparse 3 GB file naming one huge tensor": (lambda p: _huge_sparse(p, 750_000_000, 3_000_000_100), "bytes, more"),
    "a small file naming a huge tensor": (lambda p: _huge_sparse(p, 750_000_000, 4096), "byte range"),
    "an unknown tensor": (_tensor("rng.shuffle", None), "'rng.shuffle' is missing"),
}


def _replaced_shape(p: Path) -> None:
    from safetensors import safe_open

    with safe_open(str(p), framework="pt") as f:
        name = next(k for k in f.keys() if k.startswith("model.") and k.endswith("weight"))  # noqa: SIM118
    import torch

    _edit_tensor(p, name, torch.zeros(3, 3))


CASES["a model tensor of another shape"] = (_replaced_shape, "this run's is")


@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_checkpoint_is_one_note_set_aside_and_a_fresh_start(pools, tmp_path, capsys, case):
    from coatsearch.training import checkpoint_policy

    damage, words = CASES[case]
    plain, _ = fit_under(pools, None)
    policy = checkpoint_policy.Policy(tmp_path / "c", every=5, min_steps=1)
    fit_under(pools, policy)
    path = tmp_path / "c" / FILE
    capsys.readouterr()
    damage(path)
    again, state = fit_under(pools, policy)  # never raises: the run starts afresh
    assert again == plain and state.resumed == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and err.count(str(path)) == 1, err
    assert "set aside as fit1.safetensors.damaged; this training run starts afresh" in err
    assert os.path.lexists(path.with_name(FILE + ".damaged")) and path.is_file()  # the fresh run saved anew


def test_a_checkpoint_that_cannot_be_set_aside_is_one_note_and_the_run_saves_none(pools, tmp_path, capsys):
    from coatsearch.training import checkpoint_policy

    plain, _ = fit_under(pools, None)
    policy = checkpoint_policy.Policy(tmp_path / "c", every=5, min_steps=1)
    fit_under(pools, policy)
    path = tmp_path / "c" / FILE
    _edit_meta(path, epoch=999)
    (tmp_path / "c" / (FILE + ".damaged")).mkdir()  # every name it could take is taken by a non-empty folder
    (tmp_path / "c" / (FILE + ".damaged") / "x").write_text("")
    for n in range(2, 100):
        (tmp_path / "c" / f"{FILE}.damaged-{n}").mkdir()
        (tmp_path / "c" / f"{FILE}.damaged-{n}" / "x").write_text("")
    path.unlink()
    path.mkdir()
    (path / "x").write_text("")
    capsys.readouterr()
    again, state = fit_under(pools, policy)
    assert again == plain and state.resumed == []
    assert "could not be set aside" in capsys.readouterr().err and (path / "x").exists()
