"""Study storage → plain tables: pure functions over trial records (dicts), so tests need no Optuna.

A record is `{"number", "state", "value", "params", "attrs", "start", "complete"}`: one Optuna trial with
its user attributes under "attrs" and ISO datetimes (or None). Values in tables are in display units
(accuracies in %, MACs and params in millions), as the metric table says.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import datetime

import numpy as np
import pandas as pd

from coatsearch import scores
from coatsearch.report.claims import CHANCE_POINTS, PLATEAU_POINTS
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
    """Mean ± sample standard deviation of the finite values (pandas); None when there are none."""
    vals = pd.Series([v for v in values if v is not None], dtype=float)
    vals = vals[vals.map(math.isfinite)]
    if vals.empty:
        return None
    return Stat(float(vals.mean()), float(vals.std()) if len(vals) >= 2 else None, len(vals))


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


# The accuracy that tells whether a run of a group trained, and the curve its convergence is read from.
GROUP_ACC = {
    "generalization": "generalization.eval_acc",
    "capacity": "capacity.eval_acc",
    "accuracy": "accuracy.eval_acc",
    "pretrain": "transfer.pretrain_acc",
    "transfer": "transfer.finetune_acc",
    "length": "length.eval_acc_longest",
    "robustness": "robustness.clean_acc",
}


def group_of(key: str) -> str:
    """The group (one training run inside a trial) a metric belongs to: its score, or pretrain/transfer."""
    return "pretrain" if key == "transfer.pretrain_acc" else key.split(".")[0]


def chance(space: dict, group: str) -> float | None:
    """Chance accuracy (%) of a group's classifier: 100 / its classes (the space's, or the subset's own)."""
    sc = space.get("scores") or {}
    sub = sc.get(group) or {}
    if group in ("pretrain", "transfer"):
        sub = (sc.get("transfer") or {}).get("pretrain" if group == "pretrain" else "finetune") or {}
    classes = len(sub["classes"]) if sub.get("classes") else (list(space.get("input") or []) + [None] * 3)[2]
    return 100.0 / classes if classes else None


def converged(curve: dict | None) -> bool | None:
    """False when eval accuracy still rises > PLATEAU_POINTS over the last third of the curve (linear fit)."""
    ys = [100 * y for y in (curve or {}).get("eval_acc") or [] if y is not None]
    if len(ys) < 3:
        return None
    xs = list((curve or {}).get("step") or range(len(ys)))[: len(ys)]
    m = max(2, math.ceil(len(ys) / 3))
    slope = np.polyfit(np.asarray(xs[-m:], dtype=float), np.asarray(ys[-m:], dtype=float), 1)[0]  # least squares
    return bool(slope * (xs[-1] - xs[-m]) <= PLATEAU_POINTS)


def frame(space: dict, records: list[dict]) -> pd.DataFrame:
    """Complete runs as a long table: candidate, seed, number, key, value (display units), group, failed, converged."""
    out = []
    for r in complete(records):
        a, cand = r["attrs"], candidate_of(r)
        seed = a.get("seed", r["params"].get("seed"))
        flags = {}
        for group, acc in GROUP_ACC.items():
            low = chance(space, group)
            value = a.get(acc)
            failed = isinstance(value, int | float) and low is not None and 100 * value - low <= CHANCE_POINTS
            flags[group] = (failed, converged(a.get(f"curves.{group}")))
        for key, m in METRICS.items():
            if isinstance(a.get(key), int | float) and math.isfinite(a[key]):
                group = group_of(key) if group_of(key) in GROUP_ACC else ""
                failed, conv = flags.get(group, (False, None))
                out.append((cand, seed, r["number"], key, a[key] * m.scale, group, failed, conv))
    cols = ["candidate", "seed", "number", "key", "value", "group", "failed", "converged"]
    return pd.DataFrame(out, columns=cols)


def rows_from_frame(long: pd.DataFrame, idents: dict[str, dict]) -> list[dict]:
    """Candidate rows from the long table: Stats and per-seed means without failed runs, and the regime guards."""
    long = long[long["candidate"].isin(list(idents))]  # a run whose candidate the study does not know is left out
    ok = long[~long["failed"].astype(bool)]
    agg = ok.groupby(["candidate", "key"], sort=False)["value"].agg(["mean", "std", "count"])
    per_seed: dict = {}
    for (cand, key, seed), v in ok.groupby(["candidate", "key", "seed"], sort=False)["value"].mean().items():
        per_seed.setdefault((cand, key), {})[seed] = float(v)
    runs = long[long["group"] != ""].drop_duplicates(["candidate", "number", "group"])
    flags = pd.DataFrame(
        {
            "runs": 1,
            "failed": runs["failed"].astype(int),
            "not_converged": (runs["converged"] == False).astype(int),  # noqa: E712 - None is "unchecked"
            "unchecked": runs["converged"].isna().astype(int),
        }
    )
    guards = flags.groupby([runs["candidate"], runs["group"]], sort=False).sum()
    rows = {name: {**ident, "metrics": {}, "by_seed": {}, "guards": {}} for name, ident in idents.items()}
    for (name, key), mean, sd, n in agg.itertuples():
        rows[name]["metrics"][key] = Stat(float(mean), None if n < 2 else float(sd), int(n))
        rows[name]["by_seed"][key] = per_seed[(name, key)]
    for (name, group), *counts in guards.itertuples():
        rows[name]["guards"][group] = dict(zip(guards.columns, map(int, counts), strict=True))
    return list(rows.values())


def candidate_rows(space: dict, records: list[dict]) -> list[dict]:
    """One row per candidate: identity from its first run, a Stat and per-seed means of every metric, guards."""
    idents = {}
    for name, runs in groups(space, records).items():
        first = runs[0]["attrs"]
        idents[name] = {
            "candidate": name,
            "model_label": first.get("model_label", name),
            "layout": first.get("layout", ""),
            "stages": first.get("stages", ""),
            "depths": first.get("depths", []),
            "optimizers": sorted({str((r["attrs"].get("optim") or {}).get("optimizer", "?")) for r in runs}),
            "n": len(runs),
        }
    return rows_from_frame(frame(space, records), idents)


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
    vals = pd.Series([c[key][i] for c in cs if c[key][i] is not None], dtype=float)
    return float(vals.mean()) if len(vals) else math.nan


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
        per_run = [[float(pd.Series([c[k][i] for k in kinds]).mean()) for i in range(len(severity))] for c in cs]
        accs = [stat(100 * run[i] for run in per_run) for i in range(len(severity))]
        rows.append({"candidate": name, "severity": severity, "acc": accs, "corruptions": kinds, "runs": len(cs)})
    return rows
