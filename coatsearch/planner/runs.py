"""The plan around a study: a pilot study run first for the noise (`plan --pilot-seeds`), and the ETA line `run`
prints before its first trial, from the plan stored beside the study or a new pilot (stored)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coatsearch.space.objects import Space


def pilot_study(space: Space, name: str, seeds: int, workers: int | str, device: str, studies: Path,
                run: Callable[..., Any]) -> str:  # fmt: skip
    """Run the space's first `seeds` seeds as the study <name>-pilot<seeds> through `run` (the API's; resumes);
    its name."""
    chosen = tuple(space.study.seeds[:seeds]) if len(space.study.seeds) >= seeds else tuple(range(seeds))
    study_spec: Any = space.study
    small = dataclasses.replace(space, study=dataclasses.replace(study_spec, seeds=chosen))
    pilot = f"{name}-pilot{seeds}"
    run(small, study=pilot, workers=workers, device=device, studies_dir=studies, report=False, progress=False)
    return pilot


def trials_held(studies: Path, name: str) -> int:
    """How many trials the study holds (0 when it has no journal yet)."""
    from coatsearch.storage.store import load_study, storage_file

    if not storage_file(studies, name).exists():
        return 0
    return len(load_study(studies, name).get_trials(deepcopy=False))


def eta_first(space: Space, studies: Path, name: str, procs: tuple, device: str, reports: Path) -> None:
    """Print the study's ETA line from its stored plan when it matches this run, else from a new pilot (stored).

    A new plan reads the study's own complete trials (a resumed run), else its committed report, as `plan` does.
    """
    from coatsearch import planner
    from coatsearch.planner import power
    from coatsearch.planner.text import eta_line
    from coatsearch.storage.store import folder
    from coatsearch.storage.trials import space_form

    where, form = folder(studies, name), space_form(space)
    stored = planner.load(where)
    same = stored is not None and [stored.get(k) for k in ("form", "processes", "threads", "device")] == [
        form, procs[0], procs[1], device]  # fmt: skip
    if same and stored is not None:
        print(f"{stored['eta_line']} (stored plan)", file=sys.stderr)
        return
    earlier = power.earlier(studies, reports, name, space.name)
    made = planner.make_plan(space, name, procs[0], procs[1], device=device, earlier=earlier)
    planner.save(made, where, {"form": form, "eta_line": eta_line(made)})
    print(eta_line(made), file=sys.stderr)


def check_decides(space: Space, studies: Path, name: str, reports: Path, claims: tuple | None = None,
                  allow: bool = False) -> None:  # fmt: skip
    """Refuse (one-line UserError) a profile that declares a claim decided (`decides:`) when its plan cannot decide
    it: power at the declared effect or regime (planner.power.undecided). `claims` are a made plan's; without them,
    the claims are planned from the earlier study or report alone, of this name, else the profile's own study name (a
    replicate: the original's noise), else the space's other reports and its default study (power.sources; no pilot:
    what `run` checks before any write)."""
    from coatsearch.errors import UserError
    from coatsearch.planner import model_rows, power
    from coatsearch.vocab.bounds import ALLOW_UNDECIDED

    if not space.decides or allow:
        return
    if claims is None:
        models = model_rows(space)
        default = space.name if space.profile == "default" else f"{space.name}-{space.profile}"  # api.study_name's
        earlier, sibs = power.sources(studies, reports, space.name, name, default)
        claims = tuple(power.plan_claims(list(models.rows), dict(models.measures), {}, len(space.study.seeds),
                                         earlier, None, power.regime_loss(space), sibs))  # fmt: skip
    lines = power.undecided(claims, space.decides, len(space.study.seeds))
    if lines:
        raise UserError(f"{space.source}: profile {space.profile}: decides: the plan cannot decide "
                        f"{'; '.join(lines)} ({ALLOW_UNDECIDED} runs it anyway)")  # fmt: skip
