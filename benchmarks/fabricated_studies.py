"""The tests' fabricated records written as four real journals, for benchmarks/report_identity.sh.

fab: claims (a)-(e)'s layouts, 3 seeds, noisy, with a failed and an interrupted trial; vit: ViT_P and ViT_C with
AdamW and SGD over sampled lrs (claim (f)); dense: claim (a)'s layouts and the linear baseline with step curves read at
matched loss; meas: three layouts' step curves, one run censored.

    PYTHONPATH=. python benchmarks/fabricated_studies.py FOLDER

The last line is `studies=<count>`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.analysis import test_readings as readings
from tests.analysis.test_measures import RECORDS
from tests.report_records import AGREE, SPACE, layout_records, make_study, noisy, vit_records


def main(folder: Path) -> int:
    """Write the four studies under `folder`; how many."""
    vit_space = {**SPACE, "candidates": ["ViT_P-adamw", "ViT_P-sgd", "ViT_C-adamw", "ViT_C-sgd"]}
    make_study(folder, "fab", SPACE, layout_records(noisy(AGREE)))
    make_study(folder, "vit", vit_space, vit_records(n=4))
    make_study(folder, "dense", readings.SPACE, readings._study(readings.DENSE))
    make_study(folder, "meas", {**SPACE, "candidates": ["C-C-C-C", "C-T-T-T", "ViT_REL"]}, RECORDS)
    return 4


if __name__ == "__main__":
    print(f"studies={main(Path(sys.argv[1]))}")
