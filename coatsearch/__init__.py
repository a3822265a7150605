"""coatsearch: which arrangement of convolution and attention stages is best at equal compute.

The public API (see the README's "Python API"): `load_space`, `build`, `count`, `plan`, `run`, `results`,
`report`, `status`, `export`, `repair`. They are imported on first use, so `import coatsearch` loads neither torch
nor optuna. `plan` is the module coatsearch/plan.py, which calls `coatsearch.api.plan` when called.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Candidate",
    "ReportPaths",
    "RunResult",
    "Space",
    "Status",
    "__version__",
    "build",
    "count",
    "export",
    "load_space",
    "plan",
    "repair",
    "report",
    "results",
    "run",
    "status",
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
        export,
        load_space,
        plan,
        repair,
        report,
        results,
        run,
        status,
    )


def __getattr__(name: str) -> Any:
    """Load a public API name from coatsearch.api on first access."""
    if name in __all__:
        from coatsearch import api

        return getattr(api, name)
    raise AttributeError(f"module 'coatsearch' has no attribute {name!r}")


class _Package(types.ModuleType):
    """This package's module type: `coatsearch.report` stays the API function once the report subpackage loads.

    Importing `coatsearch.report.*` binds the subpackage as an attribute of `coatsearch`; the setter ignores
    that binding, so the subpackage is reached by its full name (`from coatsearch.report import write_report`).
    """

    @property
    def report(self) -> Any:
        """`coatsearch.api.report`."""
        from coatsearch.api import report

        return report

    @report.setter
    def report(self, value: Any) -> None:
        pass

    @property
    def plan(self) -> Any:
        """The module coatsearch/plan.py, callable as `coatsearch.api.plan` (so `from coatsearch import plan` works)."""
        import importlib

        return importlib.import_module("coatsearch.plan")

    @plan.setter
    def plan(self, module: Any) -> None:
        module.__class__ = _CallableModule  # bound when coatsearch.plan is imported: make it callable


class _CallableModule(types.ModuleType):
    """coatsearch/plan.py's module type: calling it runs the planner, `coatsearch.api.plan`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """`coatsearch.api.plan(*args, **kwargs)`."""
        from coatsearch.api import plan

        return plan(*args, **kwargs)


sys.modules[__name__].__class__ = _Package
