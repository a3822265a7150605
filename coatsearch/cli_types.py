"""The command line's shared argument types and default folders (coatsearch.cli and its subcommand modules)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from coatsearch.vocab import numbers
from coatsearch.vocab.bounds import WORKERS_MAX

STUDIES = Path("studies")
REPORTS = Path("reports")


class Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (no usage block) and exit status 2 (the CLI's and the benchmarks')."""

    def error(self, message: str) -> NoReturn:
        """Print `prog: error: message` on one line and exit 2."""
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def bounded(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high] (`numbers.parse_int`); the error states the range."""
    return argtype(lambda text: numbers.parse_int(text, low, high))


def bounded_real(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite number > low and <= high (`numbers.parse_real`); the error states the range."""
    return argtype(lambda text: numbers.parse_real(text, low, high))


def argtype(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """`parse` as an argparse type: its ValueError (the `numbers` wording) becomes argparse's one-line error."""

    def run(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return run


def workers(text: str) -> int | str:
    """An argparse type: `auto` or a worker count in 1..WORKERS_MAX."""
    return "auto" if text == "auto" else bounded(1, WORKERS_MAX)(text)
