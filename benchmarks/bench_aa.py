"""A/A calibration of the verdict rule through the real trainer: firm verdicts on studies with nothing to find.

Each A/A study stands ONE architecture under the names a claim reads, trains it for real with `python -m coatsearch
run` and judges it with `python -m coatsearch report` (the real trainer, curves, stop rules, regime guards and
verdict code), then reads each claim's verdict from the report's summary.json. Kohavi et al.'s A/A test: the same
treatment on every arm, so every firm verdict ("supported" / "not supported") is a false one, and the firm rate
should sit at or below the rule's α (analysis.constants.VERDICT_ALPHA; the target is ≤ 5%).

One kind of A/A study, a generated space file (`space`), judges claims (b), (d), (e) and (f) at once, so that
they share the regime baselines (linear, cnn) trained on the same seeds, as the shipped studies do:
- one small C-C-C-C (16x16 Fashion-MNIST, four one-block MBConv stages) under the names of
  spaces/paper_layouts.yaml and spaces/vit_stems.yaml. C-C-C-C, C-C-C-T, C-C-T-T, C-T-T-T and ViT_REL run capacity
  (claim (b)); V0, V1, V2 (claim (d); V0 by name, since the C-C-T-T stand-in needs a C-C-T-T layout), C-C-T-T and
  C-C-T-T-norel (claim (e)) run accuracy, as paper_layouts runs them. The claims find their models by name
  (report.verdicts.resolve, rel_pairs).
- claim (f) finds its cells by the recorded model label, so the four fixed-recipe names of vit_stems are the same
  network recorded as ViT_P or ViT_C by name (candidate `label`), AdamW under the -adamw names and vit_stems' fixed
  SGD recipe under the -sgd names: the null is "the label makes no difference to the optimizer gap". The network
  is the CNN, not a ViT: in the pilot a ViT this small trained with SGD read 74.1-74.9% against the linear
  baseline's 77.8%, which puts every (f) study out of regime.
- claim (a) is not run (UNTESTABLE_A): in the pilot its matched-loss runs were out of regime.

A true null for a test paired by seed. The report pairs runs by seed and assumes value = candidate + seed +
independent error (analysis/stats.py): a seed fixes the data subset and batch order that every candidate shares.
The same architecture on the same seed would train bit-identically (zero differences, no noise, no test), so each
name initializes from its own seed (candidate `init_offset`: trial seed + 10,000 x (name index + 1)) while the
data subset and batch order still follow the trial seed. Names then differ by initialization noise only: the
shared data part cancels in the pairing, as it does between real candidates, and the expected value is the same.
Replicates are independent: study i runs seeds SEEDS*i .. SEEDS*i + SEEDS - 1 (its own subsets, batch orders and
inits); the validation images are one draw, and each seed samples its own test images (`test_sampling: per_seed`).

A study out of regime, underpowered, unresolved or not tested counts as not firm; the out-of-regime share is printed
beside each rate (an A/A rate over studies mostly out of regime says little). Rates carry their exact (Clopper-Pearson)
95% interval (scipy.stats.binomtest). Results go to OUT/aa.json, and with --write to coatsearch/papers/aa.json,
which each report's calibration line reads. Studies run `--workers` at a time, each in one process with one
thread; every subprocess has a timeout (`--timeout`, 900 s: a loaded machine needs more), and a study that
timed out resumes its trials when the same `--out` runs it again. The last line is
`aa_firm_max=<highest firm rate over the families>`.

--resume TABLE extends an earlier table (the committed one, say) with studies numbered after its own, so that
every study has fresh seeds: the counts of a union of independent studies are the sums of their counts, and the
rates and intervals are recomputed from the summed counts. The earlier table must have the same rule version, α
and seeds per study. The table keeps every state it stood in before (`history`): a report made under one cites
that state, and tests/report/test_reproducible.py checks each committed report's A/A column against them.

    python benchmarks/bench_aa.py [--studies 40] [--workers 2] [--out DIR] [--quick] [--write] [--plan]
                                  [--resume TABLE] [--timeout S]
    python benchmarks/bench_aa.py --pvalues --out DIR   # (f)'s gap-contrast p values of DIR's studies: uniform?
"""

from __future__ import annotations

import concurrent.futures as cf
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from scipy import stats as st

ROOT = Path(__file__).resolve().parent.parent
SEEDS = 3  # seeds per A/A study (the report needs >= 2 paired seeds to test)
OFFSET = 10_000  # name i initializes from trial seed + OFFSET x (i + 1)
TIMEOUT_S = 900  # one subprocess (a study's run, or its report)
CLAIMS = ("b", "d", "e", "f")  # the claims an A/A study judges
FIRM = ("supported", "not supported")
GEN_NAMES = ("C-C-C-C", "C-C-C-T", "C-C-T-T", "C-T-T-T", "ViT_REL")  # claims (a), (b)
ACC_NAMES = ("V0", "V1", "V2", "C-C-T-T-norel")  # claims (d), (e); C-C-T-T also runs accuracy (claim (e))
STEM_NAMES = (("ViT_P-adamw-fixed", "ViT_P"), ("ViT_P-sgd-fixed", "ViT_P"), ("ViT_C-adamw-fixed", "ViT_C"),
              ("ViT_C-sgd-fixed", "ViT_C"))  # fmt: skip
SGD = {"optimizer": "sgd", "lr": 0.05, "weight_decay": 3.0e-5}  # vit_stems' fixed SGD recipe
UNTESTABLE_A = (
    "A/A pilot at this size (200 images, 16x16, fit to 0.065 nats): the linear baseline never fit 0.1 nats "
    "and every name read below its 74.7% at the end, so claim (a) was out of regime: not run"
)
# validation 500 images; each seed samples its own 1,000 test images (data.test_sampling), as a registered study can
DATA = {"dataset": "fashion_mnist", "eval_size": 500, "test_size": 1000, "test_sampling": "per_seed"}
COMMON = {"data": DATA, "constraints": {"conv_before_attention": False}}
INPUT = {"image_size": 16, "channels": 1, "classes": 10}


def seeds_of(index: int) -> list[int]:
    """Study `index`'s seeds: its own, so that replicates share no subset, batch order or initialization."""
    return list(range(SEEDS * index, SEEDS * index + SEEDS))


@dataclass(frozen=True)
class Size:
    """How much each A/A name trains: images per class and steps, for the accuracy and the capacity runs."""

    per_class: int = 100  # accuracy runs' training images per class
    steps: int = 800  # accuracy runs' steps
    capacity_steps: int = 100  # capacity runs' steps (on per_class images per class too)


def space(index: int, size: Size = Size()) -> dict:
    """A/A study `index`: one tiny C-C-C-C under the names claims (b), (d), (e) and (f) read."""
    cap = {"capacity": {}, "accuracy": None}
    acc = {"capacity": None, "accuracy": {}}
    names = [(n, cap) for n in GEN_NAMES] + [(n, acc) for n in ACC_NAMES]
    cands = [{"name": n, "init_offset": OFFSET * (i + 1), "scores": s} for i, (n, s) in enumerate(names)]
    cands[GEN_NAMES.index("C-C-T-T")]["scores"] = {"capacity": {}, "accuracy": {}}
    for i, (name, label) in enumerate(STEM_NAMES, start=len(cands)):
        cand = {"name": name, "label": label, "init_offset": OFFSET * (i + 1), "scores": acc}
        cands.append({**cand, "train": SGD} if "-sgd" in name else cand)
    return {
        "name": f"aa_{index}",
        "description": "A/A: one C-C-C-C under the names of claims (b), (d), (e), (f) (benchmarks/bench_aa.py)",
        "input": INPUT,
        "model": {
            "arch": "coatnet",
            "stem": {"kind": "conv", "layers": 1, "width": 16, "stride": 2},
            "layout": "C-C-C-C",
            "depths": [1, 1, 1, 1],
            "widths": [24, 32, 48, 64],  # pilot at [16, 16, 32, 32]: 79.7-81.4% against the linear 80.0%
            "strides": [1, 2, 1, 1],
            "block": {"head_size": 8, "expand_ratio": 2},
        },  # fmt: skip
        "candidates": cands,
        "train": {
            "optimizer": "adamw",
            "lr": 3.0e-3,
            "weight_decay": 0.05,
            "batch_size": 32,
            "warmup_epochs": 1,
            "label_smoothing": 0.1,
            "compile": False,
        },  # fmt: skip
        "scores": {
            "capacity": {
                "per_class": size.per_class,
                "max_steps": size.capacity_steps,
                "eval_every": max(1, size.capacity_steps // 4),
            },
            "accuracy": {"per_class": size.per_class, "max_steps": size.steps, "eval_every": max(1, size.steps // 8)},
        },
        "untestable": {"a": UNTESTABLE_A},
        "study": {"seeds": seeds_of(index), "objective": "accuracy.eval_acc"},
        **COMMON,
    }


def _cli(args: list[str], env: dict, log: Path, timeout_s: float = TIMEOUT_S) -> None:
    """One `python -m coatsearch` call with a timeout; its output goes to `log`; raises on a non-zero exit."""
    with log.open("a", encoding="utf-8") as out:
        subprocess.run([sys.executable, "-m", "coatsearch", *args], cwd=ROOT, env=env, stdout=out,
                       stderr=subprocess.STDOUT, timeout=timeout_s, check=True)  # fmt: skip


def one_study(index: int, out: Path, small: bool = False, threads: int = 1, timeout_s: float = TIMEOUT_S,
              size: Size = Size()) -> dict:  # fmt: skip
    """Generate, run and report A/A study `index`; the verdict and why of each claim, and wall seconds."""
    name, start = f"aa_{index}", time.perf_counter()
    path = out / "spaces" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = space(index, size)
    path.write_text(yaml.safe_dump(quick(text) if small else text, sort_keys=False), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    dirs = ["--studies-dir", str(out / "studies"), "--reports-dir", str(out / "reports")]
    log = out / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    row: dict = {"study": name, "index": index, "claims": {}}
    try:
        _cli(["run", str(path), "--study", name, "--workers", "1", "--device", "cpu", "--no-plan", "--no-report",
              "--quiet", *dirs], env, log, timeout_s)  # fmt: skip
        _cli(["report", name, *dirs], env, log, timeout_s)
        summary = json.loads((out / "reports" / name / "summary.json").read_text(encoding="utf-8"))
        row["claims"] = {c["id"]: {"verdict": c["verdict"], "why": c.get("why", "")} for c in summary["claims"]}
    except (subprocess.SubprocessError, OSError, ValueError, KeyError) as exc:
        row["error"] = f"{type(exc).__name__}: {exc} (log: {log})"
    row["wall_s"] = round(time.perf_counter() - start, 1)
    return row


COUNTS = ("n", "firm", "supported", "out_of_regime", "no_verdict")  # additive over independent studies


def tally(rows: list[dict], claim: str) -> dict:
    """One family's counts over the studies that judge it: firm, out of regime, other; the firm rate and its CI."""
    verdicts = [r["claims"].get(claim) for r in rows]
    return rates({
        "n": len(verdicts),
        "firm": sum(v is not None and v["verdict"] in FIRM for v in verdicts),
        "supported": sum(v is not None and v["verdict"] == FIRM[0] for v in verdicts),
        "out_of_regime": sum(v is not None and v["why"].startswith("out of regime") for v in verdicts),
        "no_verdict": sum(v is None for v in verdicts),
    })  # fmt: skip


def rates(counts: dict) -> dict:
    """A family's counts with its firm rate, exact (Clopper-Pearson) 95% interval and out-of-regime rate."""
    n, firm, oor = counts["n"], counts["firm"], counts["out_of_regime"]
    ci = st.binomtest(firm, n).proportion_ci(0.95, method="exact") if n else None
    return {**{k: counts[k] for k in COUNTS}, "rate": firm / n if n else None,
            "ci95": [ci.low, ci.high] if ci else None, "out_of_regime_rate": oor / n if n else None}  # fmt: skip


def merged(earlier: dict, later: dict) -> dict:
    """Two tables of independent A/A studies as one: counts summed, rates and intervals from the sums; the earlier
    table's states kept in `history`, so that a report made under one of them can still be checked."""
    from coatsearch.papers import rule_tables

    fams = {c: rates({k: earlier["families"][c][k] + later["families"][c][k] for k in COUNTS}) for c in CLAIMS}
    studies = earlier["studies"] + later["studies"]
    spent = earlier["study_s"] * earlier["studies"] + later["study_s"] * later["studies"]
    return {**later, "studies": studies, "failed_studies": earlier["failed_studies"] + later["failed_studies"],
            "wall_s": round(earlier["wall_s"] + later["wall_s"], 1), "study_s": round(spent / max(1, studies), 1),
            "commands": [*earlier.get("commands", [earlier["command"]]), later["command"]], "families": fams,
            "verdicts": earlier["verdicts"] + later["verdicts"], "errors": earlier["errors"] + later["errors"],
            "history": [s.to_json() for s in rule_tables.aa_states(earlier)]}  # fmt: skip


def earlier_table(path: Path, size: Size = Size()) -> dict:
    """The table --resume extends, read with the bounded reader and checked against the A/A table's schema; exits
    in one line when it cannot be read, is damaged, or was made under another rule, α or seeds per study."""
    from coatsearch import fsafe
    from coatsearch.analysis import constants as CS
    from coatsearch.errors import UserError
    from coatsearch.papers import aa_table, rule_tables

    try:
        old = fsafe.read_json(path, named=True)
        aa_table.check(old, path)
    except UserError as exc:
        sys.exit(f"--resume: {exc}")
    try:
        theirs = old.get("size", vars(Size()))  # a table made before sizes were recorded: the first size
        same = (old["rule_version"], old["alpha"], old["seeds_per_study"], theirs) == (
            rule_tables.RULE_VERSION, CS.VERDICT_ALPHA, SEEDS, vars(size))  # fmt: skip
        if not same or set(old["families"]) != set(CLAIMS):
            allowed = (f"rule {rule_tables.RULE_VERSION}, α {CS.VERDICT_ALPHA}, {SEEDS} seeds, size {vars(size)}, "
                       f"claims {list(CLAIMS)}")  # fmt: skip
            sys.exit(f"--resume: {path} was made under rule {old['rule_version']}, α {old['alpha']}, "
                     f"{old['seeds_per_study']} seeds per study, size {theirs}, claims {sorted(old['families'])} "
                     f"(allowed: "
                     f"{allowed})")  # fmt: skip
        return old
    except (OSError, ValueError, KeyError, TypeError) as exc:
        sys.exit(f"--resume: {path}: not an A/A table ({type(exc).__name__}: {exc})")


def quick(space: dict) -> dict:
    """The smoke-test form of a space: runs of 60 steps (no loss target), capacity on 200 images, 200 eval images."""
    scores = {}
    for key, sec in space["scores"].items():
        sec = {**sec, "max_steps": 60, "eval_every": 20}
        sec.pop("stop_at_loss", None)
        scores[key] = {**sec, "per_class": 20} if key == "capacity" else sec
    return {**space, "scores": scores, "data": {**space["data"], "eval_size": 200}}


def plan(out: Path, small: bool, size: Size = Size()) -> str:
    """`coatsearch plan` on A/A study 0 (its pilot times a trial of each candidate on this machine)."""
    path = out / "spaces" / "plan_aa.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = space(0, size)
    path.write_text(yaml.safe_dump(quick(text) if small else text, sort_keys=False), encoding="utf-8")
    args = [sys.executable, "-m", "coatsearch", "plan", str(path), "--workers", "1", "--device", "cpu",
            "--studies-dir", str(out / "plan-studies"), "--reports-dir", str(out / "plan-reports")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    res = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    return res.stdout + res.stderr


def table(rows: list[dict], wall_s: float, command: str, size: Size = Size()) -> dict:
    """The A/A table: per claim family its counts, firm rate and exact 95% interval; settings and wall time."""
    from coatsearch.analysis import constants as CS
    from coatsearch.papers import rule_tables

    ok = [r for r in rows if "error" not in r]
    return {
        "rule_version": rule_tables.RULE_VERSION,
        "alpha": CS.VERDICT_ALPHA,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "seeds_per_study": SEEDS,
        "size": vars(size),  # what each name trains on: a resumed table must match it
        "studies": len(rows),
        "failed_studies": len(rows) - len(ok),
        "wall_s": round(wall_s, 1),
        "study_s": round(sum(r["wall_s"] for r in rows) / max(1, len(rows)), 1),
        "families": {c: tally(ok, c) for c in CLAIMS},
        "verdicts": [{"study": r["study"], **{c: v["verdict"] for c, v in r["claims"].items()}} for r in ok],
        "errors": [r["error"] for r in rows if "error" in r],
    }


def _write(path: Path, result: dict) -> None:
    """Replace `path` with the table atomically (a killed run leaves the last complete one; never through a link),
    after checking it against the A/A table's schema (a table no report may cite is never written)."""
    from coatsearch import fsafe
    from coatsearch.papers import aa_table

    aa_table.check(result, path)
    fsafe.write(path, json.dumps(result, indent=1) + "\n")


def gap_pvalues(out: Path) -> list[float]:
    """Claim (f)'s gap-contrast p value of every A/A study report under `out` (before Holm; tested ones only)."""
    found = []
    for path in sorted((out / "reports").glob("aa_*/summary.json")):
        claims = {c["id"]: c for c in json.loads(path.read_text(encoding="utf-8"))["claims"]}
        parts = claims.get("f", {}).get("parts") or []
        if parts and parts[0].get("p") is not None:
            found.append(float(parts[0]["p"]))
    return found


def uniformity(pvalues: list[float]) -> str:
    """Whether null p values look uniform: the share below α, a binomial test of it, and a KS test."""
    alpha, n = claims_alpha(), len(pvalues)
    if not n:
        return "no tested gap contrasts"
    below = sum(p < alpha for p in pvalues)
    excess = st.binomtest(below, n, alpha, alternative="greater").pvalue
    ks = st.kstest(pvalues, "uniform")
    return (f"(f) gap contrast over {n} A/A studies: {below} below α {alpha} ({_pct(below / n)}; binomial p of an "
            f"excess {excess:.3g}); KS against U(0, 1): D {ks.statistic:.3f}, p {ks.pvalue:.3g}; "
            f"median p {sorted(pvalues)[n // 2]:.3f}")  # fmt: skip


def claims_alpha() -> float:
    from coatsearch.analysis import constants as CS

    return float(CS.VERDICT_ALPHA)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def main() -> None:
    from coatsearch.cli_types import Parser, argtype, bounded
    from coatsearch.vocab import numbers

    ap = Parser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=bounded(1, 10_000), default=None, help="A/A studies (default 40; --quick: 3)")
    ap.add_argument("--workers", type=bounded(1, 64), default=2, help="studies run at once, one process each")
    ap.add_argument("--out", type=Path, default=None, help="work folder (default: a new one under /tmp)")
    ap.add_argument("--quick", action="store_true", help="a smoke test: 3 studies, 60-step runs (never --write)")
    ap.add_argument("--write", action="store_true", help="also write the table to coatsearch/papers/aa.json")
    ap.add_argument("--plan", action="store_true", help="print `coatsearch plan` of one A/A study, then stop")
    ap.add_argument("--resume", type=Path, default=None, help="extend this earlier table with --studies more")
    ap.add_argument("--timeout", type=argtype(lambda t: numbers.parse_real(t, 59.999, 86_400)), default=TIMEOUT_S,
                    help="seconds one run or report may take (60..86400)")  # fmt: skip
    ap.add_argument(
        "--per-class",
        type=bounded(10, 6000),
        default=Size.per_class,
        help="accuracy and capacity runs' training images per class (default 100)",
    )
    ap.add_argument("--steps", type=bounded(10, 100_000), default=Size.steps, help="accuracy runs' steps (800)")
    ap.add_argument(
        "--capacity-steps", type=bounded(10, 100_000), default=Size.capacity_steps, help="capacity runs' steps (100)"
    )
    ap.add_argument("--pvalues", action="store_true", help="test (f)'s gap-contrast p values in --out for uniformity")
    args = ap.parse_args()
    n = args.studies if args.studies is not None else 3 if args.quick else 40
    if args.write and args.quick:
        sys.exit("--write: the committed table takes full runs only, not --quick")
    out = args.out or Path(tempfile.mkdtemp(prefix="coatsearch-aa-", dir="/tmp"))
    if (out.resolve() / "x").is_relative_to(ROOT / "studies"):
        sys.exit(f"--out: {out} is inside the repository's studies/; pick a folder elsewhere")
    size = Size(args.per_class, args.steps, args.capacity_steps)
    before = earlier_table(args.resume, size) if args.resume else None
    first = before["studies"] if before else 0  # study numbers continue, so the seeds are fresh
    out.mkdir(parents=True, exist_ok=True)
    if args.plan:
        print(f"== plan of one A/A study ==\n{plan(out, args.quick, size)}")
        return
    if args.pvalues:
        pvalues = gap_pvalues(out)
        print(uniformity(pvalues))
        print(f"aa_gap_below_alpha={sum(p < claims_alpha() for p in pvalues) / max(1, len(pvalues)):.3f}")
        return
    print(f"{n} A/A studies (claims {', '.join(CLAIMS)}; {SEEDS} seeds each), {args.workers} at a time; "
          f"work folder {out}", flush=True)  # fmt: skip
    start, rows = time.perf_counter(), []
    command = ("python benchmarks/bench_aa.py " + " ".join(sys.argv[1:])).strip()
    with cf.ThreadPoolExecutor(args.workers) as pool:
        for row in pool.map(
            lambda i: one_study(i, out, args.quick, timeout_s=args.timeout, size=size), range(first, first + n)
        ):
            rows.append(row)
            codes = " ".join(f"{c}:{v['verdict']}" for c, v in row["claims"].items()) or row.get("error", "")
            print(f"  {row['study']}: {row['wall_s']:.0f} s  {codes}", flush=True)
            so_far = table(rows, time.perf_counter() - start, command, size)
            _write(out / "aa.json", merged(before, so_far) if before else so_far)  # the studies so far
    wall = time.perf_counter() - start
    result = table(rows, wall, command, size)
    result = merged(before, result) if before else result
    _write(out / "aa.json", result)
    if args.write:
        from coatsearch.papers import rule_tables

        _write(rule_tables.AA_TABLE, result)
    for claim, f in result["families"].items():
        ci = f"[{_pct(f['ci95'][0])}, {_pct(f['ci95'][1])}]" if f["ci95"] else "–"
        print(f"({claim}) firm {f['firm']} of {f['n']} = {_pct(f['rate'])}, exact 95% CI {ci}; out of regime "
              f"{f['out_of_regime']} of {f['n']} ({_pct(f['out_of_regime_rate'])}); "
              f"supported {f['supported']}")  # fmt: skip
    print(f"wall {wall:.0f} s for {len(rows)} new studies ({result['study_s']:.0f} s a study over all, "
          f"{args.workers} at a time); "
          f"{result['failed_studies']} failed; table {out / 'aa.json'}")  # fmt: skip
    firm = [f["rate"] for f in result["families"].values() if f["rate"] is not None]
    print(f"aa_firm_max={max(firm) if firm else float('nan'):.3f}")


if __name__ == "__main__":
    main()
