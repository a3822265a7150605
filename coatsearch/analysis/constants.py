"""The statistical constants every study table shares, and the score names its sections are named after.

The papers' claims and their own constants are the claims plug-in's data (papers.claims)."""

from __future__ import annotations

from coatsearch.vocab.specs import BASELINES as _BASELINE_ARCHS

# Decision rule constants (printed in the report).
ALPHA = 0.05  # level of the printed intervals (95% CI; 90% for equivalence statements)
VERDICT_ALPHA = 0.03  # family-wise error rate of a claim's verdict (Holm). A claim decided by one exact two-sided
# test fires α of its null studies (claim (c): 4.1% of 1,000 at 0.04, 95% upper bound 5.3%); 0.03 keeps every claim's
# calibrated false-verdict rate's 95% upper bound over 1,000 null studies ≤ 5% (lab.calibration)
POWER = 0.80  # power at which the smallest detectable difference is stated
CHANCE_POINTS = 2.0  # a run ending within this many points of chance accuracy "failed to train"
PLATEAU_POINTS = 1.0  # a run whose eval accuracy rises more than this over the last third of its curve: not converged
BASELINES = tuple(_BASELINE_ARCHS)  # regime baselines, the linear one first: its accuracy is the regime's floor

# Scores whose summary tables and figures the report names after them (names of the score registry).
LENGTH_SCORE = "length"  # the score whose schedule lengths are read against LENGTH_PAPER (summary "length" table)
SPEED_SCORE = "speed"  # measured throughput: the Pareto front's other axis (MACs-matched is not speed-matched)
ROBUSTNESS_SCORE = "robustness"  # eval accuracy against corruption severity (its per-run curve of that name)
