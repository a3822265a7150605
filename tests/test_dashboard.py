"""coatsearch dashboard: optuna-dashboard serves the study's journal on 127.0.0.1 and its JSON API reads it back."""

from __future__ import annotations

import inspect
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from coatsearch.dashboard import serve, url
from coatsearch.errors import UserError
from tests.report_records import SPACE, layout_records, make_study


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(address: str) -> dict:
    with urllib.request.urlopen(address, timeout=5) as resp:
        return json.loads(resp.read())


def _wait(address: str, proc: subprocess.Popen, timeout: float = 60.0) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"dashboard exited {proc.returncode}: {proc.stderr.read()}")
        try:
            return _get(address)
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.3)
    raise AssertionError(f"dashboard not up at {address} after {timeout} s")


def test_missing_study_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no study 'nope'"):
        serve("nope", tmp_path)


def test_defaults_to_localhost():
    assert inspect.signature(serve).parameters["host"].default == "127.0.0.1"
    assert url("127.0.0.1", 8080) == "http://127.0.0.1:8080/dashboard/"


def test_dashboard_serves_the_study_trials(tmp_path):
    records = layout_records()
    make_study(tmp_path, "fab", SPACE, records)
    port = _free_port()
    cmd = [sys.executable, "-m", "coatsearch.cli", "dashboard", "fab", "--studies-dir", str(tmp_path)]
    proc = subprocess.Popen([*cmd, "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        studies = _wait(f"{base}/api/studies", proc)["study_summaries"]
        assert [s["study_name"] for s in studies] == ["fab"]
        detail = _get(f"{base}/api/studies/{studies[0]['study_id']}")
        assert len(detail["trials"]) == len(records)
        states = sorted(t["state"] for t in detail["trials"])
        assert states.count("Complete") == 15 and states.count("Fail") == 2  # 5 layouts × 3 seeds
        first = detail["trials"][0]
        assert {p["name"] for p in first["params"]} == {"candidate", "seed"}
        assert any(a["key"] == "model_label" for a in first["user_attrs"])
        with urllib.request.urlopen(f"{base}/dashboard/", timeout=5) as resp:
            assert resp.status == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert f"http://127.0.0.1:{port}/dashboard/" in out
