"""Optimizability tables (ViT_C paper §4): EDF over sampled hyperparameters, optimizer gap, peak, samples."""

from __future__ import annotations

from coatsearch.report.claims import EDF_K
from coatsearch.report.info import METRICS, candidate_of, complete
from coatsearch.scores import FALLBACK as FALLBACK_ACC  # the trial runner's objective fallback, one list

SEARCH_PREFIXES = ("train.", "model.")
VIT_LABELS = ("ViT_P", "ViT_C")


def primary_acc(space: dict, records: list[dict]) -> str | None:
    """The accuracy a study is judged by: its objective when that is a measured accuracy, else the first measured."""
    done = complete(records)
    objective = (space.get("study") or {}).get("objective")
    keys = ([objective] if objective in METRICS and METRICS[objective].unit == "%" else []) + list(FALLBACK_ACC)
    return next((k for k in keys if any(k in r["attrs"] for r in done)), None)


def search_dims(records: list[dict]) -> list[str]:
    """Sampled hyperparameters (params with a train./model. path) found in the records."""
    return sorted({k for r in records for k in r["params"] if k.startswith(SEARCH_PREFIXES)})


def has_vit(records: list[dict]) -> bool:
    """Whether the study ran ViT_P or ViT_C models."""
    return any(r["attrs"].get("model_label") in VIT_LABELS for r in complete(records))


def _optimizer(r: dict) -> str:
    return str((r["attrs"].get("optim") or {}).get("optimizer", "?"))


def _runs(records: list[dict], acc_key: str) -> list[dict]:
    """Complete runs with the accuracy measured, as (candidate, label, optimizer, acc %, lr, wd, number)."""
    out = []
    for r in complete(records):
        acc = r["attrs"].get(acc_key)
        if not isinstance(acc, int | float):
            continue
        optim = r["attrs"].get("optim") or {}
        out.append(
            {
                "candidate": candidate_of(r),
                "model_label": r["attrs"].get("model_label", candidate_of(r)),
                "optimizer": _optimizer(r),
                "acc": 100 * acc,
                "lr": optim.get("lr"),
                "weight_decay": optim.get("weight_decay"),
                "number": r["number"],
            }
        )
    return out


def edf(records: list[dict], acc_key: str, k: float = EDF_K) -> list[dict]:
    """Per candidate (and optimizer): sorted Δerror (points) from the best run of its model label, and the EDF."""
    runs = _runs(records, acc_key)
    best = {}
    for r in runs:
        best[r["model_label"]] = max(best.get(r["model_label"], r["acc"]), r["acc"])
    many = len({r["optimizer"] for r in runs}) > 1
    keys = list(dict.fromkeys((r["candidate"], r["optimizer"]) for r in runs))
    out = []
    for cand, opt in keys:
        group = [r for r in runs if (r["candidate"], r["optimizer"]) == (cand, opt)]
        label = group[0]["model_label"]
        delta = sorted(best[label] - r["acc"] for r in group)
        n = len(delta)
        out.append(
            {
                "label": f"{cand} ({opt})" if many and opt not in cand.lower() else cand,
                "candidate": cand,
                "model_label": label,
                "optimizer": opt,
                "delta": delta,
                "fraction": [(i + 1) / n for i in range(n)],
                "n": n,
                "k": k,
                "within_k": sum(d <= k for d in delta) / n,
            }
        )
    return out


def _best(group: list[dict]) -> dict | None:
    return max(group, key=lambda r: r["acc"]) if group else None


def optimizer_gap(records: list[dict], acc_key: str) -> list[dict]:
    """Per model label: best AdamW and best SGD accuracy (%), their lr/wd, and the gap AdamW − SGD (points)."""
    runs = _runs(records, acc_key)
    rows = []
    for label in dict.fromkeys(r["model_label"] for r in runs):
        mine = [r for r in runs if r["model_label"] == label]
        adamw = _best([r for r in mine if r["optimizer"] == "adamw"])
        sgd = _best([r for r in mine if r["optimizer"] == "sgd"])
        if adamw is None and sgd is None:
            continue
        rows.append(
            {
                "model_label": label,
                "adamw": adamw,
                "sgd": sgd,
                "n_adamw": sum(r["optimizer"] == "adamw" for r in mine),
                "n_sgd": sum(r["optimizer"] == "sgd" for r in mine),
                "gap": adamw["acc"] - sgd["acc"] if adamw and sgd else None,
            }
        )
    return rows


def peak(records: list[dict], acc_key: str) -> list[dict]:
    """Best run per model label: accuracy (%), candidate, optimizer, lr, wd and trial number."""
    runs = _runs(records, acc_key)
    labels = dict.fromkeys(r["model_label"] for r in runs)
    return [_best([r for r in runs if r["model_label"] == label]) for label in labels]


def samples(records: list[dict]) -> list[dict]:
    """Hyperparameter samples per candidate and optimizer: runs complete, and trials that did not complete."""
    out = []
    done = complete(records)
    for cand in dict.fromkeys(candidate_of(r) for r in records):
        mine = [r for r in done if candidate_of(r) == cand]
        failed = sum(candidate_of(r) == cand and r["state"] != "COMPLETE" for r in records)
        for i, opt in enumerate(sorted({_optimizer(r) for r in mine}) or ["?"]):
            out.append(
                {
                    "candidate": cand,
                    "model_label": mine[0]["attrs"].get("model_label", cand) if mine else cand,
                    "optimizer": opt,
                    "complete": sum(_optimizer(r) == opt for r in mine),
                    "not_complete": failed if i == 0 else 0,  # per candidate: on its first row
                    "dims": sorted({k for r in mine for k in r["params"] if k.startswith(SEARCH_PREFIXES)}),
                }
            )
    return out
