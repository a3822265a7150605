"""One curve point, a run's curve through its points and the curve a trial records; no torch here.

training.curves measures a Point, a listener (training.listeners) hears it and a checkpoint saves it; `fit` returns
the run's Curve, a score records it as a RunCurve, and the run record (storage.record) holds that RunCurve and
writes it as JSON (`to_json` / `from_json`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Point:
    """One measurement after `step` optimizer steps."""

    step: int
    train_loss: float  # clean cross-entropy on the probe of the training subset (nats)
    train_acc: float
    eval_loss: float | None  # on the fixed eval set (the test images); None without one
    eval_acc: float | None
    lr_phase: float = 0.0  # lr of the step just taken / peak lr (0 at step 0)
    val_loss: float | None = None  # on the validation images (the eval set itself when the run has none apart)
    val_acc: float | None = None


@dataclass(frozen=True)
class Curve:
    """A run's points as parallel tuples, in step order; `probe` is the number of training images measured."""

    step: tuple[int, ...] = ()
    train_loss: tuple[float, ...] = ()
    train_acc: tuple[float, ...] = ()
    eval_loss: tuple[float | None, ...] = ()
    eval_acc: tuple[float | None, ...] = ()
    probe: int = 0
    lr_phase: tuple[float, ...] = ()
    val_loss: tuple[float | None, ...] = ()
    val_acc: tuple[float | None, ...] = ()

    @classmethod
    def of(cls, points: list[Point], probe: int) -> Curve:
        """The curve through `points`."""
        return cls(
            step=tuple(p.step for p in points),
            train_loss=tuple(p.train_loss for p in points),
            train_acc=tuple(p.train_acc for p in points),
            eval_loss=tuple(p.eval_loss for p in points),
            eval_acc=tuple(p.eval_acc for p in points),
            probe=probe,
            lr_phase=tuple(p.lr_phase for p in points),
            val_loss=tuple(p.val_loss for p in points),
            val_acc=tuple(p.val_acc for p in points),
        )

    def as_dict(self) -> dict:
        """JSON form: one list per field (what a trial stores under `curves.<score>`)."""
        return {
            "step": list(self.step),
            "train_loss": list(self.train_loss),
            "train_acc": list(self.train_acc),
            "eval_loss": list(self.eval_loss),
            "eval_acc": list(self.eval_acc),
            "probe": self.probe,
            "lr_phase": list(self.lr_phase),
            "val_loss": list(self.val_loss),
            "val_acc": list(self.val_acc),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Curve:
        """The curve `as_dict` wrote (a field it lacks is empty: curves recorded before it existed)."""
        lists = {f.name: tuple(data.get(f.name) or ()) for f in fields(cls) if f.name != "probe"}
        return cls(**lists, probe=int(data.get("probe") or 0))


@dataclass(frozen=True)
class RunCurve:
    """One training run's curve as a trial records it: its step-level points and its per-epoch running means."""

    points: Curve  # step-level points on the probe, test and validation images
    epoch_train_loss: tuple[float, ...]  # each epoch's running mean of the optimized loss
    epoch_eval_acc: tuple[float | None, ...]  # test-image accuracy after each epoch (None: not measured then)
    epoch_val_acc: tuple[float | None, ...]  # validation accuracy after each epoch (None: not measured then)
    seconds: tuple[float, ...]  # each epoch's wall time

    def to_json(self) -> dict[str, Any]:
        """What a trial stores under `curves.<name>`: the points' lists (Curve.as_dict), then the per-epoch lists."""
        return {
            **self.points.as_dict(),
            "epoch_train_loss": list(self.epoch_train_loss),
            "epoch_eval_acc": list(self.epoch_eval_acc),
            "epoch_val_acc": list(self.epoch_val_acc),
            "seconds": list(self.seconds),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunCurve:
        """The curve `to_json` wrote (every key of RUN_CURVE_KEYS; storage.record reads no other form as one)."""
        epochs = (tuple(data[k]) for k in ("epoch_train_loss", "epoch_eval_acc", "epoch_val_acc", "seconds"))
        return cls(Curve.from_json(data), *epochs)


# the keys of RunCurve's JSON form: JSON with exactly these is what storage.record reads back as a RunCurve
RUN_CURVE_KEYS = frozenset(RunCurve(Curve(), (), (), (), ()).to_json())
