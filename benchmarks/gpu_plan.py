"""Predicted GPU-hours of a space's profile: its runs counted by the planner, priced at a peak fraction.

Every candidate's trial goes through the real score code with the planner's recorder (no training); each run's
trained and evaluated images x the model's MACs give FLOPs (coatsearch.planner.gpu), divided by the H200's
dense bf16 peak x FRACTION. The fraction is an assumption until a GPU measures it: bench_throughput.py --device
cuda prints it as `fraction_of_peak=`, a fraction of the same stated peak. Prints per candidate one
trial's runs and GPU seconds, and as its last line `gpu_hours=<the study, trials one after another>`.

    python benchmarks/gpu_plan.py spaces/paper_layouts.yaml --profile full --fraction 0.002
"""

from __future__ import annotations

from coatsearch import api
from coatsearch.planner import gpu


def main() -> None:
    """Print the count and the predicted GPU-hours."""
    from coatsearch.cli_types import Parser, bounded_real  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("space")
    ap.add_argument("--profile", default="full")
    ap.add_argument(
        "--fraction", type=bounded_real(0.0, 1.0), default=0.002, help="share of the bf16 peak reached (assumed)"
    )
    ap.add_argument(
        "--peak", type=bounded_real(0.0, 1e20), default=gpu.H200_BF16_PEAK, help="FLOP/s (default: H200 dense bf16)"
    )
    args = ap.parse_args()
    plan = gpu.gpu_plan(api.load_space(args.space, args.profile), args.fraction, args.peak)
    rate = f"peak {plan.peak / 1e12:.0f} TFLOP/s x {plan.fraction:g} = {plan.peak * plan.fraction / 1e12:.2f} TFLOP/s"
    print(f"{args.space} profile {args.profile}: {plan.seeds} seed(s), {rate}; left out: {', '.join(gpu.UNCOUNTED)}")
    for name, runs in plan.runs.items():
        what = "; ".join(f"{r.phase} {r.steps} steps x {r.batch}" for r in runs)
        print(f"  {name}: {plan.macs[name] / 1e6:.2f}M MACs, {plan.trial_s[name] / 60:.1f} GPU-min a trial ({what})")
    print(f"gpu_hours={plan.gpu_hours:.2f}")


if __name__ == "__main__":
    main()
