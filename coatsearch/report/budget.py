"""The report's size note for a joint budget: MACs and params both matched, so no 'parameter count' caveat."""

from __future__ import annotations


def joint_size_note(sized: list[dict], macs_err: list[float], ends: tuple[dict, dict]) -> str:
    """The size note when every budget-matched candidate was solved to MACs and params together."""
    p_err = [r["metrics"]["budget_params_error"].mean for r in sized]
    small, big = ends
    lo, hi = small["metrics"]["params"].mean, big["metrics"]["params"].mean
    return (
        f"Size: MACs and params are both matched (a joint budget): MACs errors {min(macs_err):+.1f}% to "
        f"{max(macs_err):+.1f}%, params errors {min(p_err):+.1f}% to {max(p_err):+.1f}%; params span {lo:.3f}M "
        f"({small['candidate']}) to {hi:.3f}M ({big['candidate']}), {hi / lo:.2f}x. As in CoAtNet, layouts are "
        "compared at similar parameter size and computational cost."
    )
