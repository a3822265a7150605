"""The phases of benchmarks/gpu_check.sh, one subcommand each, every line flushed as it is measured.

    python -u benchmarks/gpu_check.py preflight|tests|throughput|capture|study|summary [--dry-run] [--work DIR]

preflight: one line and exit 2 when a carried folder (.whl/, .data/fashion-mnist/) or an import is missing, or
  CUDA is not there; else the versions (torch, CUDA, cuDNN, triton, timm, optuna, pydantic), the GPU and whether
  MPS runs.
tests: the CUDA tests (tests/training/test_cuda.py) but the full-shape ones, which `capture` runs with its figures.
throughput: bench_throughput on THROUGHPUT candidates at the `full` profile's batch, eager against captured.
capture: real paper_layouts candidates at the `full` shapes for CAPTURE_STEPS steps through training.fit: ViT_REL
  captured (`compile: auto`), C-T-T-T compiled and captured (`compile: true`); asserts each ran as asked with no
  fallback and no CUDA-graph skip, and that the rel-pos bias gradient of the default attention kernel matches
  the MATH kernel's (RELPOS_TOL).
study: a smoke study, `coatsearch run spaces/paper_layouts.yaml --profile quick --device cuda --workers auto
  --no-plan --trials STUDY_TRIALS`, timed.
summary: the study's trials from their nested records (coatsearch.api.results): device, worker, wall time,
  compile modes, fallbacks, and the aggregate: processes per GPU, trained images per second over the study.

`--dry-run` (CPU, CI) checks each phase's arguments and inputs and runs nothing on a GPU. A SIGTERM (the phase's
time limit) ends a phase with what it measured so far.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPACE = ROOT / "spaces" / "paper_layouts.yaml"
CARRIED = {".whl": "optuna and its dependencies as cp312 wheels (docs/measurements.md#the-gpu-check)",
           ".data/fashion-mnist": "the four Fashion-MNIST IDX files"}  # fmt: skip
IMPORTS = ("torch", "triton", "timm", "optuna", "pydantic", "pandas", "sqlalchemy", "coatsearch")
THROUGHPUT = ("C-T-T-T", "ViT_REL", "C-C-T-T")
CAPTURE = (("ViT_REL", "auto", "captured"), ("C-T-T-T", True, "compiled+captured"))  # name, compile, mode expected
CAPTURE_STEPS = 20
RELPOS_TOL = 0.05  # relative L2 difference of rel-pos bias gradients, default kernel vs MATH (bf16 autocast)
STUDY = "paper_layouts-quick"
STUDY_TRIALS = 8


def say(*parts: Any) -> None:
    """Print one line now."""
    print(*parts, flush=True)


def stop(why: str) -> None:
    """The one line a failed preflight prints; exit 2."""
    say(f"gpu_check: stop: {why}")
    sys.exit(2)


# ------------------------------------------------------------------------------------------------- preflight


def missing_carried(root: Path = ROOT) -> list[str]:
    """The carried folders that are absent or incomplete under `root` (what each should hold)."""
    out = []
    if not any((root / ".whl").glob("*.whl")):
        out.append(f".whl/ ({CARRIED['.whl']})")
    from coatsearch.training.data import FASHION_FILES, _find_idx

    folder = root / ".data" / "fashion-mnist"
    if any(_find_idx(folder, stem) is None for split in FASHION_FILES.values() for stem in split):
        out.append(f".data/fashion-mnist/ ({CARRIED['.data/fashion-mnist']})")
    return out


def versions() -> dict[str, str]:
    """Versions of what the GPU phases use ("absent" for a library that does not import)."""
    import torch

    out = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": str(torch.version.cuda),
           "cudnn": str(torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None)}  # fmt: skip
    for lib in ("triton", "timm", "optuna", "pydantic"):
        try:
            out[lib] = getattr(importlib.import_module(lib), "__version__", "?")
        except ImportError:
            out[lib] = "absent"
    return out


def preflight(dry: bool) -> None:
    """Stop with one line on a missing carried folder, import or GPU; else print versions and the GPU."""
    lost = missing_carried()
    for lib in IMPORTS:
        try:
            importlib.import_module(lib)
        except ImportError as exc:
            lost.append(f"import {lib} ({exc})")
    import torch

    if not torch.cuda.is_available():
        lost.append("CUDA (torch.cuda.is_available() is False)")
    say(" ".join(f"{k} {v}" for k, v in versions().items()))
    if dry:
        say(f"preflight (dry run): a GPU run would stop on: {'; '.join(lost) or 'nothing'}")
        return
    if lost:
        stop("missing " + "; ".join(lost))
    from coatsearch.training.tuning import mps_running

    p, mps = torch.cuda.get_device_properties(0), "running" if mps_running() else "not running"
    say(f"gpu {p.name}, {p.total_memory / 2**30:.0f} GiB, {p.multi_processor_count} SMs, "
        f"{torch.cuda.device_count()} device(s), {os.cpu_count()} cores; MPS {mps}")  # fmt: skip


# ------------------------------------------------------------------------------------------------- phases


def tests(dry: bool, work: Path) -> int:
    """The CUDA tests but the full-shape ones (and Ray's: its wheel is not carried); collected only in a dry run."""
    import pytest

    args = ["-q", "tests/training/test_cuda.py", "-k", "not ray and not full_shapes", "-p", "no:cacheprovider"]
    if dry:
        return int(pytest.main([*args, "--collect-only"]))
    return int(pytest.main([*args, "-x", "--basetemp", str(work / "pytest")]))


def throughput(dry: bool) -> None:
    """bench_throughput: THROUGHPUT candidates, eager against captured, at the full profile's batch."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_throughput

    modes = "channels_last,captured+channels_last"
    args = ["--device", "cuda", "--profile", "full", "--candidates", ",".join(THROUGHPUT), "--modes", modes]
    bench_throughput.main(args + (["--dry-run"] if dry else []))


def full_shapes(name: str, compile_setting: bool | str, device: Any, steps: int = CAPTURE_STEPS,
                profile: str = "full", space: Path = SPACE) -> dict[str, Any]:  # fmt: skip
    """Train candidate `name` of `space`'s `profile` for `steps` steps at its shapes and recipe (synthetic images,
    two epochs, a padded evaluation after each) with `compile_setting`; what it ran as and how fast."""
    import torch
    from torch._dynamo.utils import counters

    from coatsearch.budget.prepare import prepare
    from coatsearch.models import build
    from coatsearch.space.objects import load_space
    from coatsearch.training import fit
    from coatsearch.training.data import TensorData

    cand = load_space(space, profile).candidate(name)
    spec, optim = prepare(cand).model, dataclasses.replace(cand.resolve()[1], compile=compile_setting)
    n = max(1, steps // 2) * optim.batch_size

    def images(count: int, seed: int) -> TensorData:
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(count, spec.in_chans, spec.image_size, spec.image_size, generator=g)
        y = torch.randint(0, spec.num_classes, (count,), generator=g)
        return TensorData(x, y, tuple(range(spec.num_classes)))

    counters.clear()
    torch.manual_seed(0)
    start = time.perf_counter()
    h = fit.fit(build(spec), images(n, 0), images(optim.batch_size * 3 + 5, 1), optim, 2, seed=0, device=device,
                eval_every=max(1, steps // 2), measure_train=False)  # fmt: skip
    return {"candidate": name, "mode": h.compile_mode, "fallback": h.fallback, "steps": h.steps,
            "first_epoch_s": h.seconds[0], "img_s": h.images_per_s[-1], "wall_s": time.perf_counter() - start,
            "cudagraph_skips": counters["inductor"]["cudagraph_skips"],
            "graph_breaks": sum(counters["graph_break"].values()), "eval_loss": h.final_eval_loss}  # fmt: skip


def relpos_grad_error(model: Any, x: Any, y: Any) -> float:
    """Largest relative L2 difference between the rel-pos bias tables' gradients under the default attention
    kernels and under the MATH kernel (eval mode, so no dropout; the run's autocast); 1.0 for a kernel that
    leaves them without gradient."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from coatsearch.training.curves import autocast

    names = [n for n, _ in model.named_parameters() if "relative_position" in n or "rel_pos" in n]
    if not names:
        raise ValueError("the model has no rel-pos bias tables")
    model.eval()

    def grads(kernel: Any) -> dict[str, Any]:
        model.zero_grad(set_to_none=True)
        with kernel, autocast(x.device):
            loss = F.cross_entropy(model(x).float(), y)
        loss.backward()
        got = dict(model.named_parameters())
        return {n: got[n].grad.float().clone() if got[n].grad is not None else torch.zeros_like(got[n]) for n in names}

    default, math_ = grads(contextlib.nullcontext()), grads(sdpa_kernel([SDPBackend.MATH]))
    model.zero_grad(set_to_none=True)
    return max(float((default[n] - math_[n]).norm() / math_[n].norm().clamp_min(1e-12)) for n in names)


def capture(dry: bool) -> int:
    """The CAPTURE candidates at the full shapes; exit status 1 when one fell back, skipped or mismatched."""
    import torch

    from coatsearch.budget.prepare import prepare
    from coatsearch.models import build
    from coatsearch.space.objects import load_space

    space = load_space(SPACE, "full")
    bad = 0
    for name, setting, expected in CAPTURE:
        spec = prepare(space.candidate(name)).model
        if dry:
            tables = sum("relative_position" in n for n, _ in build(spec).named_parameters())
            say(f"capture (dry run): {name} compile={setting} -> {expected}, {tables} rel-pos tables: ok")
            continue
        dev = torch.device("cuda")
        got = full_shapes(name, setting, dev)
        torch.manual_seed(0)
        x = torch.randn(32, spec.in_chans, spec.image_size, spec.image_size, device=dev)
        y = torch.randint(0, spec.num_classes, (32,), device=dev)
        err = relpos_grad_error(build(spec).to(dev, memory_format=torch.channels_last), x, y)
        ok = got["mode"] == expected and got["fallback"] is None and got["cudagraph_skips"] == 0 and err < RELPOS_TOL
        bad += not ok
        say(f"{'ok  ' if ok else 'FAIL'} {name}: mode {got['mode']} (expected {expected}), fallback {got['fallback']}, "
            f"{got['steps']} steps, first epoch {got['first_epoch_s']:.1f} s (compile/capture), then "
            f"{got['img_s']:.0f} img/s; cudagraph_skips {got['cudagraph_skips']}, graph breaks {got['graph_breaks']}, "
            f"wall {got['wall_s']:.1f} s; rel-pos grad vs MATH {err:.2e} (tol {RELPOS_TOL})")  # fmt: skip
    return int(bad > 0)


def study_args(work: Path) -> list[str]:
    """The smoke study's `coatsearch` arguments."""
    return ["run", str(SPACE.relative_to(ROOT)), "--profile", "quick", "--device", "cuda", "--workers", "auto",
            "--trials", str(STUDY_TRIALS), "--no-plan", "--studies-dir", str(work / "studies"), "--no-report",
            "--quiet"]  # fmt: skip


def study(dry: bool, work: Path) -> int:
    """Run the smoke study (or, dry, parse its arguments and load its space); prints `study_s=`."""
    from coatsearch import api, cli

    args = study_args(work)
    if dry:
        cli._parser().parse_args(args)
        api.load_space(SPACE, "quick")
        say(f"study (dry run): coatsearch {' '.join(args)}: ok")
        return 0
    start = time.perf_counter()
    code = cli.main(args)
    say(f"study_s={time.perf_counter() - start:.1f} (exit {code})")
    return code


# ------------------------------------------------------------------------------------------------- summary


def summarize(studies: Path, name: str) -> list[str]:
    """Lines describing study `name`: one per trial, read from its nested record (coatsearch.api.results), then
    the aggregate: trials by state, processes and devices, study wall time, trained images and images/s."""
    from coatsearch import api
    from coatsearch.storage.store import storage_file

    if not storage_file(studies, name).exists():
        return [f"no study {name} under {studies}"]
    rows = api.results(name, studies)
    lines = []
    modes = [c for c in rows.columns if c.endswith(".compile")]
    falls = [c for c in rows.columns if c.endswith("compile_fallback")]
    steps = [c for c in rows.columns if c.endswith((".steps", ".pretrain_steps", ".finetune_steps"))]
    for r in rows.to_dict("records"):
        mode = " ".join(f"{c.split('.')[0]}={r[c]}" for c in modes if isinstance(r.get(c), str))
        fell = "; ".join(str(r[c]) for c in falls if isinstance(r.get(c), str))
        why = f" FAIL {r['fail_reason']}" if r.get("fail_reason") else ""
        lines.append(f"trial {r['number']} {r['candidate']} {r['state']} device {r.get('device')} pid "
                     f"{r.get('env.pid')} wall {_num(r.get('wall_s')):.1f} s {mode}"
                     + (f" FALLBACK {fell}" if fell else "") + why)  # fmt: skip
    done = rows[rows["state"] == "COMPLETE"]
    wall = (rows["complete"].max() - rows["start"].min()).total_seconds() if len(done) else float("nan")
    batch = rows["optim.batch_size"] if "optim.batch_size" in rows else 0
    images = float(sum((rows[c].fillna(0) * batch).sum() for c in steps)) if steps else 0.0
    states = rows["state"].value_counts().to_dict()
    devices = sorted(str(d) for d in rows["device"].dropna().unique()) if "device" in rows else []
    procs = int(rows["env.pid"].nunique()) if "env.pid" in rows else 0
    lines.append(f"trials {states}; processes {procs} on {', '.join(devices) or '?'}")
    lines.append(f"study_wall_s={wall:.1f} trained_images={images:.0f} (steps x the recipe's batch)")
    lines.append(f"aggregate_img_s={images / wall if wall and wall > 0 else float('nan'):.0f}")
    lines.append(f"processes_per_gpu={procs / max(1, len(devices)):.1f}")
    return lines


def _num(value: Any) -> float:
    """A number, or nan for a missing one."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return float("nan")
    return out if math.isfinite(out) else float("nan")


def summary(dry: bool, work: Path) -> None:
    """Print the smoke study's summary (a dry run reads whatever is under `work`, usually nothing)."""
    for line in summarize(work / "studies", STUDY):
        say(line)


# ------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    """Run one phase; its exit status."""
    from coatsearch.cli_types import Parser  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("phase", choices=("preflight", "tests", "throughput", "capture", "study", "summary"))
    ap.add_argument("--dry-run", action="store_true", help="check the phase's inputs on the CPU, run nothing")
    ap.add_argument("--work", default=os.environ.get("GPU_CHECK_WORK", "/tmp/coatsearch-gpu-check"),
                    help="caches, studies and temporary files (never the returned folder)")  # fmt: skip
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a time limit: unwind, print what was measured
    work, dry = Path(args.work), args.dry_run
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.phase == "preflight":
            preflight(dry)
        elif args.phase == "tests":
            return tests(dry, work)
        elif args.phase == "throughput":
            throughput(dry)
        elif args.phase == "capture":
            return capture(dry)
        elif args.phase == "study":
            return study(dry, work)
        else:
            summary(dry, work)
    except KeyboardInterrupt:
        say(f"{args.phase}: stopped by its time limit")
        return 124
    return 0


if __name__ == "__main__":
    sys.exit(main())
