"""What a score declares (Score, Metric), what its run function gets (TrialInput, Context) and returns (Measured,
RunCurve); no torch here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from coatsearch.training.point import RunCurve
from coatsearch.vocab import specs

if TYPE_CHECKING:
    from coatsearch.training.checkpoint_policy import Trial as Checkpoints
    from coatsearch.training.listeners import Listener

Report = Callable[[str, int, float], None]  # (run phase, epoch, eval accuracy), e.g. for a pruner


@dataclass(frozen=True)
class Metric:
    """How one measured key is shown and compared: label, unit after scaling, and the noise floor."""

    key: str
    label: str
    unit: str  # unit of the displayed value (stored value × scale)
    scale: float
    digits: int
    better: str | None = None  # "higher" | "lower" | None (not ranked)
    floor: float | None = None  # noise floor in display units, used when a side has fewer than 2 runs
    table: bool = True  # shown in the report's candidate table
    ranked: bool = False  # ranked with ≈ / ≥ / > in the report


ACC_SCALE = 100  # an accuracy's analysis unit is the point (%): the papers state effects, margins and floors in it


def points(fraction: Any) -> Any:
    """An accuracy stored as a fraction (a float, an array or a Series) in points, the unit the analysis tests,
    compares and reports it in; the one place a stored accuracy is scaled (ACC_SCALE). Rendering only formats."""
    return ACC_SCALE * fraction


def acc(key: str, label: str, *, table: bool = True, ranked: bool = False) -> Metric:
    """An accuracy metric: stored as a fraction, analysed and shown in points (ACC_SCALE), higher is better,
    0.5-point noise floor."""
    return Metric(key, label, "%", ACC_SCALE, 1, "higher", 0.5, table, ranked)


def loss(key: str, label: str, *, ranked: bool = False) -> Metric:
    """A train-loss metric in nats, lower is better, 0.01-nat noise floor."""
    return Metric(key, label, "nats", 1, 3, "lower", 0.01, True, ranked)


def floor(score: str) -> Metric:
    """The fair linear floor of a score's runs (training.floor), recorded by the linear baseline alone."""
    return acc(f"{score}.floor_acc", "fair linear floor", table=False)


@dataclass(frozen=True)
class Guard:
    """One training run of a score as the report's regime guards read it: its name (the curve it records), the
    accuracy that says whether it trained, and the path under `scores:` of the subset whose classes set chance."""

    group: str
    acc: str
    subset: tuple[str, ...]


@dataclass(frozen=True)
class TrialInput:
    """Everything one trial trains with: the matched model, its optimizer, the data and what to score."""

    model: specs.ModelSpec
    optim: specs.OptimSpec
    data: specs.DataSpec
    scores: Any  # coatsearch.scores.ScoresSpec (derived from the registry, which imports this module)
    seed: int
    runs: int = 1  # training runs of this architecture the study plans (seeds x scores), for compile: auto
    init_seed: int | None = None  # the model's initialization seed; None: `seed` (CandidateSpec.init_offset)


@dataclass
class Context:
    """One trial's run of its scores: input, device, progress and pruner callback, and the models trained so far."""

    inp: TrialInput
    device: Any  # torch.device
    progress: bool = False
    report: Report | None = None
    models: dict[str, Any] = field(
        default_factory=dict
    )  # score name -> (trained model, test images, validation images)
    fit: Callable[..., Any] | None = None  # (phase, *training.fit's arguments) -> History: the planner's timing pilot
    checkpoints: Checkpoints | None = None  # the trial's checkpointing, passed to every training run (None: none)
    listener: Listener | None = None  # hears every training run's curve points (a tracked trial; None: nobody)


@dataclass(frozen=True)
class Measured:
    """What scores measured in a trial: metrics by their key `<score>.<name>` and curves by name, each in the order
    measured (read-only; `merge` joins two, as the scores of one trial are joined)."""

    # "<score>.<name>" -> a number, a string or a list of numbers (length's per-schedule accuracies)
    metrics: Mapping[str, Any] = field(default_factory=dict, hash=False)
    # curve name -> a training run's curve, or the JSON data of another curve (robustness's accuracy per severity)
    curves: Mapping[str, RunCurve | Mapping[str, Any]] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", MappingProxyType(dict(self.metrics)))
        object.__setattr__(self, "curves", MappingProxyType(dict(self.curves)))

    def merge(self, *others: Measured) -> Measured:
        """This and `others` joined in order; a key measured again takes the later value and keeps its place."""
        metrics, curves = dict(self.metrics), dict(self.curves)
        for other in others:
            metrics.update(other.metrics)
            curves.update(other.curves)
        return Measured(metrics, curves)

    @classmethod
    def from_json(cls, flat: Mapping[str, Any]) -> Measured:
        """What `to_json` wrote: `curves.<name>` keys as curves (JSON data), every other key as a metric."""
        curves = {k.removeprefix("curves."): v for k, v in flat.items() if k.startswith("curves.")}
        return cls({k: v for k, v in flat.items() if not k.startswith("curves.")}, curves)

    def to_json(self) -> dict[str, Any]:
        """The flat measured form (a record's `storage.record.measured`): the metrics' keys, then `curves.<name>`
        per curve as JSON data."""
        out = dict(self.metrics)
        out.update({f"curves.{n}": c.to_json() if isinstance(c, RunCurve) else dict(c) for n, c in self.curves.items()})
        return out


@dataclass(frozen=True)
class Score:
    """One score: its DSL section, its run function, the metrics and curves it records, and its pruner signal."""

    name: str  # DSL section under `scores:` and the prefix of its metric keys
    section: type  # spec of its DSL section `scores.<name>` (a frozen spec dataclass); the field is None when off
    run: Callable[[Context, Any], Measured]  # (context, spec) -> its metrics and curves
    metrics: tuple[Metric, ...]
    curves: Callable[[Any], tuple[str, ...]]  # spec -> the `curves.<name>` it records
    epochs: Callable[[Any], tuple[int, ...]]  # spec -> the schedules it trains (for the scheduler's max_t)
    signal: Callable[[Any], str | None] = lambda spec: None  # spec -> run phase whose per-epoch eval acc prunes
    headline: str | None = None  # the metric that stands in for the objective when the study's is not measured
    fallback: int | None = None  # the headline's place in the objective fallback (lower first)
    single_run: bool = False  # one run whose curve is `curves.<name>`: drawn in the report's training curves
    keeps_model: bool = False  # leaves its trained model in `Context.models[name]` for a later score to reuse
    # (spec, models) -> a problem with the section, or None; `models`: enabled scores before it that keep a model
    check: Callable[[Any, tuple[str, ...]], str | None] = lambda spec, models: None
    title: str = ""  # what the report's figures call it ("" = its name)
    guards: tuple[Guard, ...] = ()  # its training runs as the regime guards read them (chance, convergence)
    derived: tuple[Metric, ...] = ()  # metrics the report derives from its records (never recorded by a trial)
    # role -> one of its keys, for report code that needs a key by what it means, not by name (e.g. speed's
    # "train_ips"): a role is declared by one score at most (scores.role finds it)
    roles: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)

    def role(self, name: str) -> str:
        """The key that plays the role `name` for the report (a one-line error naming the roles declared)."""
        if name not in self.roles:
            declared = ", ".join(self.roles) or "none"
            raise KeyError(f"score {self.name!r} declares no role {name!r} (declared: {declared})")
        return self.roles[name]
