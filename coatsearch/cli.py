"""Command line: coatsearch show | run | report | dashboard."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from coatsearch.errors import UserError
from coatsearch.paths import report_folder, study_folder

STUDIES = Path("studies")
REPORTS = Path("reports")
WORKERS_MAX = 64  # --workers: parallel training processes on one machine
TRIALS_MAX = 100_000  # --trials: trials started by one command
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


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (no usage block) and exit status 2."""

    def error(self, message: str):
        """Print `prog: error: message` on one line and exit 2."""
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def _bounded(low: int, high: int):
    """An argparse type: an integer in [low, high]; the error states the range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range; allowed: {low}..{high}")
        return value

    return parse


def _positive(text: str) -> float:
    """An argparse type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be a finite number > 0")
    return value


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="coatsearch", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    show = sub.add_parser("show", help="list a space's candidates, counted and matched to the budget")
    show.add_argument("space", type=Path)
    show.add_argument("--profile", default="default")
    show.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    show.add_argument("--candidate", metavar="NAME", help="print this candidate's module tree")
    show.set_defaults(func=_show)

    run = sub.add_parser("run", help="train and score every candidate of a space (resumes)")
    run.add_argument("space", type=Path)
    run.add_argument("--study", help="study name (default: the space's name, plus -PROFILE unless default)")
    run.add_argument("--profile", default="default", help="quick | default | full, as the space defines")
    run.add_argument(
        "--trials", type=_bounded(1, TRIALS_MAX), help=f"run at most this many trials now (1..{TRIALS_MAX})"
    )
    run.add_argument(
        "--workers", type=_bounded(1, WORKERS_MAX), help=f"worker processes (optuna backend; 1..{WORKERS_MAX})"
    )
    run.add_argument("--backend", choices=["optuna", "ray"], default="optuna")
    run.add_argument("--address", help="ray: cluster address (auto | HOST:PORT); none starts a local Ray")
    run.add_argument("--cpus-per-trial", type=_positive, default=None, help="ray: CPUs per trial")
    run.add_argument("--gpus-per-trial", type=_positive, default=None, help="ray: GPUs per trial")
    run.add_argument("--device", default="auto", help="auto (CUDA when available) | cpu | cuda | cuda:N")
    run.add_argument("--studies-dir", type=Path, default=STUDIES)
    run.add_argument("--reports-dir", type=Path, default=REPORTS)
    run.add_argument("--no-report", action="store_true", help="do not write the report at the end")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.set_defaults(func=_run)

    report = sub.add_parser("report", help="write reports/<study>/report.md and figures from the storage")
    report.add_argument("study")
    report.add_argument("--studies-dir", type=Path, default=STUDIES)
    report.add_argument("--reports-dir", type=Path, default=REPORTS)
    report.set_defaults(func=_report)

    dash = sub.add_parser("dashboard", help="serve optuna-dashboard on a study's storage")
    dash.add_argument("study")
    dash.add_argument("--studies-dir", type=Path, default=STUDIES)
    dash.add_argument("--host", default="127.0.0.1")
    dash.add_argument("--port", type=_bounded(1, 65535), default=8080)
    dash.set_defaults(func=_dashboard)
    return p


def _show(args: argparse.Namespace) -> int:
    from coatsearch.candidates import prepare_all, row
    from coatsearch.space import load_space

    space = load_space(args.space, args.profile)
    if args.candidate:
        from coatsearch.candidates import prepare
        from coatsearch.models import build

        try:
            cand = space.candidate(args.candidate)
        except KeyError as exc:
            raise UserError(f"{args.space}: {exc.args[0]}") from None
        print(build(prepare(cand).model))
        return 0
    rows = [row(p) for p in prepare_all(space)]
    print(json.dumps(rows, indent=2) if args.json else _table(rows))
    return 0


def _table(rows: list[dict]) -> str:
    head = [
        "name",
        "layout",
        "stem",
        "stages (type depth x width / stride)",
        "T tokens",
        "params",
        "MACs",
        "err",
        "mult",
    ]
    body = [
        [
            r["name"],
            r["layout"],
            r["stem"],
            r["stages"],
            ",".join(r["tokens"]) or "-",
            f"{r['params'] / 1e6:.2f}M",
            f"{r['macs'] / 1e6:.2f}M",
            "-" if r["error"] is None else f"{r['error']:+.1%}",
            f"{r['multiplier']:.3f}" + ("" if r["ok"] else "  NOT MATCHED: " + r["reason"]),
        ]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip() for line in [head, *body]]
    budget = next((r["budget_macs"] for r in rows if r["budget_macs"]), None)
    if budget:
        lines.append(f"budget: {budget / 1e6:.2f}M MACs (multiply-adds per image)")
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from coatsearch.datacheck import check_matches
    from coatsearch.space import load_space
    from coatsearch.train import pick_device

    _check_backend_flags(args)
    space = load_space(args.space, args.profile)
    name = args.study if args.study is not None else _default_name(space.name, args.profile)
    study_folder(args.studies_dir, name)
    if not args.no_report:
        report_folder(args.reports_dir, name)
    pick_device(args.device)
    scores = [c.scores for c in space.candidates]  # a missing or mismatched dataset stops here, exit 2
    check_matches(space.classes, space.data, space.image_size, space.channels, scores, source=space.source)
    common = {"trials": args.trials, "device": args.device, "progress": not args.quiet}
    if args.backend == "ray":
        from coatsearch.backends import ray_backend

        extra = {"address": args.address, "cpus": args.cpus_per_trial, "gpus": args.gpus_per_trial}
        summary = ray_backend.run(space, args.studies_dir, name, **extra, **common)
    else:
        from coatsearch.backends import optuna_backend

        summary = optuna_backend.run(space, args.studies_dir, name, workers=args.workers or 1, **common)
    print(
        f"study {summary.study}: {summary.complete} complete, {summary.failed} failed, {summary.pruned} pruned "
        f"of {summary.planned} planned; {summary.ran_now} ran now in {summary.seconds:.0f} s; "
        f"storage {summary.storage}"
    )
    if not args.no_report:
        from coatsearch.report import write_report

        print(f"report: {write_report(name, args.studies_dir, args.reports_dir)}")
    return 0


def _default_name(space: str, profile: str) -> str:
    """The study name when --study is not given: the space's name, plus -PROFILE unless default."""
    return space if profile == "default" else f"{space}-{profile}"


def _check_backend_flags(args: argparse.Namespace) -> None:
    """A flag the chosen backend would ignore is an error, not a silent no-op."""
    if args.backend != "ray":
        given = [f"--{f.replace('_', '-')}" for f in RAY_FLAGS if getattr(args, f) is not None]
        if given:
            raise UserError(f"{', '.join(given)}: only used with --backend ray (this run uses {args.backend})")
    elif args.workers is not None:
        raise UserError("--workers: only used with --backend optuna; Ray sizes trials with --cpus-per-trial")


def _report(args: argparse.Namespace) -> int:
    from coatsearch.report import write_report

    study_folder(args.studies_dir, args.study)
    report_folder(args.reports_dir, args.study)
    print(write_report(args.study, args.studies_dir, args.reports_dir))
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    from coatsearch.dashboard import serve

    study_folder(args.studies_dir, args.study)
    serve(args.study, args.studies_dir, args.host, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
