"""Write constraints.txt: every distribution in the dependency closure of pyproject.toml (its dependencies and every
extra's), pinned at the version installed in this interpreter (`pip install -c constraints.txt ...` gets that set).

    python benchmarks/freeze_constraints.py            # rewrite constraints.txt at the repository root
    python benchmarks/freeze_constraints.py --check    # exit 1 when it differs from what this interpreter has
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the copy pip vendors
    from pip._vendor import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "constraints.txt"
HEADER = (
    "# Every dependency of coatsearch (and of its extras), pinned at the versions installed where its tests ran\n"
    "# (benchmarks/freeze_constraints.py writes it from the installed packages; torch and torchvision as the README).\n"
    '# pip install -c constraints.txt torch==2.14.1 torchvision==0.29.1 -e ".[test]"\n'
)


def named() -> list[Requirement]:
    """The requirements pyproject.toml names: its dependencies and every optional dependency."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    return [Requirement(r) for r in reqs if not Requirement(r).name.startswith("coatsearch")]


def closure(reqs: list[Requirement]) -> dict[str, str]:
    """Canonical name -> installed version of every distribution `reqs` need, transitively (markers evaluated)."""
    pins: dict[str, str] = {}
    todo = [(r, tuple(sorted(r.extras))) for r in reqs]
    seen: set[tuple[str, tuple[str, ...]]] = set()
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            sys.exit(f"freeze_constraints: {req.name} is not installed; install coatsearch with every extra first")
        pins[name] = dist.version
        for raw in dist.requires or []:
            sub = Requirement(raw)
            env = [{"extra": e} for e in extras] or [{"extra": ""}]
            if sub.marker is None or any(sub.marker.evaluate(e) for e in env):
                todo.append((sub, tuple(sorted(sub.extras))))
    return pins


def text() -> str:
    """constraints.txt as this interpreter would write it."""
    return HEADER + "".join(f"{n}=={v}\n" for n, v in sorted(closure(named()).items()))


def main() -> int:
    from coatsearch.cli_types import Parser  # the CLI's one-line errors, exit 2

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    args = ap.parse_args()
    if args.check:
        same = OUT.exists() and OUT.read_text() == text()
        print("constraints.txt: " + ("as installed" if same else "differs from what is installed"))
        return 0 if same else 1
    OUT.write_text(text())
    print(f"{OUT.relative_to(ROOT)}: {len(closure(named()))} pins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
