"""The package's import graph, read with `ast`: import circles, the longest import chain, stage order, sizes.

Edges are every import of one coatsearch module by another, at the top level, inside functions and inside `if
TYPE_CHECKING:` blocks (a type hint is a dependency too); `from pkg import sub` counts as importing `pkg.sub`
alone when `sub` is a module. A package's `__init__` importing its own submodules is not an edge (a package
re-exporting what it contains). A circle is a strongly connected set of two or more modules (Tarjan, iterative);
the longest chain is the longest path over the graph with each circle collapsed to one node. "Up a stage": a
module of one stage importing a module of a later stage, in the order of STAGES (tests/repo/test_imports.py).

    python benchmarks/import_graph.py [--runtime-only]

Prints the circles, the longest chain, lines and files per package and the edges up a stage; the last line is
`import_circles=<count>`.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "coatsearch"
# the pipeline's stages, first to last: a module may import its own stage and earlier ones only
STAGES = ("errors", "vocab", "models", "budget", "training", "scores", "space", "storage", "runner", "analysis",
          "papers", "planner", "report", "answer", "faces")  # fmt: skip
BASE = {
    "coatsearch.errors": "errors",
    "coatsearch.version": "errors",
    "coatsearch.fsafe": "errors",
}  # top-level modules below the faces


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.AST) -> bool:
    """Whether `node` is an `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`) block."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST, runtime_only: bool) -> list[ast.AST]:
    """Every node of `tree`; with `runtime_only`, none inside `if TYPE_CHECKING:` (their `else:` runs, so is kept)."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(node.orelse if runtime_only and _type_checking(node) else list(ast.iter_child_nodes(node)))
    return out


def imports_in(source: str, package: str, mods: set[str], runtime_only: bool = True) -> set[str]:
    """The modules `source` imports (top level or inside functions), relative imports resolved."""
    out: set[str] = set()
    for node in _nodes(ast.parse(source), runtime_only):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            subs = {f"{base}.{a.name}" for a in node.names}
            out |= subs if subs <= mods else {base, *subs}
    return out


def graph(runtime_only: bool = True) -> dict[str, set[str]]:
    """Module -> the coatsearch modules and third-party roots it imports."""
    mods = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    out = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        raw = imports_in(path.read_text(encoding="utf-8"), package, set(mods), runtime_only)
        own = path.name == "__init__.py"
        internal = {m for m in raw if m in mods and m != name and not (own and m.startswith(name + "."))}
        out[name] = internal | {m.split(".")[0] for m in raw if not m.startswith("coatsearch")}
    return out


def internal(g: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: {d for d in deps if d in g} for m, deps in g.items()}


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of two or more modules (Tarjan's algorithm, iterative), each sorted."""
    edges, index, low, stack, on, out = internal(g), {}, {}, [], set(), []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root), on.add(root)
        while work:
            node, kids = work[-1]
            for kid in kids:
                if kid not in index:
                    index[kid] = low[kid] = len(index)
                    stack.append(kid), on.add(kid)
                    work.append((kid, iter(sorted(edges[kid]))))
                    break
                if kid in on:
                    low[node] = min(low[node], index[kid])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        part.append(m)
                        if m == node:
                            break
                    if len(part) > 1:
                        out.append(sorted(part))
    return sorted(out)


def longest_chain(g: dict[str, set[str]]) -> list[str]:
    """The longest import chain, each circle counted as one node (named by its first module)."""
    edges = internal(g)
    rep = {m: part[0] for part in circles(g) for m in part}
    dag: dict[str, set[str]] = {}
    for m, deps in edges.items():
        dag.setdefault(rep.get(m, m), set()).update(rep.get(d, d) for d in deps if rep.get(d, d) != rep.get(m, m))
    best: dict[str, list[str]] = {}

    def chain(m: str) -> list[str]:
        if m not in best:
            tails = [chain(d) for d in sorted(dag.get(m, ()))]
            best[m] = [m, *max(tails, key=len, default=[])]
        return best[m]

    for m in sorted(dag):  # the depth is small (tens), so recursion is safe
        chain(m)
    return max(best.values(), key=len, default=[])


def stage_of(module: str) -> str:
    """A module's stage: its subpackage under coatsearch; a top-level module is a face (api, cli, ...) or BASE."""
    parts = module.split(".")
    if module in BASE:
        return BASE[module]
    return parts[1] if len(parts) > 2 or (PACKAGE / parts[-1] / "__init__.py").exists() else "faces"


def up_a_stage(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Edges from a module to a module of a later stage (or a stage STAGES does not name)."""
    order = {s: i for i, s in enumerate(STAGES)}
    bad = []
    for m, deps in internal(g).items():
        for d in sorted(deps):
            a, b = order.get(stage_of(m), -1), order.get(stage_of(d), len(STAGES))
            if b > a:
                bad.append((m, d))
    return sorted(bad)


def sizes() -> dict[str, tuple[int, int]]:
    """Per stage (subpackage, or 'faces' for top-level modules): (files, lines)."""
    files: Counter = Counter()
    lines: Counter = Counter()
    for p in PACKAGE.rglob("*.py"):
        stage = stage_of(module_name(p))
        files[stage] += 1
        lines[stage] += len(p.read_text(encoding="utf-8").splitlines())
    return {s: (files[s], lines[s]) for s in sorted(files, key=lambda s: (STAGES + (s,)).index(s))}


def main() -> None:
    from coatsearch.cli_types import Parser  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.split("\n")[0])
    ap.add_argument("--runtime-only", action="store_true", help="leave out imports in `if TYPE_CHECKING:` blocks")
    args = ap.parse_args()
    g = graph(runtime_only=args.runtime_only)
    found = circles(g)
    for part in found:
        print("circle: " + " <-> ".join(part))
    chain = longest_chain(g)
    print(f"longest chain ({len(chain)} modules): " + " -> ".join(chain))
    for stage, (n, lines) in sizes().items():
        print(f"  {stage:10s} {n:3d} files {lines:6d} lines")
    bad = up_a_stage(g)
    print(f"imports up a stage: {len(bad)}" + "".join(f"\n  {m} -> {d}" for m, d in bad[:20]))
    print(f"modules {len(g)}, top-level modules {sum(m.count('.') == 1 for m in g)}")
    print(f"import_circles={len(found)}")


if __name__ == "__main__":
    main()
