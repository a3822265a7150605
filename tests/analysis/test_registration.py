"""The registered analysis: written before the first trial, fingerprinted, kept on resume, deviations recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coatsearch import api
from coatsearch.analysis.constants import VERDICT_ALPHA
from coatsearch.errors import UserError
from coatsearch.papers import registration
from coatsearch.storage.trials import space_record
from tests.tiny import TINY, tiny_variant


def _record(path: Path = TINY, profile: str = "quick") -> dict:
    return space_record(api.load_space(path, profile))


def test_the_fingerprint_is_the_sha256_of_the_canonical_analysis(tmp_path: Path) -> None:
    rec = _record()
    reg, changed = registration.register(rec, tmp_path, "tiny-quick")
    assert changed == [] and reg.trials_before == 0
    a = reg.analysis
    assert (a.space, a.profile, a.seeds, a.candidates) == ("tiny", "quick", (0,), ("C-C", "C-T"))
    assert a.space_sha256 == rec["space_content_sha256"] and a.alpha == VERDICT_ALPHA and a.claims["d"]["margin"] == 0.3
    assert a.stopping["runs"]["transfer.finetune"]["max_steps"] == 2 and a.data["eval_size"] == 100
    import hashlib

    assert reg.fingerprint == hashlib.sha256(registration.canonical(a).encode()).hexdigest()
    stored = json.loads((tmp_path / "registration.json").read_text())
    assert stored["fingerprint"] == reg.fingerprint and stored["analysis"]["replicate_of"] is None
    assert registration.load(tmp_path) == reg


def test_an_unchanged_analysis_keeps_the_registration(tmp_path: Path) -> None:
    first, _ = registration.register(_record(), tmp_path, "s")
    before = (tmp_path / "registration.json").read_bytes()
    again, changed = registration.register(_record(), tmp_path, "s")
    assert changed == [] and again == first and (tmp_path / "registration.json").read_bytes() == before
    line = registration.verdict_line(again, registration.analysis(_record()))
    assert line.startswith("confirmatory: matches the registration")


def test_a_comment_edit_keeps_a_study_confirmatory_and_a_registration_of_the_file_bytes_still_matches(
    tmp_path: Path,
) -> None:
    """The space's identity is its parsed content: a comment edit is no deviation. A registration made before
    content hashes (the file's bytes) matches the same file's record and keeps its fingerprint."""
    first, _ = registration.register(_record(), tmp_path / "a", "s")
    edited = tiny_variant(tmp_path, ("# A two-candidate space", "# An edited comment.\n\n# A two-candidate space"))
    again, changed = registration.register(_record(edited), tmp_path / "a", "s")
    assert changed == [] and again == first
    rec = _record()
    old = registration.analysis(rec).model_copy(update={"space_sha256": rec["space_sha256"]})  # the bytes' hash
    registration.save(registration.Registration(study="s", fingerprint=registration.fingerprint(old),
                                                registered_at="t", analysis=old), tmp_path / "b")  # fmt: skip
    kept, changed = registration.register(rec, tmp_path / "b", "s")
    assert changed == [] and kept.analysis.space_sha256 == rec["space_sha256"]
    line = registration.verdict_line(kept, registration.analysis(rec, None, kept.analysis))
    assert line.startswith("confirmatory: matches the registration")


def test_other_seeds_keep_the_original_and_record_the_deviation(tmp_path: Path) -> None:
    first, _ = registration.register(_record(), tmp_path, "s")
    other = tiny_variant(tmp_path, ("seeds: [0]", "seeds: [0, 1]"))
    reg, changed = registration.register(_record(other), tmp_path, "s")
    assert reg.analysis == first.analysis and reg.fingerprint == first.fingerprint  # the original is kept
    assert "seeds: [0] -> [0, 1]" in changed and any(c.startswith("space_sha256: ") for c in changed)
    assert [d.changes for d in reg.deviations] == [tuple(changed)]
    registration.register(_record(other), tmp_path, "s")  # the same deviation is recorded once
    assert len(registration.load(tmp_path).deviations) == 1
    back = registration.verdict_line(registration.load(tmp_path), registration.analysis(_record()))
    assert back.startswith("exploratory: differs from the registration in") and "seeds: [0] -> [0, 1]" in back


def test_a_registration_of_another_space_is_one_line(tmp_path: Path) -> None:
    registration.register(_record(), tmp_path, "s")
    other = registration.Registrar(_record(TINY, "default"), tmp_path, "s")
    with pytest.raises(UserError, match="registers space 'tiny' profile 'quick', not 'tiny' profile 'default'"):
        other.check()


def test_a_hand_edited_registration_is_refused(tmp_path: Path) -> None:
    registration.register(_record(), tmp_path, "s")
    path = tmp_path / "registration.json"
    text = path.read_text()
    assert f'"alpha": {VERDICT_ALPHA}' in text
    path.write_text(text.replace(f'"alpha": {VERDICT_ALPHA}', '"alpha": 0.05'))
    with pytest.raises(UserError, match="does not hash to its recorded fingerprint"):
        registration.load(tmp_path)
    path.write_text("{}")
    with pytest.raises(UserError, match="registration.json: field '.*'.*damaged"):
        registration.load(tmp_path)


def test_run_registers_before_the_first_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from coatsearch.runner import optuna_backend

    seen = []

    class Stop(Exception):
        pass

    def first_trial(*args: object, **kwargs: object) -> None:
        reg = registration.load(tmp_path / "studies" / "tiny-quick")
        seen.append(reg)
        raise Stop

    monkeypatch.setattr(optuna_backend, "_run_trial", first_trial)
    with pytest.raises(Stop):
        api.run(TINY, profile="quick", workers=1, device="cpu", studies_dir=tmp_path / "studies",
                reports_dir=tmp_path / "reports", report=False, progress=False)  # fmt: skip
    assert len(seen) == 1 and seen[0] is not None
    assert seen[0].fingerprint == registration.fingerprint(registration.analysis(_record()))
    assert seen[0].trials_before == 0


def test_a_registration_of_another_space_stops_run_before_anything_is_written(tmp_path: Path) -> None:
    folder = tmp_path / "studies" / "tiny-quick"
    registration.register(_record(TINY, "default"), folder, "tiny-quick")
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(UserError, match="registers space 'tiny' profile 'default'"):
        api.run(TINY, study="tiny-quick", profile="quick", workers=1, device="cpu", studies_dir=tmp_path / "studies",
                report=False, progress=False)  # fmt: skip
    assert sorted(p.name for p in folder.iterdir()) == before == ["registration.json"]


def test_the_planner_block_lists_the_analysis_and_its_status(tmp_path: Path) -> None:
    rec = _record()
    lines = registration.plan_lines(rec, tmp_path)
    assert lines[0].startswith("registered analysis") and lines[-1].startswith("not yet registered")
    assert any("seeds 0; candidates C-C, C-T" in line for line in lines)
    registration.register(rec, tmp_path, "s")
    assert registration.plan_lines(rec, tmp_path)[-1].startswith("confirmatory: matches the registration")
    other = _record(tiny_variant(tmp_path, ("seeds: [0]", "seeds: [3]")))
    assert registration.plan_lines(other, tmp_path)[-1].startswith("exploratory: differs from the registration in")


def test_a_pilot_names_a_known_claim(tmp_path: Path) -> None:
    bad = tiny_variant(tmp_path, ("name: tiny", "name: tiny\npilots: [g]"))
    out = subprocess.run([sys.executable, "-m", "coatsearch", "show", str(bad)], capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "pilots[0]" in out.stderr and "Traceback" not in out.stderr
    good = tiny_variant(tmp_path, ("name: tiny", "name: tiny\npilots: [a, f]"), name="good.yaml")
    assert api.load_space(good).pilots == ("a", "f") and _record(good)["pilots"] == ["a", "f"]


def test_the_shipped_pilots_name_their_claims() -> None:
    root = Path(__file__).resolve().parents[2] / "spaces" / "pilots"
    found = {p.stem: api.load_space(p).pilots for p in sorted(root.glob("*.yaml"))}
    assert found and all(found.values()), found
    assert found["fit_ladder"] == ("a",) and found["vit_length40"] == ("f",)


def test_per_seed_test_sampling_is_registered_and_the_default_keeps_old_fingerprints(tmp_path: Path) -> None:
    shared = registration.analysis(_record())
    assert "test_sampling" not in shared.data  # registrations made before the field keep their fingerprint
    per_seed = tiny_variant(tmp_path, ("eval_size: 100}", "eval_size: 100, test_sampling: per_seed}"))
    a = registration.analysis(_record(per_seed))
    assert a.data["test_sampling"] == "per_seed"
    assert any("test images sampled per seed" in line for line in registration.summary(a))
    first, _ = registration.register(_record(), tmp_path, "s")
    _, changed = registration.register(_record(per_seed), tmp_path, "s")
    assert any(c.startswith("data") and "per_seed" in c for c in changed), changed  # a switch is a deviation


def _under_rule(version: str, tmp_path: Path) -> registration.Standing:
    """The tiny study registered under rule `version`, then read under today's rule."""
    rec = _record()
    old = registration.analysis(rec).model_copy(update={"rule_version": version})
    reg = registration.Registration(study="s", fingerprint=registration.fingerprint(old), registered_at="t",
                                    analysis=old)  # fmt: skip
    return registration.standing(reg, registration.analysis(rec, None, reg.analysis))


def test_a_rule_change_makes_exploratory_only_the_claims_it_touched(tmp_path: Path) -> None:
    """Rule 2026-12-06.looks → today's changed claim (f) only: a study judging (a) stays confirmatory and says what
    changed for other claims; (f) becomes exploratory; the study's whole line counts every change."""
    s = _under_rule("2026-12-06.looks", tmp_path)
    assert s.line(["a"]).startswith("confirmatory: matches the registration")
    assert "other claims only: rule_version: 2026-12-06.looks -> " in s.line(["a"])
    assert s.line(["f"]).startswith("exploratory: differs from the registration in rule_version: 2026-12-06.looks")
    assert s.line(["a", "f"]).startswith("exploratory") and s.line().startswith("exploratory")


@pytest.mark.parametrize("version", ["2026-12-04.floor", "2026-12-02.alpha03", "an-unknown-rule"])
def test_a_rule_change_that_touched_every_claim_or_an_unknown_rule_concerns_every_claim(
    version: str, tmp_path: Path
) -> None:
    s = _under_rule(version, tmp_path)
    for claims in (["a"], ["d"], ["f"], []):
        assert s.line(claims).startswith(f"exploratory: differs from the registration in rule_version: {version}")


def test_touched_since_accumulates_every_later_change() -> None:
    from coatsearch.papers import rule_tables

    assert rule_tables.touched_since(rule_tables.RULE_VERSION) == frozenset()
    assert rule_tables.touched_since("2026-12-06.looks") == {"f"}
    assert rule_tables.touched_since("2026-12-04.floor") is None  # that change touched every claim
    assert set(rule_tables.TOUCHED) == set(rule_tables.EARLIER_RULES)  # every earlier rule says what it touched
