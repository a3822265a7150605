"""coatsearch dashboard: optuna-dashboard serves the study's journal on 127.0.0.1 and its JSON API reads it back."""

from __future__ import annotations

import html
import inspect
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from coatsearch.dashboard import ReadableStorage, readable, save_note, serve, space_attrs, url
from coatsearch.errors import UserError
from coatsearch.storage.store import load_study, open_storage, storage_file
from tests.report_records import AGREE, SPACE, layout_records, make_study
from tests.support.dashboard import free_port, get, start, stop, wait

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=15000",
]


def test_missing_study_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no study 'nope'"):
        serve("nope", tmp_path)


def test_defaults_to_localhost():
    assert inspect.signature(serve).parameters["host"].default == "127.0.0.1"
    assert url("127.0.0.1", 8080) == "http://127.0.0.1:8080/dashboard/"


@pytest.mark.slow
def test_dashboard_serves_the_study_trials(tmp_path):
    records = layout_records()
    make_study(tmp_path, "fab", SPACE, records)
    port = free_port()
    cmd = [sys.executable, "-m", "coatsearch.cli", "dashboard", "fab", "--studies-dir", str(tmp_path)]
    proc = subprocess.Popen([*cmd, "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        studies = wait(f"{base}/api/studies", proc)["study_summaries"]
        assert [s["study_name"] for s in studies] == ["fab"]
        detail = get(f"{base}/api/studies/{studies[0]['study_id']}")
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


def test_space_as_readable_attributes_and_metric_name(tmp_path):
    attrs = space_attrs(SPACE)
    assert attrs["space.name"] == "fab" and attrs["space.profile"] == "default"
    assert attrs["space.scale"] == SPACE["scale"] and attrs["space.source"] == "spaces/fab.yaml"
    assert attrs["space.input"] == "32x32 px, 1 channel(s), 10 classes"
    assert attrs["study.objective"] == "generalization.eval_acc" and attrs["study.seeds"] == "0, 1, 2"
    assert all(isinstance(v, str | int | float | bool) for v in attrs.values())
    make_study(tmp_path, "fab", SPACE, layout_records())  # the study holds only the `space` dict
    journal = storage_file(tmp_path, "fab")
    written = journal.read_bytes()
    view = ReadableStorage(open_storage(journal))
    [summary] = view.get_all_studies()
    assert {k: summary.user_attrs[k] for k in attrs} == attrs and "space" not in summary.user_attrs
    assert view.get_study_user_attrs(summary._study_id) == summary.user_attrs
    names = view.get_study_system_attrs(summary._study_id)["study:metric_names"]
    assert names == summary.system_attrs["study:metric_names"] == ["generalization.eval_acc"]
    assert journal.read_bytes() == written  # the view computes all of it on read: nothing is written


def test_readable_storage_shows_scalar_attributes(tmp_path):
    make_study(tmp_path, "fab", SPACE, layout_records())
    view = ReadableStorage(open_storage(storage_file(tmp_path, "fab")))
    [summary] = view.get_all_studies()
    assert "space" not in summary.user_attrs and summary.user_attrs["space.name"] == "fab"
    trials = view.get_all_trials(summary._study_id)
    attrs = trials[0].user_attrs
    assert attrs["optim.lr"] == 2e-3 and attrs["env.versions.torch"] == "2" and attrs["depths"] == "1, 3, 7, 1"
    assert attrs["generalization.eval_acc"] == AGREE["generalization.eval_acc"]["ViT_REL"][0]  # the record, readable
    assert re.fullmatch(r"0\.\d+(, 0\.\d+){5}", attrs["curves.generalization.eval_acc"])  # 6 points, 3 digits
    assert all(not isinstance(v, dict | list) for t in trials for v in t.user_attrs.values())
    assert view.get_trial(trials[0]._trial_id).user_attrs == attrs
    raw = open_storage(storage_file(tmp_path, "fab")).get_all_trials(summary._study_id)
    assert set(raw[0].user_attrs) == {"key", "record"}  # the store of record is untouched: one record attribute
    assert readable({"a": {"b": 0.123456789}}) == {"a.b": 0.123457}


def test_report_markdown_is_the_study_note(tmp_path):
    from optuna_dashboard import get_note

    study = make_study(tmp_path, "fab", SPACE, layout_records())
    md = tmp_path / "report.md"
    md.write_text("# fab\n\nC-C-T-T generalizes worse than C-C-C-C.\n")
    save_note(study, md.read_text(), {"a": "inconclusive"})
    assert get_note(study) == md.read_text()
    size = storage_file(tmp_path, "fab").stat().st_size
    save_note(study, md.read_text(), {"a": "inconclusive"})
    assert storage_file(tmp_path, "fab").stat().st_size == size


def _dom_text(dom: str) -> str:
    dom = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", dom)))


@pytest.mark.slow
def test_study_page_in_chromium_shows_study_metric_and_candidate(tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (apt-get install -y chromium; .ci/run does)")
    records = layout_records()
    make_study(tmp_path, "fab", SPACE, records)
    best = max((r for r in records if r.state == "COMPLETE"), key=lambda r: r.value)
    port = free_port()
    proc = start(tmp_path, "fab", port)
    try:
        base = f"http://127.0.0.1:{port}"
        [study] = wait(f"{base}/api/studies", proc)["study_summaries"]
        page = f"{base}/dashboard/studies/{study['study_id']}"
        profile = tmp_path / "chromium-profile"
        cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page]
        dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    finally:
        stop(proc.pid, proc)
    text = _dom_text(dom)
    assert "fab (id=" in text  # the study's name in the page header
    assert "generalization.eval_acc" in text  # the metric name on the history plot, not "Objective 0"
    assert "Objective 0" not in text
    assert f"candidate: {best.candidate}" in text  # the best trial's params
    assert "space.scale" in text and SPACE["scale"] in text  # the readable study attributes


def _serve_in_thread(app):
    """A WSGI app on a free 127.0.0.1 port in a daemon thread: (server, base address)."""
    import threading
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    server = make_server("127.0.0.1", free_port(), app, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}"


PROBE = """<!doctype html><html><body>
<iframe id="f" src="{page}" style="width:1400px;height:8000px"></iframe><pre id="out">pending</pre>
<script>
function check() {{
  const doc = document.getElementById("f").contentDocument;
  const imgs = doc ? Array.from(doc.querySelectorAll("img")) : [];
  if (imgs.length >= {n} && imgs.every((i) => i.complete)) {{
    document.getElementById("out").textContent = JSON.stringify(
      imgs.map((i) => [i.getAttribute("alt"), i.getAttribute("src"), i.naturalWidth, i.naturalHeight]));
  }} else {{ setTimeout(check, 250); }}
}}
check();
</script></body></html>"""


@pytest.mark.slow
def test_every_figure_of_the_note_loads_in_chromium(tmp_path):
    """The report's figures in the dashboard note are images the browser loads (the served app, a real Chromium):
    a probe page of the same origin frames the note page and reads each image's natural size."""
    import json

    import coatsearch
    from coatsearch.dashboard import wsgi_app

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (apt-get install -y chromium; .ci/run does)")
    make_study(tmp_path / "studies", "fab", SPACE, layout_records())
    paths = coatsearch.write_report("fab", tmp_path / "studies", tmp_path / "reports", note=True)
    figures = re.findall(r"!\[([^\]]*)\]\(([^)]+\.png)\)", paths.markdown.read_text())
    assert len(figures) >= 3 and {f.name for f in paths.figures} == {f for _, f in figures}
    app = wsgi_app("fab", tmp_path / "studies")  # what `coatsearch dashboard` serves, read-only
    page = f"/dashboard/studies/{load_study(tmp_path / 'studies', 'fab')._study_id}/note"
    app.route("/probe", callback=lambda: PROBE.format(page=page, n=len(figures)))
    server, base = _serve_in_thread(app)
    try:
        profile = tmp_path / "chromium-profile"
        cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", f"{base}/probe"]
        dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
        out = re.search(r'<pre id="out">(.*?)</pre>', dom, flags=re.S)
        assert out is not None and out.group(1) != "pending", dom[-2000:]
        shown = json.loads(html.unescape(out.group(1)))
        assert [alt for alt, *_ in shown] == [name for name, _ in figures]  # every figure of the report, in order
        for (_, src, width, height), (_, file) in zip(shown, figures, strict=True):
            assert src.startswith("/artifacts/") and width > 100 and height > 100  # loaded: a broken image is 0x0
            with urllib.request.urlopen(base + src, timeout=5) as resp:  # the bytes of the report's own figure
                assert resp.headers["Content-Type"] == "image/png"
                assert resp.read() == (paths.markdown.parent / file).read_bytes()
    finally:
        server.shutdown()


def test_a_refused_edit_is_403_with_its_reason_and_writes_nothing(tmp_path):
    import json

    from coatsearch.dashboard import wsgi_app

    make_study(tmp_path, "fab", SPACE, layout_records())
    journal = storage_file(tmp_path, "fab")
    written = journal.read_bytes()
    server, base = _serve_in_thread(wsgi_app("fab", tmp_path))
    study_id = load_study(tmp_path, "fab")._study_id
    edits = [
        ("PUT", f"/api/studies/{study_id}/note", {"version": 1, "body": "edited"}),
        ("POST", f"/api/artifacts/{study_id}", {"file": "data:text/plain;base64,eA==", "filename": "x.txt"}),
        ("DELETE", f"/api/studies/{study_id}", None),
    ]
    try:
        for method, path, body in edits:
            data = json.dumps(body).encode() if body is not None else None
            req = urllib.request.Request(base + path, data=data, method=method)
            req.add_header("Content-Type", "application/json")
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(req, timeout=5)
            assert err.value.code == 403, (path, err.value.code)  # not a bare 500
            assert "the dashboard is read-only" in json.loads(err.value.read())["reason"]
    finally:
        server.shutdown()
    assert journal.read_bytes() == written
    assert not (tmp_path / "fab" / "artifacts").exists() or not any((tmp_path / "fab" / "artifacts").iterdir())
