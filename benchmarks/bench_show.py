"""Seconds to expand, count and match every candidate of spaces/paper_layouts.yaml (target ≤ 10 s)."""

import sys
import time
from pathlib import Path

from coatsearch.budget.prepare import prepare_all
from coatsearch.space.objects import load_space

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else SPACE
    start = time.perf_counter()
    prepared = prepare_all(load_space(path))
    seconds = time.perf_counter() - start
    for p in prepared:
        status = "ok" if p.ok else f"NOT MATCHED ({p.reason})"
        print(f"{p.name:10s} {p.macs / 1e6:8.2f}M MACs  {p.params / 1e6:6.2f}M params  {status}")
    print(f"candidates={len(prepared)}")
    print(f"seconds={seconds:.2f}")


if __name__ == "__main__":
    main()
