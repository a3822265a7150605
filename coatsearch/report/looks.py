"""Every look at a claim on record: the earlier studies of the same space and the committed reports' history.

A look is one study's verdict on one claim (its p: the largest Holm-adjusted p of the claim's key relations on
its deciding measure, the intersection-union test of the chain). Looks come from two places:
- the studies folder: every other study of the same space `name` (other profiles or space versions; found
  through its registration.json, else its stored space record), and every pilot space naming the claim;
- the git history of the committed reports (reports/*/summary.json of the same space), through their recorded
  space hashes; one bounded `git` call, "history not available" outside a git checkout.
A look on validation images (a pilot, or records whose `images` say no test image was used) is listed but spends
no test α. The test looks (earlier ones and this one) are adjusted together: Holm and Bonferroni.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

GIT_TIMEOUT_S = 10.0  # each git call of the history; past it: "history not available"
HISTORY_MAX = 200  # commits of reports/*/summary.json read at most
FIRM = ("supported", "not supported")

Judge = Callable[[str], list[dict]]  # a study name -> its judged claims (the report's claims table)


def claim_p(claim: Mapping[str, Any]) -> float | None:
    """A look's p: the largest Holm-adjusted p of the claim's key relations on its deciding (first) measure."""
    evidence = claim.get("evidence") or []
    if not evidence:
        return None
    ps = [p.get("p_holm") for p in evidence[0].get("pairs") or [] if p.get("key")]
    ps = [float(p) for p in ps if isinstance(p, int | float)]
    return max(ps) if ps else None


def look(source: str, study: str, sha: str | None, profile: Any, claim: Mapping[str, Any], test: bool) -> dict:
    """One look at one claim, as the report lists it."""
    return {"source": source, "study": study, "sha256": sha, "profile": profile, "claim": claim.get("id"),
            "verdict": claim.get("verdict"), "p": claim_p(claim), "images": "test" if test else "validation"}  # fmt: skip


def on_test(record_space: Mapping[str, Any], claim: str, images: Any = None) -> bool:
    """Whether a study's look at `claim` was on test images: not when its space pilots the claim, nor when its
    records say they used validation images only (`images` without a test draw)."""
    if claim in (record_space.get("pilots") or ()):
        return False
    return not (isinstance(images, Mapping) and images and not images.get("test"))


def _space_of(folder: Path) -> dict | None:
    """A study folder's space (name, sha256, profile, pilots): its registration, else its stored space record."""
    from coatsearch import registration as G
    from coatsearch.errors import UserError

    try:
        reg = G.load(folder)
    except UserError:
        reg = None
    if reg is not None:
        a = reg.analysis
        return {"space": a.space, "sha256": a.space_sha256, "profile": a.profile, "pilots": list(a.pilots)}
    if not (folder / "journal.log").exists():
        return None
    from coatsearch import store

    try:
        rec = store.space_of(store.load_study(folder.parent, folder.name))
    except UserError:
        return None
    return {"space": rec.get("space"), "sha256": G.space_sha256(rec), "profile": rec.get("profile"),
            "pilots": list(rec.get("pilots") or ())}  # fmt: skip


def from_studies(studies_dir: Path, study: str, space: str, judge: Judge) -> list[dict]:
    """The looks of every other study in the studies folder of the same space, or of a pilot of a claim."""
    out = []
    for folder in sorted(p for p in Path(studies_dir).glob("*") if p.is_dir() and p.name != study):
        sp = _space_of(folder)
        if sp is None or (sp["space"] != space and not sp["pilots"]) or not (folder / "journal.log").exists():
            continue
        for c in judge(folder.name):
            if sp["space"] == space or c.get("id") in sp["pilots"]:
                out.append(look("study", folder.name, sp["sha256"], sp["profile"], c, on_test(sp, c["id"])))
    return out


def _git(root: Path, *args: str) -> str | None:
    """One bounded git call in `root`: its stdout, or None (no git, not a checkout, too slow, an error)."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def from_history(reports_dir: Path, space: str) -> list[dict] | None:
    """The looks in the committed history of reports_dir/*/summary.json of the same space; None: not available."""
    root = Path(reports_dir).resolve()
    if not root.is_dir():
        return None
    top = _git(root, "rev-parse", "--show-toplevel")
    log = _git(root, "log", f"-{HISTORY_MAX}", "--format=@%H", "--name-only", "--", "*/summary.json")
    if top is None or log is None:
        return None
    out, commit = [], ""
    for line in log.splitlines():
        if line.startswith("@"):
            commit = line[1:]
        elif line.strip() and commit:
            text = _git(Path(top.strip()), "show", f"{commit}:{line.strip()}")
            out += _summary_looks(text, space, commit)
    return out


def _summary_looks(text: str | None, space: str, commit: str) -> list[dict]:
    """The looks of one committed summary.json of the space `space` (none when it is of another space)."""
    try:
        summary = json.loads(text or "")
    except ValueError:
        return []
    sp = summary.get("space") or {} if isinstance(summary, dict) else {}
    if sp.get("space") != space:
        return []
    reg = summary.get("registration") or {}
    meta = {"pilots": (reg.get("analysis") or {}).get("pilots") or ()}
    return [{**look("report history", str(summary.get("study")), sp.get("sha256"), sp.get("profile"), c,
                    on_test(meta, c.get("id"))), "commit": commit[:12]}
            for c in summary.get("claims") or [] if isinstance(c, dict)]  # fmt: skip


def unique(looks: list[dict], study: str, sha: str | None) -> list[dict]:
    """One look per (study, space hash, claim): a regenerated report is not another look, nor is this study's
    own report of the same space version (it is this look)."""
    seen, out = {(study, sha)}, []
    keys: set[tuple] = set()
    for x in looks:
        key = (x["study"], x["sha256"], x["claim"])
        if (x["study"], x["sha256"]) in seen or key in keys:
            continue
        keys.add(key)
        out.append(x)
    return out


def holm(ps: list[float]) -> list[float]:
    """Holm-adjusted p values, in the given order."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adjusted, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def adjusted(claim: Mapping[str, Any], earlier: list[dict], alpha: float, test: bool = True) -> dict:
    """This look and the earlier looks at one claim: counts and this look's Holm/Bonferroni-adjusted p."""
    mine = [x for x in earlier if x["claim"] == claim.get("id")]
    tests = [x for x in mine if x["images"] == "test"]
    p = claim_p(claim)
    ps = [x["p"] for x in tests if x["p"] is not None]
    row: dict[str, Any] = {"claim": claim.get("id"), "verdict": claim.get("verdict"), "p": p, "earlier": mine,
                           "test_looks": len(tests) + (1 if test else 0),
                           "validation_looks": len(mine) - len(tests) + (0 if test else 1)}  # fmt: skip
    if p is not None and test:
        k = len(ps) + 1
        row.update(holm=holm([p, *ps])[0], bonferroni=min(1.0, k * p), adjusted_over=k)
        row["firm_over_looks"] = row["holm"] <= alpha and claim.get("verdict") in FIRM
    return row


def lines(row: Mapping[str, Any], alpha: float) -> list[str]:
    """A claim's looks as text: each earlier look, then the multiplicity-adjusted line."""
    out = [f"{x['source']} {x['study']} (space {str(x['sha256'] or '?')[:12]}, profile {x['profile']}"
           + (f", commit {x['commit']}" if x.get("commit") else "") + f"): {x['verdict']}, p "
           + ("–" if x["p"] is None else f"{x['p']:.3g}") + f", on {x['images']} images"
           + ("" if x["images"] == "test" else " (spends no test α)") for x in row["earlier"]]  # fmt: skip
    n, v = row["test_looks"], row["validation_looks"]
    what = f"{n} look{'s' if n != 1 else ''} at this claim on test images"
    what += f" and {v} on validation images (listed, spending no test α)" if v else ""
    if row.get("holm") is None:
        out.append(f"{what}; this look has no p to adjust")
    else:
        state = "≤" if row["holm"] <= alpha else ">"
        out.append(f"{what}; Holm-adjusted p of this look {row['holm']:.3g}, Bonferroni {row['bonferroni']:.3g} "
                   f"over {row['adjusted_over']} test look(s) ({state} α {alpha:g})")  # fmt: skip
    return out
