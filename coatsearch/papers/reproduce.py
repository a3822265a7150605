"""Whether a committed report is what its space file produces now, and whether quoted figures come from a report.

A report's summary.json records its space's identity as run (`space.sha256`: the sha256 of the parsed content,
space.identity; reports made before it hold the sha256 of the file's bytes) and the profile. `problems` lists every
report under a reports folder whose space file is missing, unreadable for its profile, or matches the recorded hash
under neither identity: a changed space then needs a real rerun, not a rewritten report. An edit of comments or
formatting changes nothing a study runs and leaves a report standing: one made under content hashes directly, one
made before them when the checkout's history holds the file version it recorded and that version parses to the
same content (this check may run git; the report never does).

Figures quoted in Markdown (README, docs) name their source in an HTML comment just before the number:
`<!-- reports/vit_stems: claims.f.evidence.0.parts.0.d -->+2.68`. `quote_problems` checks each such number
against that summary.json value at the number's printed precision.

`aa_problems` checks each report's A/A column against the A/A table's states: the table grows by `--resume`
runs, and a report made before it grew cites the state it was made under.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from coatsearch.errors import UserError

GIT_TIMEOUT_S = 20.0  # each git call of the check of reports made before content hashes
HISTORY_MAX = 200  # commits of a space file searched for the version such a report was made from
_QUOTE = re.compile(r"<!--\s*reports/([\w.+-]+):\s*([\w.\-\[\]]+)\s*-->\s*([+\-−]?\d[\d,]*(?:\.\d+)?)")


def _report_problem(summary: Mapping[str, Any], root: Path) -> str:
    """Why a report (its summary.json) was not made from its space file as it stands under `root` ("" if it was)."""
    from coatsearch.space.objects import load_space

    sp = summary.get("space") or {}
    source, profile, recorded = sp.get("source"), sp.get("profile"), sp.get("sha256")
    if not isinstance(source, str) or not source:
        return "no space file recorded (space.source)"
    if not isinstance(recorded, str) or not recorded:
        return f"no space hash recorded (space.sha256) for {source}: regenerate the report from a run of the space"
    from coatsearch import fsafe
    from coatsearch.space.identity import file_ids
    from coatsearch.space.load import MAX_BYTES

    path = Path(source) if Path(source).is_absolute() else root / source
    try:
        raw = fsafe.read_named(path, MAX_BYTES, "space file")
    except UserError as exc:
        return f"space file {source} cannot be read ({str(exc).removeprefix(f'{path}: ')})"
    try:
        load_space(path, str(profile or "default"))
    except UserError as exc:
        return f"space file {source}, profile {profile}: {exc}"
    ids, mine = file_ids(raw, path), _profile_id(raw, str(profile or "default"), path)
    if sp.get("content_sha256") is not None and sp.get("content_sha256") == ids.get("content"):
        return ""  # the same content as run (a study that recorded the bytes; an edit of comments since)
    if mine is not None and sp.get("profile_sha256") == mine:
        return ""  # the profile it ran is as it was: only other profiles of the file changed
    if recorded not in ids.values() and not _same_profile_as_committed(root, source, str(profile or "default"),
                                                                       recorded, mine):  # fmt: skip
        now = ids.get("content", ids["bytes"])
        return f"{source} changed since the report was made (sha256 {recorded[:12]}… recorded, {now[:12]}… now)"
    return ""


def _profile_id(raw: bytes, profile: str, where: str | Path) -> str | None:
    """space.identity.profile_sha256 of a file's bytes; None when they do not parse."""
    from coatsearch.space.identity import profile_sha256

    try:
        return profile_sha256(raw.decode("utf-8"), profile, where)
    except (UserError, UnicodeDecodeError):
        return None


def _same_profile_as_committed(root: Path, source: str, profile: str, recorded: str, mine: str | None) -> bool:
    """Whether a report whose summary holds no profile identity was made from a file whose `profile` runs what it
    runs now (`mine`): the committed version of `source` in `root`'s checkout whose bytes or content hash to
    `recorded` gives the same profile identity (an edit of comments or formatting, or of other profiles, since).
    False without git, outside a checkout, or when no such version is committed. A repository check: the report
    itself never runs git."""
    import subprocess

    from coatsearch.space.identity import bytes_sha256, file_ids

    if mine is None or Path(source).is_absolute():
        return False

    def git(*args: str, stdin: bytes | None = None) -> bytes:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], input=stdin, capture_output=True,
                                  timeout=GIT_TIMEOUT_S, check=False)  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return b""
        return done.stdout if done.returncode == 0 else b""

    commits = git("log", f"-{HISTORY_MAX}", "--format=%H", "--", source).decode("ascii", "replace").split()
    out = git("cat-file", "--batch", stdin="".join(f"{c}:./{source}\n" for c in commits).encode())
    while out:  # "<object> blob <size>\n<bytes>\n" per version, "<spec> missing\n" where it was absent
        head, _, out = out.partition(b"\n")
        parts = head.split()
        if len(parts) != 3 or not parts[2].isdigit():
            continue
        blob, out = out[: int(parts[2])], out[int(parts[2]) + 1 :]
        if recorded in (bytes_sha256(blob), file_ids(blob, source).get("content")):
            return _profile_id(blob, profile, source) == mine
    return False


def problems(reports: Path, root: Path) -> list[str]:
    """'reports/NAME: why' for every summary.json under `reports` not made from its space file as it stands."""
    return _each_summary(reports, lambda summary: _report_problem(summary, root))


def aa_problems(reports: Path, table: Mapping[str, Any]) -> list[str]:
    """'NAME: why' for every summary.json under `reports` whose A/A column (`rules.aa`) is not a state the A/A
    `table` has stood in (rule_tables.aa_states): figures no benchmark run produced. A report without the column
    (made under another rule version) is not checked here."""
    from coatsearch.papers.rule_tables import aa_states

    states = {json.dumps(s.to_json(), sort_keys=True): s.studies for s in aa_states(table)}
    known = ", ".join(str(n) for n in states.values())

    def problem(summary: Mapping[str, Any]) -> str:
        cited = (summary.get("rules") or {}).get("aa")
        if not cited or json.dumps(cited, sort_keys=True) in states:
            return ""
        return (f"its A/A column ({cited.get('studies')} studies, {cited.get('date')}) is no state of the A/A "
                f"table (states at {known} studies)")  # fmt: skip

    return _each_summary(reports, problem)


def _each_summary(reports: Path, problem: Callable[[Mapping[str, Any]], str]) -> list[str]:
    """'NAME: why' for every summary.json under `reports` that cannot be read or in which `problem` finds a why."""
    from coatsearch import fsafe

    out = []
    for path in sorted(reports.glob("*/summary.json")):
        try:
            summary = fsafe.read_json(path)  # bounded: regular, size, depth; a mapping
            why = problem(summary)
        except UserError as exc:
            out.append(f"{path.parent.name}: summary.json cannot be read ({exc})")
            continue
        except (AttributeError, TypeError, KeyError) as exc:  # a value of the wrong kind inside
            out.append(f"{path.parent.name}: summary.json is damaged ({type(exc).__name__}: {exc})")
            continue
        if why:
            out.append(f"{path.parent.name}: {why}")
    return out


def lookup(data: Any, dotted: str) -> Any:
    """The value at a dotted path: mapping keys, list indices, or `[id]` for the list item whose `id` is that."""
    for part in dotted.split("."):
        if m := re.fullmatch(r"\[(.+)\]", part):
            data = next(x for x in data if isinstance(x, Mapping) and str(x.get("id")) == m[1])
        elif isinstance(data, list):
            data = data[int(part)]
        else:
            data = data[part]
    return data


def quotes(text: str) -> Iterator[tuple[int, str, str, str]]:
    """(line, report name, summary path, quoted number as printed) for every marked quote in a Markdown text."""
    for m in _QUOTE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m[1], m[2], m[3]


def quote_problems(text: str, summary_of: Callable[[str], Any], where: str = "") -> list[str]:
    """'where:line: why' for each marked quote whose number is not the summary's value at its printed precision."""
    out = []
    for line, name, dotted, shown in quotes(text):
        try:
            value = lookup(summary_of(name), dotted)
        except (OSError, ValueError, KeyError, IndexError, TypeError, StopIteration):
            out.append(f"{where}:{line}: reports/{name}: {dotted} is not in its summary.json")
            continue
        number = float(shown.replace(",", "").replace("−", "-"))
        digits = len(shown.split(".")[1]) if "." in shown else 0
        if not isinstance(value, int | float) or f"{float(value):.{digits}f}" != f"{number:.{digits}f}":
            out.append(f"{where}:{line}: reports/{name}: {dotted} is {value!r}, the text quotes {shown}")
    return out
