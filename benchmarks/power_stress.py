"""How much of a claim's calibrated power the simulated stress costs: its power studies with and without it.

The calibration (lab.calibration) runs each power study twice on the same seeds: at the committed
studies' failure rate (no stress: its `power`) and under the simulated stress (2% of runs at chance, a missing
candidate in 10% of studies, a key candidate of (a) that never fits in 5%: its `power_stressed`). This reruns the
first `--replicates` of them for one profile and scenario, both ways, and prints the verdict counts of each. The
last line is `power_unstressed=<fraction supported>`.

    python benchmarks/power_stress.py [--profile stems] [--claim f] [--scenario "in regime"] [--replicates 100]
"""

from __future__ import annotations

import collections

from lab import calibration as Cal
from lab import simulate as Sim


def counts(profile: str, claim: str, scenario: str, replicates: int, stress: bool) -> collections.Counter:
    """Verdict counts of `claim` over the profile's first `replicates` power studies (calibration's seeds)."""
    sc, prof = Cal.scenario(scenario), Sim.profile(profile)
    setting = Cal.setting("stressed" if stress else "power", sc)
    out: collections.Counter = collections.Counter()
    for i in range(replicates):
        rng = Cal.replicate_rng("power", sc, profile, i)  # the committed table's seeds
        out[Cal.verdicts(prof.record, Sim.study(rng, prof, setting)).get(claim, "absent")] += 1
    return out


def main() -> None:
    from coatsearch.cli_types import Parser, bounded  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="stems", choices=list(Sim.PROFILES))
    ap.add_argument("--claim", default="f")
    ap.add_argument("--scenario", default="in regime", choices=[s.name for s in Sim.SCENARIOS])
    ap.add_argument("--replicates", type=bounded(1, 1_000_000), default=100)
    args = ap.parse_args()
    found = {}
    for stress in (True, False):
        found[stress] = counts(args.profile, args.claim, args.scenario, args.replicates, stress)
        print(f"{'with' if stress else 'without'} stress: {dict(sorted(found[stress].items()))}")
    print(f"power_unstressed={found[False]['supported'] / args.replicates:.2f}")


if __name__ == "__main__":
    main()
