"""The study report: storage → tables (pure) → figures + Markdown + summary.json; reporting never writes the journal.

The report as the study's optuna-dashboard note is an explicit step (`dashboard.save_report_note`,
`coatsearch report --note`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from coatsearch.analysis import pareto, search_checks, search_results, speed_tables, spread
from coatsearch.analysis import table_rows as TR
from coatsearch.analysis import tables as TB
from coatsearch.analysis.constants import ALPHA, SPEED_SCORE, VERDICT_ALPHA
from coatsearch.analysis.measure_results import RecipeCurves
from coatsearch.analysis.tables import jsonable
from coatsearch.papers import frames, judging, looks, optim, paper, rule_tables, summary_file
from coatsearch.papers import measures as M
from coatsearch.papers import verdicts as V
from coatsearch.papers.claim_results import ClaimVerdict, Replication
from coatsearch.papers.claims import CAPACITY_SCORE, EDF_K, TRANSFER_SCORE
from coatsearch.papers.standing import Standing
from coatsearch.report import markdown as md
from coatsearch.report import markdown_answer as mda
from coatsearch.report import markdown_claims as mdc
from coatsearch.report import markdown_looks as mdl
from coatsearch.report import markdown_measures as mdm
from coatsearch.report import markdown_replication as mdr
from coatsearch.report import markdown_search as mdsearch
from coatsearch.report import markdown_speed as mds
from coatsearch.report import plots, regime, view_search
from coatsearch.report import view_answer as va
from coatsearch.report import view_claims as vc
from coatsearch.report import view_measures as vm
from coatsearch.report import view_speed as vs
from coatsearch.report import view_study as vst
from coatsearch.report.section import Report, ReportContext, Section, compute
from coatsearch.report.summary import Rules, StudySummary
from coatsearch.space.identity import recorded_content, recorded_profile, space_hash

__all__ = ["SECTIONS", "Report", "render", "summarize", "write_report"]

_SPACE_KEYS = ("space", "source", "profile", "description", "scale", "input")
FIGURES = "figures"  # the section listing the figures written beside the report (known only after drawing)

SECTIONS: tuple[Section, ...] = (  # in report order
    Section("header", vst.header, md.header),
    Section("search_answer", view_search.answer, mdsearch.lead),  # a search study's own answer comes first
    Section("answer", va.answer, mda.answer),  # the answer and the verdict table: first, without scrolling
    Section("regime", va.regime, mda.regime),
    Section("about", vst.about, md.about),
    Section("setup", vst.setup, md.setup),
    Section("candidates", vst.candidates, md.candidates),
    Section(FIGURES, lambda ctx: None, md.figures),
    Section("search", view_search.search, mdsearch.section),
    Section("rankings", vst.rankings, md.rankings),
    Section("v_table", vst.v_table, md.v_table),
    Section("matched", vm.matched, mdm.matched),
    Section(CAPACITY_SCORE, vm.capacity, mdm.capacity),
    Section(TRANSFER_SCORE, vm.transfer, mdm.transfer),
    Section("claims", vc.verdicts, mdc.verdicts),
    Section("replication", lambda ctx: ctx.summary.replication, mdr.section),
    Section("untested", vm.untested, mdm.untested),
    Section("optimizability", vc.optimizability, mdc.optimizability),
    Section("failures", vc.failures, mdc.failures),
    # the appendix: how the verdicts are reached, earlier looks, speed and pairing
    Section("appendix", vc.verdicts, mdc.appendix),
    Section("looks", vc.looks, mdl.section),
    Section(SPEED_SCORE, vs.speed, mds.section),
    Section("pareto", vs.pareto, mds.pareto),
    Section("edges", vm.edges, mdm.edges),
)


def summarize(
    study: str,
    space: dict,
    records: TB.Records,
    registered: Standing | None = None,
    earlier: looks.Found | None = None,
    original: Original | None = None,
    table: search_checks.EnumeratedTable | None = None,
) -> Report:
    """Every table the report shows, computed from the space record and trial records alone, and each section's
    Info (the summary reads as a mapping of those tables). A candidate that samples `model.*` fields gives one row
    per architecture it trained (search.regroup); the search section reads the records as stored. `registered`: the
    study against its registration (registration.standing), which marks each verdict confirmatory or not;
    `earlier`: the earlier looks on record (looks_found.gather), which adjust each claim's p, and a supported claim
    stands only below α after them (looks.LOOKS_RULE; None: not gathered, the claims as judged);
    `original`: for a replicate (registration.replicate_of), the study it replicates, read the same way; `table`:
    a study of the same space measured whole, the search's random baseline when this one is not."""
    from coatsearch.space import search

    found = search_results.compute(space, records, table)
    records = [r for r in search.regroup(records) if r.state not in search.UNTRAINED]  # the search section counts those
    j = judging.judge_records(space, records, registered=registered)
    seen = looks.table(space, j.claims, earlier)
    j = replace(j, claims=looks.counted(j.claims, seen))  # LOOKS_RULE: a claim is supported after the looks only
    summary = replace(tables(study, space, records, j), search=found, looks=seen,
                      replication=_replication(study, space, records, j, original))  # fmt: skip
    ctx = ReportContext(study, space, j.frames, summary)
    return Report(summary, compute(SECTIONS, ctx))


def _space_ids(space: dict) -> dict:
    """The summary's space: source, profile, its hash as recorded, and its content identity when that differs (a
    study that recorded the file's bytes: papers.reproduce matches an edit of comments against it)."""
    sha, content, mine = space_hash(space), recorded_content(space), recorded_profile(space)
    return {**{k: space.get(k) for k in _SPACE_KEYS}, "sha256": sha, **({"content_sha256": content}
            if content and content != sha else {}), **({"profile_sha256": mine} if mine else {})}  # fmt: skip


def tables(study: str, space: dict, records: TB.Records, j: judging.Judged) -> StudySummary:
    """The study's summary from its own records (summarize adds what the studies beside it and its plan give), each
    table computed once from the judged records."""
    fr, gen, rows, acc, dims, runs = j.frames, j.gen, j.rows, j.acc, j.dims, j.runs
    edf_rows, noise, done = j.edf, j.noise, fr.complete
    gaps = j.stems.gaps if j.stems else ()
    vit = optim.has_vit(done)
    cap = paper.capacity(fr.curves.get(CAPACITY_SCORE), done)
    claims, untested = paper.claim_notes(j.claims, cap), j.untested
    return StudySummary(
        version=summary_file.SUMMARY_VERSION,
        study=study,
        space=_space_ids(space),
        environment=TB.environment(space, records),
        images=j.images,
        registration=j.registration,
        metrics=dict(TB.METRICS),
        candidates=rows,
        size=spread.sizes(rows),
        primary_acc=acc,
        primary_label=TB.METRICS[acc].label if acc else "",
        rankings=tuple(V.rankings(rows, noise)),
        v_table=V.v_table(rows),
        claims=tuple(claims),
        untested=untested,
        scale=regime.proxy_scale(space, done, [k for c in claims if (k := regime.score_of(c, acc))]),
        regime=regime.regime_rows(space, done, rows, claims, acc),
        matched=gen,
        capacity=cap,
        transfer=paper.transfer(rows, done),
        pairing=paper.pairing(done),
        edge_warnings=M.edge_warnings(runs) if dims and runs is not None else (),
        curves={score: _curves(space, fr, score) for score in TB.curve_scores()},
        search_dims=tuple(dims),
        edf=edf_rows,
        edf_k=EDF_K,
        optimizer_gap=gaps,
        peak=optim.peak(runs) if runs is not None else (),
        samples=optim.samples(records) if dims or vit else (),
        length=TB.length_rows(space, records),
        has_vit=vit,
        failures=TB.failures(records),
        pareto=pareto.front(space, records),
        rules=Rules(
            rule_version=rule_tables.RULE_VERSION,  # the verdict rule this report was judged under
            relation=V.RELATION_RULE,
            verdict=V.VERDICT_RULE,
            method=V.METHOD,
            alpha=ALPHA,
            verdict_alpha=VERDICT_ALPHA,
            calibration=rule_tables.figures() if rows else None,  # committed tables: no simulator here
            aa=rule_tables.aa_figures() if rows else None,
        ),
        robustness=TB.robustness_rows(space, fr.records),
        speed=speed_tables.table(space, fr.records, fr.acc),
        matched_loss=paper.matched_points(fr.matched, fr.curves[paper.GEN]),
    )


def render(report: Report, figures: dict[str, str]) -> str:
    """The report's Markdown: each section's Markdown from its Info; sections with no data are left out."""
    from coatsearch.report import section

    return section.render(SECTIONS, {**report.infos, FIGURES: vst.figures(figures)})


def _curves(space: dict, fr: frames.Frames, score: str) -> tuple[RecipeCurves, ...] | tuple[TR.EpochCurve, ...]:
    """Mean step-level curves of a score; per-epoch curves for studies recorded before step curves."""
    return paper.mean_curves(space, fr.curves[score], fr.complete) or TB.curves(space, fr.records, score)


def write_report(study_name: str, studies_dir: Path, reports_dir: Path, history: bool = False) -> Path:
    """Write reports/<study>/report.md, its PNG figures and summary.json from the storage (read only), and add the
    looks it counted and its own to the reports folder's looks record (looks_record); report.md.
    `history`: the earlier looks also read the committed versions of the reports' summary.json (git); by default
    they read only what the studies and reports folders hold, and no git runs."""
    from coatsearch import fsafe
    from coatsearch.papers import looks_found, looks_record
    from coatsearch.storage import store
    from coatsearch.storage.paths import report_folder

    study = store.load_study(Path(studies_dir), study_name)  # the one open of the storage for this report
    space, records = store.read(study)
    earlier = looks_found.gather(Path(studies_dir), Path(reports_dir), study_name, space, judged_claims, history)
    registered, original = _registered(Path(studies_dir), study_name, space), _original(Path(studies_dir), study_name)
    table = _measured_table(Path(studies_dir), study_name, space)
    report = summarize(study_name, space, records, registered, earlier, original, table)
    summary = replace(report.summary, plan_check=_plan_check(Path(studies_dir), study_name,
                                                              jsonable(report.summary.environment)))  # fmt: skip
    folder = report_folder(Path(reports_dir), study_name, Path(studies_dir))
    for name in ("report.md", "summary.json", *(f"{f}.png" for f in plots.FIGURES)):
        fsafe.check_plain(folder / name)  # a link or special file is refused before anything is written
    figures = plots.render_all(report, folder)
    path = folder / "report.md"
    fsafe.write(path, render(report, figures))  # atomic, no link followed (coatsearch.fsafe)
    fsafe.write(folder / "summary.json", json.dumps(jsonable(summary), indent=1, ensure_ascii=False) + "\n")
    this = looks.ident(space)  # the looks record: every look counted here, and this one, for any later report
    mine = looks_record.own(f"{folder.name}/summary.json", this, report.summary.claims)
    looks_record.write(Path(reports_dir), [*mine, *earlier.looks])  # its own reading first: the newest
    return path


def judged_claims(space: dict, records: list) -> list[ClaimVerdict]:
    """Another study's claims as the earlier looks read them: judged by the report's path, without the
    description-only figures (looks_found.gather)."""
    return judging.judge_records(space, records, describe=False).claims


def _registered(studies_dir: Path, name: str, space: dict) -> Standing | None:
    """The study against its registration (None when it has none): each change, with the claims it concerns."""
    from coatsearch.papers import registration
    from coatsearch.storage import store

    reg = registration.load(store.folder(studies_dir, name))
    if reg is None:
        return None
    now = registration.analysis(space, reg.analysis.replicate_of, reg.analysis)
    return registration.standing(reg, now, name, store.identity(store.folder(studies_dir, name), name))


@dataclass(frozen=True)
class Original:
    """The study a replicate replicates, as its report reads it: name, space record, records, registration line;
    `missing` says why it could not be read (then the rest is empty)."""

    study: str
    space: dict
    records: TB.Records
    registered: Standing | None
    missing: str = ""


def _original(studies_dir: Path, name: str) -> Original | None:
    """The study `name` replicates (registration.replicate_of), read from the same studies folder; None when it
    is no replicate."""
    from coatsearch.errors import UserError
    from coatsearch.papers import registration
    from coatsearch.storage import store

    reg = registration.load(store.folder(studies_dir, name))
    if reg is None or not reg.analysis.replicate_of:
        return None
    of = reg.analysis.replicate_of
    try:
        space, records = store.read(store.load_study(studies_dir, of))
        return Original(of, space, records, _registered(studies_dir, of, space))
    except UserError as exc:
        return Original(of, {}, [], None, missing=str(exc))


def _replication(study: str, space: dict, records: TB.Records, j: judging.Judged, original: Original | None
                 ) -> Replication | None:  # fmt: skip
    """The replication section's Info (papers.replicate), None when the study is no replicate."""
    from coatsearch.papers import replicate as vr
    from coatsearch.space import search

    if original is None:
        return None
    if original.missing:
        return vr.missing(study, original.study, original.missing)
    theirs = [r for r in search.regroup(original.records) if r.state not in search.UNTRAINED]
    return vr.compute(study, space, records, j, original.study, original.space, theirs, original.registered)


def _measured_table(studies_dir: Path, name: str, space: dict) -> search_checks.EnumeratedTable | None:
    """The study `coatsearch enumerate` measured this space's profile in by default, when it is another study whose
    recorded space has this one's content identity (None otherwise, or when it cannot be read)."""
    from coatsearch.errors import UserError
    from coatsearch.storage import store
    from coatsearch.storage.paths import enumerate_name

    other = enumerate_name(str(space.get("space")), str(space.get("profile") or "default"))
    if other == name or not (studies_dir / other).is_dir():
        return None
    try:
        their_space, records = store.read(store.load_study(studies_dir, other))
    except (UserError, OSError):
        return None
    same = recorded_content(their_space) == recorded_content(space) is not None
    return search_checks.EnumeratedTable(other, records) if same else None


def _plan_check(studies_dir: Path, name: str, environment: dict) -> dict | None:
    """Predicted (the plan `run` stored beside the study) vs measured wall time; None when no plan was stored."""
    from coatsearch.storage import planfile, store

    return planfile.check(planfile.load(store.folder(studies_dir, name)), environment)
