"""Write reports/test_draws.json: every look that read test images, from the reports' git history (withdrawn
reports included), oldest first (papers/draws_seen.py; docs/verdicts.md, "Fresh test images").

    PYTHONPATH=. python benchmarks/draws_record.py [REPORTS_DIR]

Each committed version of `<reports>/*/summary.json` is one reading; versions of one folder with the same claims
and the same test fingerprints are one look (a regenerated report re-reads the same runs), dated by its first
commit. Run it after committing a report; tests/analysis/test_draws.py fails while a standing report is missing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from coatsearch.papers import draws_seen as D


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def history(reports: Path) -> list[D.DrawLook]:
    """The looks of every committed version of the reports' summaries, oldest first, one per distinct reading."""
    repo = Path(_git(reports, "rev-parse", "--show-toplevel").strip())
    rel = reports.resolve().relative_to(repo.resolve())
    log = _git(repo, "log", "--reverse", "--format=%h", "--name-only", "--", f"{rel}/*/summary.json")
    looks: dict[tuple, D.DrawLook] = {}
    commit = ""
    for line in log.splitlines():
        if not line.strip():
            continue
        if "/" not in line:
            commit = line.strip()
            continue
        try:
            summary = json.loads(_git(repo, "show", f"{commit}:{line}"))
        except (subprocess.CalledProcessError, ValueError):
            continue  # deleted in this commit, or unreadable
        look = D.look_of_summary(summary, f"{line} @ {commit}", withdrawn=True)
        if look is not None:
            looks.setdefault((look.study, look.claims, look.test_fp), look)
    return list(looks.values())


def record(reports: Path) -> list[D.DrawLook]:
    """The history's looks, each marked withdrawn unless a report stands for it now; standing ones not yet
    committed appended."""
    standing = {(x.study, x.claims, x.test_fp): x for x in D.current(reports)}
    out = []
    for look in history(reports):
        key = (look.study, look.claims, look.test_fp)
        out.append(D.DrawLook(**{**look.__dict__, "withdrawn": key not in standing}))
        standing.pop(key, None)
    return out + list(standing.values())


def main(argv: list[str]) -> None:
    reports = Path(argv[0] if argv else "reports")
    (reports / D.RECORD).write_text(D.dump(record(reports)), encoding="utf-8")
    print(f"wrote {reports / D.RECORD}")


if __name__ == "__main__":
    main(sys.argv[1:])
