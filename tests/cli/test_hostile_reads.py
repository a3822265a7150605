"""Reads of files a user names, or that lie beside a study's report, and the benchmarks' arguments and tables.

Every such read is bounded (fsafe.read_named, read_json: a regular file, a size cap, a depth cap, opened without
blocking): a FIFO, /dev/zero, a huge, deep or damaged file is one line or a note, never a hang, a MemoryError or
a traceback. The benchmarks take the CLI's number check and one-line errors, and their tables a schema.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from coatsearch import fsafe
from coatsearch.errors import UserError
from coatsearch.papers import aa_table, looks_found, rule_tables
from coatsearch.papers import looks as L
from coatsearch.planner import power
from tests.support.hostile import deadline

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------------------------------- 3. one bounded reader


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_a_named_file_that_is_a_device_or_fifo_is_one_line_never_a_hang(tmp_path, fifo, special):
    path = fifo if special == "fifo" else Path(special)
    with deadline(10), pytest.raises(UserError, match="is a (character device|FIFO); a space file is a regular"):
        fsafe.read_named(path, 1000, "space file")
    with deadline(10), pytest.raises(UserError, match="is a (character device|FIFO)"):
        fsafe.read_json(path, named=True)


def test_a_huge_named_file_is_refused_by_its_size_before_it_is_read(tmp_path):
    # `replicate --space` read a 3 GB file whole before the 1 MB limit of a space file applied
    big = tmp_path / "big.yaml"
    with big.open("wb") as fh:
        fh.truncate(3 * 2**30)  # sparse: 3 GB long, nothing on disk
    before = _peak_mb()
    with deadline(10), pytest.raises(UserError, match=r"3,221,225,472 bytes; a space file here may have at most"):
        fsafe.read_named(big, 1_000_000, "space file")
    assert _peak_mb() - before < 100


@pytest.mark.parametrize("source", ["/dev/zero", "fifo"])
def test_replicate_of_a_registration_whose_source_is_a_device_or_fifo_is_one_line(tmp_path, fifo, source):
    # `source` sits outside the registration's fingerprint: editing it to /dev/zero ended in a MemoryError
    from coatsearch import replication

    reg = SimpleNamespace(source=str(fifo) if source == "fifo" else source, analysis=SimpleNamespace())
    with deadline(10), pytest.raises(UserError, match=r"a space file is a regular file \(the space file of 'o'"):
        replication._space(reg, "o", None)  # type: ignore[arg-type]
    with deadline(10), pytest.raises(UserError, match="a space file is a regular file"):  # the same as --space
        replication._space(reg, "o", Path(reg.source))  # type: ignore[arg-type]


def _weights(tmp_path: Path, stages: int, depth: int, width: int) -> Path:
    import dataclasses

    from pydantic import TypeAdapter

    from coatsearch.runner import weights
    from coatsearch.vocab import specs as S
    from tests.tiny import MODEL

    spec = dataclasses.replace(MODEL, stages=tuple(S.StageSpec("C", depth, width, 1) for _ in range(stages)))
    path = tmp_path / f"w{stages}x{depth}x{width}.safetensors"
    content = {"format": weights.FORMAT, "model": TypeAdapter(S.ModelSpec).dump_python(spec, mode="json"),
               "state_dict": {"head.weight": torch.zeros(2, 2)}}  # fmt: skip
    return weights.save(path, content)


def test_load_weights_of_a_small_file_naming_a_huge_model_is_one_line_before_it_is_built(tmp_path):
    import coatsearch

    path = _weights(tmp_path, 4, 100, 8192)  # 4 x 100 blocks at width 8192 (1.5e11 parameters)
    assert path.stat().st_size < 4096
    before, began = _peak_mb(), time.monotonic()
    with deadline(120), pytest.raises(UserError, match="its weights do not fit its model spec"):
        coatsearch.load_weights(path)
    assert _peak_mb() - before < 500 and time.monotonic() - began < 60
    with pytest.raises(UserError, match="do not fit"):  # a small spec with the wrong tensors: the same line
        coatsearch.load_weights(_weights(tmp_path, 2, 1, 16))


@pytest.mark.parametrize(
    "content, why",
    [('{"studies": -2}', "field 'rule_version'"), ("[1, 2]", "holds a JSON list"), ("{", "not a JSON file")],
)
def test_a_damaged_aa_table_is_a_note_and_never_cited(tmp_path, monkeypatch, capsys, content, why):
    # a damaged aa.json made every report exit 1, or was cited as fact ("A/A column: -2 studies")
    table = tmp_path / "aa.json"
    table.write_text(content)
    monkeypatch.setattr(rule_tables, "AA_TABLE", table)
    assert rule_tables.aa_figures() is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("coatsearch: note:") and why in err, err


def test_an_aa_table_with_a_negative_study_count_is_refused_before_it_is_cited_or_written(tmp_path):
    data = json.loads(rule_tables.AA_TABLE.read_text())
    aa_table.check(data, "aa.json")  # the committed table holds
    with pytest.raises(UserError, match="field 'studies': Input should be greater than or equal to 1"):
        aa_table.check({**data, "studies": -2}, "aa.json")
    fams = {**data["families"], "b": {**data["families"]["b"], "firm": 999}}
    with pytest.raises(UserError, match="field 'families.b'"):
        aa_table.check({**data, "families": fams}, "aa.json")


def _summary(folder: Path, text: str) -> Path:
    (folder / "other").mkdir(parents=True, exist_ok=True)
    path = folder / "other" / "summary.json"
    path.write_text(text)
    return path


THIS = L.ident({"space": "s", "profile": "default", "study": {}, "data": {}})


@pytest.mark.parametrize(
    "text, why",
    [("[" * 100_000 + "]" * 100_000, "nested too deeply"), ('{"space": {}, "looks": {"this": [1]}}', "damaged"),
     ('{"space": [], "environment": []}', None), ('{"space": {}, "environment": [1]}', "damaged")],
)  # fmt: skip
def test_a_deep_or_damaged_summary_in_another_report_is_a_note_not_an_internal_error(tmp_path, text, why):
    # a deeply nested summary.json ended `report` in a RecursionError (once after 81 s); a list where a mapping
    # belongs in KeyError: 0 or TypeError: unhashable type: 'list'
    _summary(tmp_path, text)
    with deadline(30):
        found = looks_found.from_reports(tmp_path, THIS)
    assert found.looks == ()
    if why is None:
        assert found.notes == ()  # not a summary of this kind: no look, nothing to say
    else:
        assert len(found.notes) == 1 and why in found.notes[0], found.notes


@pytest.mark.parametrize(
    "text, why", [('{"candidates": [1], "curves": [1]}', "a damaged summary"), ("[1]", "holds a JSON list")]
)
def test_plan_reads_a_damaged_or_special_earlier_summary_as_a_note(tmp_path, capsys, text, why):
    # `coatsearch plan` ended in `AttributeError: 'list' object has no attribute 'get'` on a damaged one
    _summary(tmp_path, text)
    assert power.from_report(tmp_path, "other") is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and why in err and "the plan does not use its noise" in err, err
    path = tmp_path / "other" / "summary.json"
    path.unlink()
    os.mkfifo(path)
    with deadline(10):
        assert power.from_report(tmp_path, "other") is None
    assert "is a FIFO" in capsys.readouterr().err


def test_a_huge_summary_in_the_report_history_is_not_read(tmp_path, monkeypatch):
    # one `report` peaked at 6.2 GB reading the committed versions of summary.json files
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@t")
    git("config", "user.name", "t")
    _summary(tmp_path, json.dumps({"pad": "x" * 2000}))
    git("add", ".")
    git("commit", "-qm", "small")
    _summary(tmp_path, json.dumps({"pad": "y" * 5000}))
    git("commit", "-qam", "big")
    monkeypatch.setattr(fsafe, "JSON_MAX", 4000)  # the big version is over the cap
    versions = looks_found._versions(tmp_path)
    assert versions is not None and len(versions) == 2
    texts = looks_found._blobs(tmp_path, versions)
    assert texts[0] is None and texts[1] is not None and "x" * 2000 in texts[1]  # newest first: the big one skipped


# ------------------------------------------------------------------------------ 4. the benchmarks' arguments


def _bench(name: str, *args: str, seconds: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(ROOT / "benchmarks" / name), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=seconds, env=env, cwd=ROOT)


@pytest.mark.parametrize(
    "args, expected",
    [(["--repeats", "0"], "--repeats: 0 is not allowed; allowed: an integer 2..1000"),
     (["--repeats", "1"], "--repeats: 1 is not allowed"), (["--trials", "0"], "--trials: 0 is not allowed"),
     (["--trials", "-5"], "--trials: -5 is not allowed"), (["--trials", "100000"], "allowed: an integer 1..100")],
)  # fmt: skip
def test_bench_search_arguments_are_one_line_before_anything_runs(args, expected):
    done = _bench("bench_search.py", *args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize(
    "name, args, expected",
    [("bench_checkpoint.py", ["--steps", "-5"], "--steps: -5 is not allowed; allowed: an integer 1..10000000"),
     ("bench_checkpoint.py", ["--every", "x"], "--every: 'x' is not allowed"),
     ("bench_train.py", ["--batch", "0"], "--batch: 0 is not allowed"),
     ("bench_seeds.py", ["--k", "1e9"], "--k: '1e9' is not allowed"),
     ("gpu_plan.py", ["x", "--fraction", "nan"], "--fraction: nan is not allowed"),
     ("power_stress.py", ["--replicates", "-1"], "--replicates: -1 is not allowed")],
)  # fmt: skip
def test_every_benchmarks_numeric_flags_take_the_clis_number_check(name, args, expected):
    done = _bench(name, *args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_no_benchmark_parses_a_number_or_its_arguments_on_its_own():
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        text = path.read_text()
        assert "type=int" not in text and "type=float" not in text, path.name  # cli_types.bounded, bounded_real
        assert "argparse.ArgumentParser(" not in text, path.name  # cli_types.Parser: one-line errors, exit 2


@pytest.mark.parametrize(
    "args, expected",
    [(["--resume", "/dev/zero"], "--resume: /dev/zero: is a character device"),
     (["--resume", "FIFO"], "is a FIFO"), (["--studies", "x"], "--studies: 'x' is not allowed"),
     (["--studies", "-2"], "--studies: -2 is not allowed"), (["--resume", "MISSING"], "field 'failed_studies'")],
)  # fmt: skip
def test_bench_aa_arguments_and_resumed_tables_are_one_line_before_any_study_runs(tmp_path, fifo, args, expected):
    # --resume /dev/zero grew to 3.4 GB, a FIFO hung, and a table missing a key ran a whole study, then died
    table = json.loads(rule_tables.AA_TABLE.read_text())
    table.pop("failed_studies")
    (tmp_path / "missing.json").write_text(json.dumps(table))
    args = [str(fifo) if a == "FIFO" else str(tmp_path / "missing.json") if a == "MISSING" else a for a in args]
    began = time.monotonic()
    done = _bench("bench_aa.py", *args, "--out", str(tmp_path / "out"), seconds=60)
    assert done.returncode in (1, 2) and done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and time.monotonic() - began < 60
    assert not (tmp_path / "out" / "aa.json").exists()


# ------------------------------------------------------- 3. files beside a study: plan.json, registration.json


@pytest.mark.parametrize("kind", ["deep", "huge", "fifo"])
def test_a_deep_huge_or_special_plan_file_is_ignored_never_a_crash_or_a_hang(tmp_path, monkeypatch, kind):
    # plan.json was parsed with json.loads unbounded: a deeply nested one ended `status` in a RecursionError
    from coatsearch.storage import planfile

    path = tmp_path / planfile.PLAN_FILE
    if kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "huge":
        monkeypatch.setattr(fsafe, "JSON_MAX", 1000)
        path.write_text(json.dumps({"pad": "x" * 5000}))
    else:
        os.mkfifo(path)
    with deadline(10):
        assert planfile.load(tmp_path) is None


def test_a_huge_or_special_registration_is_one_line(tmp_path, monkeypatch, fifo):
    from coatsearch.papers import registration

    where = registration.path(tmp_path)
    monkeypatch.setattr(fsafe, "JSON_MAX", 1000)
    where.write_text(json.dumps({"pad": "x" * 5000}))
    with deadline(10), pytest.raises(UserError, match="bytes; a file here may have at most 1,000"):
        registration.load(tmp_path)
    where.unlink()
    os.mkfifo(where)
    with deadline(10), pytest.raises(UserError, match="is a FIFO"):
        registration.load(tmp_path)
