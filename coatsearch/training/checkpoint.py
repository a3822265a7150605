"""Trial checkpoints: a long training run saves its whole state every N steps and resumes from it after a kill.

A runner makes one `Trial(policy)` per trial (training.checkpoint_policy: the data, no torch) and passes it down
to every `fit` of the trial (`fit(..., checkpoints=trial)`); each `fit` asks for its saver (`saver(trial, total)`:
None for a run shorter than `policy.min_steps`; a `fit` given no Trial saves nothing). The k-th training run of the
trial keeps one file, `<policy.folder>/fit<k>.safetensors`, rewritten through the safe writer (fsafe.replacing) at
the first step whose losses are read once `policy.every` steps have passed since the last save. It holds the model
(parameters and BatchNorm buffers), the optimizer's state, every random stream the loop draws from (torch's CPU
generator, which dropout and drop path use, and CUDA's on a GPU; the batch order's generator as the epoch began; the
augmentation generator; the mixup RNG), the epoch's batch losses and hits so far, the curve points and epoch rows so
far, the dense-point window and the position (epoch, step in it). Tensors are safetensors (never a pickle), the rest
one JSON metadata entry. `policy.on_save(folder, step)` hears each save (the Ray backend hands the folder to Ray).

When the trial runs again, `resume` puts each run's file back into the fresh run before its first step: the steps
it skips are the steps the file holds, so on the CPU (eager, `compile: false`) the record equals an uninterrupted
run's bit for bit (tests/runner/test_checkpoint.py). The optimizer's moments are restored in the memory format of their
parameters (channels_last for convolutions): CPU's fused AdamW and SGD read a moment's raw memory in its
parameter's order, so a moment restored contiguous beside a channels_last weight is a silently wrong update.
A file is used only when written for the same run: the same architecture and initial weights, optimizer settings,
seed, step budget, training and evaluation data (`fingerprint`), checked before it is trusted (`checkpoint_check`:
header, position, values); a damaged or foreign file (or a folder, link or FIFO in its place) is a note line, set
aside as `fit<k>.safetensors.damaged`, and that run starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from coatsearch import fsafe
from coatsearch.training import checkpoint_check as check
from coatsearch.training.checkpoint_check import RunState
from coatsearch.training.checkpoint_policy import Trial
from coatsearch.training.curves import Meter

FORMAT = "coatsearch.training.checkpoint/1"


def saver(trial: Trial, total: int) -> Saver | None:
    """The saver of the trial's next training run of `total` steps; None when it is shorter than `min_steps`."""
    fit = trial.next_fit(total)
    return None if fit is None else Saver(trial, trial.policy.folder / f"fit{fit}.safetensors")


def resume(
    saver: Saver | None, run: RunState, meter: Meter, parts: tuple[Any, ...], row: type
) -> tuple[int, int] | None:
    """Restore a fresh run and its `curves.Meter` from the run's checkpoint (`saver`'s file), if it has one written
    for this run (`parts`: the fit arguments it must share); (epoch, steps done in it), else None (start afresh)."""
    if saver is None:
        return None
    return saver.load(run, meter, fingerprint(run, meter, parts), row)


def fingerprint(run: RunState, meter: Meter, parts: tuple[Any, ...]) -> str:
    """What a checkpoint must belong to: parameter names, shapes and initial values, `parts`, batch and data."""
    h = hashlib.sha256(repr((parts, run.batch, run.steps)).encode())
    for name, t in run.net.state_dict().items():
        h.update(f"{name}{tuple(t.shape)}".encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    for t in (run.x[: min(len(run.x), 256)], run.y, meter.ey, meter.vy):
        if t is not None:
            h.update(repr(tuple(t.shape)).encode())
            h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


class Saver:
    """One training run's checkpoint file: `tick` saves the run's state when due, `load` puts it back."""

    def __init__(self, owner: Trial, path: Path) -> None:
        self.owner, self.path, self.every, self.key = owner, path, owner.policy.every, ""
        self.last = 0  # the step of the last save (or of the resume)
        self.rows: list = []  # the run's epoch rows so far (fit's loop appends to this list)

    def tick(self, run: RunState, meter: Meter, epoch: int, done: int) -> float:
        """Save after `done` steps of `epoch` when `every` steps have passed since the last save and the run goes
        on; the seconds it took (0 when not due)."""
        step = epoch * run.steps + done
        if step - self.last < self.every or step >= run.total:
            return 0.0
        began = time.perf_counter()
        self.save(run, meter, epoch, done)
        self.last = step
        if self.owner.policy.on_save is not None:
            self.owner.policy.on_save(self.path.parent, step)
        return time.perf_counter() - began

    def save(self, run: RunState, meter: Meter, epoch: int, done: int) -> None:
        """Write the state after `done` steps of epoch `epoch` (a run and its `curves.Meter`)."""
        root = self.owner.policy.root  # every component below the study folder checked first: no link followed
        path = fsafe.owned(root, self.path.relative_to(root)) if root is not None else self.path
        tensors = {f"model.{k}": v.detach().cpu().contiguous() for k, v in run.net.state_dict().items()}
        scalars: dict[str, dict[str, Any]] = {}
        for i, (p, _) in enumerate(_params(run.opt)):
            for k, v in run.opt.state.get(p, {}).items():
                if torch.is_tensor(v):
                    tensors[f"opt.{i}.{k}"] = v.detach().cpu().contiguous()
                else:
                    scalars.setdefault(str(i), {})[k] = v
        tensors["rng.torch"] = torch.get_rng_state()
        tensors["rng.shuffle"] = run.epoch_shuffle
        tensors["rng.augment"] = run.aug_gen.get_state().cpu()
        if run.cuda:
            tensors["rng.cuda"] = torch.cuda.get_rng_state(run.device).cpu()
        tensors["epoch.losses"] = run.losses[:done].detach().cpu().contiguous()
        tensors["epoch.hits"] = run.hits[:done].detach().cpu().contiguous()
        dense = meter.dense
        meta = {
            "format": FORMAT,
            "key": self.key,
            "epoch": epoch,
            "done": done,
            "step": epoch * run.steps + done,
            "params": len(_params(run.opt)),
            "opt_scalars": scalars,
            "mix_rng": run.mix_rng.getstate(),
            "points": [asdict(p) for p in meter.points],
            "rows": [asdict(r) for r in self.rows],
            "dense": dense and {"window": list(dense.window), "last": dense.last, "probe": dense.probe},
        }
        from safetensors.torch import save_file

        with fsafe.replacing(path) as tmp:
            save_file(tensors, str(tmp), metadata={"state": json.dumps(meta)})

    def load(self, run: RunState, meter: Meter, key: str, row: type) -> tuple[int, int] | None:
        """Restore the run from its file when there is one for this run (`key`): (epoch, steps done in it).

        The file is checked before it is trusted (checkpoint_check: header, position, values), so a damaged file,
        one of another run, or a folder, link or special file where the file should be is one note line, set
        aside beside it (`fit<k>.safetensors.damaged`), and None: the run starts afresh."""
        self.key = key
        if not os.path.lexists(self.path):
            return None
        try:
            tensors, meta, (epoch, done, step), (points, rows) = _read(self.path, run, key, row)
        except check.Damaged as exc:
            self._set_aside(str(exc))
            return None
        _restore(run, meter, tensors, meta, points)
        self.rows[:] = rows
        self.last = step
        self.owner.resumed.append({"fit": self.owner.fits, "step": self.last})
        print(f"coatsearch: resumed a training run from {self.path} at step {self.last}", file=sys.stderr, flush=True)
        return epoch, done

    def _set_aside(self, why: str) -> None:
        """Move a damaged checkpoint (a file, folder, link or special file) out of the way, with one note line;
        a run whose file cannot be moved saves none (its saves would fail on it)."""
        for n in range(1, 100):
            aside = self.path.with_name(f"{self.path.name}.damaged" + (f"-{n}" if n > 1 else ""))
            if not os.path.lexists(aside):
                break
        try:
            os.rename(self.path, aside)
            then = f"set aside as {aside.name}"
        except OSError as exc:
            self.every = 1 << 62  # never due again
            then = f"it could not be set aside ({exc.strerror}), so this run saves no checkpoint"
        print(f"coatsearch: note: {self.path}: {why}; {then}; this training run starts afresh", file=sys.stderr)


def _params(opt: torch.optim.Optimizer) -> list[tuple[torch.Tensor, dict]]:
    """The optimizer's parameters in state_dict order, each with its group."""
    return [(p, g) for g in opt.param_groups for p in g["params"]]


def _read(path: Path, run: RunState, key: str, row: type) -> tuple[dict[str, torch.Tensor], dict[str, Any], Any, Any]:
    """A checkpoint's tensors, metadata, position and (points, rows), checked against `run` (check.Damaged else).

    The header is checked before any tensor is read (no link followed; never unpickled)."""
    from safetensors import safe_open

    entries, meta = check.header(path, run)
    if meta.get("format") != FORMAT:
        raise check.Damaged(f"not a coatsearch checkpoint ({FORMAT} expected)")
    if meta.get("key") != key:
        raise check.Damaged("it belongs to another architecture, seed, optimizer or data")
    if meta.get("params") != len(_params(run.opt)):
        raise check.Damaged("its optimizer has another number of parameters")
    at = check.position(meta, run, entries)
    values = check.state(meta, run, row, at[0])
    try:
        with safe_open(str(path), framework="pt") as f:
            tensors = {k: f.get_tensor(k).clone() for k in entries}  # owned copies, not the file
    except Exception as exc:  # noqa: BLE001 - changed since its header was read, or its data damaged
        raise check.Damaged(f"its tensors cannot be read ({type(exc).__name__}: {str(exc)[:80]})") from None
    for name in ("epoch.losses", "epoch.hits"):
        if not torch.isfinite(tensors[name].float()).all():
            raise check.Damaged(f"tensor {name!r} holds values that are not finite")
    return tensors, meta, at, values


def _restore(run: RunState, meter: Meter, tensors: dict[str, torch.Tensor], meta: dict[str, Any], points: list) -> None:
    """Put a checkpoint's state into a fresh run and its `curves.Meter`."""
    run.net.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})  # copied in place
    _restore_optimizer(run.opt, tensors, meta["opt_scalars"])
    torch.set_rng_state(tensors["rng.torch"])
    run.shuffle.set_state(tensors["rng.shuffle"])
    run.aug_gen.set_state(tensors["rng.augment"].to(run.aug_gen.device))
    if run.cuda and "rng.cuda" in tensors:
        torch.cuda.set_rng_state(tensors["rng.cuda"], run.device)
    version, internal, gauss = meta["mix_rng"]
    run.mix_rng.setstate((version, tuple(internal), gauss))
    done = int(meta["done"])
    run.losses[:done] = tensors["epoch.losses"].to(run.device)
    run.hits[:done] = tensors["epoch.hits"].to(run.device)
    meter.points[:] = points
    if meter.dense is not None and meta["dense"] is not None:
        meter.dense.window.clear()
        meter.dense.window.extend(meta["dense"]["window"])
        meter.dense.last, meter.dense.probe = meta["dense"]["last"], meta["dense"]["probe"]
    if meter.on_point is not None:  # a tracked run hears the points it skips
        for p in meter.points:
            meter.on_point(p.step, p)


def _restore_optimizer(opt: torch.optim.Optimizer, tensors: dict[str, torch.Tensor], scalars: dict) -> None:
    """The optimizer's state back, each tensor in its parameter's memory format and device.

    A state tensor that exists (a captured step's) is copied into; a new one of a parameter's shape is made
    `empty_like` it (channels_last stays channels_last: CPU's fused kernels read raw memory), and a step count goes
    where torch keeps it (on the parameter's device for fused or capturable optimizers, else on the CPU)."""
    params = _params(opt)
    for name, v in tensors.items():
        if not name.startswith("opt."):
            continue
        _, i, key = name.split(".", 2)
        p, group = params[int(i)]
        old = opt.state[p].get(key)
        if torch.is_tensor(old) and old.shape == v.shape:
            old.copy_(v)
        elif v.shape == p.shape:
            opt.state[p][key] = torch.empty_like(p, dtype=v.dtype).copy_(v)
        else:
            on_device = group.get("fused") or group.get("capturable")
            opt.state[p][key] = v.to(p.device if on_device else torch.device("cpu"))
    for i, s in scalars.items():
        opt.state[params[int(i)][0]].update(s)
