"""Keep what was trained (#58): `run --keep-top K` keeps the K best trials' final weights in the study folder;
`export --best` uses them without training, falls back with a note when they are not the trial's, and retrains
with `--retrain`."""

from __future__ import annotations

import shutil

import pytest
import torch
from safetensors import safe_open

import coatsearch
from coatsearch.cli import main
from coatsearch.errors import UserError
from coatsearch.runner import kept, weights
from coatsearch.storage import found, store
from tests.tiny import TINY_SEARCH, tiny_text

# The tiny search without the named candidates, the sampled lr and the re-evaluation: every trial is a searched
# architecture on seed 0, so the best trial is the best architecture's (`export --best 1` takes that trial).
_EDITS = (
    ("  - {name: C-C, layout: C-C}\n  - {name: C-T}\n", ""),
    ("      train.lr: {low: 1.0e-3, high: 1.0e-2, log: true}\n", ""),
    (", reevaluate: {top: 2, seeds: 2}", ""),
)


def _tensors(path):
    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - a safe_open handle


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """`coatsearch run --keep-top 1` on the tiny search (six sampled points, one seed); its studies folder."""
    root = tmp_path_factory.mktemp("kept")
    space = root / "kept.yaml"
    space.write_text(tiny_text(*_EDITS, source=TINY_SEARCH))
    assert main(["run", str(space), "--study", "ks", "--studies-dir", str(root / "studies"), "--workers", "1",
                 "--device", "cpu", "--no-report", "--quiet", "--no-plan", "--keep-top", "1"]) == 0  # fmt: skip
    return root / "studies"


@pytest.fixture
def no_training(monkeypatch):
    """Calls of `weights.retrain` counted; the real retrain runs only when `allow` is set."""
    calls: list[int] = []
    real = weights.retrain

    def counted(study, tm, studies_dir, device="cpu"):
        calls.append(tm.number)
        return real(study, tm, studies_dir, device)

    monkeypatch.setattr(weights, "retrain", counted)
    return calls


@pytest.mark.slow
def test_the_best_trials_weights_are_kept_and_no_other(studies):
    folder = store.folder(studies, "ks")
    trials = [t for t in store.load_study(studies, "ks").get_trials() if t.value is not None]
    best = max(trials, key=lambda t: (t.value, -t.number))
    files = sorted(p.name for p in (folder / "weights" / "kept").iterdir())
    assert files == [f"trial-{best.number}.safetensors"]  # top 1: the others were pruned as better ones came
    content = weights.read(kept.path(folder, best.number))
    [(tm, _, _)] = found.best("ks", 1, studies)
    assert tm.number == best.number
    assert (content["trial"], content["seed"], content["architecture"]) == (tm.number, tm.seed, tm.architecture)
    assert content["kept"] is True and content["retrained"] is None and content["recorded"] == tm.measured
    net = coatsearch.load_weights(kept.path(folder, best.number))
    assert sum(p.numel() for p in net.parameters()) == tm.prepared.params


@pytest.mark.slow
def test_export_uses_the_kept_weights_without_training(studies, tmp_path, no_training, capsys):
    folder = store.folder(studies, "ks")
    [(tm, _, _)] = found.best("ks", 1, studies)
    out = tmp_path / "found.yaml"
    assert main(["export", "ks", "--studies-dir", str(studies), "--best", "1", "--format", "yaml", "--out", str(out),
                 "--save-weights"]) == 0  # fmt: skip
    assert no_training == [] and "kept from its run" in capsys.readouterr().out
    saved, own = _tensors(out.with_name(f"found.{tm.architecture}.safetensors")), _tensors(kept.path(folder, tm.number))
    assert saved.keys() == own.keys() and all(torch.equal(saved[k], own[k]) for k in own)
    assert main(["export", "ks", "--studies-dir", str(studies), "--best", "1", "--format", "timm"]) == 0
    assert no_training == []  # the timm route takes the same kept file
    timm_file = _tensors(coatsearch.timm_models.weights_path(studies, "ks", tm.architecture))
    assert all(torch.equal(timm_file[k], own[k]) for k in own)


@pytest.mark.slow
@pytest.mark.parametrize("tamper", ["other seed", "garbage"])
def test_kept_weights_that_are_not_the_trials_are_retrained_with_a_note(studies, tmp_path, no_training, capsys,
                                                                        tamper):  # fmt: skip
    copy = tmp_path / "studies"
    shutil.copytree(studies, copy)
    [(tm, _, _)] = found.best("ks", 1, copy)
    path = kept.path(store.folder(copy, "ks"), tm.number)
    if tamper == "other seed":
        weights.save(path, {**weights.read(path), "seed": 7})
        words = "holds seed 7, not 0"
    else:
        path.write_bytes(b"\x20\x00\x00\x00\x00\x00\x00\x00" + b"not a header" * 4)
        words = "not a coatsearch weights file"
    out = tmp_path / "found.yaml"
    assert main(["export", "ks", "--studies-dir", str(copy), "--best", "1", "--format", "yaml", "--out", str(out),
                 "--save-weights"]) == 0  # fmt: skip
    captured = capsys.readouterr()
    note = [line for line in captured.err.splitlines() if "retraining trial" in line]
    assert no_training == [tm.number] and len(note) == 1 and words in note[0] and str(path) in note[0], captured.err
    assert "retrained on seed 0" in captured.out


@pytest.mark.slow
def test_retrain_retrains_even_with_kept_weights(studies, tmp_path, no_training, capsys):
    [(tm, _, _)] = found.best("ks", 1, studies)
    out = tmp_path / "found.yaml"
    assert main(["export", "ks", "--studies-dir", str(studies), "--best", "1", "--format", "yaml", "--out", str(out),
                 "--save-weights", "--retrain"]) == 0  # fmt: skip
    assert no_training == [tm.number] and "retrained on seed 0" in capsys.readouterr().out
    meta = weights.read(out.with_name(f"found.{tm.architecture}.safetensors"))
    assert "kept" not in meta and meta["retrained"] == pytest.approx(tm.measured)  # seeded on the CPU: the same


def test_keep_top_is_a_space_key_and_its_bounds_are_one_line(tmp_path, capsys):
    space = tmp_path / "k.yaml"
    space.write_text(tiny_text(*_EDITS, source=TINY_SEARCH) + "keep_top: 2\n")
    assert coatsearch.load_space(space).keep_top == 2 and coatsearch.load_space(TINY_SEARCH).keep_top == 0
    space.write_text(tiny_text(*_EDITS, source=TINY_SEARCH) + "keep_top: -1\n")
    with pytest.raises(Exception, match="keep_top"):
        coatsearch.load_space(space)
    with pytest.raises(SystemExit) as stop:  # argparse's one-line flag error
        main(["run", str(TINY_SEARCH), "--keep-top", "-1", "--studies-dir", str(tmp_path / "s")])
    assert stop.value.code == 2 and "--keep-top: -1 is not allowed" in capsys.readouterr().err
    assert main(["export", "ks", "--studies-dir", str(tmp_path), "--retrain"]) == 2
    assert "--retrain" in capsys.readouterr().err
    with pytest.raises(UserError, match="keep"):
        coatsearch.run(coatsearch.load_space(TINY_SEARCH), backend="ray", keep_top=1, studies_dir=tmp_path / "s",
                       report=False)  # fmt: skip
    assert not (tmp_path / "s").exists()
