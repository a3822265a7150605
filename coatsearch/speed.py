"""Speed choices measured on this machine: when torch.compile pays for itself, and processes x threads per process.

`train.compile: auto` times the first eager steps of a run and compiles only when the steps left repay the
compile: steps_left x eager_step x (1 - 1/speedup) > compile seconds. The compile time of an architecture is
a prior until this process has compiled it once; after that torch reuses the compiled graphs for every new
model of the same shapes (the next score, the next seed), so its measured, much smaller cost is used.

`--workers auto` times a few training steps of a small conv net at each thread count that divides the cores
and picks the processes x threads with the highest total rate (k processes at t threads are taken to run
k times as fast as one: separate processes share nothing but memory bandwidth). The choice is cached per
machine in ~/.cache/coatsearch/workers.json.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

COMPILE_PRIOR_S = {"cpu": 90.0, "cuda": 45.0}  # first compile of an architecture (train graph), before measured
SPEEDUP_PRIOR = {"cpu": 1.3, "cuda": 1.5}  # eager step time / compiled step time assumed by `auto`
PROBE_STEPS = 4  # eager steps timed (after one warm-up step) before `compile: auto` decides
RECOMPILE_LIMIT = 64  # dynamo graphs kept per code object (timm blocks are shared by every candidate)
_COMPILED: dict[tuple, float] = {}  # (device type, model signature) -> measured compile seconds, this process


def signature(model) -> tuple:
    """What makes two models share compiled graphs: their class and every parameter's name and shape."""
    return (type(model).__qualname__, tuple((n, tuple(p.shape)) for n, p in model.named_parameters()))


def compile_cost(device_type: str, sig: tuple) -> float:
    """Seconds a compile of `sig` is expected to take here: measured in this process, else the prior."""
    return _COMPILED.get((device_type, sig), COMPILE_PRIOR_S.get(device_type, COMPILE_PRIOR_S["cpu"]))


def worth_compiling(steps_left: int, eager_step_s: float, compile_s: float, speedup: float) -> bool:
    """Whether compiling now saves time over the rest of the run (compiled steps cost eager / speedup)."""
    return steps_left * eager_step_s * (1 - 1 / speedup) > compile_s


class AutoCompile:
    """`compile: auto` for one run: time PROBE_STEPS eager steps after a warm-up, then decide once."""

    def __init__(self, model, device, total: int):
        self.device, self.total, self.sig = device, total, signature(model)
        self.seen, self.spent, self.eager_s, self.decided = 0, 0.0, None, False

    def tick(self) -> float:
        """A timestamp for the step about to run (syncs CUDA only while probing)."""
        if not self.decided and self.device.type == "cuda":
            import torch

            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def after_step(self, started: float) -> bool:
        """Account one eager step; True exactly once, when the run should compile from the next step."""
        if self.decided:
            return False
        elapsed = self.tick() - started
        self.seen += 1
        if self.seen > 1:  # the first step warms caches and allocators: not timed
            self.spent += elapsed
        if self.seen < PROBE_STEPS + 1:
            return False
        self.decided, self.eager_s = True, self.spent / PROBE_STEPS
        kind = self.device.type
        cost = compile_cost(kind, self.sig)
        return worth_compiling(self.total - self.seen, self.eager_s, cost, SPEEDUP_PRIOR.get(kind, 1.3))

    def compiled(self, first_step_s: float) -> None:
        """Record what the first compiled step cost beyond an eager one: this architecture's compile time here."""
        _COMPILED[(self.device.type, self.sig)] = max(0.0, first_step_s - (self.eager_s or 0.0))


def configure_dynamo() -> None:
    """Keep a compiled graph per architecture (many candidates share timm's block code) instead of falling back."""
    import torch._dynamo

    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT)


# ---------------------------------------------------------------------------------------------- workers


@dataclass(frozen=True)
class Workers:
    """How a study runs on one machine: `processes` workers with `threads` intra-op threads each."""

    processes: int
    threads: int
    rates: dict  # threads -> probed training images/s of one process
    cached: bool = False

    def text(self) -> str:
        """One line saying the choice and the probe behind it."""
        rates = ", ".join(f"{t} thread{'s' * (t > 1)}: {r:.0f} img/s" for t, r in sorted(self.rates.items()))
        where = "cached probe" if self.cached else "probe"
        return f"workers auto: {self.processes} process(es) x {self.threads} thread(s) ({where}: {rates})"


def cache_file() -> Path:
    """Where the per-machine choice is cached (COATSEARCH_CACHE overrides ~/.cache/coatsearch)."""
    root = os.environ.get("COATSEARCH_CACHE") or Path.home() / ".cache" / "coatsearch"
    return Path(root) / "workers.json"


def machine_key(cores: int) -> str:
    """The machine a cached choice belongs to: host, CPU count and torch version."""
    import torch

    return f"{platform.node()}|{cores}|{torch.__version__}"


def choose(rates: dict[int, float], cores: int, trials: int) -> tuple[int, int]:
    """(processes, threads) maximizing processes x rate(threads), processes x threads <= cores, <= trials."""
    best = max(rates, key=lambda t: (min(cores // t, max(1, trials)) * rates[t], -t))
    return max(1, min(cores // best, max(1, trials))), best


def probe_rates(cores: int, steps: int = 6, batch: int = 64, rounds: int = 3) -> dict[int, float]:
    """Training images/s of a small conv net in this process, at each thread count dividing `cores`.

    The thread counts take turns for `rounds` rounds and each keeps its best round, so a burst of load from
    another process during one round does not decide the choice (nor get cached).
    """
    import torch
    from torch import nn

    before = torch.get_num_threads()
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(1, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.GELU(), nn.Conv2d(32, 32, 3, 1, 1, groups=32),
        nn.Conv2d(32, 64, 1), nn.GELU(), nn.Flatten(1), nn.LazyLinear(10),
    )  # fmt: skip
    x, y = torch.randn(batch, 1, 32, 32), torch.randint(0, 10, (batch,))
    net(x)
    opt = torch.optim.AdamW(net.parameters())
    counts = [t for t in range(1, cores + 1) if cores % t == 0]
    rates = dict.fromkeys(counts, 0.0)
    try:
        for _ in range(rounds):
            for t in counts:
                torch.set_num_threads(t)
                for i in range(steps + 1):
                    if i == 1:
                        start = time.perf_counter()
                    nn.functional.cross_entropy(net(x), y).backward()
                    opt.step()
                    opt.zero_grad()
                rates[t] = max(rates[t], steps * batch / (time.perf_counter() - start))
    finally:
        torch.set_num_threads(before)
    return rates


def auto_workers(trials: int, cores: int | None = None, refresh: bool = False) -> Workers:
    """The processes x threads for a study of `trials` trials: from the cached probe of this machine, else a probe.

    A cache entry of the wrong shape (not a mapping of thread counts 1..cores to finite rates > 0) is not
    trusted: one note line names the file, the machine is probed again and the entry rewritten.
    """
    import sys

    cores = cores or os.cpu_count() or 1
    path, key = cache_file(), machine_key(cores)
    known, why = _read_cache(path)
    rates = None if refresh or why else _cached_rates(known.get(key), cores)
    if why or (key in known and rates is None and not refresh):
        print(f"coatsearch: note: {path}: {why or f'entry {key!r} is not valid'}; probing again", file=sys.stderr)
    cached = rates is not None
    rates = rates if rates is not None else probe_rates(cores)
    if not cached:
        try:
            from coatsearch import fsafe

            fsafe.write(path, json.dumps({**known, key: rates}, indent=1))
        except Exception:  # noqa: BLE001 - an unwritable cache (or a link there) only means probing again next time
            pass
    return Workers(*choose(rates, cores, trials), rates, cached)


def _read_cache(path: Path) -> tuple[dict, str]:
    """The cache file's mapping and "" , or {} and why it cannot be used ({} and "" when there is none)."""
    try:
        known = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError) as exc:
        return {}, f"unreadable ({type(exc).__name__})"
    return (known, "") if isinstance(known, dict) else ({}, f"holds {type(known).__name__}, expected a mapping")


def _cached_rates(entry, cores: int) -> dict[int, float] | None:
    """A cached entry as {threads: rate}, or None when it is missing or of the wrong shape for `cores` cores."""
    if not isinstance(entry, dict) or not entry:
        return None
    try:
        rates = {int(t): float(r) for t, r in entry.items()}
    except (TypeError, ValueError):
        return None
    ok = all(1 <= t <= cores and cores % t == 0 and math.isfinite(r) and r > 0 for t, r in rates.items())
    return rates if ok else None
