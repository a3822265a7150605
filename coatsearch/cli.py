"""Command line: coatsearch show | run | report | dashboard."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from coatsearch.errors import UserError

STUDIES = Path("studies")
REPORTS = Path("reports")


def main(argv: list[str] | None = None) -> int:
    """Entry point; bad input prints one line and exits 2, never a traceback."""
    args = _parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except UserError as exc:
        print(f"coatsearch: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("coatsearch: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="coatsearch", description=__doc__)
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
    run.add_argument("--trials", type=int, help="run at most this many trials now")
    run.add_argument("--workers", type=int, default=1, help="parallel worker processes (optuna backend)")
    run.add_argument("--backend", choices=["optuna", "ray"], default="optuna")
    run.add_argument("--address", help="ray: cluster address (auto | HOST:PORT); none starts a local Ray")
    run.add_argument("--cpus-per-trial", type=float, default=None, help="ray: CPUs per trial")
    run.add_argument("--gpus-per-trial", type=float, default=None, help="ray: GPUs per trial")
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
    dash.add_argument("--port", type=int, default=8080)
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
    from coatsearch import data as D
    from coatsearch.space import load_space
    from coatsearch.train import pick_device

    space = load_space(args.space, args.profile)
    name = args.study or (space.name if args.profile == "default" else f"{space.name}-{args.profile}")
    pick_device(args.device)
    D.load(space.data, space.image_size, space.channels)  # a missing dataset stops here, exit 2
    if args.workers < 1 or (args.trials is not None and args.trials < 1):
        raise UserError("--workers and --trials must be at least 1")
    common = {"trials": args.trials, "device": args.device, "progress": not args.quiet}
    if args.backend == "ray":
        from coatsearch.backends import ray_backend

        extra = {"address": args.address, "cpus": args.cpus_per_trial, "gpus": args.gpus_per_trial}
        summary = ray_backend.run(space, args.studies_dir, name, **extra, **common)
    else:
        from coatsearch.backends import optuna_backend

        summary = optuna_backend.run(space, args.studies_dir, name, workers=args.workers, **common)
    print(
        f"study {summary.study}: {summary.complete} complete, {summary.failed} failed, {summary.pruned} pruned "
        f"of {summary.planned} planned; {summary.ran_now} ran now in {summary.seconds:.0f} s; "
        f"storage {summary.storage}"
    )
    if not args.no_report:
        from coatsearch.report import write_report

        print(f"report: {write_report(name, args.studies_dir, args.reports_dir)}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from coatsearch.report import write_report

    print(write_report(args.study, args.studies_dir, args.reports_dir))
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    from coatsearch.dashboard import serve

    serve(args.study, args.studies_dir, args.host, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
