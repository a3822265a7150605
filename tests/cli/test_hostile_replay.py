"""`coatsearch replay` on an exported table (`--table CSV --space SPACE`) and its bounded loops.

A table is checked before any replay: a missing column, text where a number belongs, an empty or special file, a
row naming no point of the space (a formula, a typo) is exit 2 with one line (file:line, field, what is allowed)
and nothing written. A sampler stuck on rejected points ends in one line, never a spin.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import optuna
import pytest

from coatsearch.analysis import replay
from coatsearch.errors import UserError
from coatsearch.storage import sampling
from tests.support.hostile import cli, deadline, refused

SPACE = Path(__file__).resolve().parents[1] / "spaces" / "tiny_search.yaml"
DIMS = ("model.layout.0", "model.layout.1", "model.block.downsample")
HEAD = "number,state,value,candidate,seed,sample," + ",".join(DIMS)


def _lines() -> list[str]:
    """The tiny searched space measured in full on seed 0: 6 points trained, the 2 T-C points rejected."""
    rows, n = [HEAD], 0
    for a in ("C", "T"):
        for b in ("C", "T"):
            for d in ("eq5", "dw"):
                state, value = ("REJECTED", "") if (a, b) == ("T", "C") else ("COMPLETE", f"{0.5 + n / 100:.2f}")
                rows.append(f"{n},{state},{value},searched,0,0,{a},{b},{d}")
                n += 1
    return rows


def _table(tmp_path: Path, lines: list[str]) -> list[str]:
    """The CLI arguments replaying `lines` as tmp_path/t.csv with the tiny space."""
    shutil.copy(SPACE, tmp_path / "space.yaml")
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n" if lines else "")
    return ["replay", "x", "--table", "t.csv", "--space", "space.yaml", "--sampler", "random", "--trials", "3",
            "--repeats", "2"]  # fmt: skip


def test_an_exported_table_replays_and_writes_nothing(tmp_path):
    argv = _table(tmp_path, _lines())
    rc, out, err = cli(tmp_path, argv)
    assert rc == 0 and "regret" in out and "\nrandom " in out, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["space.yaml", "t.csv"]


def _edit(lines: list[str], row: int, column: str, cell: str) -> list[str]:
    head = lines[0].split(",")
    cells = lines[row].split(",")
    cells[head.index(column)] = cell
    return [*lines[:row], ",".join(cells), *lines[row + 1 :]]


def _drop(lines: list[str], column: str) -> list[str]:
    i = lines[0].split(",").index(column)
    return [",".join(c for j, c in enumerate(line.split(",")) if j != i) for line in lines]


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda ls: _drop(ls, "value"), "t.csv:1: no column 'value'; a replay table has the columns"),
        (lambda ls: _drop(ls, "model.layout.1"), "t.csv:1: no column 'model.layout.1'"),
        (lambda ls: _edit(ls, 2, "value", "high"), "t.csv:3: field 'value': 'high' is not a number; allowed:"),
        (lambda ls: _edit(ls, 3, "seed", "zero"), "t.csv:4: field 'seed': 'zero' is not a number"),
        (lambda ls: _edit(ls, 4, "value", "inf"), "t.csv:5: field 'value': inf is not a number"),
        (lambda ls: [], "t.csv: empty; a replay table is `coatsearch export STUDY --format csv` output"),
        (lambda ls: [*ls, "8,COMPLETE,0.99,searched,0,0,X,C,eq5"],
         "t.csv:10: field 'model.layout.0': 'X' names no point of the space of searched; allowed: C, T"),
        (lambda ls: _edit(ls, 5, "model.block.downsample", '"=HYPERLINK(""http://x"")"'),
         "t.csv:6: field 'model.block.downsample': '=HYPERLINK"),
        (lambda ls: _edit(ls, 6, "model.layout.1", "2"), "t.csv:7: field 'model.layout.1': '2' names no point"),
    ],
)  # fmt: skip
def test_a_damaged_table_is_one_line_and_nothing_is_written(tmp_path, make, expected):
    # a missing column was KeyError: 'value', text a ValueError, an empty file EmptyDataError (exit 1), and a row
    # naming no point of the space was counted as an extra point of the table
    refused(tmp_path, _table(tmp_path, make(_lines())), expected)


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_table_that_is_a_fifo_or_a_device_is_one_line_never_a_hang(tmp_path, special):
    argv = _table(tmp_path, _lines())
    (tmp_path / "t.csv").unlink()
    if special == "fifo":
        os.mkfifo(tmp_path / "t.csv")
    else:
        (tmp_path / "t.csv").symlink_to(special)
    refused(tmp_path, argv, "t.csv: is a ")


@pytest.mark.parametrize(
    "extra, expected",
    [(["--sampler", "random,nsga2"], "--sampler 'nsga2' is not allowed; replay takes random, tpe, gp"),
     (["--sampler", ""], "--sampler '' is not allowed"), (["--trials", "0"], "--trials: 0 is not allowed"),
     (["--trials", "1e9"], "--trials: '1e9' is not allowed"), (["--repeats", "nan"], "--repeats: 'nan' is not")],
)  # fmt: skip
def test_replay_arguments_take_the_cli_checks_before_the_table_is_read(tmp_path, extra, expected):
    argv = _table(tmp_path, _lines())
    (tmp_path / "t.csv").unlink()  # not read: the argument is refused first
    refused(tmp_path, [*argv, *extra], expected)


def test_table_goes_with_space(tmp_path):
    argv = _table(tmp_path, _lines())
    refused(tmp_path, argv[:4] + argv[6:], "--table goes with --space")


def _fixed(monkeypatch, params: dict[str, str]) -> None:
    made = sampling.make_sampler
    monkeypatch.setattr(sampling, "make_sampler", lambda name, seed: optuna.samplers.PartialFixedSampler(
        params, made(name, seed)))  # fmt: skip


def test_a_sampler_stuck_on_a_rejected_point_ends_in_one_line_never_a_spin(tmp_path, monkeypatch):
    # a sampler that keeps proposing a rejected point asked up to trials x 50 times (500,000 at --trials 10000)
    measured = replay.table_from_csv(SPACE, (tmp_path / "t.csv", _table(tmp_path, _lines()))[0])
    _fixed(monkeypatch, {"model.layout.0": "T", "model.layout.1": "C"})  # T-C: rejected by the constraint
    with deadline(120), pytest.raises(UserError, match=f"{replay.REJECTS_MAX} proposals in a row were points the"):
        replay.replay(measured, ["random"], 10_000, 2)


def test_a_sampler_stuck_on_one_measured_point_ends_each_trial_as_a_reuse(tmp_path, monkeypatch):
    measured = replay.table_from_csv(SPACE, (tmp_path / "t.csv", _table(tmp_path, _lines()))[0])
    _fixed(monkeypatch, dict(zip(DIMS, ("C", "T", "dw"), strict=True)))
    with deadline(120):
        curves = replay.replay(measured, ["random"], 5, 2)
    assert len(curves[0].points) == 5
