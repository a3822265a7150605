"""Extend the committed calibration table (coatsearch/papers/calibration.json) with newly appended simulated
profiles, without recomputing the others: `python benchmarks/calibration_extend.py layouts-capacity 2`.

Every (profile, replicate) draws from its own seed (calibration.replicate_rng), and a replicate's verdicts merge the
claims each profile decides, so the codes of the new profiles' claims spliced into the committed codes are exactly
what a full regeneration gives; tests/lab/test_calibration.py reruns a stride through the whole path."""

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from coatsearch.papers.rule_tables import TABLE
from lab import calibration as K
from lab import simulate as Sim

NEW = sys.argv[1].split(",")


def part(args):
    case, name, idx = args
    return [K.replicate(case, K.scenario(name), i, 0, tuple(NEW)) for i in idx]


if __name__ == "__main__":
    t0 = time.time()
    data = json.loads(TABLE.read_text())
    mine = "".join(Sim.DECIDES[k] for k in NEW)
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    for name, sc in data["scenarios"].items():
        if not set(NEW) & set(K.SCENARIO_PROFILES[name]):
            continue
        for case in K.CASES:
            n = len(sc[case]["codes"])
            parts = [(case, name, range(w, n, workers)) for w in range(workers)]
            with ProcessPoolExecutor(workers) as pool:
                done = list(pool.map(part, parts))
            rows = [done[i % workers][i // workers] for i in range(n)]
            codes = [
                "".join(K.code(row)[j] if c in mine else old[j] for j, c in enumerate(K.CLAIMS))
                for old, row in zip(sc[case]["codes"], rows, strict=True)
            ]
            sc[case] = K.counted(codes)
            print(name, case, n, f"{time.time() - t0:.0f} s", flush=True)
        sc["per_claim"] = K.rates(sc["null"], sc["power"], sc["stressed"])
    data["profiles"] = K._profiles()
    data["scenario_profiles"] = {k: list(v) for k, v in K.SCENARIO_PROFILES.items()}
    TABLE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(K.summary(data))
    print(f"extended={','.join(NEW)}")
