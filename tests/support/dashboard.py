"""optuna-dashboard served in a subprocess for tests: a free port, start, JSON GETs, a bounded wait, a stop."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(address: str) -> dict:
    with urllib.request.urlopen(address, timeout=5) as resp:
        return json.loads(resp.read())


def wait(address: str, proc: subprocess.Popen, timeout: float = 60.0) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"dashboard exited {proc.returncode}: {proc.stderr.read()}")
        try:
            return get(address)
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.3)
    raise AssertionError(f"dashboard not up at {address} after {timeout} s")


def start(studies, study: str, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "coatsearch", "dashboard", study, "--studies-dir", str(studies), "--port", str(port)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(pid: int, proc: subprocess.Popen) -> str:
    os.kill(pid, signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        os.kill(pid, signal.SIGKILL)
        out, _ = proc.communicate()
    return out
