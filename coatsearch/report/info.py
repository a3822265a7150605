"""Study storage → plain tables: pure functions over trial records (dicts), so tests need no Optuna.

A record is `{"number", "state", "value", "params", "attrs", "start", "complete"}`: one Optuna trial with
its user attributes under "attrs" and ISO datetimes (or None). Values in tables are in display units
(accuracies in %, MACs and params in millions), as the metric table says.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from datetime import datetime

from coatsearch import scores
from coatsearch.scores import Metric

__all__ = ["CURVE_SCORES", "METRICS", "Metric", "Stat", "candidate_rows", "load", "stat"]


METRICS = scores.METRICS  # key -> Metric (label, unit, scale, better, noise floor), from the score registry
CURVE_SCORES = scores.curve_scores()  # single-run scores with per-epoch curves


@dataclass(frozen=True)
class Stat:
    """Mean and spread over runs, in display units; sd is None with fewer than 2 runs."""

    mean: float
    sd: float | None
    n: int

    @property
    def se(self) -> float | None:
        """Standard error of the mean (None with fewer than 2 runs)."""
        return None if self.sd is None else self.sd / math.sqrt(self.n)

    def to_dict(self) -> dict:
        """JSON form, with the standard error."""
        return {**asdict(self), "se": self.se}


def stat(values) -> Stat | None:
    """Mean ± sample standard deviation of the finite values; None when there are none."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return None
    sd = statistics.stdev(vals) if len(vals) >= 2 else None
    return Stat(statistics.fmean(vals), sd, len(vals))


def load(study) -> tuple[dict, list[dict]]:
    """A study's space record and its trial records (the store's frozen records, as plain dicts)."""
    from coatsearch import store

    return store.space_of(study), [r.as_dict() for r in store.records(study)]


def complete(records: list[dict]) -> list[dict]:
    """The COMPLETE trial records."""
    return [r for r in records if r["state"] == "COMPLETE"]


def candidate_of(record: dict) -> str:
    """The candidate a record belongs to (params first: failed trials have no candidate attribute)."""
    return str(record["params"].get("candidate") or record["attrs"].get("candidate") or "?")


def order(space: dict, records: list[dict]) -> list[str]:
    """Candidate names: the space's order, then any others found in the records."""
    names = list(space.get("candidates") or [])
    for r in records:
        if (c := candidate_of(r)) not in names and c != "?":
            names.append(c)
    return names


def groups(space: dict, records: list[dict]) -> dict[str, list[dict]]:
    """Complete records per candidate, in candidate order (candidates without a complete run left out)."""
    done = complete(records)
    out = {c: [r for r in done if candidate_of(r) == c] for c in order(space, records)}
    return {c: rs for c, rs in out.items() if rs}


def metric_stat(runs: list[dict], key: str) -> Stat | None:
    """Stat of one metric over runs, in the metric's display units."""
    m = METRICS[key]
    return stat(r["attrs"][key] * m.scale for r in runs if isinstance(r["attrs"].get(key), int | float))


def candidate_rows(space: dict, records: list[dict]) -> list[dict]:
    """One row per candidate: identity from its first run, and a Stat of every measured metric."""
    rows = []
    for name, runs in groups(space, records).items():
        first = runs[0]["attrs"]
        stats = {k: metric_stat(runs, k) for k in METRICS}
        rows.append(
            {
                "candidate": name,
                "model_label": first.get("model_label", name),
                "layout": first.get("layout", ""),
                "stages": first.get("stages", ""),
                "depths": first.get("depths", []),
                "optimizers": sorted({str((r["attrs"].get("optim") or {}).get("optimizer", "?")) for r in runs}),
                "n": len(runs),
                "metrics": {k: s for k, s in stats.items() if s is not None},
            }
        )
    return rows


def measured(rows: list[dict], key: str) -> bool:
    """Whether any candidate row has the metric."""
    return any(key in r["metrics"] for r in rows)


def counts(records: list[dict]) -> dict:
    """Trials by outcome; a FAIL without a reason is a trial whose worker died (interrupted)."""
    fail = [r for r in records if r["state"] == "FAIL"]
    return {
        "total": len(records),
        "complete": sum(r["state"] == "COMPLETE" for r in records),
        "failed": sum("fail_reason" in r["attrs"] for r in fail),
        "interrupted": sum("fail_reason" not in r["attrs"] for r in fail),
        "pruned": sum(r["state"] == "PRUNED" for r in records),
        "running": sum(r["state"] in ("RUNNING", "WAITING") for r in records),
    }


def failures(records: list[dict]) -> list[dict]:
    """Failed, interrupted, pruned and unfinished trials, each with its reason."""
    done = {r["attrs"].get("key"): r["number"] for r in complete(records)}
    rows = []
    for r in records:
        if r["state"] == "COMPLETE":
            continue
        reason = _reason(r, done.get(r["attrs"].get("key")))
        rows.append(
            {
                "number": r["number"],
                "candidate": candidate_of(r),
                "seed": r["params"].get("seed", r["attrs"].get("seed")),
                "key": r["attrs"].get("key"),
                "state": r["state"],
                "reason": reason,
            }
        )
    return rows


def _reason(r: dict, rerun: int | None) -> str:
    if r["state"] == "PRUNED":
        return "pruned by the pruner (stopped early, not a failure)"
    if r["state"] in ("RUNNING", "WAITING"):
        return f"{r['state'].lower()} when the report was written"
    if "fail_reason" in r["attrs"]:
        return str(r["attrs"]["fail_reason"])
    later = f"; rerun completed as trial {rerun}" if rerun is not None else "; rerun resumes it"
    return "interrupted (worker died)" + later


def environment(space: dict, records: list[dict]) -> dict:
    """Data set, subsets per score, image size, seeds, hardware, versions and wall time of the study."""
    done = complete(records)
    size, chans, classes = (list(space.get("input") or []) + [None] * 3)[:3]
    walls = [r["attrs"]["wall_s"] for r in done if isinstance(r["attrs"].get("wall_s"), int | float)]
    return {
        "study": space.get("study") or {},
        "data": space.get("data") or {},
        "image_size": size,
        "channels": chans,
        "classes": classes,
        "subsets": subsets(space, done),
        "seeds": sorted({r["attrs"]["seed"] for r in done if "seed" in r["attrs"]}),
        "hardware": _distinct(done, _hardware),
        "versions": _distinct(done, lambda r: (r["attrs"].get("env") or {}).get("versions") or {}),
        "wall_total_s": sum(walls),
        "wall_per_trial": stat(walls),
        "elapsed_s": _elapsed(records),
        "counts": counts(records),
    }


def _hardware(r: dict) -> dict:
    env = r["attrs"].get("env") or {}
    keys = ("host", "cpu", "cpu_count", "torch_threads", "gpu")
    return {**{k: env.get(k) for k in keys}, "device": r["attrs"].get("device")}


def _distinct(records: list[dict], get) -> list[dict]:
    out: list[dict] = []
    for r in records:
        if (item := get(r)) and item not in out:
            out.append(item)
    return out


def _elapsed(records: list[dict]) -> float | None:
    starts = [datetime.fromisoformat(r["start"]) for r in records if r.get("start")]
    ends = [datetime.fromisoformat(r["complete"]) for r in records if r.get("complete")]
    return (max(ends) - min(starts)).total_seconds() if starts and ends else None


def subsets(space: dict, done: list[dict]) -> list[dict]:
    """Per score: images per class, classes, epochs, data set, and the images a run actually used."""
    images = {s: f"{s}.images" for s in CURVE_SCORES}
    rows = []
    for score, sub in _subset_records(space.get("scores") or {}):
        key = images.get(score)
        used = sorted({r["attrs"][key] for r in done if key and key in r["attrs"]})
        data = sub.get("dataset") or {}
        rows.append(
            {
                "score": score,
                "per_class": sub.get("per_class"),
                "classes": sub.get("classes"),
                "epochs": sub.get("epochs"),
                "dataset": data.get("dataset") if data else None,
                "images": used,
            }
        )
    return rows


def _subset_records(node: dict):
    """(name, subset) for each recorded subset (a mapping with `per_class`), at any depth: `transfer.pretrain` is
    named `pretrain` as older records, which stored it flat, named it."""
    for name, sub in node.items():
        if isinstance(sub, dict) and "per_class" in sub:
            yield name, sub
        elif isinstance(sub, dict):
            yield from _subset_records(sub)


def curves(space: dict, records: list[dict], score: str) -> list[dict]:
    """Per candidate: mean per-epoch train loss and eval accuracy (%) over its runs of one score."""
    out = []
    for name, runs in groups(space, records).items():
        cs = [r["attrs"][f"curves.{score}"] for r in runs if isinstance(r["attrs"].get(f"curves.{score}"), dict)]
        cs = [c for c in cs if c.get("train_loss") and c.get("eval_acc")]
        if not cs:
            continue
        n = min(min(len(c["train_loss"]), len(c["eval_acc"])) for c in cs)
        out.append(
            {
                "candidate": name,
                "epoch": list(range(1, n + 1)),
                "train_loss": [_mean_at(cs, "train_loss", i) for i in range(n)],
                "eval_acc": [100 * _mean_at(cs, "eval_acc", i) for i in range(n)],
                "runs": len(cs),
            }
        )
    return out


def _mean_at(cs: list[dict], key: str, i: int) -> float:
    """Mean of one epoch's value over runs; NaN when no run has it (e.g. a run without evaluation)."""
    vals = [c[key][i] for c in cs if c[key][i] is not None]
    return statistics.fmean(vals) if vals else math.nan


def length_rows(space: dict, records: list[dict]) -> list[dict]:
    """Training-length stability per candidate: mean eval acc (%) per schedule length, Δerror vs the longest."""
    rows = []
    for name, runs in groups(space, records).items():
        runs = [r for r in runs if r["attrs"].get("length.epochs") and r["attrs"].get("length.eval_acc")]
        if not runs:
            continue
        epochs = list(runs[0]["attrs"]["length.epochs"])
        runs = [r for r in runs if list(r["attrs"]["length.epochs"]) == epochs]
        accs = [stat(100 * r["attrs"]["length.eval_acc"][i] for r in runs) for i in range(len(epochs))]
        longest = accs[epochs.index(max(epochs))].mean
        rows.append(
            {
                "candidate": name,
                "model_label": runs[0]["attrs"].get("model_label", name),
                "epochs": epochs,
                "eval_acc": accs,
                "delta_error": [longest - a.mean for a in accs],
                "runs": len(runs),
            }
        )
    return rows


def robustness_rows(space: dict, records: list[dict]) -> list[dict]:
    """Per candidate: eval accuracy (%) against corruption severity (0 = clean), mean over corruptions and runs."""
    rows = []
    for name, runs in groups(space, records).items():
        cs = [r["attrs"]["curves.robustness"] for r in runs if isinstance(r["attrs"].get("curves.robustness"), dict)]
        if not cs:
            continue
        severity = list(cs[0]["severity"])
        cs = [c for c in cs if list(c["severity"]) == severity]
        kinds = [k for k in cs[0] if k != "severity"]
        per_run = [[statistics.fmean(c[k][i] for k in kinds) for i in range(len(severity))] for c in cs]
        accs = [stat(100 * run[i] for run in per_run) for i in range(len(severity))]
        rows.append({"candidate": name, "severity": severity, "acc": accs, "corruptions": kinds, "runs": len(cs)})
    return rows
