"""The command line: `show` output, and bad input → one message, exit 2, no traceback, nothing written."""

import json
import subprocess
import sys

import pytest

from coatsearch.cli import main
from tests.tiny import TINY


def test_show_json_lists_every_candidate_matched(capsys):
    assert main(["show", str(TINY), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["C-C", "C-T"]
    for r in rows:
        assert {"name", "layout", "params", "macs", "stages", "tokens", "error"} <= set(r)
        assert r["ok"] and abs(r["error"]) <= 0.1
    assert rows[1]["tokens"] == ["4x4"]


def test_show_table_and_module_tree(capsys):
    assert main(["show", str(TINY)]) == 0
    out = capsys.readouterr().out
    assert "C-T" in out and "budget: 0.40M MACs" in out
    assert main(["show", str(TINY), "--candidate", "C-T"]) == 0
    assert "TransformerBlock2d" in capsys.readouterr().out


def test_unknown_candidate_is_a_clean_error(capsys):
    assert main(["show", str(TINY), "--candidate", "nope"]) == 2
    assert "no candidate 'nope'; candidates: C-C, C-T" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, expected",
    [
        ("input: {image_size: 32, channels: 2, classes: 10}\n", "field 'input.channels'"),
        ("a: [1\n", "invalid YAML"),
        ('x: !!python/object/apply:os.system ["true"]\n', "no !!python tags"),
    ],
)
def test_bad_space_exits_2_without_traceback_or_files(tmp_path, text, expected):
    space = tmp_path / "bad.yaml"
    space.write_text(text)
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "coatsearch.cli",
            "run",
            str(space),
            "--studies-dir",
            str(tmp_path / "studies"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"coatsearch: error: {space}:")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_version_and_python_dash_m(capsys):
    from coatsearch import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"coatsearch {__version__}"
    proc = subprocess.run([sys.executable, "-m", "coatsearch", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"coatsearch {__version__}"


def test_status_and_export(tmp_path, capsys):
    from tests.report_records import SPACE, layout_records, make_study

    make_study(tmp_path, "fab", SPACE, layout_records())
    assert main(["status", "fab", "--studies-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "study fab: 15 completed, 1 failed, 0 pruned, 0 running, 0 waiting of ? planned (1 interrupted" in out
    assert "mean trial 17 s; ETA unknown (the study's space cannot be read)" in out
    dest = tmp_path / "fab.csv"
    assert main(["export", "fab", "--format", "csv", "--out", str(dest), "--studies-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(dest)
    head = dest.read_text().splitlines()[0].split(",")
    assert head[:6] == ["number", "state", "value", "candidate", "seed", "sample"] and "generalization.gap" in head


def test_status_and_export_of_a_missing_study_exit_2(tmp_path, capsys):
    for argv in (["status", "nope"], ["export", "nope", "--out", str(tmp_path / "x.csv")]):
        assert main([*argv, "--studies-dir", str(tmp_path)]) == 2
        assert capsys.readouterr().err.startswith("coatsearch: error: no study 'nope'")
    assert list(tmp_path.iterdir()) == []
