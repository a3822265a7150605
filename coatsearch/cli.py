"""Command line: show | plan | run | enumerate | report | answer | replay | status | export | repair | dashboard |
replicate | spaces.

Each command is an `add_*` function holding its arguments beside the action it runs (`cli_run`: plan, run,
enumerate; `cli_study`: the commands that read studies and reports; `show`, `replicate` and `spaces` here).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from coatsearch import cli_run, cli_study
from coatsearch.cli_types import REPORTS, STUDIES, Parser, argtype, bounded, workers
from coatsearch.errors import UserError
from coatsearch.replication import SUFFIX, parse_seeds
from coatsearch.version import __version__
from coatsearch.vocab.bounds import TRIALS_MAX, WORKERS_MAX, ArgumentError


def main(argv: list[str] | None = None) -> int:
    """Entry point; bad input prints one line and exits 2, never a traceback."""
    args = _parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except ArgumentError as exc:  # checked once, by the API: worded here with the flags' names
        return _fail(f"error: {exc.as_flags()}", 2)
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


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="coatsearch", description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--version", action="version", version=f"coatsearch {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    _add_show(sub)
    cli_run.add_plan(sub)
    cli_run.add_run(sub)
    cli_run.add_enumerate(sub)
    cli_study.add_commands(sub)
    _add_replicate(sub)
    _add_spaces(sub)
    return p


def _add_spaces(sub: argparse._SubParsersAction) -> None:
    """`coatsearch spaces [--copy NAME DEST]`: the shipped example spaces, or a copy of one to start from."""
    cmd = sub.add_parser("spaces", help="list the shipped example spaces (run or show one by its name), or copy one")
    cmd.add_argument("--copy", nargs=2, metavar=("NAME", "DEST"), help="write shipped space NAME to the file DEST")
    cmd.set_defaults(func=_spaces)


def _spaces(args: argparse.Namespace) -> int:
    from coatsearch import shipped

    if args.copy:
        print(f"wrote {shipped.copy(args.copy[0], Path(args.copy[1]))}")
        return 0
    for name in shipped.names():
        print(f"{name:<16} {shipped.describe(name)}")
    print(f"(in {shipped.FOLDER}; `coatsearch show NAME`, `coatsearch run NAME`, `coatsearch spaces --copy NAME FILE`)")
    return 0


def _add_show(sub: argparse._SubParsersAction) -> None:
    """`coatsearch show SPACE`: the candidates counted and matched, a module tree, or a study's trial's model."""
    show = sub.add_parser("show", help="list a space's candidates, counted and matched to the budget")
    show.add_argument("space", type=Path)
    show.add_argument("--profile", default="default")
    show.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    show.add_argument("--candidate", metavar="NAME", help="print this candidate's module tree")
    show.add_argument("--all", action="store_true", help="list every architecture a searched candidate holds")
    show.add_argument("--trial", type=bounded(0, TRIALS_MAX), help="SPACE is a study: print trial N's model")
    show.add_argument("--studies-dir", type=Path, default=STUDIES)
    show.set_defaults(func=_show)


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


def _add_replicate(sub: argparse._SubParsersAction) -> None:
    """`coatsearch replicate STUDY [--seeds N|LIST] ...`, with `run`'s options where they apply."""
    what = f"rerun a registered study on fresh seeds and a fresh test draw into STUDY{SUFFIX} (resumes), then report"
    rep = sub.add_parser("replicate", help=what + " it beside the original")
    rep.add_argument("study")
    rep.add_argument("--seeds", type=argtype(parse_seeds),
                     help="N fresh seeds (default: as many as the original), or a list like 5,6,7 or 7, (none "
                          "the original used)")  # fmt: skip
    rep.add_argument("--space", type=Path, help="the space file, if it moved (its sha256 must be the registered one)")
    rep.add_argument("--trials", type=bounded(1, TRIALS_MAX), help=f"at most this many trials now (1..{TRIALS_MAX})")
    rep.add_argument("--workers", type=workers, default="auto", help=f"worker processes (1..{WORKERS_MAX} or auto)")
    rep.add_argument("--device", default="auto", help="auto (CUDA when available) | cpu | cuda | cuda:N")
    rep.add_argument("--studies-dir", type=Path, default=STUDIES)
    rep.add_argument("--reports-dir", type=Path, default=REPORTS)
    rep.add_argument("--no-report", action="store_true", help="do not write the report at the end")
    rep.add_argument("--quiet", action="store_true", help="no progress bars")
    rep.add_argument("--no-plan", action="store_true", help="start without the plan's pilot and ETA line")
    rep.set_defaults(func=_replicate)


def _replicate(args: argparse.Namespace) -> int:
    from coatsearch.papers import registration
    from coatsearch.replication import replicate
    from coatsearch.storage import store

    res = replicate(args.study, args.seeds, studies_dir=args.studies_dir, reports_dir=args.reports_dir,
                    workers=args.workers, device=args.device, trials=args.trials, report=not args.no_report,
                    progress=not args.quiet, plan_first=not args.no_plan, space_file=args.space)  # fmt: skip
    reg = registration.load(store.folder(args.studies_dir, res.study))
    a = reg.analysis if reg else None
    on = f" on seeds {', '.join(map(str, a.seeds))}, test draw {a.data.get('test_draw')}" if a else ""
    print(
        f"study {res.study} (replicate of {args.study}{on}): {res.complete} complete, {res.failed} failed, "
        f"{res.pruned} pruned of {res.planned} planned; {res.ran_now} ran now in {res.seconds:.0f} s; "
        f"storage {res.storage}"
    )
    if res.report is not None:
        print(f"report: {res.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
