"""Names in the docs, the README and the package's docstrings and comments resolve: no stale module name.

Read statically (`ast`, `tokenize`; nothing imported). What counts as a reference to the package:
- any dotted name starting `coatsearch.` (`coatsearch.storage.found`), backticked or not;
- a dotted name, backticked or in prose (`train.fit`, `report.stats.paired`, `curve.Dense`, `scores.register_score(s)`)
  whose first part names a module of the package (now, or once: FORMER) and that reads as a module path: three or more
  parts, or a module or class/constant (CapWords, UPPER) or call after the first, or a first part that is only a
  former module's name. Space-file fields (`train.batch_size`, `study.seeds`), metric keys (`speed.threads`)
  and file names (`plan.json`) are prose, not references, and so is the code in a Markdown code block;
- a `NAME.py` whose NAME is a module's name (now or once): a file of that name must exist.
A reference resolves when a module whose dotted path ends with its leading parts exists and the next part is
defined at that module's top level (a class's attribute, one level further, in the class body).
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "coatsearch"
# modules the package had under names it no longer uses (a reference to one is stale)
FORMER = {"backends", "candidates", "claiming", "complexity", "curve", "document", "dsl", "match_joint", "plan",
          "spec", "study", "train", "trials_plan", "speed_report"}  # fmt: skip
FILES = {"json", "log", "png", "md", "yaml", "yml", "toml", "txt", "csv", "lock", "parquet", "safetensors", "html"}
DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"
FULL = re.compile(r"(?<![\w./-])coatsearch(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
TICKED = re.compile(rf"`({DOTTED}|[\w/]+\.py)(\(|`)")
BARE = re.compile(rf"(?<![\w.`/-])({DOTTED}|[\w/]+\.py)(\(|(?![\w`]))")


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


MODULES = _modules()
NAMES = {part for m in MODULES for part in m.split(".")[1:]}


def _space_fields() -> tuple[set[str], set[str]]:
    """A space file's sections, and every field name of its specs: `train.batch_size` is a field, not a module."""
    from coatsearch.space import schema
    from coatsearch.space.schema import CandidateSpec, SpaceDoc

    sections = {f.name for cls in (SpaceDoc, CandidateSpec) for f in dataclasses.fields(cls)}
    specs = [v for v in vars(schema).values() if isinstance(v, type) and dataclasses.is_dataclass(v)]
    return sections, {f.name for cls in specs for f in dataclasses.fields(cls)}


def _defined(path: Path) -> dict[str, set[str] | None]:
    """Top-level names of a module: a class maps to the names its body defines, anything else to None."""
    tree, out = ast.parse(path.read_text(encoding="utf-8")), {}
    for node in ast.walk(tree) if path.name == "__init__.py" else tree.body:
        if isinstance(node, ast.ClassDef):
            body = {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
            assigned = [n for n in node.body if isinstance(n, ast.AnnAssign | ast.Assign)]
            targets = [t for n in assigned for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
            body |= {t.id for t in targets if isinstance(t, ast.Name)}
            out[node.name] = body
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[node.name] = None
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                out.update({n.id: None for n in ast.walk(t) if isinstance(n, ast.Name)})
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out.update({(a.asname or a.name).split(".")[0]: None for a in node.names})
    return out


def resolves(name: str) -> bool:
    """Whether a dotted name (`coatsearch.x.y`, or a module path's tail like `storage.found.best`) resolves."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        head, rest = ".".join(parts[:i]), parts[i:]
        for mod in [m for m in MODULES if m == head or m.endswith("." + head)]:
            if not rest or (len(rest) == 1 and f"{mod}.{rest[0]}" in MODULES):  # a longer module path: tried above
                return True
            found = _defined(MODULES[mod])  # a package's __init__: every name in it (lazy imports included)
            if rest[0] in found and (len(rest) == 1 or found[rest[0]] is None or rest[1] in (found[rest[0]] or ())):
                return True
    return False


def referenced(text: str, stale_roots: set[str], space: tuple[set[str], set[str]]) -> set[str]:
    """The references to the package in `text`, by the module docstring's rule (`study.baselines` is a field)."""
    out = set(FULL.findall(text))
    prose = re.sub(r"`[^`\n]*`", " ", re.sub(r"(?ms)^```.*?^```", " ", text))  # code blocks: Python, not prose
    for token, after in TICKED.findall(text) + BARE.findall(prose):
        parts = token.split(".")
        if token.endswith(".py"):
            if Path(token).stem in NAMES | FORMER:
                out.add(token)
        elif parts[-1] in FILES or parts[0] == "coatsearch":
            continue  # a file name; a full name the first rule reads
        elif parts[0] in space[0] and parts[1] in space[1]:
            continue  # a space file's field (`study.seeds`, `train.batch_size`)
        elif parts[0] in stale_roots or (parts[0] in NAMES and (
                len(parts) > 2 or after == "(" or parts[1][0].isupper() or parts[1] in NAMES | FORMER)):  # fmt: skip
            out.add(token)
    return out


def _file_exists(token: str) -> bool:
    name = Path(token).name
    return (ROOT / token).exists() or any(any((ROOT / d).rglob(name)) for d in ("coatsearch", "benchmarks", "tests"))


def _docstrings_and_comments(path: Path) -> str:
    source = path.read_text(encoding="utf-8")
    texts = [
        ast.get_docstring(n, clean=False) or ""
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    texts += [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    return "\n".join(texts)


SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(PACKAGE.rglob("*.py"))]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_resolves(path):
    text = path.read_text(encoding="utf-8") if path.suffix == ".md" else _docstrings_and_comments(path)
    bad = sorted(
        t
        for t in referenced(text, FORMER - NAMES, _space_fields())
        if not (_file_exists(t) if t.endswith(".py") else resolves(t))
    )
    assert bad == []


def test_the_rule_tells_references_from_prose():
    text = ("`train.fit` `report.stats.paired` `curve.Dense` `dsl.py` `storage.found` `coatsearch.api.nope` "
            "`train.batch_size` `study.seeds` `speed.threads` `plan.json` `torch.compile` `benchmark.py` "
            "`scores.register_score(s)` `study.baselines` coatsearch.storage.found")  # fmt: skip
    found = referenced(text, FORMER - NAMES, _space_fields())
    assert found == {"train.fit", "report.stats.paired", "curve.Dense", "dsl.py", "storage.found",
                     "coatsearch.api.nope", "scores.register_score", "coatsearch.storage.found"}  # fmt: skip
    assert [t for t in sorted(found) if not (_file_exists(t) if t.endswith(".py") else resolves(t))] == [
        "coatsearch.api.nope", "curve.Dense", "dsl.py", "report.stats.paired", "train.fit"]  # fmt: skip


LAB_NOTES = re.compile(
    r"load averages?|load avg|loadavg"  # a machine's load at one moment: say "shared" and what ran beside it
    r"|\b20\d\d-\d\d-\d\d\b(?!\.\w)"  # a date of work (a rule version, 2026-12-04.floor, is a name)
    r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b",  # a commit hash
    re.IGNORECASE,
)


@pytest.mark.parametrize("path", [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))],
                         ids=lambda p: str(p.relative_to(ROOT)))  # fmt: skip
def test_docs_hold_no_lab_notes(path):
    """A measurement names its command, machine type and figure; not the load, the day or the commit it ran at."""
    assert _notes(path, LAB_NOTES) == []


# A committed report holds content fingerprints and space hashes by design; a commit is one named as "@ <hash>"
REPORT_NOTES = re.compile(
    r"load averages?|load avg|loadavg|\b20\d\d-\d\d-\d\d(?!\.\w)|@ [0-9a-f]{7,40}\b", re.IGNORECASE
)


@pytest.mark.committed
@pytest.mark.parametrize("path", sorted(ROOT.glob("reports/*/report.md")), ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_reports_hold_no_lab_notes(path):
    """The tool writes no day, load or commit into a report (a registration's time, a history row's commit)."""
    assert _notes(path, REPORT_NOTES) == []


def test_the_report_rule_sees_each_note():
    text = "registered 2026-12-04T22:05:26; summary.json @ fc4867a3c0fd; load average 1.9; fingerprint 9df92da031d4"
    assert [m.group(0) for m in REPORT_NOTES.finditer(text)] == ["2026-12-04", "@ fc4867a3c0fd", "load average"]


def _notes(path: Path, rule: re.Pattern) -> list[tuple[int, str]]:
    return [(n, m.group(0)) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            for m in rule.finditer(line)]  # fmt: skip


def test_the_lab_notes_rule():
    text = "load average 5–6; 2026-12-01; (deb71fd); rule 2026-12-04.floor; 0.1 nats; sha256 of the space; cafe"
    assert [m.group(0) for m in LAB_NOTES.finditer(text)] == ["load average", "2026-12-01", "deb71fd"]
