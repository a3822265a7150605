"""A checkpoint file is checked before it is trusted: its header, then its position, then its values.

`header(path, run)` reads the safetensors header itself (8 bytes of length, then JSON), bounded by the size this
run's state can take (`budget`), and checks the format, every tensor's name, dtype, shape and byte range against
the run's model, optimizer, random streams and epoch buffers, before any tensor is read: a sparse file of 3 GB
whose header names one huge tensor is refused on its size, never cloned. `position(meta, run)` checks the
position fields against the run (0 <= epoch < epochs, 1 <= done <= the steps of that epoch, step = epoch *
steps + done < total, one epoch row per finished epoch) and `state(meta, run, row)` the JSON values restore reads
(curve points, rows, the mixup RNG, the dense window, optimizer scalars). Each raises `Damaged` with a reason
naming what is wrong (not the path: the caller names it once).

`RunState` is what a checkpoint reads and writes of a training run (`fit`'s run state satisfies it): the checks
here and the saver and restore in `training.checkpoint` read nothing else of it.
"""

from __future__ import annotations

import json
import math
import os
import random
import stat
import struct
from pathlib import Path
from typing import Any, Protocol, TypeGuard

import torch
from torch import nn

from coatsearch.training.point import Point

HEADER_MAX = 64_000_000  # bytes of a checkpoint's JSON header (its metadata holds the curve points and rows)
_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
_NAMES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
          torch.bool: "BOOL"}  # fmt: skip
DTYPES = {v: k for k, v in _NAMES.items()}  # safetensors' dtype names -> torch's
_OPT_COPIES = 4  # tensors an optimizer keeps per parameter at most (Adam's two moments, AMSGrad's max, a spare)


_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device"}


class RunState(Protocol):
    """What a checkpoint reads and writes of one training run: its model, optimizer, random streams, the epoch's
    device buffers and its schedule. Tensors and generators are restored in place; no attribute is reassigned."""

    @property
    def net(self) -> nn.Module: ...  # the module that trains (its state_dict is the checkpoint's model)
    @property
    def opt(self) -> torch.optim.Optimizer: ...
    @property
    def device(self) -> torch.device: ...
    @property
    def cuda(self) -> bool: ...  # CUDA's random stream is saved too
    @property
    def x(self) -> torch.Tensor: ...  # the training images on the device (fingerprinted, never saved)
    @property
    def y(self) -> torch.Tensor: ...
    @property
    def batch(self) -> int: ...
    @property
    def steps(self) -> int: ...  # steps an epoch
    @property
    def total(self) -> int: ...  # steps of the run
    @property
    def shuffle(self) -> torch.Generator: ...  # the batch order's generator
    @property
    def epoch_shuffle(self) -> torch.Tensor: ...  # its state as the current epoch began
    @property
    def aug_gen(self) -> torch.Generator: ...  # the augmentation generator
    @property
    def mix_rng(self) -> random.Random: ...  # mixup's
    @property
    def losses(self) -> torch.Tensor: ...  # the epoch's batch losses so far (steps,), on the device
    @property
    def hits(self) -> torch.Tensor: ...  # and hits


class Damaged(Exception):
    """A checkpoint that cannot be this run's: the reason, without the path."""


def _expected(run: RunState) -> dict[str, tuple[str, tuple[int, ...]] | None]:
    """The tensors a checkpoint of `run` holds: name -> (dtype, shape); None where the shape varies (checked apart)."""
    out: dict[str, tuple[str, tuple[int, ...]] | None] = {
        f"model.{k}": (_NAMES.get(v.dtype, str(v.dtype)), tuple(v.shape)) for k, v in run.net.state_dict().items()
    }
    out["rng.torch"] = ("U8", tuple(torch.get_rng_state().shape))
    out["rng.shuffle"] = ("U8", tuple(run.shuffle.get_state().shape))
    out["rng.augment"] = ("U8", tuple(run.aug_gen.get_state().shape))
    out["epoch.losses"] = out["epoch.hits"] = None  # (done,): checked against the position
    return out


def budget(run: RunState) -> int:
    """The most bytes a checkpoint of `run` can take: model, optimizer state, random streams, epoch buffers, header."""
    params = [p for g in run.opt.param_groups for p in g["params"]]
    model = sum(v.numel() * v.element_size() for v in run.net.state_dict().values())
    opt = sum(_OPT_COPIES * (p.numel() * p.element_size() + 8) for p in params)
    return 8 + HEADER_MAX + model + opt + 4 * 65_536 + run.steps * 16


def header(path: Path, run: RunState) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's tensor entries and its metadata ('state' JSON), checked against `run` before any tensor is read."""
    entries, data = raw_header(path, budget(run), "a checkpoint file", "this run's state can take")
    raw = entries.pop("__metadata__", None) or {}
    try:
        meta = json.loads(raw.get("state", "{}")) if isinstance(raw, dict) else None
    except (ValueError, RecursionError):
        meta = None
    if not isinstance(meta, dict):
        raise Damaged("its metadata is not a coatsearch checkpoint's")
    _tensors(entries, run, data)
    return entries, meta


def raw_header(path: Path, limit: int, what: str, room: str) -> tuple[dict[str, Any], int]:
    """A safetensors file's header mapping (`__metadata__` included) and the bytes of data after it, read by hand
    before any tensor is: the path a regular file (no link followed, no FIFO opened) of at most `limit` bytes (what
    `room` can take), its header at most HEADER_MAX bytes of JSON. Shared by checkpoints and weights files."""
    try:
        kind = os.lstat(path).st_mode
    except OSError as exc:
        raise Damaged(f"cannot be read ({exc.strerror})") from None
    if stat.S_ISLNK(kind):
        raise Damaged(f"is a symbolic link (to {os.readlink(path)}), never followed in a study folder")
    if not stat.S_ISREG(kind):
        raise Damaged(f"is {_KINDS.get(stat.S_IFMT(kind), 'not a regular file')}, not {what}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        raise Damaged(f"cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Damaged("is not a regular file")
        if st.st_size > limit:
            raise Damaged(f"{st.st_size:,} bytes, more than {room} ({limit:,})")
        first = fh.read(8)
        if len(first) < 8:
            raise Damaged("not a safetensors file (shorter than its header)")
        (n,) = struct.unpack("<Q", first)
        if n > min(st.st_size - 8, HEADER_MAX):
            raise Damaged(f"not a safetensors file (its header claims {n:,} bytes)")
        try:
            entries = json.loads(fh.read(n))
        except (ValueError, RecursionError) as exc:
            raise Damaged(f"not a safetensors file (header: {str(exc)[:80]})") from None
    if not isinstance(entries, dict):
        raise Damaged("not a safetensors file (its header is not a mapping)")
    return entries, st.st_size - 8 - n


def _tensors(entries: dict[str, Any], run: RunState, data: int) -> None:
    """Every entry a tensor of this run's state, of its dtype and shape, its bytes inside the file's data."""
    expected = _expected(run)
    params = [p for g in run.opt.param_groups for p in g["params"]]
    for name, e in entries.items():
        got = entry(name, e, data, "this run")
        shape = list(got[1])
        if name.startswith("opt."):
            _, i, _key = (name.split(".", 2) + ["", ""])[:3]
            if not i.isdigit() or int(i) >= len(params) or got[1] not in (tuple(params[int(i)].shape), (), (1,)):
                raise Damaged(f"tensor {name[:60]!r} {list(got[1])}: not a state of this run's optimizer")
        elif name in ("epoch.losses", "epoch.hits", "rng.cuda"):
            if len(shape) != 1 or shape[0] > (run.steps if name != "rng.cuda" else 65_536):
                raise Damaged(f"tensor {name!r}: shape {shape} does not fit the run's {run.steps} steps an epoch")
        elif name not in expected:
            raise Damaged(f"tensor {name[:60]!r}: not part of this run's state")
        elif expected[name] != got:
            raise Damaged(f"tensor {name[:60]!r}: {got[0]} {list(got[1])}, this run's is {expected[name]}")
    missing = sorted(set(expected) - set(entries))
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise Damaged(f"tensor {missing[0][:60]!r} is missing{more}")


def entry(name: str, e: Any, data: int, holder: str) -> tuple[str, tuple[int, ...]]:
    """(dtype, shape) of one header entry: a dtype `holder` can hold, whole sizes, its bytes inside the file's
    `data` bytes and exactly its shape's size."""
    if not isinstance(e, dict) or e.get("dtype") not in _SIZES:
        raise Damaged(f"tensor {name[:60]!r}: not a tensor entry {holder} can hold")
    shape, offsets = e.get("shape"), e.get("data_offsets")
    if not _ints(shape) or not _ints(offsets) or len(offsets) != 2 or not 0 <= offsets[0] <= offsets[1] <= data:
        raise Damaged(f"tensor {name[:60]!r}: its shape or byte range is damaged")
    if math.prod(shape) * _SIZES[e["dtype"]] != offsets[1] - offsets[0]:
        raise Damaged(f"tensor {name[:60]!r}: its shape {shape} does not fit its {offsets[1] - offsets[0]} bytes")
    return e["dtype"], tuple(shape)


def _ints(value: Any) -> TypeGuard[list[int]]:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)


def _int(meta: dict[str, Any], key: str) -> int:
    value = meta.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise Damaged(f"field {key!r}: {str(value)[:40]!r} is not a whole number")
    return value


def position(meta: dict[str, Any], run: RunState, entries: dict[str, Any]) -> tuple[int, int, int]:
    """(epoch, done, step) of the checkpoint, each checked against the run; its epoch buffers hold `done` steps."""
    epoch, done, step = _int(meta, "epoch"), _int(meta, "done"), _int(meta, "step")
    epochs = math.ceil(run.total / run.steps)
    if not 0 <= epoch < epochs:
        raise Damaged(f"field 'epoch': {epoch} is outside this run (epochs 0..{epochs - 1})")
    n = min(run.steps, run.total - epoch * run.steps)
    if not 1 <= done <= n:
        raise Damaged(f"field 'done': {done} is outside epoch {epoch} (steps 1..{n})")
    if step != epoch * run.steps + done or step >= run.total:
        raise Damaged(f"field 'step': {step} is not epoch {epoch} x {run.steps} + {done}, below {run.total}")
    for name in ("epoch.losses", "epoch.hits"):
        if entries[name]["shape"] != [done]:
            raise Damaged(f"tensor {name!r}: {entries[name]['shape']} values, the position says {done}")
    return epoch, done, step


def state(meta: dict[str, Any], run: RunState, row: type, epoch: int) -> tuple[list[Point], list[Any]]:
    """The curve points and epoch rows of the checkpoint, its mixup RNG, dense window and optimizer scalars checked."""
    try:
        points = [Point(**p) for p in meta["points"]]
        rows = [row(**r) for r in meta["rows"]]
        version, internal, gauss = meta["mix_rng"]
        run.mix_rng.__class__().setstate((version, tuple(internal), gauss))  # a throwaway RNG: it must take it
        dense = meta["dense"]
        if dense is not None:
            list(dense["window"])
            float(dense["last"]), float(dense["probe"])
        params = sum(len(g["params"]) for g in run.opt.param_groups)
        scalars = meta["opt_scalars"]
        if not isinstance(scalars, dict) or any(not (k.isdigit() and int(k) < params) for k in scalars):
            raise Damaged("field 'opt_scalars': names a parameter this run's optimizer lacks")
        if not all(isinstance(v, dict) for v in scalars.values()):
            raise Damaged("field 'opt_scalars': not a mapping of mappings")
    except Damaged:
        raise
    except Exception as exc:  # noqa: BLE001 - any malformed value: the checkpoint is damaged
        raise Damaged(f"its metadata is damaged ({type(exc).__name__}: {str(exc)[:80]})") from None
    if len(rows) != epoch:
        raise Damaged(f"field 'rows': {len(rows)} epoch rows, the position says {epoch} epochs finished")
    return points, rows
