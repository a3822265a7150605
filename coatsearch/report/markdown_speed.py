"""Markdown of the report's measured speed (issue 23): the table report/speed.py computed, and its notes."""

from __future__ import annotations

from coatsearch.report.markdown import table as md_table
from coatsearch.report.speed import SPREAD_NOTE


def _cell(pair: tuple[float | None, float | None], digits: int) -> str:
    mean, sd = pair
    if mean is None:
        return "–"
    return f"{mean:.{digits}f}" + (f" ± {sd:.{digits}f}" if sd is not None else "")


def section(summary: dict) -> str:
    """The report's '## Measured speed' section: table, where it was measured, the spread note."""
    sp = summary.get("speed")
    if not sp:
        return ""
    head = ["candidate", "MACs (M)", "params (M)", "train img/s", "infer img/s", "batch-1 latency ms (IQR)"]
    head += [f"{sp['acc_label']} (%)" if sp["acc_label"] else "acc", "Pareto", "n"]
    body = []
    for r in sp["rows"]:
        macs, params = r["macs"][0], r["params"][0]
        body.append([
            r["candidate"], "–" if macs is None else f"{macs / 1e6:.2f}",
            "–" if params is None else f"{params / 1e6:.3f}",
            _cell(r["speed.train_ips"], 0), _cell(r["speed.infer_ips"], 0),
            f"{_cell(r['speed.infer_latency_ms'], 2)} ({_cell(r['speed.infer_latency_iqr_ms'], 2)})",
            "–" if r["acc"] is None else _cell(r["acc"], 1), "yes" if r.get("pareto") else "", r["n"],
        ])  # fmt: skip
    return "\n".join(["## Measured speed", "", md_table(head, body), "", _where(sp["rows"]), *_notes(sp)])


def _where(rows: list[dict]) -> str:
    """Where and how the speed was measured, and what measuring cost."""
    pick = {k: sorted({v for r in rows for v in r[k]}) for k in ("host", "device", "threads", "train_batch")}
    infer = sorted({v for r in rows for v in r["infer_batch"]})
    shares = [r["cost_share"] for r in rows if r["cost_share"] is not None]
    cost = f"; measuring took {100 * max(shares):.1f}% of a trial at most" if shares else ""
    return (
        f"Measured per trial on host {', '.join(pick['host'])} ({', '.join(pick['device'])}) at "
        f"{', '.join(pick['threads'])} thread(s): training images/s at batch {', '.join(pick['train_batch'])}, "
        f"inference images/s at batch {', '.join(infer)}, batch-1 latency median (IQR); warm-up steps untimed, "
        f"then timed repeats, median step time; mean ± sd over runs{cost}. Pareto: not beaten in both accuracy "
        "and inference throughput by another candidate (regime baselines are not ranked)."
    )


def _notes(sp: dict) -> list[str]:
    """The note when budget-matched candidates differ in measured throughput by more than SPREAD_NOTE."""
    out = []
    for s in sp["spread"]:
        what = "training" if s["key"] == "speed.train_ips" else "inference"
        if s["ratio"] > SPREAD_NOTE:
            note = (
                f"**Note.** Budget-matched candidates differ {s['ratio']:.2f}x in measured {what} throughput: "
                f"{s['fast']} is the fastest, {s['slow']} the slowest. Equal MACs are not equal speed."
            )
            out += ["", note]
        else:
            out += ["", f"Budget-matched candidates are within {s['ratio']:.2f}x of each other in {what} throughput."]
    return out
