"""`coatsearch answer SPACE`: one answer page for a space, reports/<space>/answer.md, gathered from the committed
summaries of the studies its profiles ran (answer.space_claims computes it, answer.view_space arranges it,
answer.markdown_space formats it).

It reads the space file (its name, identities and each profile's untestable claims) and every
<reports>/*/summary.json through papers.summary_file; a summary of another space is left alone. It runs no study,
opens no journal and writes only the page. The page depends on those files alone, so regenerating it from the same
files gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path

from coatsearch.answer import markdown_space as mdsp
from coatsearch.answer import space_claims
from coatsearch.answer import view_space as vsp
from coatsearch.answer.space_studies import SpaceFile, SpaceProfile, Study
from coatsearch.errors import UserError
from coatsearch.papers import summary_file


def read_space(path: Path) -> SpaceFile:
    """The space file's name, identities and profiles (each profile validated as `run` would; a one-line
    SpaceError on a missing or invalid file)."""
    from coatsearch.space import load
    from coatsearch.space.identity import file_ids, profile_sha256

    doc = load.load_document(path)  # the file and its default profile, checked first
    text = load.read_text(path)
    raw = load.parsed(Path(path), text)
    names = list((raw.get("profiles") or {}) if isinstance(raw, dict) else {})
    names = (["default"] if "default" not in names else []) + names
    untestable = {n: tuple(sorted(load.load_document(path, n, text).untestable or {})) for n in names}
    profiles = tuple(SpaceProfile(n, claims, profile_sha256(text, n, path)) for n, claims in untestable.items())
    ids = tuple(sorted(file_ids(text.encode("utf-8"), path).values()))
    return SpaceFile(doc.name, shown(Path(path)), ids, profiles)


def shown(path: Path) -> str:
    """The path as the page names it: relative to the working folder when inside it (so the page does not depend on
    how the path was typed), else as given."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def read_studies(reports_dir: Path, space: str) -> list[Study]:
    """Every study under `reports_dir` whose summary.json records space `space` (a damaged or newer summary is
    a one-line UserError naming it); a UserError when there is none."""
    from coatsearch import fsafe

    root = Path(reports_dir)
    if not root.is_dir():
        raise UserError(f"--reports-dir {root}: no such folder; run the space's profiles first (`coatsearch run`)")
    found = []
    for path in sorted(root.glob("*/summary.json")):
        data = fsafe.read_json(path)
        if summary_file.is_summary(data) and data["space"].get("space") == space:
            found.append(Study(path.parent.name, summary_file.from_json(data, str(path))))
    if not found:
        raise UserError(f"{root}: no report of space '{space}' (no */summary.json records it); run its profiles "
                        "first (`coatsearch run SPACE --profile NAME`)")  # fmt: skip
    return found


def answer_page(space: SpaceFile, reports_dir: Path) -> vsp.AnswerPage:
    """The answer page's Info for a space file read by `read_space`, from the reports under `reports_dir`."""
    return vsp.page(space, space_claims.gather(space, read_studies(Path(reports_dir), space.name)))


def command(space: SpaceFile, reports_dir: Path) -> str:
    """The command line that makes the page (stated on it)."""
    flag = "" if shown(Path(reports_dir)) == "reports" else f" --reports-dir {shown(Path(reports_dir))}"
    return f"coatsearch answer {space.source}{flag}"


def write_answer(space_file: Path, reports_dir: Path) -> Path:
    """Write <reports_dir>/<space>/answer.md for `space_file`; returns its path."""
    from coatsearch import fsafe
    from coatsearch.storage.paths import inside

    space = read_space(Path(space_file))
    info = answer_page(space, Path(reports_dir))
    folder = inside(Path(reports_dir), space.name, "--reports-dir", "space name")
    return fsafe.write(folder / mdsp.ANSWER_FILE, mdsp.page(info, command(space, Path(reports_dir))))
