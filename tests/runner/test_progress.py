"""Progress output of `coatsearch run` into a redirected log: lines, never a bar's carriage returns or cursor codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "spaces" / "tiny.yaml"


def test_bars_write_nothing_into_a_redirected_log(tmp_path):
    log = tmp_path / "run.log"
    cmd = [sys.executable, "-m", "coatsearch", "run", str(TINY), "--study", "t", "--studies-dir", str(tmp_path / "s"),
           "--no-plan", "--no-report", "--workers", "1", "--device", "cpu"]  # fmt: skip  # progress on (no --quiet)
    with log.open("wb") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              timeout=900)  # fmt: skip
    text = log.read_bytes()
    assert done.returncode == 0, text.decode()
    assert b"study t: 2 complete" in text
    assert b"\r" not in text and b"\x1b[" not in text, text.decode()  # tqdm draws only on a terminal
