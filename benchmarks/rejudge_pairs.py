"""How committed reports made under an earlier rule stand under the current one, as far as summary.json can tell:
`python benchmarks/rejudge_pairs.py [reports]`.

A summary holds, per claim and measure, every judged pair's per-seed differences and its pooled se and df, and the
earlier looks it counted. This re-tests each pair under stats.PAIR_NOISE_RULE (the pair's own sd where it exceeds
the pooled one), re-runs the claim's Holm family (verdicts.judge), takes the claim's p (looks.claim_p) and
Holm-adjusts it over the looks the report counted that spend test α (looks.LOOKS_RULE; their p as recorded, under
the rule they were read under). It prints, per claim the
report judged firm or unresolved on a measure, the committed verdict, the deciding measure's key relations as
re-tested, and whether "supported" still stands. The regime guards are not re-read (they do not depend on either
rule), and claim (f)'s gap contrast already uses its own sd (n − 1 df), so only its looks change. A report is
regenerated from its study by `coatsearch report`; this script writes nothing.
"""

import dataclasses
import json
import math
import sys
from pathlib import Path

from coatsearch.analysis import constants as CS
from coatsearch.analysis import stats as S
from coatsearch.papers import looks as L
from coatsearch.papers import verdicts as V
from coatsearch.papers.claim_results import ClaimVerdict


def retest(pair):
    """The pair re-tested under PAIR_NOISE_RULE from its per-seed differences and its pooled se and df."""
    t = pair.test
    if t.se is None or t.df is None or t.n < 2:
        return pair
    pooled = S.Noise(t.se * math.sqrt(t.n), t.df, 0)  # a report of this rule: its own sd again, the same test
    per = dict(t.per_seed)
    return dataclasses.replace(pair, test=S.paired(per, dict.fromkeys(per, 0.0), 1.0, pooled, CS.ALPHA))


def main(reports: Path) -> None:
    for path in sorted(reports.glob("*/summary.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        looks = {c["claim"]: c for c in (data.get("looks") or {}).get("claims") or []}
        for raw in data.get("claims") or []:
            claim = ClaimVerdict.from_json(raw)
            if not claim.evidence or not claim.evidence[0].pairs:
                continue
            ev = claim.evidence[0]
            pairs = V.judge([retest(p) for p in ev.pairs])
            new = dataclasses.replace(claim, evidence=(dataclasses.replace(ev, pairs=pairs), *claim.evidence[1:]))
            p = L.claim_p(new)
            row = looks.get(claim.id) or {}
            spending = [x["p"] for x in row.get("earlier") or [] if x.get("spends")]
            holm = S.holm([p, *spending])[0] if p is not None and row.get("spends") else p
            keys = [q for q in pairs if q.key]
            holds = all(q.status == "holds" for q in keys) and not any(q.status == "violated" for q in pairs)
            stands = claim.verdict != "supported" or (holds and holm is not None and holm < CS.VERDICT_ALPHA)
            own = sum(q.test.own_noise for q in pairs)
            print(f"{path.parent.name} ({claim.id}) {claim.verdict}: {len(keys)} key relation(s), {own} on own sd; "
                  f"claim p {p if p is None else f'{p:.3g}'}, looks-adjusted {holm if holm is None else f'{holm:.3g}'}"
                  f" over {1 + len(spending) if row.get('spends') else 0} spending look(s); "
                  + ("stands" if stands else "would not be supported under the current rule"))  # fmt: skip


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "reports"))
