"""How many worker processes (and threads each) a study runs: the asked count capped by the trials left and the
available memory, or "auto" from a CPU probe (cached per machine) or, on CUDA, the GPU's memory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from coatsearch.vocab.bounds import TRIALS_MAX, WORKERS_MAX

if TYPE_CHECKING:
    from coatsearch.space.objects import Space

_WORKER_MB = 1024  # memory one training worker process needs at least (torch, data, one model), without a plan


def processes(space: Space, workers: int | str, trials: int | None, device: str, say: bool,
              done: int = 0) -> tuple[int, int | None]:  # fmt: skip
    """(processes, threads per process) for the optuna engine; "auto" probes the CPU (or reads the cached probe), or
    on CUDA sizes several processes per GPU from its memory and the host's cores (tuning.cuda_workers).

    Never more processes than trials left to run (planned minus the `done` ones, at most `trials`) nor than the
    available memory holds at _WORKER_MB each: a larger `workers` is lowered with a one-line note.
    """
    from coatsearch.storage.trials import plan as trials_of
    from coatsearch.training import tuning
    from coatsearch.training.fit import pick_device

    left = max(1, min(len(trials_of(space)) - done, trials or TRIALS_MAX))
    if workers != "auto":
        cap = min(left, memory_workers())
        if int(workers) > cap:
            why = f"{left} trial(s) left" if cap == left else f"memory for {cap} ({_WORKER_MB} MB each)"
            print(f"coatsearch: note: --workers {workers} lowered to {cap}: {why}", file=sys.stderr)
        return min(int(workers), cap), None
    dev = pick_device(device)
    if dev.type == "cuda":  # several processes share each GPU (tuning.cuda_workers)
        procs, threads, note = tuning.cuda_workers(left, dev)
        if say:
            print(f"coatsearch: {note}", file=sys.stderr)
        return procs, threads
    if dev.type != "cpu":  # one other accelerator: one process feeds it, with every core
        return 1, None
    choice = tuning.auto_workers(left)
    if say:
        print(choice.text(), file=sys.stderr)
    return choice.processes, choice.threads


def memory_workers() -> int:
    """How many _WORKER_MB workers the available memory (Linux MemAvailable) holds; WORKERS_MAX when unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return max(1, int(line.split()[1]) // 1024 // _WORKER_MB)
    except (OSError, ValueError, IndexError):
        pass
    return WORKERS_MAX
