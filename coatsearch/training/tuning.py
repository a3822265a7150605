"""Speed choices measured on this machine: when and how torch.compile pays, and processes x threads per process.

`train.compile: auto` times the first eager steps of a run and compiles only when the study's runs of this
architecture repay the compile: this run's steps left and the same again for each of the `runs - 1` later
runs the study plans (its other seeds) save runs x steps_left x eager_step x (1 - 1/speedup), against one
full compile plus a cache hit per later run. The compile time of an architecture is a prior until this
process has compiled it once; after that torch reuses the compiled graphs for every new model of the same
shapes (the next score, the next seed), so its measured, much smaller cost is used. On CPU the probe steps are
timed in this process's CPU seconds per thread, not wall seconds: on a shared machine (load average 18 on 2
cores) wall-timed steps read about 5x slower while the compile prior stays an idle-machine figure, and a
3-seed quick plan then compiled C-C-C-C for over 25 minutes, for trials of about 5 minutes (bench_study).

How it compiles (`compile_model`): on CPU regionally, each block of the model's stages on its own
(`nn.Module.compile`), so the identical blocks of a stage share one graph and compile once (PyTorch's
recipe for cutting compile time); the stem and head stay eager. On CUDA `compile: auto` does not compile: it
captures the whole step as a CUDA graph (training.capture), which removes the launch overhead these small models
are bound by, for the cost of a step; `compile: true` compiles the whole model and captures it so. Compiled graphs
go to torch's persistent caches (inductor FX graph cache, AOT autograd cache) in one folder every worker shares
(`compile_cache_dir`), so a second process or a later study pays seconds, not a full compile.

The planner's CUDA priors (`step_priors`) are the captured step's speed-up over eager, CUDA_CAPTURE_SPEEDUP, as
`benchmarks/bench_throughput.py --device cuda` measures it (its `capture_ratio=` line), and its cost,
CUDA_CAPTURE_S; its GPU-time count prices FLOPs at one stated peak (planner.gpu.H200_BF16_PEAK), the peak
bench_throughput's `fraction_of_peak=` is a fraction of.

`--workers auto` on the CPU times a few training steps of a small conv net at each thread count that divides the
cores and picks the processes x threads with the highest total rate (k processes at t threads are taken to run
k times as fast as one: separate processes share nothing but memory bandwidth). The choice is cached per
machine in ~/.cache/coatsearch/workers.json. On CUDA one process of batch-32 steps cannot keep a large GPU
busy, so several share each GPU (`cuda_processes`: from the GPUs' memory and the host's cores), each pinned to
one GPU (`worker_device`) with its share of the cores for intra-op and compile threads (`set_worker_threads`).
Without MPS their kernels time-slice the GPU (the host work of one overlaps the GPU work of another); with an
MPS control daemon running they also run at once (`mps_running`).
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where a model is timed or compiled
    import torch
    from torch import nn

COMPILE_PRIOR_S = {"cpu": 90.0, "cuda": 45.0}  # first compile of an architecture (train graph), before measured
_CACHED_PRIOR_S = {"cpu": 9.0, "cuda": 5.0}  # a compile served by the persistent caches (3-9 s measured on CPU)
SPEEDUP_PRIOR = {"cpu": 1.3}  # eager step time / compiled step time assumed by `auto` on the CPU
# CUDA, ASSUMED until a GPU measures them (docs/measurements.md): the captured step's speed-up over eager for the
# paper_layouts candidates at batch 32 (bench_throughput's `capture_ratio=`; eager is launch-bound there, about 1 ms
# of host work for a step the GPU does in well under that) and what capturing costs beyond its eager warm-up
# steps: one recording, tens of milliseconds for these models, so the planner captures what the run captures (runs
# of more than a few dozen steps; the run itself captures from capture.MIN_STEPS).
CUDA_CAPTURE_SPEEDUP = 3.0
CUDA_CAPTURE_S = 0.05
PROBE_STEPS = 4  # eager steps timed (after one warm-up step) before `compile: auto` decides
_RECOMPILE_LIMIT = 64  # dynamo graphs kept per code object (timm blocks are shared by every candidate)
_COMPILED: dict[tuple, float] = {}  # (device type, model signature) -> measured compile seconds, this process


def signature(model: nn.Module) -> tuple:
    """What makes two models share compiled graphs: their class and every parameter's name and shape."""
    return (type(model).__qualname__, tuple((n, tuple(p.shape)) for n, p in model.named_parameters()))


def step_priors(device_type: str, sig: tuple, compile_setting: str) -> tuple[float, float]:
    """(seconds it costs, eager / faster step time) of how a run with `compile_setting` ("auto", "True") speeds up
    here, for the planner: CUDA captures (and compiles first under "True"), the CPU compiles."""
    if device_type == "cuda":
        cost = CUDA_CAPTURE_S + (compile_cost(device_type, sig) if compile_setting == "True" else 0.0)
        return cost, CUDA_CAPTURE_SPEEDUP
    return compile_cost(device_type, sig), SPEEDUP_PRIOR.get(device_type, SPEEDUP_PRIOR["cpu"])


def compile_cost(device_type: str, sig: tuple) -> float:
    """Seconds a compile of `sig` is expected to take here: measured in this process, else the prior."""
    return _COMPILED.get((device_type, sig), COMPILE_PRIOR_S.get(device_type, COMPILE_PRIOR_S["cpu"]))


def worth_compiling(
    steps_left: int, eager_step_s: float, compile_s: float, speedup: float, runs: int = 1, cached_s: float = 0.0
) -> bool:
    """Whether compiling now saves time over this run and `runs - 1` more like it (each paying `cached_s`)."""
    saved = max(1, runs) * steps_left * eager_step_s * (1 - 1 / speedup)
    return saved > compile_s + (max(1, runs) - 1) * cached_s


class AutoCompile:
    """`compile: auto` for one run of `runs` the study plans for its architecture: time PROBE_STEPS eager
    steps after a warm-up, then decide once."""

    def __init__(self, model: nn.Module, device: torch.device, total: int, runs: int = 1):
        self.device, self.total, self.sig, self.runs = device, total, signature(model), runs
        self.eager_s: float | None = None
        self.seen, self.spent, self.decided = 0, 0.0, False

    def tick(self) -> float:
        """A timestamp for the step about to run: on CUDA wall time (synced only while probing); elsewhere this
        process's CPU time per intra-op thread, so that load from other processes, which slows a compile as much
        as a step, does not make the steps look slower than the compile prior (see the module docstring)."""
        import torch

        if self.device.type != "cuda":
            return time.process_time() / max(1, torch.get_num_threads())
        if not self.decided:
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
        cost, cached = compile_cost(kind, self.sig), _CACHED_PRIOR_S.get(kind, _CACHED_PRIOR_S["cpu"])
        speedup = SPEEDUP_PRIOR.get(kind, SPEEDUP_PRIOR["cpu"])
        return worth_compiling(self.total - self.seen, self.eager_s, cost, speedup, self.runs, min(cached, cost))

    def compiled(self, first_step_s: float) -> None:
        """Record what the first compiled step cost beyond an eager one: this architecture's compile time here."""
        _COMPILED[(self.device.type, self.sig)] = max(0.0, first_step_s - (self.eager_s or 0.0))


def compile_cache_dir() -> Path:
    """The folder of torch's persistent compile caches that every worker shares: TORCHINDUCTOR_CACHE_DIR when
    the user set it, else `inductor` beside the workers cache (torch's default is a per-user temp folder)."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    given = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if given and os.path.abspath(given) != os.path.abspath(default_cache_dir()):  # torch writes its default back
        return Path(given)
    return _cache_file().parent / "inductor"


def configure_dynamo() -> None:
    """Keep a compiled graph per architecture (timm's block code is shared) and turn on the persistent caches.

    Sets TORCHINDUCTOR_CACHE_DIR to `compile_cache_dir()` (torch reads it at each cache access), so worker
    processes started after this inherit the same folder.
    """
    import torch._dynamo
    import torch._functorch.config
    import torch._inductor.config

    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, _RECOMPILE_LIMIT)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(compile_cache_dir())
    torch._inductor.config.fx_graph_cache = True
    torch._functorch.config.enable_autograd_cache = True


def regions(model: nn.Module) -> list[nn.Module]:
    """The blocks to compile one by one: the children of every Sequential / ModuleList whose children are all
    blocks (modules with submodules, not lists themselves), e.g. a stage's blocks; never nested."""
    from torch import nn

    lists = (nn.Sequential, nn.ModuleList)
    kids = list(model.children())
    is_block = [not isinstance(m, lists) and any(True for _ in m.children()) for m in kids]
    if isinstance(model, lists) and kids and all(is_block):
        return kids
    return [block for m in kids for block in regions(m)]


def compile_model(model: nn.Module, device: torch.device) -> tuple[nn.Module, str]:
    """(the module to train, mode): CUDA: the whole model, "compiled" (a run captures it: training.capture); else
    its `regions` compiled in place, "regional" (the whole model, "compiled", when it has no regions)."""
    import torch

    configure_dynamo()
    if device.type == "cuda":
        # torch.compile of a Module returns an OptimizedModule (a Module); its stub says Callable
        return torch.compile(model, dynamic=False), "compiled"  # type: ignore[return-value]
    blocks = regions(model)
    if not blocks:
        return torch.compile(model, dynamic=False), "compiled"  # type: ignore[return-value]  # as above
    for block in blocks:
        block.compile(dynamic=False)
    return model, "regional"


def uncompile(model: nn.Module) -> None:
    """Undo `compile_model`'s in-place regional compile (the blocks run eagerly again)."""
    for block in regions(model):
        block._compiled_call_impl = None


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


_GPU_WORKER_MB = 6144  # GPU memory a training process may take: context, data, model, 2,048-image eval batches, graphs
_GPU_WORKER_CORES = 2  # host cores a GPU process needs: its Python loop, and its share of compile threads
GPU_PROCESSES_MAX = 8  # processes per GPU: more only add contexts to time-slice


def cuda_processes(gpus: int, gpu_mb: float, cores: int, trials: int) -> int:
    """How many training processes `--workers auto` runs on `gpus` GPUs of `gpu_mb` MB each (the smallest) and
    `cores` host cores, for `trials` trials left: per GPU as many as its memory holds at _GPU_WORKER_MB each (at
    most GPU_PROCESSES_MAX), in all at most one per _GPU_WORKER_CORES cores and one per trial; at least one."""
    per_gpu = max(1, min(GPU_PROCESSES_MAX, int(gpu_mb // _GPU_WORKER_MB)))
    return max(1, min(per_gpu * max(1, gpus), cores // _GPU_WORKER_CORES, trials))


def cuda_workers(trials: int, device: torch.device, cores: int | None = None) -> tuple[int, int, str]:
    """(processes, threads each, a note line) for `--workers auto` on CUDA: `cuda_processes` of this machine's
    GPUs (only the named one for cuda:N) and cores; the note says whether MPS runs."""
    import torch

    cores = cores or os.cpu_count() or 1
    ids = [device.index] if device.index is not None else list(range(torch.cuda.device_count()))
    mb = min(torch.cuda.get_device_properties(i).total_memory for i in ids) / 2**20
    procs = cuda_processes(len(ids), mb, cores, trials)
    threads = max(1, cores // procs)
    mps = "MPS running: their kernels run at once"
    if not mps_running():
        mps = "MPS not running: they time-slice each GPU (`nvidia-cuda-mps-control -d` lets kernels run at once)"
    note = (f"workers auto: {procs} process(es) x {threads} thread(s) on {len(ids)} GPU(s) of {mb / 1024:.0f} GiB "
            f"and {cores} cores; {mps}")  # fmt: skip
    return procs, threads, note


def mps_running() -> bool:
    """Whether an NVIDIA MPS control daemon is running for this user: its pipe folder holds a `control` pipe."""
    folder = os.environ.get("CUDA_MPS_PIPE_DIRECTORY") or "/tmp/nvidia-mps"
    return os.path.exists(os.path.join(folder, "control"))


def worker_device(name: str, stream: int, count: int | None = None) -> str:
    """The device worker number `stream` trains on: for "cuda" or "auto" on a machine with `count` GPUs (None: this
    machine's), `cuda:{stream % count}`, so the workers spread over the GPUs; any other name as given."""
    if name not in ("cuda", "auto"):
        return name
    if count is None:
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return f"cuda:{stream % count}" if count > 0 else name


def set_worker_threads(threads: int) -> None:
    """A worker process's intra-op threads and torch.compile's compile threads: its share of the cores (inductor
    would otherwise start a compile pool as large as the machine in every worker)."""
    import sys

    import torch

    torch.set_num_threads(threads)
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(threads)  # read when inductor's config is first imported
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.compile_threads = threads  # type: ignore[attr-defined]


def spawned_threads(processes: int, threads: int | None) -> int:
    """Intra-op threads of each of `processes` spawned workers: `threads` when given, else the cores shared out
    evenly. The run's spawned workers and the planner's spawned timing pilots both size themselves by it, so the
    pilot times what the run will do."""
    return threads or max(1, (os.cpu_count() or 1) // max(1, processes))


def _cache_file() -> Path:
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
    path, key = _cache_file(), machine_key(cores)
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


_CACHE_MAX = 1_000_000  # bytes of workers.json (an entry per machine is about 200)


def _read_cache(path: Path) -> tuple[dict, str]:
    """The cache file's mapping and "" , or {} and why it cannot be used ({} and "" when there is none).

    Read through the bounded reader (coatsearch.fsafe): a link, a FIFO, a device, a huge or deeply nested file is
    a reason, never a hang or a MemoryError."""
    from coatsearch import fsafe
    from coatsearch.errors import UserError

    if not os.path.lexists(path):
        return {}, ""
    try:
        return fsafe.read_json(path, limit=_CACHE_MAX), ""
    except UserError as exc:
        return {}, str(exc).removeprefix(f"{path}: ")


def _cached_rates(entry: object, cores: int) -> dict[int, float] | None:
    """A cached entry as {threads: rate}, or None when it is missing or of the wrong shape for `cores` cores."""
    if not isinstance(entry, dict) or not entry:
        return None
    try:
        rates = {int(t): float(r) for t, r in entry.items()}
    except (TypeError, ValueError):
        return None
    ok = all(1 <= t <= cores and cores % t == 0 and math.isfinite(r) and r > 0 for t, r in rates.items())
    return rates if ok else None
