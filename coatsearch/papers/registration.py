"""The registered analysis of a study (registration.json): fixed and fingerprinted before its first trial.

A registration holds what decides a study's verdicts, as it stood before any trial ran: the space's identity (the
sha256 of its parsed content; registrations made before it hold the file's bytes' sha256, which still matches) and
profile, seeds, candidates, objectives, the claims with their measures and margins, α, the verdict rule's
version, the stopping rules and the data (eval and test images). Its fingerprint is the sha256 of that analysis
in canonical JSON. `run` (and `plan --register`) writes it once; a later run whose analysis differs keeps the
original and appends the deviation, which makes the study exploratory (docs/verdicts.md, "Registered analyses").

The analysis is computed from a study's space record (storage.trials.space_record), the same for `run`, which
registers, and for the report, which compares; so one function says what "the same analysis" means.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from coatsearch import fsafe
from coatsearch.errors import UserError
from coatsearch.papers.standing import Standing, concerns

_REGISTRATION_FILE = "registration.json"  # beside the study's journal
FORMAT = 1  # registration.json's format version
_STUDY_KEYS = ("seeds", "samples", "sampler", "objective", "direction", "objectives", "directions", "baselines",
              "reevaluate")  # fmt: skip  # the study settings that change what a verdict rests on
_STOP_KEYS = ("epochs", "max_steps", "stop_at_loss", "target_acc", "loss_levels", "per_class")  # per training run
_SET_KEYS = ("fit_loss",)  # registered only where set, so that analyses registered before the field keep theirs


class Analysis(BaseModel):
    """The analysis a study's verdicts rest on, as registered (every field enters the fingerprint)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    space: str  # the space's `name`
    space_sha256: str | None  # the space's identity as run (space.identity); older registrations: the file's bytes
    profile: str
    seeds: tuple[int, ...]
    candidates: tuple[str, ...]
    study: dict[str, Any]  # _STUDY_KEYS: objectives, directions, sampler, samples, re-evaluation
    claims: dict[str, dict[str, Any]]  # claim id -> chain, measures, margin (report.claims)
    untestable: dict[str, str] = {}  # claim id -> why this scale cannot test it (never a verdict)
    pilots: tuple[str, ...] = ()  # the claims this space pilots (its looks spend no test α)
    alpha: float  # the verdicts' family-wise level (report.claims.VERDICT_ALPHA)
    interval_alpha: float  # the printed intervals' level (report.claims.ALPHA)
    rule_version: str  # papers.rule_tables.RULE_VERSION
    stopping: dict[str, Any]  # pruner, and per training run: epochs, max_steps, stop_at_loss, ...
    data: dict[str, Any]  # dataset, eval_size, test_size, test_draw
    replicate_of: str | None = None  # the study this one replicates


class Deviation(BaseModel):
    """A run whose analysis differed from the registered one: when, its fingerprint, and what changed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at: str
    fingerprint: str
    changes: tuple[str, ...]


class Registration(BaseModel):
    """registration.json: the registered analysis, its fingerprint, and every later deviation from it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: int = FORMAT
    study: str
    fingerprint: str
    registered_at: str
    trials_before: int = 0  # trials the study held when it was registered (0: registered before the first)
    source: str = ""  # the space file's path as given (not in the fingerprint: a moved file is the same analysis)
    identity: str = ""  # the study's Optuna identity (storage.store.IDENTITY; "": not yet bound, or an older study)
    analysis: Analysis
    deviations: tuple[Deviation, ...] = ()


def _claims() -> dict[str, dict[str, Any]]:
    """Every claim the report judges, with what decides it: its chain, measures and margin."""
    from coatsearch.papers.claims import CHAIN_CLAIMS, REL_CLAIM, STEM_CLAIM

    return {c.id: {"chain": c.chain, "measures": list(c.measures), "margin": c.margin}
            for c in (*CHAIN_CLAIMS, REL_CLAIM, STEM_CLAIM)}  # fmt: skip


def _rule_version() -> str:
    from coatsearch.papers.rule_tables import RULE_VERSION

    return RULE_VERSION


def _runs(scores: Any, prefix: str = "") -> dict[str, dict[str, Any]]:
    """Each training run of the scores record (a mapping with `epochs`), dotted name -> its stopping fields."""
    if not isinstance(scores, Mapping):
        return {}
    if "epochs" in scores:
        set_ = {k: scores[k] for k in _SET_KEYS if scores.get(k) is not None}
        return {prefix.rstrip("."): {**{k: scores.get(k) for k in _STOP_KEYS}, **set_}}
    return {k: v for key, sub in scores.items() for k, v in _runs(sub, f"{prefix}{key}.").items()}


def space_sha256(record: Mapping[str, Any], registered: str | None = None) -> str | None:
    """The space hash of a space record (space.identity.space_hash: its content hash, else the file hash or that of
    the recorded text of older studies). `registered`, a hash registered before content hashes that this record
    also holds (its file's bytes), is kept, so such a study keeps its fingerprint."""
    from coatsearch.space.identity import space_hash, space_ids

    return registered if registered is not None and registered in space_ids(record) else space_hash(record)


def analysis(record: Mapping[str, Any], replicate_of: str | None = None, registered: Analysis | None = None
             ) -> Analysis:  # fmt: skip
    """The analysis of a study's space record (storage.trials.space_record, or the one stored with the study);
    `registered`: the analysis it is compared with, whose space hash may be of an older identity (space_sha256)."""
    from coatsearch.analysis.constants import ALPHA, VERDICT_ALPHA

    study, data = dict(record.get("study") or {}), dict(record.get("data") or {})
    payload = dict(
        space=str(record.get("space")),
        space_sha256=space_sha256(record, registered.space_sha256 if registered is not None else None),
        profile=str(record.get("profile") or "default"),
        seeds=tuple(study.get("seeds") or ()),
        candidates=tuple(record.get("candidates") or ()),
        study={k: study.get(k) for k in _STUDY_KEYS if k != "seeds"},
        claims=_claims(),
        untestable=dict(record.get("untestable") or {}),
        pilots=tuple(record.get("pilots") or ()),
        alpha=VERDICT_ALPHA,
        interval_alpha=ALPHA,
        rule_version=_rule_version(),
        stopping={"pruner": study.get("pruner"), "runs": _runs(record.get("scores"))},
        data={
            "dataset": data.get("dataset"),
            "eval_size": data.get("eval_size"),
            "test_size": data.get("test_size"),
            "test_draw": data.get("test_draw", 0),
            # recorded only when not the default, so registrations made before the field keep their fingerprint
            **({"test_sampling": data["test_sampling"]} if data.get("test_sampling", "shared") != "shared" else {}),
        },  # fmt: skip
        replicate_of=replicate_of,
    )
    return Analysis.model_validate(json.loads(json.dumps(payload, default=str)))  # as it reads back


def canonical(a: Analysis) -> str:
    """The analysis as canonical JSON (sorted keys, no spaces): what the fingerprint hashes."""
    return json.dumps(a.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), default=str)


def fingerprint(a: Analysis) -> str:
    """The sha256 of the analysis in canonical JSON."""
    return hashlib.sha256(canonical(a).encode("utf-8")).hexdigest()


def changes(registered: Analysis, now: Analysis) -> list[str]:
    """One line per field that differs from the registered analysis, e.g. 'seeds: [0, 1] -> [0, 1, 2]'."""
    from coatsearch.storage.trials import diff

    was, new = (json.loads(json.dumps(a.model_dump(mode="json"), default=str)) for a in (registered, now))
    return [f"{k}: {a} -> {b}" for k, a, b in diff(was, new)]


def path(folder: Path) -> Path:
    """The registration file of the study in `folder`."""
    return Path(folder) / _REGISTRATION_FILE


def load(folder: Path) -> Registration | None:
    """The study's registration; None when it has none. A damaged one is a one-line UserError naming the file."""
    where = path(folder)
    if not os.path.lexists(where):
        return None
    raw = fsafe.read_bytes(where, fsafe.JSON_MAX)  # a link, a special or a huge file is a one-line UserError
    try:
        reg = Registration.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(map(str, first["loc"])) or "(the file)"
        raise UserError(f"{where}: field '{field}': {first['msg']}; the registration is damaged") from None
    if fingerprint(reg.analysis) != reg.fingerprint:
        raise UserError(f"{where}: the analysis does not hash to its recorded fingerprint (edited by hand?)")
    return reg


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def register(
    record: Mapping[str, Any],
    folder: Path,
    study: str,
    *,
    replicate_of: str | None = None,
    trials: int = 0,
    identity: str | None = None,
) -> tuple[Registration, list[str]]:
    """Write the study's registration if it has none; else keep it and append a deviation when the analysis
    differs (the same deviation is recorded once). (the registration as it stands, this run's changes).
    `identity`: the study's Optuna identity; a registration made before the study existed (`plan --register`)
    is tied to it on the first run, while the study holds no trial."""
    old = load(folder)
    now = analysis(record, replicate_of, old.analysis if old is not None else None)
    if old is None:
        reg = Registration(study=study, fingerprint=fingerprint(now), registered_at=_now(), trials_before=trials,
                           source=str(record.get("source") or ""), analysis=now, identity=identity or "")  # fmt: skip
        save(reg, folder)
        return reg, []
    if identity and not old.identity and not trials and old.study == study:
        old = old.model_copy(update={"identity": identity})
        save(old, folder)
    diff = changes(old.analysis, now)
    if not diff:
        return old, []
    mark = fingerprint(now)
    if any(d.fingerprint == mark for d in old.deviations):
        return old, diff
    reg = old.model_copy(update={"deviations": (*old.deviations, Deviation(at=_now(), fingerprint=mark,
                                                                           changes=tuple(diff)))})  # fmt: skip
    save(reg, folder)
    more = f" (and {len(diff) - 2} more)" if len(diff) > 2 else ""
    print(f"coatsearch: note: {path(folder)}: the analysis differs from the registered one ({'; '.join(diff[:2])}"
          f"{more}); the registration is kept and the deviation recorded: the study is exploratory",
          file=sys.stderr)  # fmt: skip
    return reg, diff


@dataclass(frozen=True)
class Registrar:
    """A study's registration against one run's space record: checked before the study is written, then kept."""

    record: Mapping[str, Any]  # storage.trials.space_record of the space this run runs
    folder: Path  # the study's folder
    study: str

    def check(self) -> Registration | None:
        """The registration, after checking it is of this space and profile (a one-line UserError otherwise)."""
        reg = load(self.folder)
        space, profile = str(self.record.get("space")), str(self.record.get("profile") or "default")
        if reg is not None and (reg.analysis.space, reg.analysis.profile) != (space, profile):
            raise UserError(
                f"{path(self.folder)}: registers space '{reg.analysis.space}' profile '{reg.analysis.profile}', "
                f"not '{space}' profile '{profile}'; allowed: the registered space, or another --study name"
            )
        return reg

    def register(self, trials: int = 0, replicate_of: str | None = None) -> tuple[Registration, list[str]]:
        """Register (or keep, recording a deviation) this run's analysis; a resumed replicate stays one."""
        reg = self.check()
        if replicate_of is None and reg is not None:
            replicate_of = reg.analysis.replicate_of
        from coatsearch.storage.store import identity

        mine = identity(self.folder, self.study)
        return register(self.record, self.folder, self.study, replicate_of=replicate_of, trials=trials, identity=mine)

    def lines(self) -> tuple[str, ...]:
        """The planner's registration block for this space (plan_lines)."""
        return plan_lines(self.record, self.folder, self.study)


def foreign(reg: Registration, study: str | None, identity: str | None) -> list[str]:
    """Why `reg` is not this study's own (a registration.json copied from another study): [] when it is. `study`,
    `identity`: this study's name and Optuna identity (None: not known, not checked)."""
    if study is not None and reg.study != study:
        return [f"registered for study '{reg.study}', not '{study}' (copied from another study?)"]
    if identity and reg.identity != identity:
        was = f"another Optuna study ({reg.identity[:12]}…)" if reg.identity else "no Optuna study (never bound)"
        return [f"registered for {was}, not this one ({identity[:12]}…; copied from another study?)"]
    return []


def standing(reg: Registration, now: Analysis, study: str | None = None, identity: str | None = None) -> Standing:
    """A study with analysis `now` against its registration `reg`, each change with the claims it concerns.
    `study`, `identity`: this study's name and Optuna identity, which the registration must carry (`foreign`)."""
    diff = foreign(reg, study, identity) + changes(reg.analysis, now) + [c for d in reg.deviations for c in d.changes]
    if reg.trials_before:
        diff.insert(0, f"registered after {reg.trials_before} trial(s) had run")
    return Standing(reg.fingerprint, tuple((c, concerns(c)) for c in diff))


def verdict_line(reg: Registration | None, now: Analysis, study: str | None = None, identity: str | None = None) -> str:
    """Whether a study with analysis `now` would be confirmatory under `reg` for every claim: the planner's line."""
    if reg is None:
        return "not yet registered (the first `coatsearch run`, or `coatsearch plan --register`, registers it)"
    return standing(reg, now, study, identity).line()


def plan_lines(record: Mapping[str, Any], folder: Path, study: str | None = None) -> tuple[str, ...]:
    """The planner's block: what would be registered, and whether the study would be confirmatory."""
    from coatsearch.storage.store import identity

    reg = load(folder)
    now = analysis(record, reg.analysis.replicate_of if reg else None, reg.analysis if reg else None)
    mine = identity(folder, study) if study is not None else None
    return ("registered analysis (what `run` registers before the first trial):",
            *(f"  {line}" for line in summary(now)), verdict_line(reg, now, study, mine))  # fmt: skip


def save(reg: Registration, folder: Path) -> Path:
    """Write registration.json atomically (coatsearch.fsafe: no link followed)."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    return fsafe.write(path(folder), json.dumps(reg.model_dump(mode="json"), indent=1, default=str) + "\n")


def summary(a: Analysis) -> list[str]:
    """What is registered, one line per part (the planner's block and the report's setup)."""
    sha = (a.space_sha256 or "unknown")[:12]
    claims = ", ".join(f"({k}) margin {v['margin']:g}" for k, v in sorted(a.claims.items()) if k not in a.untestable)
    runs = "; ".join(f"{k}: " + ", ".join(f"{f} {v[f]}" for f in ("epochs", "max_steps", "stop_at_loss")
                                          if v.get(f) is not None)
                     for k, v in sorted(a.stopping.get("runs", {}).items()))  # fmt: skip
    d = a.data
    test = f", test {d['test_size']} images (draw {d['test_draw']})" if d.get("test_size") is not None else ""
    test += ", test images sampled per seed" if d.get("test_sampling") == "per_seed" else ""
    return [
        f"space {a.space} (sha256 {sha}…), profile {a.profile}"
        + (f", replicate of {a.replicate_of}" if a.replicate_of else ""),
        f"seeds {', '.join(map(str, a.seeds))}; candidates {', '.join(a.candidates)}",
        f"objective {', '.join(a.study.get('objectives') or [a.study.get('objective')])}",
        f"claims {claims}" + (f"; pilots ({', '.join(a.pilots)})" if a.pilots else ""),
        f"α {a.alpha:g} (Holm), intervals {1 - a.interval_alpha:.0%}, rule {a.rule_version}",
        f"stopping: pruner {a.stopping.get('pruner')}; {runs or 'no training runs'}",
        f"data {d.get('dataset')}, eval {d.get('eval_size') or 'whole split'}{test}",
    ]
