"""Command line: show | plan | run | enumerate | replicate | report | status | export | replay | repair | dashboard."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from coatsearch import cli_replication
from coatsearch.api import EFFECT_MAX, ENGINES, FORMATS, PILOT_SEEDS_MAX, TRIALS_MAX, WORKERS_MAX, Status
from coatsearch.cli_types import REPORTS, STUDIES, Parser
from coatsearch.cli_types import argtype as _type
from coatsearch.cli_types import bounded as _bounded
from coatsearch.cli_types import workers as _workers
from coatsearch.errors import UserError
from coatsearch.version import __version__
from coatsearch.vocab import numbers

RAY_FLAGS = ("address", "cpus_per_trial", "gpus_per_trial")  # flags only the Ray backend reads


def main(argv: list[str] | None = None) -> int:
    """Entry point; bad input prints one line and exits 2, never a traceback."""
    args = _parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except UserError as exc:
        return _fail(f"error: {exc}", 2)
    except KeyboardInterrupt:
        return _fail("interrupted; rerun the same command to resume", 130)
    except OSError as exc:  # a disk full, a permission denied: the machine's state, not a bug
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"error: {where}{exc.strerror or exc}", 2)
    except Exception as exc:  # a bug: one line, the traceback on request
        if os.environ.get("COATSEARCH_DEBUG"):
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        hint = "(run with COATSEARCH_DEBUG=1 for the traceback)"
        return _fail(f"internal error: {type(exc).__name__}: {first} {hint}", 1)


def _fail(message: str, code: int) -> int:
    """Print one line to stderr and return the exit status."""
    print(f"coatsearch: {' '.join(message.split())}", file=sys.stderr)
    return code


_Parser = Parser  # argparse, but an error is one line: the benchmarks parse with it too


_positive = _type(numbers.parse_real)  # an argparse type: a finite number > 0
_effect = _type(lambda text: numbers.parse_real(text, 0.0, EFFECT_MAX))  # points: > 0 and <= EFFECT_MAX


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="coatsearch", description=__doc__)
    p.add_argument("--version", action="version", version=f"coatsearch {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    show = sub.add_parser("show", help="list a space's candidates, counted and matched to the budget")
    show.add_argument("space", type=Path)
    show.add_argument("--profile", default="default")
    show.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    show.add_argument("--candidate", metavar="NAME", help="print this candidate's module tree")
    show.add_argument("--all", action="store_true", help="list every architecture a searched candidate holds")
    show.add_argument("--trial", type=_bounded(0, TRIALS_MAX), help="SPACE is a study: print trial N's model")
    show.add_argument("--studies-dir", type=Path, default=STUDIES)
    show.set_defaults(func=_show)

    _plan_command(sub)

    run = sub.add_parser("run", help="train and score every candidate of a space (resumes)")
    run.add_argument("space", type=Path)
    run.add_argument("--study", help="study name (default: the space's name, plus -PROFILE unless default)")
    run.add_argument("--profile", default="default", help="quick | default | full, as the space defines")
    run.add_argument(
        "--trials", type=_bounded(1, TRIALS_MAX), help=f"run at most this many trials now (1..{TRIALS_MAX})"
    )
    run.add_argument(
        "--workers",
        type=_workers,
        help=f"worker processes (optuna backend; 1..{WORKERS_MAX}, or auto: processes x threads from a short "
        "probe, cached per machine; the default)",
    )
    run.add_argument("--backend", choices=ENGINES, default="optuna")
    run.add_argument("--address", help="ray: cluster address (auto | HOST:PORT); none starts a local Ray")
    run.add_argument("--cpus-per-trial", type=_positive, default=None, help="ray: CPUs per trial")
    run.add_argument("--gpus-per-trial", type=_positive, default=None, help="ray: GPUs per trial")
    run.add_argument("--device", default="auto", help="auto (CUDA when available) | cpu | cuda | cuda:N")
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
    help_log = "track each trial live in <study>/tensorboard or <study>/mlruns (extras; default: the space's log:)"
    run.add_argument("--log", choices=("none", "tensorboard", "mlflow"), help=help_log)
    run.set_defaults(func=_run)

    enum = sub.add_parser("enumerate", help="measure every network of a finite searched space once per seed")
    enum.add_argument("space", type=Path)
    enum.add_argument("--profile", default="default", help="quick | default | full, as the space defines")
    enum.add_argument("--study", help="study name (default: the space's name, plus -PROFILE, plus -enumerate)")
    enum.add_argument("--workers", type=_workers, help="worker processes (as for run; default auto)")
    enum.add_argument("--device", default="auto", help="auto (CUDA when available) | cpu | cuda | cuda:N")
    enum.add_argument("--studies-dir", type=Path, default=STUDIES)
    enum.add_argument("--reports-dir", type=Path, default=REPORTS)
    enum.add_argument("--no-report", action="store_true", help="do not write the report at the end")
    enum.add_argument("--quiet", action="store_true", help="no progress bars")
    enum.set_defaults(func=_enumerate)

    _study_commands(sub)
    cli_replication.add_command(sub)
    return p


def _enumerate(args: argparse.Namespace) -> int:
    """`run` with the space set to its grid of every point once per seed (cli_search.enumerated)."""
    from coatsearch import api
    from coatsearch.cli_search import enumerated

    space = enumerated(api.load_space(args.space, args.profile), str(args.space))
    profile = "" if args.profile == "default" else f"-{args.profile}"
    res = api.run(space, args.study or f"{space.name}{profile}-enumerate", "optuna", args.workers or "auto",
                  args.device, studies_dir=args.studies_dir, reports_dir=args.reports_dir,
                  report=not args.no_report, progress=not args.quiet, plan_first=False)  # fmt: skip
    print(f"study {res.study}: {res.complete} trained of {res.planned} planned points (a point whose network was "
          f"measured on its seed reuses it); {res.seconds:.0f} s; storage {res.storage}")  # fmt: skip
    if res.report is not None:
        print(f"report: {res.report}")
    return 0


def _plan_command(sub: argparse._SubParsersAction) -> None:
    """`coatsearch plan`: time, memory, power and regime per claim, from a short pilot, before a study runs."""
    plan = sub.add_parser("plan", help="size a study before it runs: time, memory, power and regime per claim")
    plan.add_argument("space", type=Path)
    plan.add_argument("--profile", default="default", help="quick | default | full, as the space defines")
    plan.add_argument("--study", help="study name (default: as `run` names it); its earlier runs give the noise")
    plan.add_argument("--budget", help="wall-time budget, e.g. 30m, 1h30m, 90s: the most seeds that fit")
    plan.add_argument("--workers", type=_workers, default="auto", help=f"1..{WORKERS_MAX} or auto (as `run`)")
    plan.add_argument("--effect", type=_effect, help="a difference in points: the seeds it needs, per claim")
    plan.add_argument(
        "--pilot-seeds",
        type=_bounded(0, PILOT_SEEDS_MAX),
        default=0,
        help=f"run this many seeds first for the noise (0..{PILOT_SEEDS_MAX})",
    )
    plan.add_argument("--device", default="auto", help="auto (CUDA when available) | cpu | cuda | cuda:N")
    plan.add_argument("--studies-dir", type=Path, default=STUDIES)
    plan.add_argument("--reports-dir", type=Path, default=REPORTS)
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument(
        "--register", action="store_true", help="write the study's registered analysis now (as `run` does first)"
    )
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
    )
    print(json.dumps(made.as_dict(), indent=1) if args.json else render(made))
    return 0


def _study_commands(sub: argparse._SubParsersAction) -> None:
    """The commands that read an existing study: report, status, export, repair, dashboard."""
    report = _study_parser(sub, "report", "write reports/<study>/report.md and figures from the storage", _report)
    report.add_argument("--reports-dir", type=Path, default=REPORTS)
    replay = _study_parser(sub, "replay", "replay samplers on a study that measured every architecture", _replay)
    replay.add_argument("--sampler", default="random,tpe", help="comma-separated: random, tpe, gp")
    replay.add_argument("--table", type=Path, help="an exported table (`export --format csv`) instead of the study")
    replay.add_argument("--space", type=Path, help="with --table: the space file the exported study ran")
    replay.add_argument("--trials", type=_bounded(1, 10_000), default=20)
    replay.add_argument("--repeats", type=_bounded(2, 1_000), default=50)
    replay.add_argument(
        "--pruner", help="comma-separated: sha, hyperband: random search with it on the learning curves"
    )
    help_note = "also save the report as the study's optuna-dashboard note (the only journal write of a report)"
    report.add_argument("--note", action="store_true", help=help_note)
    _study_parser(sub, "status", "trial counts by state, planned total and time left (no dashboard)", _status)
    export = _study_parser(sub, "export", "write the study's results table (one row per trial)", _export)
    export.add_argument("--format", choices=FORMATS, default="csv")
    export.add_argument("--out", type=Path, help="output file (default: STUDY.FORMAT)")
    help_best = "with --format yaml or timm: the K best architectures"
    export.add_argument("--best", type=_bounded(1, TRIALS_MAX), help=help_best)
    export.add_argument(
        "--save-weights",
        action="store_true",
        help="with --best: retrain each on its best trial's seed and save its weights (safetensors) beside --out",
    )
    export.add_argument("--device", default="cpu", help="with --save-weights or --format timm: the retrain's device")
    help_repair = "keep a damaged journal's complete records, move the damaged tail aside"
    _study_parser(sub, "repair", help_repair, _repair)
    dash = _study_parser(sub, "dashboard", "serve optuna-dashboard on a study's storage", _dashboard)
    dash.add_argument("--host", default="127.0.0.1")
    dash.add_argument("--port", type=_bounded(1, 65535), default=8080)
    dash.add_argument("--allow-writes", action="store_true", help="let the dashboard edit the study (warns)")


def _study_parser(
    sub: argparse._SubParsersAction, name: str, help_text: str, func: Callable[[argparse.Namespace], int]
) -> argparse.ArgumentParser:
    """A subcommand that takes a STUDY name and --studies-dir, running `func`."""
    cmd = sub.add_parser(name, help=help_text)
    cmd.add_argument("study")
    cmd.add_argument("--studies-dir", type=Path, default=STUDIES)
    cmd.set_defaults(func=func)
    return cmd


def _show(args: argparse.Namespace) -> int:
    from coatsearch import api
    from coatsearch.budget.prepare import row
    from coatsearch.cli_search import show_search, show_trial

    if args.trial is not None:
        print(show_trial(str(args.space), args.trial, args.studies_dir))
        return 0
    space = api.load_space(args.space, args.profile)
    if args.candidate:
        try:
            cand = space.candidate(args.candidate)
        except KeyError as exc:
            raise UserError(f"{args.space}: {exc.args[0]}") from None
        print(cand.build())
        return 0
    rows = [row(c.prepared) for c in space.candidates]
    print(json.dumps(rows, indent=2) if args.json else _table(rows))
    if not args.json and (found := show_search(space, args.all)):
        print(f"\n{found}")
    return 0


def _table(rows: list[dict]) -> str:
    head = ["name", "layout", "stem", "stages (type depth x width / stride)", "T tokens", "params", "MACs"]
    head += ["MACs err", "params err", "mult", "growth/depth"]
    body = [
        [
            r["name"],
            r["layout"],
            r["stem"],
            r["stages"],
            ",".join(r["tokens"]) or "-",
            f"{r['params'] / 1e6:.3f}M",
            f"{r['macs'] / 1e6:.2f}M",
            _pct(r["error"]),
            _pct(r.get("params_error")),
            f"{r['multiplier']:.3f}",
            ("-" if r.get("knob") is None else f"{r['knob']:.3f}")
            + ("" if r["ok"] else "  NOT MATCHED: " + r["reason"]),
        ]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip() for line in [head, *body]]
    budget = next((r for r in rows if r["budget_macs"]), None)
    if budget:
        params = f", {budget['budget_params'] / 1e6:.3f}M params" if budget.get("budget_params") else ""
        lines.append(f"budget: {budget['budget_macs'] / 1e6:.2f}M MACs (multiply-adds per image){params}")
    return "\n".join(lines)


def _pct(error: float | None) -> str:
    """A relative error as '+1.2%', '-' when there is none (no budget, or no params target)."""
    return "-" if error is None else f"{error:+.1%}"


def _run(args: argparse.Namespace) -> int:
    from coatsearch import api

    _check_backend_flags(args)
    space = api.load_space(args.space, args.profile)
    res = api.run(
        space,
        args.study,
        args.backend,
        args.workers or "auto",
        args.device,
        trials=args.trials,
        studies_dir=args.studies_dir,
        reports_dir=args.reports_dir,
        report=not args.no_report,
        progress=not args.quiet,
        address=args.address,
        cpus_per_trial=args.cpus_per_trial,
        gpus_per_trial=args.gpus_per_trial,
        force_new_space=args.force_new_space,
        plan_first=not args.no_plan,
        log=args.log,
    )
    print(
        f"study {res.study}: {res.complete} complete, {res.failed} failed, {res.pruned} pruned "
        f"of {res.planned} planned; {res.ran_now} ran now in {res.seconds:.0f} s; storage {res.storage}"
    )
    if res.report is not None:
        print(f"report: {res.report}")
    return 0


def _check_backend_flags(args: argparse.Namespace) -> None:
    """A flag the chosen backend would ignore is an error, not a silent no-op (api.check_backend_args)."""
    from coatsearch import api

    api.check_backend_args(args.backend, args.workers, {f: getattr(args, f) for f in RAY_FLAGS}, cli=True)


def _report(args: argparse.Namespace) -> int:
    from coatsearch import api

    print(api.write_report(args.study, args.studies_dir, args.reports_dir, note=args.note).markdown)
    return 0


def _status(args: argparse.Namespace) -> int:
    from coatsearch import api

    print(status_text(api.status(args.study, args.studies_dir)))
    return 0


def status_text(st: Status) -> str:
    """What `coatsearch status` prints: counts by state, planned total and the ETA."""
    from coatsearch.planner.text import duration

    planned = "?" if st.planned is None else str(st.planned)
    lines = [
        f"study {st.study}: {st.complete} completed, {st.failed} failed, {st.pruned} pruned, "
        f"{st.running} running, {st.waiting} waiting of {planned} planned"
        + (f" ({st.interrupted} interrupted, to rerun)" if st.interrupted else ""),
    ]
    if st.predicted_s is not None:
        left = "" if st.plan_eta_s is None else f", {duration(st.plan_eta_s)} of it left"
        lines.append(f"plan: predicted {duration(st.predicted_s)} for the whole study{left}")
    if st.mean_wall_s is None:
        lines.append("ETA: unknown (no completed trial yet)" if st.plan_eta_s is None else
                     f"ETA {duration(st.plan_eta_s)} (from the plan; no completed trial yet)")  # fmt: skip
    elif st.eta_s is None:
        lines.append(f"mean trial {st.mean_wall_s:.0f} s; ETA unknown (the study's space cannot be read)")
    else:
        workers = max(1, st.running)
        lines.append(
            f"remaining {st.remaining} trials, mean trial {st.mean_wall_s:.0f} s: "
            f"ETA {duration(st.eta_s)} at {workers} worker{'s' if workers > 1 else ''}"
        )
    return "\n".join(lines)


def _export(args: argparse.Namespace) -> int:
    from coatsearch import api

    print(api.export(args.study, args.format, args.out, args.studies_dir, args.best, args.save_weights, args.device))
    return 0


def _replay(args: argparse.Namespace) -> int:
    from coatsearch.analysis import replay

    samplers = replay.check_samplers(args.sampler.split(","))  # before any file is read
    if (args.table is None) != (args.space is None) or (args.table is not None and args.pruner):
        raise UserError("--table goes with --space (an exported table and its space file), without --pruner")
    if args.table is not None:
        measured = replay.table_from_csv(args.space, args.table)
    else:
        measured = replay.table(args.study, args.studies_dir)
    curves = replay.replay(measured, samplers, args.trials, args.repeats)
    print(replay.text(curves))
    if args.pruner:
        from coatsearch.analysis import fidelity

        table = fidelity.curves_of(args.study, args.studies_dir)
        found = [
            fidelity.measure(table, p, args.trials, args.repeats, measured.maximize) for p in args.pruner.split(",")
        ]
        print(fidelity.text(found))
    return 0


def _repair(args: argparse.Namespace) -> int:
    from coatsearch import api

    done = api.repair(args.study, args.studies_dir)
    if done.backup is None and not done.blank:
        print(f"{done.journal}: {done.records} records, no damage found; nothing changed")
        return 0
    moved = f"; moved {done.moved} damaged line(s) to {done.backup}" if done.backup else ""
    blank = f"; dropped {done.blank} empty line(s)" if done.blank else ""
    print(f"{done.journal}: kept {done.records} complete records{moved}{blank}")
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    from coatsearch.dashboard import serve

    serve(args.study, args.studies_dir, args.host, args.port, args.allow_writes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
