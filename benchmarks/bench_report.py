"""Seconds `coatsearch report` takes on a 27-trial layout study beyond its figures (≤ 3 s); prints report_s= last.

The study is a simulated paper_layouts default one (report.simulate.study: 5 layouts, V1, V2, the no-rel-pos twin
and the linear baseline × 3 of its seeds = 27 trials), stored in a real JournalStorage in a temporary folder.
report_s times what `write_report` does apart from drawing the figures: open the storage, summarize, render
Markdown and summary.json.
"""

import json
import tempfile
import time
from pathlib import Path

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState, create_trial

from coatsearch.analysis.tables import jsonable
from coatsearch.report import plots, render, summarize
from coatsearch.storage import record, store
from lab import simulate


def make(folder: Path) -> None:
    """The 27-trial study under folder/bench/journal.log."""
    prof = simulate.profile("layouts")
    recs = simulate.study(np.random.default_rng(0), prof, simulate.Setting(effect=6.0, stress=False))
    recs = [r for r in recs if r.seed in (0, 1, 2) and r.candidate != "baseline-cnn"]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = store.open_storage(store.storage_file(folder, "bench"))
    study = optuna.create_study(study_name="bench", storage=storage, direction="maximize")
    names = sorted({r.candidate for r in recs})
    seeds = {**prof.record["study"], "seeds": [0, 1, 2]}
    study.set_user_attr("space", {**prof.record, "candidates": names, "study": seeds})
    dists = {"candidate": CategoricalDistribution(names), "seed": CategoricalDistribution([0, 1, 2])}
    for r in recs:
        study.add_trial(create_trial(state=TrialState.COMPLETE, value=0.5, params=dict(r.params), distributions=dists,
                                     user_attrs={record.ATTR: record.to_json(r.run)}))  # fmt: skip
    assert len(study.trials) == 27, len(study.trials)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make(folder)
        start = time.perf_counter()
        space, records = store.read(store.load_study(folder, "bench"))
        summary = summarize("bench", space, records)
        text = render(summary, {})
        json.dumps(jsonable(summary))
        report_s = time.perf_counter() - start
        start = time.perf_counter()
        figures = plots.render_all(summary, folder / "figures")
        figures_s = time.perf_counter() - start
    print(f"trials={len(records)} claims={len(summary['claims'])} markdown_chars={len(text)}")
    print(f"figures={len(figures)} figures_s={figures_s:.2f}")
    print(f"report_s={report_s:.2f}")


if __name__ == "__main__":
    main()
