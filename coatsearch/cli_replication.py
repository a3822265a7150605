"""The command line's `replicate STUDY`: the registered study again on fresh seeds and a fresh test draw."""

from __future__ import annotations

import argparse
from pathlib import Path

from coatsearch.analysis import registration
from coatsearch.cli_types import REPORTS, STUDIES, argtype, bounded, workers
from coatsearch.replication import SUFFIX, parse_seeds, replicate
from coatsearch.storage import store
from coatsearch.vocab.bounds import TRIALS_MAX, WORKERS_MAX


def add_command(sub: argparse._SubParsersAction) -> None:
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
