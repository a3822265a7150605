"""Public functions on the records → report path that return a bare `dict` or `list[dict]` (read with `ast`).

The path: analysis/, papers/, report/, answer/, planner/, scores/ and the top-level modules other than the
dashboard and the timm adapters. A public function is a module-level `def` (or a public method of a module-level
class) whose name does not start with `_`. Its return annotation is bare when it is `dict`, `dict[...]` or a
`list`/`tuple`/`Sequence` of those, except `dict[str, str]` (names or file paths); `Mapping[...]` counts as
`dict`. An unannotated function counts as bare: nothing says what it returns.

    python benchmarks/bare_returns.py [--list]

Prints the count per package (`--list`: each function); the last line is `bare_dict_returns=<count>`.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "coatsearch"
PATH = ("analysis", "papers", "report", "answer", "planner", "scores")
TOP_LEFT_OUT = {"dashboard.py", "timm_models.py", "__main__.py"}
DICTS = {"dict", "Dict", "Mapping", "MutableMapping"}
SEQS = {"list", "List", "tuple", "Tuple", "Sequence", "Iterable", "Iterator"}


def _name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def bare(ann: ast.expr | None) -> bool:
    """Whether a return annotation is a bare dict or a sequence of them (`dict[str, str]` is fine)."""
    if ann is None:
        return True
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):  # a quoted annotation
        return bare(ast.parse(ann.value, mode="eval").body)
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):  # X | None
        return bare(ann.left) or bare(ann.right)
    base = ann.value if isinstance(ann, ast.Subscript) else ann
    name = _name(base)
    if name in DICTS:
        if isinstance(ann, ast.Subscript):
            args = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            return [_name(a) for a in args] != ["str", "str"]
        return True
    if name in SEQS and isinstance(ann, ast.Subscript):
        args = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        return any(bare(a) for a in args if not (isinstance(a, ast.Constant) and a.value is Ellipsis))
    return False


def files() -> list[Path]:
    out = [p for pkg in PATH for p in sorted((PACKAGE / pkg).glob("*.py"))]
    return out + [p for p in sorted(PACKAGE.glob("*.py")) if p.name not in TOP_LEFT_OUT]


def found(path: Path) -> list[str]:
    """`module.function` (or `module.Class.method`) for each public function of `path` with a bare return."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mod = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    out = []
    for node in tree.body:
        defs = [(node.name, node)] if isinstance(node, ast.FunctionDef) else []
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            defs = [(f"{node.name}.{f.name}", f) for f in node.body if isinstance(f, ast.FunctionDef)]
        for name, fn in defs:
            leaf = name.rpartition(".")[2]
            if leaf.startswith("_") or leaf == "to_json" and "." in name:
                continue  # private, or a typed value's own JSON form
            if bare(fn.returns):
                out.append(f"{mod}.{name}")
    return out


def main() -> None:
    hits = [h for p in files() for h in found(p)]
    per = Counter(h.split(".")[1] if h.count(".") > 1 else "top" for h in hits)
    for pkg, n in sorted(per.items()):
        print(f"  {pkg:10s} {n:4d}")
    if "--list" in sys.argv:
        print("\n".join(hits))
    print(f"bare_dict_returns={len(hits)}")


if __name__ == "__main__":
    main()
