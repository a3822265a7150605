"""The example spaces ship inside the package: equal to spaces/*.yaml, named from any folder, copied to start from;
the built wheel carries them, py.typed and its metadata, and runs `coatsearch show` from a fresh virtualenv."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from coatsearch import shipped
from coatsearch.cli import main
from coatsearch.errors import UserError

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_spaces_are_the_repositorys_spaces_byte_for_byte():
    repo = sorted(p.name for p in (ROOT / "spaces").glob("*.yaml"))
    assert [f"{n}.yaml" for n in shipped.names()] == repo and "paper_layouts.yaml" in repo
    for name in repo:  # one source of truth: edit spaces/NAME.yaml, then copy it to coatsearch/spaces/
        assert (shipped.FOLDER / name).read_bytes() == (ROOT / "spaces" / name).read_bytes(), name


def test_a_shipped_space_is_named_from_a_folder_without_spaces(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "coatsearch", "show", "paper_layouts", "--profile", "quick"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "C-C-C-T" in done.stdout and "budget:" in done.stdout


def test_spaces_lists_and_copies_without_overwriting(tmp_path, capsys):
    assert main(["spaces"]) == 0
    out = capsys.readouterr().out
    assert all(f"{n} " in out for n in shipped.names())
    assert main(["spaces", "--copy", "vit_stems", str(tmp_path)]) == 0
    assert (tmp_path / "vit_stems.yaml").read_bytes() == (ROOT / "spaces" / "vit_stems.yaml").read_bytes()
    assert main(["spaces", "--copy", "vit_stems", str(tmp_path / "vit_stems.yaml")]) == 2
    assert "exists" in capsys.readouterr().err
    with pytest.raises(UserError, match="no shipped space 'nope'; shipped: coatnet_family, layout_search"):
        shipped.path("nope")
    assert shipped.resolve("spaces/paper_layouts.yaml") == "spaces/paper_layouts.yaml"  # a path is a path
    assert shipped.resolve(tmp_path / "vit_stems.yaml") == tmp_path / "vit_stems.yaml"  # a file wins


@pytest.mark.slow
def test_the_built_wheel_installs_and_shows_a_shipped_space(tmp_path):
    build = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(tmp_path),
        str(ROOT),
    ]
    done = subprocess.run(build, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [wheel] = tmp_path.glob("coatsearch-*.whl")
    with zipfile.ZipFile(wheel) as z:
        files = set(z.namelist())
        meta = z.read(next(n for n in files if n.endswith(".dist-info/METADATA"))).decode()
    assert {f"coatsearch/spaces/{n}.yaml" for n in shipped.names()} <= files and "coatsearch/py.typed" in files
    assert "Author: coatsearch developers" in meta and "Classifier: Typing :: Typed" in meta
    assert "License-Expression: MIT" in meta and any(n.endswith(".dist-info/licenses/LICENSE") for n in files)
    venv = tmp_path / "venv"  # coatsearch from the wheel; its dependencies from this interpreter's site-packages,
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)  # named by a plain path line
    [site] = (venv / "lib").glob("python3*/site-packages")  # (so no editable install of a checkout comes along)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # no checkout on the path
    subprocess.run(pip, check=True, timeout=600, capture_output=True, env=env)  # before deps.pth: pip would see one
    (site / "deps.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import coatsearch; print(coatsearch.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)  # fmt: skip
    assert where.stdout.startswith(str(venv)), where  # the installed wheel, not a checkout
    show = [str(venv / "bin" / "coatsearch"), "show", "paper_layouts", "--profile", "quick"]
    done = subprocess.run(show, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "C-C-C-T" in done.stdout and "budget:" in done.stdout
