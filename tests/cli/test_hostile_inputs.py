"""Bad caches and environment, hostile images, Markdown that breaks, API bounds."""

from __future__ import annotations

import json
import os
import socket

import numpy as np
import pytest
from PIL import Image

import coatsearch
from coatsearch.dashboard import serve
from coatsearch.errors import UserError
from coatsearch.report import escape
from coatsearch.report.markdown import about, table
from coatsearch.report.markdown_claims import failures
from coatsearch.report.view_claims import Failure, Failures
from coatsearch.report.view_study import Header
from coatsearch.storage import store
from coatsearch.training import data as D
from coatsearch.training import images
from coatsearch.training import tuning as speed
from tests.report_records import SPACE, layout_records, make_study
from tests.support.hostile import deadline, listing
from tests.tiny import TINY

# ------------------------------------------------------------------------------------ 6. caches, environment

RATES = {1: 100.0, 2: 150.0}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty workers cache in tmp_path and a probe that returns RATES (no timing in tests)."""
    monkeypatch.setenv("COATSEARCH_CACHE", str(tmp_path))
    probes = []
    monkeypatch.setattr(speed, "probe_rates", lambda cores: probes.append(cores) or dict(RATES))
    return tmp_path / "workers.json", probes


def _entry(value):
    return lambda key: {key: value}


@pytest.mark.parametrize(
    "content, why",
    [
        (lambda key: [1], "holds a JSON list, expected a mapping"),
        (lambda key: "text", "holds a JSON str, expected a mapping"),
        (_entry({"0": 10.0}), "is not valid"),
        (_entry({"1": -3.0}), "is not valid"),
        (_entry({"64": 500.0}), "is not valid"),  # 64 threads cached on 2 cores
        (_entry([1, 2]), "is not valid"),
        (_entry({"1": "fast"}), "is not valid"),
    ],
)
def test_a_bad_workers_cache_is_named_reprobed_and_rewritten(cache, capsys, content, why):
    path, probes = cache
    key = speed.machine_key(2)
    path.write_text(json.dumps(content(key)))
    choice = speed.auto_workers(trials=4, cores=2)
    assert probes == [2] and choice.rates == RATES and not choice.cached
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: " in err and why in err and "probing again" in err, err
    again = speed.auto_workers(trials=4, cores=2)  # the rewritten entry is valid: no second probe
    assert again.cached and probes == [2] and capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "kind, why",
    [
        ("fifo", "is a FIFO"),
        ("link", "is a symbolic link"),
        ("huge", "a file here may have at most"),
        ("deep", "nested too deeply"),
    ],
)
def test_a_workers_cache_that_is_special_huge_or_deep_is_a_note_never_a_hang(cache, capsys, kind, why):
    # workers.json was read with read_text(): a FIFO there hung `run --workers auto`, /dev/zero grew without bound
    path, probes = cache
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        path.symlink_to("/dev/zero")
    elif kind == "huge":
        with path.open("wb") as fh:
            fh.truncate(3 * 2**30)  # sparse
    else:
        path.write_text("[" * 100_000 + "]" * 100_000)
    with deadline(30):
        choice = speed.auto_workers(trials=4, cores=2)
    assert probes == [2] and choice.rates == RATES and not choice.cached
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: " in err and why in err and "probing again" in err, err


def test_a_dashboard_port_in_use_is_one_line_before_the_url(tmp_path, capsys):
    make_study(tmp_path, "fab", SPACE, layout_records())
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(UserError, match=f"cannot serve on 127.0.0.1:{port}: Address already in use"):
            serve("fab", tmp_path, port=port)
    assert "http://" not in capsys.readouterr().out


def test_allow_writes_warns_in_one_line(tmp_path, capsys, monkeypatch):
    import optuna_dashboard

    make_study(tmp_path, "fab", SPACE, layout_records())
    served = []
    monkeypatch.setattr(optuna_dashboard, "run_server", lambda storage, **kw: served.append(storage))
    serve("fab", tmp_path, port=0, allow_writes=True)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "can read the study and edit it" in err
    assert served[0] is store.open_storage(store.storage_file(tmp_path, "fab"))  # the storage, not the view


# --------------------------------------------------------------------------------------- 7. hostile images


def _folder(root, classes=2, per_class=5):
    for c in range(classes):
        (root / f"c{c}").mkdir(parents=True)
        for i in range(per_class):
            Image.fromarray(np.full((8, 8), 40 * c + i, dtype=np.uint8)).save(root / f"c{c}" / f"{i}.png")
    return root


def test_a_folder_link_in_an_imagefolder_is_refused_without_walking_it(tmp_path):
    root = _folder(tmp_path / "imgs")
    (root / "c0" / "up").symlink_to("..")
    (root / "c1" / "loop").symlink_to("../c1")
    with deadline(60), pytest.raises(UserError, match="is a link to a folder \\(\\.\\.\\); coatsearch does not"):
        D._load_imagefolder("imagefolder", str(root), 8)


def test_a_fifo_in_an_imagefolder_is_refused(tmp_path):
    root = _folder(tmp_path / "imgs")
    os.mkfifo(root / "c0" / "9.png")
    with deadline(60), pytest.raises(UserError, match="9.png: is not a regular file"):
        D._load_imagefolder("imagefolder", str(root), 8)


@pytest.mark.parametrize("per_class", [1, 2])
def test_too_few_images_per_class_names_the_class(tmp_path, per_class):
    root = _folder(tmp_path / "imgs", per_class=5)
    for p in sorted((root / "c1").iterdir())[per_class:]:
        p.unlink()
    with pytest.raises(UserError, match=f"class 'c1' has {per_class} training and 0 evaluation image"):
        D._load_imagefolder("imagefolder", str(root), 8)


def test_sixteen_bit_and_float_images_decode_to_their_range(tmp_path):
    Image.fromarray(np.full((4, 4), 40000, dtype=np.uint16)).save(tmp_path / "a.png")  # 16-bit grey
    Image.fromarray(np.full((4, 4), 0.5, dtype=np.float32)).save(tmp_path / "b.tiff")  # float in 0..1
    Image.fromarray(np.full((4, 4, 3), 200, dtype=np.uint8)).save(tmp_path / "c.png")  # 8-bit RGB
    x = images.decode([str(tmp_path / n) for n in ("a.png", "b.tiff", "c.png")], 4)
    assert x[0].unique().tolist() == [round(40000 * 255 / 65535)]  # 156, not all-white 255
    assert x[1].unique().tolist() == [128]  # not all-black 0
    assert x[2].unique().tolist() == [200]


@pytest.mark.parametrize("value", [2.0, float("nan"), -1.0])
def test_a_float_image_outside_zero_to_one_is_refused(tmp_path, value):
    Image.fromarray(np.full((4, 4), value, dtype=np.float32)).save(tmp_path / "f.tiff")
    with pytest.raises(UserError, match="f.tiff: cannot decode this image \\(ValueError: float image with "):
        images.decode([str(tmp_path / "f.tiff")], 4)


def test_a_decompression_bomb_is_one_line(tmp_path, monkeypatch):
    Image.fromarray(np.zeros((200, 200), dtype=np.uint8)).save(tmp_path / "big.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 10_000)  # PIL's limit, lowered so the test image exceeds it
    with pytest.raises(UserError) as info:
        images.decode([str(tmp_path / "big.png")], 4)
    assert str(info.value).startswith(f"{tmp_path / 'big.png'}: refused as a decompression bomb (")
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------------------------------ 8. Markdown


HOSTILE = ["a|b", "two\nlines", "```unclosed", "x\r\n| y | z |", "~~~"]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_cell_stays_in_its_row(text):
    md = table(["name", "reason"], [[text, text], ["ok", "fine"]])
    lines = md.splitlines()
    assert len(lines) == 4  # head, rule, two rows
    assert all(line.count("|") - line.count("\\|") == 3 for line in lines), md


def test_failure_reasons_and_candidate_names_cannot_split_rows():
    md = failures(Failures((Failure(3, "C|T\nX", 0, "FAIL", "boom\n```\n| x |"),)))
    body = md.split("\n\n")[1].splitlines()
    assert len(body) == 3 and "C\\|T X" in body[2] and "boom ``` \\| x \\|" in body[2], md


def test_an_unclosed_fence_in_the_description_cannot_swallow_the_report():
    md = about(Header("s", "Intro\n```python\nnever closed\n  ~~~", "x", None, None, None))
    assert not any(line.lstrip().startswith(("```", "~~~")) for line in md.splitlines()), md
    assert "\\```python" in md and "never closed" in md
    assert escape.block("plain *text*") == "plain *text*"  # ordinary Markdown is kept


# ------------------------------------------------------------------------------------------ 10. API bounds


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"workers": 5000}, "workers: 5000 is not allowed; allowed: an integer 1..64"),
        ({"workers": True}, "workers: True is not allowed"),
        ({"workers": 0}, "workers: 0 is not allowed"),
        ({"workers": 2.0}, "workers: 2.0 is not allowed"),
        ({"trials": 10**6}, "trials: 1000000 is not allowed; allowed: an integer 1..100000"),
        ({"trials": False}, "trials: False is not allowed"),
    ],
)
def test_the_api_has_the_cli_bounds(tmp_path, kwargs, expected):
    before = listing(tmp_path)
    with pytest.raises(UserError, match=expected.replace("(", "\\(").replace(".", "\\.")):
        coatsearch.run(TINY, studies_dir=tmp_path / "studies", reports_dir=tmp_path / "reports", **kwargs)
    assert listing(tmp_path) == before
