"""coatsearch: which arrangement of convolution and attention stages is best at equal compute.

The public API (see the README's "Python API"): `load_space`, `build`, `count`, `plan`, `run`, `results`, `curves`,
`write_report`, `status`, `export`, `repair` (plain functions of coatsearch.api) and `replicate`
(coatsearch.replication, which runs through the API), imported on first use, so `import coatsearch` loads
neither torch nor optuna. No function shares its name with a module: `coatsearch.report` is the report package
(`coatsearch.report.write_report` writes the files).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coatsearch.version import __version__

__all__ = [
    "Candidate",
    "ReportPaths",
    "RunOptions",
    "RunResult",
    "Space",
    "Status",
    "__version__",
    "build",
    "count",
    "curves",
    "export",
    "load_space",
    "load_weights",
    "plan",
    "repair",
    "replicate",
    "results",
    "run",
    "status",
    "write_report",
]

if TYPE_CHECKING:
    from coatsearch.api import (
        Candidate,
        ReportPaths,
        RunResult,
        Space,
        Status,
        build,
        count,
        curves,
        export,
        load_space,
        load_weights,
        plan,
        repair,
        results,
        run,
        status,
        write_report,
    )
    from coatsearch.replication import replicate
    from coatsearch.vocab.run_options import RunOptions

# public names not in coatsearch.api (which that module imports)
_ELSEWHERE = {"replicate": "coatsearch.replication", "RunOptions": "coatsearch.vocab.run_options"}


def __getattr__(name: str) -> Any:
    """Load a public API name from coatsearch.api (or its module in _ELSEWHERE) on first access."""
    if name in __all__:
        import importlib

        return getattr(importlib.import_module(_ELSEWHERE.get(name, "coatsearch.api")), name)
    raise AttributeError(f"module 'coatsearch' has no attribute {name!r}")
