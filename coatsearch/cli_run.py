"""The command line's commands that train: `plan`, `run` and `enumerate`, each its arguments beside its action."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from coatsearch.cli_types import REPORTS, STUDIES, argtype, bounded, workers
from coatsearch.vocab import numbers
from coatsearch.vocab.bounds import ALLOW_UNDECIDED, EFFECT_MAX, ENGINES, PILOT_SEEDS_MAX, TRIALS_MAX, WORKERS_MAX
from coatsearch.vocab.run_options import NAMES, RunOptions

_DEVICE_HELP = "auto (CUDA when available) | cpu | cuda | cuda:N"
_PROFILE_HELP = "quick | default | full, as the space defines"
_positive = argtype(numbers.parse_real)  # a finite number > 0
_effect = argtype(lambda text: numbers.parse_real(text, 0.0, EFFECT_MAX))  # points: > 0 and <= EFFECT_MAX


_ALLOW_HELP = "go on when the plan cannot decide a claim the profile declares it decides (`decides:`)"


def add_plan(sub: argparse._SubParsersAction) -> None:
    """`coatsearch plan`: time, memory, power and regime per claim, from a short pilot, before a study runs."""
    plan = sub.add_parser("plan", help="size a study before it runs: time, memory, power and regime per claim")
    plan.add_argument("space", type=Path)
    plan.add_argument("--profile", default="default", help=_PROFILE_HELP)
    plan.add_argument("--study", help="study name (default: as `run` names it); its earlier runs give the noise")
    plan.add_argument("--budget", help="wall-time budget, e.g. 30m, 1h30m, 90s: the most seeds that fit")
    plan.add_argument("--workers", type=workers, default="auto", help=f"1..{WORKERS_MAX} or auto (as `run`)")
    plan.add_argument("--effect", type=_effect, help="a difference in points: the seeds it needs, per claim")
    plan.add_argument(
        "--pilot-seeds",
        type=bounded(0, PILOT_SEEDS_MAX),
        default=0,
        help=f"run this many seeds first for the noise (0..{PILOT_SEEDS_MAX})",
    )
    plan.add_argument("--device", default="auto", help=_DEVICE_HELP)
    plan.add_argument("--studies-dir", type=Path, default=STUDIES)
    plan.add_argument("--reports-dir", type=Path, default=REPORTS)
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument(
        "--register", action="store_true", help="write the study's registered analysis now (as `run` does first)"
    )
    plan.add_argument(ALLOW_UNDECIDED, dest="allow_undecided", action="store_true", help=_ALLOW_HELP)
    plan.set_defaults(func=_plan)


def _plan(args: argparse.Namespace) -> int:
    from coatsearch import api
    from coatsearch.planner.text import render

    made = api.plan(
        args.space,
        args.study,
        args.workers,
        args.device,
        profile=args.profile,
        studies_dir=args.studies_dir,
        reports_dir=args.reports_dir,
        budget=args.budget,
        effect=args.effect,
        pilot_seeds=args.pilot_seeds,
        register=args.register,
        allow_undecided=args.allow_undecided,
    )
    print(json.dumps(made.to_json(), indent=1) if args.json else render(made))
    return 0


def add_run(sub: argparse._SubParsersAction) -> None:
    """`coatsearch run SPACE`: every planned trial not yet in the study, on the optuna or the Ray backend."""
    run = sub.add_parser("run", help="train and score every candidate of a space (resumes)")
    run.add_argument("space", type=Path)
    run.add_argument("--study", help="study name (default: the space's name, plus -PROFILE unless default)")
    run.add_argument("--profile", default="default", help=_PROFILE_HELP)
    run.add_argument(
        "--trials", type=bounded(1, TRIALS_MAX), help=f"run at most this many trials now (1..{TRIALS_MAX})"
    )
    run.add_argument(
        "--workers",
        type=workers,
        help=f"worker processes (optuna backend; 1..{WORKERS_MAX}, or auto: processes x threads from a short "
        "probe, cached per machine; the default)",
    )
    run.add_argument("--backend", choices=ENGINES, default="optuna")
    run.add_argument("--address", help="ray: cluster address (auto | HOST:PORT); none starts a local Ray")
    run.add_argument("--cpus-per-trial", type=_positive, default=None, help="ray: CPUs per trial")
    run.add_argument("--gpus-per-trial", type=_positive, default=None, help="ray: GPUs per trial")
    run.add_argument("--device", default="auto", help=_DEVICE_HELP)
    run.add_argument("--studies-dir", type=Path, default=STUDIES)
    run.add_argument("--reports-dir", type=Path, default=REPORTS)
    run.add_argument("--no-report", action="store_true", help="do not write the report at the end")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.add_argument(
        "--no-plan", action="store_true", help="start without the plan's pilot and ETA line (optuna backend)"
    )
    run.add_argument(
        "--force-new-space",
        action="store_true",
        help="the study was run with another version of this space: record this one and keep the old trials",
    )
    help_log = "track each trial live in <study>/tensorboard or MLflow (extras; default: the space's log:)"
    run.add_argument("--log", choices=("none", "tensorboard", "mlflow"), help=help_log)
    help_uri = "--log mlflow: the MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///<study>/mlflow.db)"
    run.add_argument("--tracking-uri", metavar="URI", help=help_uri)
    help_keep = "keep the final weights of the K best trials in <study>/weights/kept/ for export (default: keep_top:)"
    run.add_argument("--keep-top", type=bounded(0, TRIALS_MAX), metavar="K", help=help_keep)
    run.add_argument(ALLOW_UNDECIDED, dest="allow_undecided", action="store_true", help=_ALLOW_HELP)
    run.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    """`api.run`, which checks the backend's arguments (a refusal names the flags: cli.main)."""
    from coatsearch import api

    space = api.load_space(args.space, args.profile)
    res = api.run(space, run_options(args))
    print(
        f"study {res.study}: {res.complete} complete, {res.failed} failed, {res.pruned} pruned "
        f"of {res.planned} planned; {res.ran_now} ran now in {res.seconds:.0f} s; storage {res.storage}"
    )
    if res.report is not None:
        print(f"report: {res.report}")
    return 0


_NEGATED = {"report": "no_report", "progress": "quiet", "plan_first": "no_plan"}  # option -> the flag that turns it off


def run_options(args: argparse.Namespace, **fixed: Any) -> RunOptions:
    """The RunOptions of a command's flags: each flag whose destination is an option's name (unless None: the option's
    default), each `--no-X` flag its option's negation, then `fixed`. A new option is a field and a flag, no more."""
    given = {name: getattr(args, name) for name in NAMES if getattr(args, name, None) is not None}
    given |= {name: not getattr(args, flag) for name, flag in _NEGATED.items() if hasattr(args, flag)}
    return RunOptions(**(given | fixed))


def add_enumerate(sub: argparse._SubParsersAction) -> None:
    """`coatsearch enumerate SPACE`: every network of a finite searched space, once per seed."""
    enum = sub.add_parser("enumerate", help="measure every network of a finite searched space once per seed")
    enum.add_argument("space", type=Path)
    enum.add_argument("--profile", default="default", help=_PROFILE_HELP)
    enum.add_argument("--study", help="study name (default: the space's name, plus -PROFILE, plus -enumerate)")
    enum.add_argument("--workers", type=workers, help="worker processes (as for run; default auto)")
    enum.add_argument("--device", default="auto", help=_DEVICE_HELP)
    enum.add_argument("--studies-dir", type=Path, default=STUDIES)
    enum.add_argument("--reports-dir", type=Path, default=REPORTS)
    enum.add_argument("--no-report", action="store_true", help="do not write the report at the end")
    enum.add_argument("--quiet", action="store_true", help="no progress bars")
    enum.set_defaults(func=_enumerate)


def _enumerate(args: argparse.Namespace) -> int:
    """`run` with the space set to its grid of every point once per seed (cli_search.enumerated)."""
    from coatsearch import api
    from coatsearch.cli_search import enumerated
    from coatsearch.storage.paths import enumerate_name

    space = enumerated(api.load_space(args.space, args.profile), str(args.space))
    study = args.study or enumerate_name(space.name, space.profile)
    res = api.run(space, run_options(args, study=study, plan_first=False))
    print(f"study {res.study}: {res.complete} trained of {res.planned} planned points (a point whose network was "
          f"measured on its seed reuses it); {res.seconds:.0f} s; storage {res.storage}")  # fmt: skip
    if res.report is not None:
        print(f"report: {res.report}")
    return 0
