"""Markdown for the earlier-looks section: per claim, each earlier look and this look's adjusted line."""

from __future__ import annotations

from coatsearch.papers.looks import Look, Looks
from coatsearch.report.markdown import table

HEAD = ["source", "where", "space", "profile", "space sha256", "seeds", "images", "verdict", "p", "spends test α"]


def _row(x: Look) -> list:
    seeds = "–" if x.seeds is None else ", ".join(map(str, x.seeds))
    why = "pilot of the claim" if x.pilot else "validation images" if x.images == "validation" else "no test"
    spends = "yes" if x.spends else f"no ({why})"
    return [x.source, x.where, x.space or "?", x.profile, (x.sha256 or "?")[:12], seeds, x.images,
            x.verdict or "–", "–" if x.p is None else f"{x.p:.3g}", spends]  # fmt: skip


def section(info: Looks) -> str:
    """## Earlier looks: how looks are counted, any source left out, then each claim's looks and adjusted line."""
    out = [
        "## Earlier looks",
        "",
        "Earlier readings of the same claims of this space on record: the reports folder's looks record "
        "(reports/looks.json, written with every report and committed with them), the other studies in the studies "
        "folder (other profiles, space versions, pilot spaces naming the claim), the reports' summary.json and the "
        "looks each counted, and, when asked for, their committed versions; `source` says where a look was first "
        "found. Readings with the same space hash, profile and seeds are one look; so are an "
        "earlier reading of this space, profile and seeds and this one when their verdict and p agree to every "
        "digit (the same data re-read, as after an edit of the space file's comments). A look spends "
        "test α when it read test images and its space does not pilot the claim; this look's p is Holm-adjusted "
        "over the looks that spend test α, and a supported verdict stands only where that adjusted p is below α "
        '(docs/verdicts.md, "Earlier looks").',
    ]
    out += ["", *(f"Note: {n}." for n in info.notes)] if info.notes else []
    for c in info.claims:
        out += ["", f"**({c.claim})** {c.line}."]
        if c.earlier:
            out += ["", table(HEAD, [_row(x) for x in c.earlier])]
    return "\n".join(out)
