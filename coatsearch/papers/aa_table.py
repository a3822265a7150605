"""The A/A table's schema (coatsearch/papers/aa.json, written by benchmarks/bench_aa.py): checked before the
benchmark writes or extends a table and before a report cites one, so a damaged or hand-edited table (a negative
study count, a family's firm count above its n, a missing key) is one line, never a figure in a report."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from coatsearch.errors import UserError

Count = Field(ge=0, le=1_000_000)


class _Row(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class Family(_Row):
    """One claim family's counts over the A/A studies that judge it, with its firm rate and interval."""

    n: int = Count
    firm: int = Count
    supported: int = Count
    out_of_regime: int = Count
    no_verdict: int = Count
    rate: float | None = Field(default=None, ge=0.0, le=1.0)
    ci95: list[float] | None = Field(default=None, min_length=2, max_length=2)

    @model_validator(mode="after")
    def _within_n(self) -> Family:
        if not self.supported <= self.firm <= self.n or self.out_of_regime > self.n or self.no_verdict > self.n:
            raise ValueError(f"counts {self.supported} supported <= {self.firm} firm <= {self.n} studies do not hold")
        if self.ci95 is not None and not 0.0 <= self.ci95[0] <= self.ci95[1] <= 1.0:
            raise ValueError(f"ci95 {list(self.ci95)} is not an interval within 0..1")
        return self


class State(_Row):
    """A state the table has stood in, as a report cites it."""

    rule_version: str
    alpha: float = Field(gt=0.0, lt=1.0)
    date: str
    command: str
    seeds_per_study: int = Field(ge=1, le=100)
    studies: int = Field(ge=1, le=1_000_000)
    failed_studies: int = Count
    wall_s: float = Field(ge=0.0)
    study_s: float = Field(ge=0.0)
    families: dict[str, Family] = Field(min_length=1)

    @model_validator(mode="after")
    def _failed_within(self) -> State:
        if self.failed_studies > self.studies:
            raise ValueError(f"failed_studies {self.failed_studies} > studies {self.studies}")
        if any(f.n > self.studies for f in self.families.values()):
            raise ValueError(f"a family counts more studies than the table's {self.studies}")
        return self


class Table(State):
    """The whole table: the current state, its per-study rows and every earlier state."""

    verdicts: list[dict[str, Any]] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)
    history: list[State] = Field(default_factory=list)


def check(data: Any, where: object) -> None:
    """Nothing if `data` is an A/A table of the schema above; a one-line UserError naming `where` and the field
    else."""
    try:
        Table.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "(top)"
        found = "" if err["type"] == "missing" else f" (found {str(err.get('input'))[:60]!r})"
        raise UserError(f"{where}: not an A/A table: field '{field}': {err['msg']}{found}") from None
