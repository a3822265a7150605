"""The whole training step as one CUDA graph: augmentation, forward, loss, backward, gradient clipping and a
capturable fused optimizer step, replayed with one launch a step (CUDA only).

Why: the models are small, so on a GPU a step is launch-bound: eager, about 1 ms of host work a step (the
augmentation's kernels, the loss, fused AdamW's Python over some 180 tensors) outruns the GPU's work. How:
PyTorch's whole-network capture. A slot holds static input buffers (the batch, the augmentation's random draws,
the mixup weight, the lr as a 0-d tensor), a capturable fused optimizer and static outputs (the step's loss and
hits). The run's first WARMUP steps run eagerly on a side stream (real steps of the run: they create the
optimizer state, pick cuDNN algorithms and compile a compiled model), the next step is recorded as a graph,
and every step from there is a replay. Outside the graph stay the batch gather into the static buffers (two
index kernels), the augmentation's draws into theirs (from the run's own generator, so they are the eager
path's draws), two fills (lr, mixup weight) and two copies of the step's loss and hits into the run's buffers:
about ten small launches, no host sync.

Graphs are kept per worker process, one slot per architecture and shapes (`_slot_key`: the model's parameters and
module tree, the batch and image shape, the optimizer settings baked into the graph), at most SLOTS_MAX (the
least recently used is dropped with its graph). A later fit of the same architecture (the next score, seed or
trial) copies its model's initial weights into the slot's model in place (`load_state_dict` copies, so the
graph's addresses hold), zeroes the optimizer state (what a fresh optimizer starts from: Adam's moments and
step count, SGD's momentum) and replays from its first step; at the end the weights are copied back into the
caller's model. Any error in a slot is the caller's to catch: training.fit goes on eagerly and records it.

`mode_for` says when: `compile: auto` captures eager kernels ("captured") for runs of MIN_STEPS or more,
`compile: true` captures the torch.compile'd model ("compiled+captured"), `compile: false` never captures. The
numerics of a captured step are the eager step's (same kernels; autocast without its weight cache, as capture
requires). Only DEVICES capture; the tests add the CPU, where a recorded step is a stand-in that runs the step
again at each replay (`_Replay`), to check everything but the CUDA graph itself.
"""

from __future__ import annotations

import contextlib
import copy
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

WARMUP = 3  # eager steps (the run's own) on a side stream before the capture
MIN_STEPS = 8  # `compile: auto` captures runs of at least this many steps
SLOTS_MAX = 8  # slots (models, optimizer states, graphs) kept per worker process
DEVICES = ("cuda",)  # device types that capture
_SLOTS: OrderedDict[tuple, Slot] = OrderedDict()

_Draw = Callable[..., tuple[torch.Tensor, ...]]  # augment.augment_draws
_Apply = Callable[[torch.Tensor, tuple[torch.Tensor, ...]], torch.Tensor]  # augment.augment_apply
_MakeOpt = Callable[[nn.Module, torch.Tensor], torch.optim.Optimizer]  # the run's optimizer, lr a 0-d tensor


@dataclass(frozen=True)
class Recipe:
    """What a captured step does besides the model (fixed per slot; the lr and mixup weight are inputs)."""

    batch: int
    label_smoothing: float
    grad_clip: float
    mixup: bool  # a mixup weight per step
    randaug: bool  # augment_apply with a step's draws
    hflip: bool
    optim: tuple  # the optimizer settings baked into its kernels: (kind, weight decay)


def mode_for(device: torch.device, compile_setting: bool | str, total: int) -> str | None:
    """How a run of `total` steps captures: "captured" (compile auto), "compiled+captured" (compile true) or None."""
    if device.type not in DEVICES or compile_setting is False:
        return None
    if compile_setting is True:
        return "compiled+captured"
    return "captured" if total >= MIN_STEPS else None


def _slot_key(model: nn.Module, recipe: Recipe, x: torch.Tensor, y: torch.Tensor, mode: str) -> tuple:
    """What two runs must share to share a graph: device, mode, the model's parameters and module tree (repr: it
    names every module and its drop rates), the recipe and the image shape."""
    params = tuple((n, tuple(p.shape)) for n, p in model.named_parameters())
    return (str(x.device), mode, type(model).__qualname__, params, repr(model), recipe, tuple(x.shape[1:]),
            x.dtype, y.dtype)  # fmt: skip


class _Replay:
    """A recorded step off CUDA (tests): each replay runs the step again."""

    def __init__(self, body: Callable[[], None]):
        self.body = body

    def replay(self) -> None:
        self.body()

    def reset(self) -> None:
        pass


class Slot:
    """One architecture's captured step in this process: its model, optimizer, static buffers and graph."""

    def __init__(self, model: nn.Module, recipe: Recipe, x: torch.Tensor, y: torch.Tensor, mode: str,
                 make_opt: _MakeOpt, draw: _Draw, apply: _Apply):  # fmt: skip
        dev = x.device
        self.device, self.recipe, self.mode, self.draw, self.apply = dev, recipe, mode, draw, apply
        self.net = copy.deepcopy(model)
        self.lr = torch.zeros((), device=dev)
        self.opt = make_opt(self.net, self.lr)
        self.xb = torch.zeros((recipe.batch, *x.shape[1:]), dtype=x.dtype, device=dev)
        self.yb = torch.zeros((recipe.batch,), dtype=y.dtype, device=dev)
        gen = torch.Generator(device=dev)
        self.draws = tuple(torch.zeros_like(t) for t in draw(self.xb.shape, gen, recipe.hflip, dev))
        self.lam = torch.ones((), device=dev) if recipe.mixup else None
        self.loss = torch.zeros((), device=dev)
        self.hits = torch.zeros((), device=dev, dtype=torch.int64)
        self.run_model: Any = self.net
        if mode == "compiled+captured":
            from coatsearch.training.tuning import configure_dynamo

            configure_dynamo()
            self.run_model = torch.compile(self.net, dynamic=False)
        self.graph: Any = None
        self.warm = 0  # eager warm-up steps done

    def load(self, model: nn.Module) -> None:
        """Start a run: `model`'s weights into the slot's model (in place), the optimizer state back to zero."""
        self.net.load_state_dict(model.state_dict())
        for state in self.opt.state.values():
            for value in state.values():
                if torch.is_tensor(value):
                    value.zero_()

    def release(self, model: nn.Module) -> None:
        """End a run: the trained weights back into the caller's `model`."""
        model.load_state_dict(self.net.state_dict())

    def step(self, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, gen: torch.Generator | None, lr: float,
             lam: float) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """One optimizer step on the images `idx` of (x, y); the step's (loss, hits), static tensors."""
        torch.index_select(x, 0, idx, out=self.xb)
        torch.index_select(y, 0, idx, out=self.yb)
        if self.recipe.randaug and gen is not None:
            self.draw(self.xb.shape, gen, self.recipe.hflip, self.device, self.draws)
        if self.lam is not None:
            self.lam.fill_(lam)
        self.lr.fill_(lr)
        if self.graph is None and self.warm < WARMUP:
            self._eager()
            self.warm += 1
            return self.loss, self.hits
        if self.graph is None:
            self.graph = self._record()
        self.graph.replay()
        return self.loss, self.hits

    def body(self) -> None:
        """The step: augmentation, mixup, forward (bf16 autocast on CUDA), loss, backward, clip, optimizer."""
        r = self.recipe
        self.opt.zero_grad(set_to_none=True)  # a captured backward writes fresh gradients, never accumulates
        xb, yb = self.xb, self.yb
        if r.randaug:
            xb = self.apply(xb, self.draws)
        if self.lam is not None:
            xb = self.lam * xb + (1 - self.lam) * xb.flip(0)
        xb = xb.contiguous(memory_format=torch.channels_last)
        with _autocast(self.device):
            logits = self.run_model(xb).float()
        ls = r.label_smoothing
        loss = F.cross_entropy(logits, yb, label_smoothing=ls)
        if self.lam is not None:
            loss = self.lam * loss + (1 - self.lam) * F.cross_entropy(logits, yb.flip(0), label_smoothing=ls)
        loss.backward()
        if r.grad_clip > 0:
            nn.utils.clip_grad_norm_(self.net.parameters(), r.grad_clip, foreach=True)
        self.opt.step()
        self.loss.copy_(loss.detach())
        self.hits.copy_((logits.detach().argmax(1) == yb).sum())

    def _eager(self) -> None:
        """A warm-up step, on a side stream on CUDA (as capture requires)."""
        if self.device.type != "cuda":
            self.body()
            return
        main = torch.cuda.current_stream(self.device)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(main)
        with torch.cuda.stream(side):
            self.body()
        main.wait_stream(side)

    def _record(self) -> Any:
        """The step recorded (CUDA graph; elsewhere a stand-in that runs it at each replay); not yet run."""
        if self.device.type != "cuda":
            return _Replay(self.body)
        graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            self.body()
        return graph

    def close(self) -> None:
        """Free the graph (the slot is dropped)."""
        if self.graph is not None:
            self.graph.reset()
        self.graph = None


def _autocast(device: torch.device) -> contextlib.AbstractContextManager[object]:
    """bf16 autocast on CUDA without the weight-cast cache (a captured step must recast each replay)."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False)
    return contextlib.nullcontext()


def slot_for(model: nn.Module, recipe: Recipe, x: torch.Tensor, y: torch.Tensor, mode: str, make_opt: _MakeOpt,
             draw: _Draw, apply: _Apply) -> Slot:  # fmt: skip
    """This process's slot for `model`'s architecture and shapes (made when new), loaded with `model`'s weights."""
    key = _slot_key(model, recipe, x, y, mode)
    slot = _SLOTS.get(key)
    if slot is None:
        slot = Slot(model, recipe, x, y, mode, make_opt, draw, apply)
        _SLOTS[key] = slot
        while len(_SLOTS) > SLOTS_MAX:
            _SLOTS.popitem(last=False)[1].close()
    _SLOTS.move_to_end(key)
    slot.load(model)
    return slot


def drop(slot: Slot) -> None:
    """Forget a slot that failed (its graph may be broken); its model and optimizer stay usable eagerly."""
    for key, held in list(_SLOTS.items()):
        if held is slot:
            del _SLOTS[key]
    with contextlib.suppress(Exception):
        slot.close()


def clear() -> None:
    """Drop every slot of this process."""
    for slot in list(_SLOTS.values()):
        drop(slot)
