"""The flat form of a run record, as plain data: the keys a trial measures and version 1 of the stored record.

- Measured keys: `score.name` per metric and `curves.<name>` per curve, as `scores.Measured.to_json` gives them;
  `split` nests them per score and per curve, `join` flattens them back.
- Version 1 (journals written before the record, as at 7eb0683 and b1c4749): one user attribute per field and
  per metric. `to_data` turns such attributes into the record's JSON data (what `record.from_json` reads: the
  migration-on-read), `from_data` writes JSON data back in that form. Dicts in, dicts out: the record's types
  stay in coatsearch.storage.record, which imports this module.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

ATTR = "record"  # the Optuna user attribute holding a trial's run record (record.ATTR)

_TOP = {"candidate", "seed", "sample", "wall_s", "device", "env", "optim", "objective", "objectives", "images"}


def split(measured: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Measured keys as (metrics per score, curves per name); a key without a dot is left out."""
    metrics: dict[str, dict[str, Any]] = {}
    curves: dict[str, Any] = {}
    for key, value in measured.items():
        score, _, name = key.partition(".")
        if score == "curves" and isinstance(value, Mapping):
            curves[name] = value
        elif name:
            metrics.setdefault(score, {})[name] = value
    return metrics, curves


def join(metrics: Mapping[str, Mapping[str, Any]], curves: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of `split`: metrics per score and curves per name as measured keys."""
    out: dict[str, Any] = {f"{s}.{n}": v for s, per in metrics.items() for n, v in per.items()}
    out.update({f"curves.{name}": c for name, c in curves.items()})
    return out


def optimizer(settings: Mapping[str, Any]) -> dict[str, Any]:
    """An optimizer's JSON data from its settings: its name, lr and weight decay, and every setting."""
    s = dict(settings)
    return {"name": str(s.get("optimizer", "?")), "lr": s.get("lr"), "weight_decay": s.get("weight_decay"),
            "settings": s}  # fmt: skip


def to_data(attrs: Mapping[str, Any], model: Collection[str], skip: Collection[str]) -> dict[str, Any]:
    """Version 1's attributes as the record's JSON data (version 1, COMPLETE until the storage says otherwise).

    `model`: the flat keys of the model's fields (its label as `model_label`); `skip`: other attributes that are
    no part of the record (the claim protocol's). Attributes with no place in the record go to `extra`."""
    a = dict(attrs)
    ident = {"candidate": str(a.get("candidate") or "?"), "seed": a.get("seed"), "sample": a.get("sample"),
             "key": a.get("key")}  # fmt: skip
    fields = None
    if "layout" in a or "macs" in a:
        fields = {("label" if k == "model_label" else k): a[k] for k in model if k in a}
    metrics, curves = split({k: v for k, v in a.items() if "." in k})
    env, environment = a.get("env"), None
    if isinstance(env, Mapping) or "device" in a:
        environment = {**(env or {}), "device": a.get("device")}
    left = _TOP | set(model) | set(skip) | {"fail_reason"}
    return {
        "version": 1, "state": "COMPLETE", "identity": ident, "model": fields, "metrics": metrics, "curves": curves,
        "optimizer": optimizer(a["optim"]) if isinstance(a.get("optim"), Mapping) else None,
        "wall_s": a.get("wall_s"), "environment": environment, "objective": a.get("objective"),
        "objectives": list(a.get("objectives") or ()), "fail_reason": a.get("fail_reason"),
        "images": dict(a["images"]) if isinstance(a.get("images"), Mapping) else {},
        "extra": {k: v for k, v in a.items() if "." not in k and k not in left},
    }  # fmt: skip


_ENV_SINCE_V1 = ("cpu_kernels",)  # environment fields version 1 never wrote: left out of its form while unset


def from_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """The record's JSON data (record.to_json) in version 1's form: one flat key per field and metric."""
    i = data["identity"]
    out: dict[str, Any] = {"candidate": i["candidate"], "seed": i["seed"], "sample": i["sample"], "key": i["key"]}
    if data["model"] is not None:
        m = dict(data["model"])
        out.update({"model_label": m.pop("label"), **m})
    out.update(join(data["metrics"], data["curves"]))
    if data["optimizer"] is not None:
        out["optim"] = data["optimizer"]["settings"]
    if data["environment"] is not None:
        env = {k: v for k, v in data["environment"].items() if v is not None or k not in _ENV_SINCE_V1}
        out.update(device=env.pop("device"), env=env)
    out.update(wall_s=data["wall_s"], objective=data["objective"], **data["extra"])
    out.update({"objectives": list(data["objectives"])} if data["objectives"] else {})
    out.update({"images": dict(data["images"])} if data.get("images") else {})
    out.update({} if data["fail_reason"] is None else {"fail_reason": data["fail_reason"]})
    return out
