"""The score registry: one module per score; the trial runner, pruning, objective fallback and report derive from it.

Scores run in registry order, so a score that reuses another's trained model (robustness) comes after it.
A new score is one new module (its spec, run function and metrics) plus its line in `SCORES`, or a
`register_score` call at run time: the DSL's `scores:` section (`ScoresSpec`, `scores_spec()`), `METRICS` and
`FALLBACK` derive from the registry, read from it when used (`unregister_score` undoes a registration).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from coatsearch.scores import accuracy, capacity, generalization, length, robustness, speed, transfer
from coatsearch.scores.base import Context, Guard, Measured, Metric, Report, RunCurve, Score, TrialInput
from coatsearch.vocab import specs
from coatsearch.vocab.registry import Registry

if TYPE_CHECKING:
    from coatsearch.training.checkpoint_policy import Trial as Checkpoints
    from coatsearch.training.listeners import Listener

__all__ = [
    "FALLBACK",
    "METRICS",
    "SCORES",
    "Context",
    "Guard",
    "Measured",
    "Metric",
    "Report",
    "RunCurve",
    "Score",
    "ScoresField",
    "ScoresSection",
    "ScoresSpec",
    "TrialInput",
    "measure",
    "register_score",
    "role",
    "unregister_score",
]

SCORES: Registry[Score] = Registry(
    "score",
    {
        s.name: s
        for s in (
            generalization.SCORE,
            capacity.SCORE,
            accuracy.SCORE,
            transfer.SCORE,
            length.SCORE,
            robustness.SCORE,
            speed.SCORE,  # last: it builds a fresh model of its own and times it, after every trained score
        )
    },
)


@dataclasses.dataclass(frozen=True)
class ScoresSection:
    """The base of every `ScoresSpec`: the `scores:` section, one optional field per registered score."""

    def __getattr__(self, name: str) -> Any:
        """A score's section (typed per score at run time; None when the score is off)."""
        raise AttributeError(name)


def _check_sections(self: ScoresSection) -> None:
    """Each enabled score's own check (`Score.check`), given the enabled scores before it that keep a model.

    The message starts with the section's and the field's names ('robustness: source: ...'), which the DSL's
    error reads to point at that field's line."""
    models: list[str] = []
    for score in SCORES.values():
        spec = getattr(self, score.name)
        if spec is None:
            continue
        problem = score.check(spec, tuple(models))
        if problem:
            raise ValueError(f"{score.name}: {problem}")
        if score.keeps_model:
            models.append(score.name)


def _key() -> tuple:
    """The registry's state as far as what derives from it goes: each score's name and section spec, in order."""
    return tuple((s.name, s.section, s.fallback, s.headline) for s in SCORES.values())


_MADE: dict[tuple, type[ScoresSection]] = {}  # _key() -> its ScoresSpec: a registry back in a state gets its class
_FALLBACKS: dict[tuple, tuple[str, ...]] = {}  # _key() -> its FALLBACK: the same tuple object for the same registry


def scores_spec() -> type[ScoresSection]:
    """The `scores:` section's spec for the registry as it is now: one optional field per registered score, typed
    by its section spec; made once per registry state (an undone registration gets back the class it had)."""
    key = _key()
    if key not in _MADE:
        cls = dataclasses.make_dataclass(
            "ScoresSpec",
            [(s.name, s.section | None, dataclasses.field(default=None)) for s in SCORES.values()],
            bases=(ScoresSection,),
            namespace={"__post_init__": _check_sections, "__module__": __name__},
            frozen=True,
        )
        cls.__doc__ = "Which paper measurements a trial makes: one section per registered score (None = skipped)."
        cls.__pydantic_config__ = specs.FORBID  # type: ignore[attr-defined]  # unknown keys (and scores): errors
        _MADE[key] = cls
    return _MADE[key]


def fallback() -> tuple[str, ...]:
    """A candidate whose scores leave out the study's objective reports the first of these it measured as its
    trial value (the attribute `objective` names which); the report judges a study by the same list."""
    ordered = sorted(SCORES.values(), key=lambda s: s.fallback or 1 << 30)
    made = tuple(s.headline for s in ordered if s.fallback is not None and s.headline is not None)
    return _FALLBACKS.setdefault(_key(), made)


class _Current:
    """Pydantic metadata: a `scores:` field validates as the ScoresSpec of the registry when the validator is made
    (space.schema.document() makes it again when the registry changed)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        return handler.generate_schema(scores_spec())


ScoresField = Annotated[ScoresSection, _Current()]  # the type of a `scores:` field in the space file's documents

if TYPE_CHECKING:
    ScoresSpec = ScoresSection  # for the type checker: the class is made from the registry (`scores_spec`)
    FALLBACK: tuple[str, ...]


def __getattr__(name: str) -> Any:
    """`ScoresSpec` and `FALLBACK` as the registry makes them now (read when used, never frozen at import)."""
    if name == "ScoresSpec":
        return scores_spec()
    if name == "FALLBACK":
        return fallback()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_MODEL = (
    Metric("params", "params", "M", 1e-6, 3, table=False),
    Metric("macs", "MACs", "M", 1e-6, 2, table=False),
    Metric("budget_error", "budget error", "%", 100, 1, table=False),
    Metric("budget_params_error", "params budget error", "%", 100, 1, table=False),  # joint budgets only
)


def _metrics() -> dict[str, Metric]:
    """Every metric key: the model's size, each score's derived and recorded metrics in registry order, wall time."""
    wall = Metric("wall_s", "wall time", "s", 1, 0, table=False)
    return {m.key: m for m in (*_MODEL, *(m for s in SCORES.values() for m in (*s.derived, *s.metrics)), wall)}


METRICS: dict[str, Metric] = _metrics()  # updated in place when the registry changes: importers see the change


def register_score(score: Score, *, before: str | None = None) -> None:
    """Add `score` at run time (before the score `before`, else last); what derives from it follows."""
    if not score.name.isidentifier() or score.name in SCORES:
        known = ", ".join(SCORES)
        raise ValueError(f"a new score needs a new identifier as its name, not {score.name!r} (known: {known})")
    keys = [m.key for m in (*score.derived, *score.metrics)]
    clash = [k for k in keys if k in METRICS or not k.startswith(f"{score.name}.")]
    if clash:
        raise ValueError(f"score {score.name!r}: metric keys must be new and start with '{score.name}.': {clash}")
    taken = {r for s in SCORES.values() for r in s.roles}
    bad = [r for r, k in score.roles.items() if r in taken or not k.startswith(f"{score.name}.")]
    if bad:
        raise ValueError(f"score {score.name!r}: roles must be new and name keys starting '{score.name}.': {bad}")
    SCORES.register(score.name, score, before=before)
    METRICS.clear()
    METRICS.update(_metrics())


def unregister_score(name: str) -> Score:
    """Remove the score `name` (the undo of `register_score`); returns it."""
    score = SCORES.unregister(name)
    METRICS.clear()
    METRICS.update(_metrics())
    return score


def enabled(scores: ScoresSpec) -> list[tuple[Score, object]]:
    """(score, its spec) for every score a candidate's scores enable, in registry order."""
    return [(s, spec) for s in SCORES.values() if (spec := getattr(scores, s.name)) is not None]


def measure(
    inp: TrialInput,
    device: Any,
    progress: bool = False,
    report: Report | None = None,
    fit: Callable | None = None,
    checkpoints: Checkpoints | None = None,
    models: dict[str, Any] | None = None,
    listener: Listener | None = None,
) -> Measured:
    """Run every score the space enables, in registry order; what they measured, joined (`Measured.merge`).

    `fit(phase, ...)` replaces `training.fit` for every training run (the planner's timing pilot); None: training.fit.
    `checkpoints`: the trial's checkpointing (training.checkpoint_policy.Trial), passed to every training run's `fit`;
    `listener`: hears each training run's curve points (training.listeners; None: nobody).
    `models`: a dict the scores' trained models are left in (`Context.models`: score name -> (model, test images,
    validation images)), for a caller that keeps the weights (runner.kept); None: dropped with the context.
    """
    ctx = Context(inp, device, progress, report, fit=fit, checkpoints=checkpoints, listener=listener)
    if models is not None:
        ctx.models = models
    out = Measured()
    for score, spec in enabled(inp.scores):
        out = out.merge(score.run(ctx, spec))
    return out


def signal(objective: str, scores: ScoresSpec) -> str | None:
    """The run phase whose per-epoch eval accuracy a pruner sees for `objective` (None: nothing to prune on)."""
    score = SCORES.get(objective.split(".", 1)[0])
    spec = getattr(scores, score.name) if score else None
    return score.signal(spec) if score is not None and spec is not None else None


def max_epochs(scores: ScoresSpec) -> int:
    """The longest schedule any enabled score trains (at least 1)."""
    return max([1, *(e for s, spec in enabled(scores) for e in s.epochs(spec))])


def curve_scores() -> tuple[str, ...]:
    """Single-run scores, whose per-epoch curve `curves.<name>` the report draws."""
    return tuple(s.name for s in SCORES.values() if s.single_run)


def derived() -> tuple[str, ...]:
    """Metric keys the report derives from the records (a score's `derived`): never read from a trial's record."""
    return tuple(m.key for s in SCORES.values() for m in s.derived)


def guards() -> tuple[Guard, ...]:
    """Every score's training runs as the regime guards read them, in registry order."""
    return tuple(g for s in SCORES.values() for g in s.guards)


def titles() -> dict[str, str]:
    """Score name -> its title in the report's figures (its name when it declares none)."""
    return {s.name: s.title or s.name for s in SCORES.values()}


def v_accs() -> tuple[str, ...]:
    """The headline accuracies of single-run scores (the depth-split table's columns), in registry order."""
    return tuple(s.headline for s in SCORES.values() if s.single_run and s.headline)


def ranked() -> tuple[str, ...]:
    """Metric keys the report ranks, in registry order."""
    return tuple(k for k, m in METRICS.items() if m.ranked)


def table_keys() -> tuple[str, ...]:
    """Metric keys the report's candidate table shows, in registry order."""
    return tuple(k for k, m in METRICS.items() if m.table)


def role(name: str) -> str:
    """The key that a registered score declares for the role `name` (Score.roles); a one-line error naming those
    that exist."""
    for s in SCORES.values():
        if name in s.roles:
            return s.roles[name]
    declared = ", ".join(r for s in SCORES.values() for r in s.roles)
    raise KeyError(f"no score declares the role '{name}' (declared: {declared})")
