"""Command line: show | plan | run | enumerate | report | replay | status | export | repair | dashboard | replicate.

Each command is an `add_*` function holding its arguments beside the action it runs (`cli_run`: plan, run,
enumerate; `cli_study`: the commands that read a study; `cli_replication`: replicate; `show` here).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from coatsearch import cli_replication, cli_run, cli_study
from coatsearch.cli_types import STUDIES, Parser, bounded
from coatsearch.errors import UserError
from coatsearch.version import __version__
from coatsearch.vocab.bounds import TRIALS_MAX, ArgumentError


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
    p = Parser(prog="coatsearch", description=__doc__.split("\n")[0])
    p.add_argument("--version", action="version", version=f"coatsearch {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    add_show(sub)
    cli_run.add_plan(sub)
    cli_run.add_run(sub)
    cli_run.add_enumerate(sub)
    cli_study.add_commands(sub)
    cli_replication.add_command(sub)
    return p


def add_show(sub: argparse._SubParsersAction) -> None:
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


if __name__ == "__main__":
    sys.exit(main())
