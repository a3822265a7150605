"""The fair linear floor on Fashion-MNIST: validation-chosen logistic regression per training-set size.

For each size (images per class), the training subset, the validation images and the test images are drawn as a
study draws them (training.subsets: subset by seed, the study's one validation draw, then its test images), and
training.floor's L2 path of logistic regressions is fitted; the line per size gives every C's validation and test
accuracy and the validation-chosen floor. The recipe-trained linear runs of the earlier reports (64.8% on 1,000
images, 67.2% on 2,500) are the floor this replaces. The last line is `floor_acc=<test accuracy of the
validation-chosen floor at the largest size, %>`.

    python benchmarks/bench_floor.py [--per-class 100,250,600] [--seed 0] [--eval-size 1000] [--test-size 1000]
"""

from __future__ import annotations

import time

from coatsearch.training import data as D
from coatsearch.training import subsets
from coatsearch.training.floor import linear_floor
from coatsearch.vocab.numbers import parse_int
from coatsearch.vocab.specs import DataSpec


def main() -> None:
    from coatsearch.cli_types import Parser  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", default="100,250,600", help="training images per class, comma-separated")
    ap.add_argument("--seed", default="0", help="the subset's seed (a study's trial seed)")
    ap.add_argument("--eval-size", default="1000", help="validation images (data.eval_size)")
    ap.add_argument("--test-size", default="1000", help="test images (data.test_size)")
    args = ap.parse_args()

    def number(flag: str, text: str, low: int, high: int) -> int:
        try:
            return parse_int(text, low, high)
        except ValueError as e:
            ap.error(f"argument {flag}: {e}")

    sizes = [number("--per-class", v, 1, 6000) for v in args.per_class.split(",")]
    seed = number("--seed", args.seed, 0, 10**9)
    eval_size = number("--eval-size", args.eval_size, 1, 5000)
    test_size = number("--test-size", args.test_size, 1, 9000)
    spec = DataSpec(dataset="fashion_mnist", eval_size=eval_size, test_size=test_size)
    pool, test = D.load(spec, 32, 1)
    validation, held = subsets.split(test, spec, None, seed=seed)
    best = None
    for per_class in sizes:
        train = subsets.subset(pool, per_class, None, seed=seed)
        start = time.perf_counter()
        best, path = linear_floor(train, validation, held)
        seconds = time.perf_counter() - start
        each = ", ".join(f"{f.choice} {100 * f.val_acc:.1f}/{100 * f.test_acc:.1f}" for f in path)
        print(f"{len(train)} images ({len(validation)} validation, {len(held)} test): val/test {each}", flush=True)
        print(f"  floor {best.choice}: validation {100 * best.val_acc:.1f}%, test {100 * best.test_acc:.1f}% "
              f"({seconds:.0f} s)", flush=True)  # fmt: skip
    assert best is not None
    print(f"floor_acc={100 * best.test_acc:.2f}")


if __name__ == "__main__":
    main()
