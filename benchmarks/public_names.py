"""Public names nobody else uses: module-level functions, classes and constants of coatsearch/ that no other file
refers to. Read with `ast` and regular expressions; nothing is imported.

A module's public names are those it defines at its top level (`def`, `class`, an assigned name; inside a top-level
`if` or `try` too) that do not start with `_`, less those its `__all__` lists (declared public). Another file
refers to a name when:
- a Python file of coatsearch/, tests/ or benchmarks/ other than the defining module holds it as an identifier
  (a name, an attribute, an imported name), as a string that is the name or a dotted or "module:name" path ending
  in it (`getattr(module, "name")`, monkeypatch.setattr, a registry's "module:function" builder), or names it as
  `module.name` text in a comment or docstring;
- a Markdown file of docs/, the README or pyproject.toml names it as `module.name` or "module:name" text, where
  `module` is the defining module's dotted path or any tail of it (`kinds.STAGE_KINDS`, `vocab.kinds.STAGE_KINDS`).
An identifier of the same spelling with another meaning counts as a use, so the count is a floor.

    python benchmarks/public_names.py [--list]

Prints per package the public names and those unused (`--list`: each unused one); the last line is
`unused_public_names=<count>`.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "coatsearch"
PYTHON = ("coatsearch", "tests", "benchmarks")  # folders whose .py files refer by identifier
TEXT = ("docs/**/*.md", "README.md", "pyproject.toml")  # files that refer by `module.name` text only
DOTTED = re.compile(r"[A-Za-z_]\w*(?:[.:][A-Za-z_]\w*)+")  # a.b.c, a.b:c
PATH = re.compile(r"[A-Za-z_]\w*(?:[.:][A-Za-z_]\w*)*")  # a string that is a name or a path


def module_name(path: Path) -> str:
    """`coatsearch/vocab/kinds.py` -> `coatsearch.vocab.kinds` (a package's `__init__` is the package)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_statements(tree: ast.Module) -> list[ast.stmt]:
    """The module's top-level statements, those inside a top-level `if` or `try` included."""
    out, todo = [], list(tree.body)
    while todo:
        node = todo.pop(0)
        out.append(node)
        if isinstance(node, ast.If):
            todo += node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
    return out


def declared(tree: ast.Module) -> set[str]:
    """The names a module's `__all__` lists."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            if isinstance(node.value, ast.List | ast.Tuple):
                return {e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def definitions(tree: ast.Module) -> list[str]:
    """The public names a module defines at its top level, in order, less those its `__all__` lists."""
    names: list[str] = []
    for node in _top_statements(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    public = [n for n in dict.fromkeys(names) if not n.startswith("_")]
    return [n for n in public if n not in declared(tree)]


def identifiers(tree: ast.AST) -> set[str]:
    """Every name a Python file uses: names, attributes, imported names, and the parts of path-like strings."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add(node.name.rpartition(".")[2])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and PATH.fullmatch(node.value):
            out.update(re.split(r"[.:]", node.value))
    return out


def mentions(text: str) -> set[tuple[str, str]]:
    """(module path, name) for every `a.b.c` or "a.b:c" in `text`: ("a", "b"), ("a.b", "c") and ("b", "c")."""
    out: set[tuple[str, str]] = set()
    for found in DOTTED.findall(text):
        parts = re.split(r"[.:]", found)
        for end in range(1, len(parts)):
            for start in range(end):
                out.add((".".join(parts[start:end]), parts[end]))
    return out


def _tails(module: str) -> list[str]:
    """`coatsearch.vocab.kinds` -> the ways text may name it: itself, `vocab.kinds`, `kinds`."""
    parts = module.split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


def unused() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(module -> its public names, module -> those no other file refers to)."""
    files = {p: p.read_text(encoding="utf-8") for d in PYTHON for p in sorted((ROOT / d).rglob("*.py"))}
    trees = {p: ast.parse(text) for p, text in files.items()}
    used_by = {p: identifiers(tree) for p, tree in trees.items()}
    named_by = {p: mentions(text) for p, text in files.items()}
    for pattern in TEXT:
        for p in sorted(ROOT.glob(pattern)):
            used_by[p], named_by[p] = set(), mentions(p.read_text(encoding="utf-8"))
    public = {module_name(p): definitions(tree) for p, tree in trees.items() if p.is_relative_to(PACKAGE)}
    found: dict[str, list[str]] = {}
    for path in (p for p in trees if p.is_relative_to(PACKAGE)):
        module = module_name(path)
        others = [p for p in used_by if p != path]
        tails = _tails(module)
        found[module] = [
            name
            for name in public[module]
            if not any(name in used_by[p] or any((t, name) in named_by[p] for t in tails) for p in others)
        ]
    return public, found


def package_of(module: str) -> str:
    """A module's package under coatsearch (`vocab`), or `top` for a top-level module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (PACKAGE / parts[-1] / "__init__.py").exists() else "top"


def main() -> None:
    from coatsearch.cli_types import Parser  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="print each unused name as module.name")
    args = ap.parse_args()
    public, found = unused()
    total: Counter = Counter()
    idle: Counter = Counter()
    for module in sorted(public):
        total[package_of(module)] += len(public[module])
        idle[package_of(module)] += len(found[module])
        if args.list:
            for name in found[module]:
                print(f"{module}.{name}")
    for package in sorted(total):
        print(f"  {package:10s} {total[package]:4d} public {idle[package]:4d} unused")
    print(f"public names {sum(total.values())}")
    print(f"unused_public_names={sum(idle.values())}")


if __name__ == "__main__":
    main()
