"""The example spaces shipped inside the package (`coatsearch/spaces/*.yaml`): named, listed and copied.

A wheel has no `spaces/` folder, so a shipped space is also reached by its name: `coatsearch run paper_layouts`
loads `coatsearch/spaces/paper_layouts.yaml` when no file of that name exists (a file always wins), and
`coatsearch spaces --copy paper_layouts my.yaml` writes a starting copy to edit. The copies are identical to
the repository's `spaces/*.yaml` (tests/repo/test_shipped_spaces.py holds them so).
"""

from __future__ import annotations

from pathlib import Path

from coatsearch.errors import UserError

FOLDER = Path(__file__).resolve().parent / "spaces"


def names() -> list[str]:
    """The shipped spaces' names (file names without `.yaml`), sorted."""
    return sorted(p.stem for p in FOLDER.glob("*.yaml"))


def path(name: str) -> Path:
    """The shipped space `name` (with or without `.yaml`); a one-line UserError naming those that exist."""
    stem = name.removesuffix(".yaml")
    if stem not in names():
        raise UserError(f"no shipped space {name!r}; shipped: {', '.join(names())}")
    return FOLDER / f"{stem}.yaml"


def resolve(given: str | Path) -> str | Path:
    """A space argument as a file: `given` itself when it exists or is not a shipped name, else the shipped file."""
    if Path(given).exists() or Path(given).name != str(given):
        return given
    stem = str(given).removesuffix(".yaml")
    return FOLDER / f"{stem}.yaml" if stem in names() else given


def describe(name: str) -> str:
    """The first sentence of a shipped space's `description:` (or ''), at most 100 characters."""
    import yaml

    from coatsearch import fsafe

    doc = yaml.safe_load(fsafe.read_bytes(path(name), fsafe.JSON_MAX)) or {}
    text = str(doc.get("description") or "").strip()
    first = text.split(". ")[0].splitlines()[0] if text else ""
    return first if len(first) <= 100 else first[:97] + "..."


def copy(name: str, dest: Path) -> Path:
    """Write the shipped space `name` to `dest` (a file, or a folder to hold `<name>.yaml`); never overwrites."""
    from coatsearch import fsafe

    source = path(name)
    target = Path(dest) / source.name if Path(dest).is_dir() else Path(dest)
    if target.exists() or target.is_symlink():
        raise UserError(f"{target}: exists; coatsearch spaces --copy never overwrites a file")
    if not target.parent.is_dir():
        raise UserError(f"{target.parent}: no such folder")
    return fsafe.create(target, source.read_bytes())
