"""The command line's commands that read existing studies: `report`, `answer`, `replay`, `status`, `export`, `repair`
and `dashboard`, each its arguments beside its action."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from coatsearch.cli_types import REPORTS, STUDIES, bounded
from coatsearch.errors import UserError
from coatsearch.runner.status import Status
from coatsearch.vocab.bounds import FORMATS, TRIALS_MAX
from coatsearch.vocab.samplers import replayable


def _study_parser(
    sub: argparse._SubParsersAction, name: str, help_text: str, func: Callable[[argparse.Namespace], int]
) -> argparse.ArgumentParser:
    """A subcommand that takes a STUDY name and --studies-dir, running `func`."""
    cmd = sub.add_parser(name, help=help_text)
    cmd.add_argument("study")
    cmd.add_argument("--studies-dir", type=Path, default=STUDIES)
    cmd.set_defaults(func=func)
    return cmd


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Every command of this module, in the order `coatsearch --help` lists them."""
    for add in (_add_report, _add_answer, _add_replay, _add_status, _add_export, _add_repair, _add_dashboard):
        add(sub)


def _add_report(sub: argparse._SubParsersAction) -> None:
    """`coatsearch report STUDY`: the Markdown report, its tables and figures, from the storage."""
    report = _study_parser(sub, "report", "write reports/<study>/report.md and figures from the storage", _report)
    report.add_argument("--reports-dir", type=Path, default=REPORTS)
    help_note = "also save the report as the study's optuna-dashboard note (the only journal write of a report)"
    report.add_argument("--note", action="store_true", help=help_note)
    help_history = "also read earlier looks at the claims from the git history of the reports folder's repository"
    report.add_argument("--history", action="store_true", help=help_history)


def _report(args: argparse.Namespace) -> int:
    from coatsearch import api

    print(
        api.write_report(args.study, args.studies_dir, args.reports_dir, note=args.note, history=args.history).markdown
    )
    return 0


def _add_answer(sub: argparse._SubParsersAction) -> None:
    """`coatsearch answer SPACE`: one page for the space, every claim from the study whose profile decides it."""
    what = "write reports/<space>/answer.md: every claim of a space from the study (profile) that decides it"
    answer = sub.add_parser("answer", help=what)
    answer.add_argument("space", type=Path, help="the space file whose profiles' reports to gather")
    answer.add_argument("--reports-dir", type=Path, default=REPORTS)
    answer.set_defaults(func=_answer)


def _answer(args: argparse.Namespace) -> int:
    from coatsearch import api

    path = api.write_answer(args.space, args.reports_dir)
    print(path.read_text(encoding="utf-8"), end="")
    print(f"answer page: {path}")
    return 0


def _add_replay(sub: argparse._SubParsersAction) -> None:
    """`coatsearch replay STUDY`: samplers (and pruners) replayed on a study that measured every architecture."""
    replay = _study_parser(sub, "replay", "replay samplers on a study that measured every architecture", _replay)
    names = ", ".join(replayable())  # the registered samplers that replay (vocab.samplers)
    replay.add_argument("--sampler", default="random,tpe", help=f"comma-separated: {names}")
    replay.add_argument("--table", type=Path, help="an exported table (`export --format csv`) instead of the study")
    replay.add_argument("--space", type=Path, help="with --table: the space file the exported study ran")
    replay.add_argument("--trials", type=bounded(1, 10_000), default=20)
    replay.add_argument("--repeats", type=bounded(2, 1_000), default=50)
    replay.add_argument(
        "--pruner", help="comma-separated: sha, hyperband: random search with it on the learning curves"
    )


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

        table = fidelity.curves_of(args.study, args.studies_dir).networks
        found = [
            fidelity.measure(table, p, args.trials, args.repeats, measured.maximize) for p in args.pruner.split(",")
        ]
        print(fidelity.text(found))
    return 0


def _add_status(sub: argparse._SubParsersAction) -> None:
    """`coatsearch status STUDY`: trial counts by state, the planned total and the time left."""
    _study_parser(sub, "status", "trial counts by state, planned total and time left (no dashboard)", _status)


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
        + (
            f" ({st.interrupted} interrupted, to rerun: the next `coatsearch run` trains them again, from their last "
            "checkpoint where one was saved)"
            if st.interrupted
            else ""
        ),
    ]
    if st.reused or st.rejected:
        lines.append(f"sampled points not trained: {st.reused} reused (their network measured on that seed before), "
                     f"{st.rejected} rejected (refused before training)")  # fmt: skip
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


def _add_export(sub: argparse._SubParsersAction) -> None:
    """`coatsearch export STUDY`: the results table, or the best architectures (and their weights)."""
    export = _study_parser(sub, "export", "write the study's results table (one row per trial)", _export)
    export.add_argument("--format", choices=FORMATS, default="csv")
    export.add_argument("--out", type=Path, help="output file (default: STUDY.FORMAT); with --format timm: a folder")
    help_best = "with --format yaml or timm: the K best architectures"
    export.add_argument("--best", type=bounded(1, TRIALS_MAX), help=help_best)
    export.add_argument(
        "--save-weights",
        action="store_true",
        help="with --best: save each one's weights (safetensors) beside --out: its best trial's weights kept by "
        "`run --keep-top`, else retrained on that trial's seed",
    )
    export.add_argument(
        "--retrain", action="store_true", help="with --save-weights or --format timm: retrain, even with kept weights"
    )
    export.add_argument("--device", default="cpu", help="with --save-weights or --format timm: the retrain's device")


def _export(args: argparse.Namespace) -> int:
    from coatsearch import api

    print(api.export(args.study, args.format, args.out, args.studies_dir, args.best, args.save_weights, args.device,
                     retrain=args.retrain))  # fmt: skip
    return 0


def _add_repair(sub: argparse._SubParsersAction) -> None:
    """`coatsearch repair STUDY`: keep a damaged journal's complete records."""
    help_repair = "keep a damaged journal's complete records, move the damaged tail aside"
    _study_parser(sub, "repair", help_repair, _repair)


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


def _add_dashboard(sub: argparse._SubParsersAction) -> None:
    """`coatsearch dashboard STUDY`: optuna-dashboard on the study (read-only unless --allow-writes)."""
    dash = _study_parser(sub, "dashboard", "serve optuna-dashboard on a study's storage", _dashboard)
    dash.add_argument("--host", default="127.0.0.1")
    dash.add_argument("--port", type=bounded(1, 65535), default=8080)
    dash.add_argument("--allow-writes", action="store_true", help="let the dashboard edit the study (warns)")


def _dashboard(args: argparse.Namespace) -> int:
    from coatsearch.dashboard import serve

    serve(args.study, args.studies_dir, args.host, args.port, args.allow_writes)
    return 0
