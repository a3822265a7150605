"""constraints.txt pins every dependency pyproject.toml names (and every extra's) at one version each, inside the
range pyproject.toml allows, and torch and torchvision at the README's versions."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the copy pip vendors
    from pip._vendor import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version and name not in pins, line  # one exact pin per line, each name once
            pins[canonicalize_name(name)] = version
    return pins


def test_every_dependency_named_in_pyproject_is_pinned_within_its_range():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    named = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    pins = _pins()
    for raw in named:
        req = Requirement(raw)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not pinned in constraints.txt (benchmarks/freeze_constraints.py)"
        assert req.specifier.contains(pins[name], prereleases=True), (raw, pins[name])


def test_the_readme_installs_the_pinned_torch_and_names_the_constraints():
    readme, pins = (ROOT / "README.md").read_text(), _pins()
    for name in ("torch", "torchvision"):
        assert set(re.findall(rf"\b{name}==([0-9.]+)", readme)) == {pins[name]}, name
    assert "-c constraints.txt" in readme
