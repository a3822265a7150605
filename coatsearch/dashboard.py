"""optuna-dashboard on a study's JournalStorage: the same store of record the report reads, made readable.

The server reads the storage through `ReadableStorage`, a view that computes what it shows on read: a
trial's run record as readable scalar attributes (`generalization.eval_acc`, `optim.lr`, the same row
`api.results()` gives), the study's space as readable attributes and its objective as metric name. Nothing
is written for the view; the report becomes the study's note only on request (`coatsearch report --note`).
The view is read-only, always: every write (deleting or renaming the study, telling a trial, notes,
attributes) raises `ReadOnly` and the server answers with an error. What the view shows is computed, not
stored, so it can never be the source of a write: optuna-dashboard's rename copies what it reads into a
new study and deletes the original, which through the view would keep only the readable copy and lose every
run record. `--allow-writes` therefore serves the journal storage itself (raw attributes, no readable view),
with a warning: every write, a rename's copy included, is of the stored records. A refused write is answered
403 with its reason (the API's JSON `reason`), not a bare 500.
The report's PNG figures reach the note through optuna's artifact store in the study folder
(`<study>/artifacts`, `optuna.artifacts.upload_artifact`): `save_report_note` uploads each figure once (an
unchanged figure is found again by name and bytes) and points the note's image links at the dashboard's
`/artifacts/<study id>/<artifact id>` route, which `serve` answers from that store.
"""

from __future__ import annotations

import copy
import functools
import ipaddress
import re
import sys
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import BaseStorage

from coatsearch.errors import UserError
from coatsearch.storage.trials import SPACE_ATTR, stored_space_record


def url(host: str, port: int) -> str:
    """The dashboard's address for a host and port."""
    return f"http://{host}:{port}/dashboard/"


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only (localhost, 127.0.0.0/8, ::1); names are not resolved."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def space_attrs(record: Mapping[str, Any]) -> dict[str, Any]:
    """The space record as readable scalar study attributes: name, profile, scale, source, input, study settings."""
    size = list(record.get("input") or [])
    data = record.get("data") or {}
    study = record.get("study") or {}
    attrs = {
        "space.name": record.get("space"),
        "space.profile": record.get("profile"),
        "space.scale": record.get("scale"),
        "space.source": record.get("source"),
        "space.description": record.get("description"),
        "space.input": f"{size[0]}x{size[0]} px, {size[1]} channel(s), {size[2]} classes" if len(size) == 3 else None,
        "space.data": ", ".join(f"{k} {v}" for k, v in data.items() if v is not None) or None,
        "space.scores": ", ".join(k for k, v in (record.get("scores") or {}).items() if v) or None,
        "space.candidates": ", ".join(record.get("candidates") or []) or None,
        **{f"study.{k}": ", ".join(map(str, v)) if isinstance(v, list | tuple) else v for k, v in study.items()},
        "space.yaml": record.get("space_yaml") or None,
    }
    return {k: v for k, v in attrs.items() if v not in (None, "")}


def objective(user_attrs: Mapping[str, Any]) -> str | None:
    """The study's objective key (e.g. `generalization.eval_acc`) from its space record."""
    return (stored_space_record(user_attrs).get("study") or {}).get("objective")


def metric_names(user_attrs: Mapping[str, Any]) -> list[str]:
    """The study's value names: its objectives (a multi-objective study), else its one objective (or none)."""
    name = objective(user_attrs)
    return list((stored_space_record(user_attrs).get("study") or {}).get("objectives") or ([name] if name else []))


def study_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """A study's user attributes as the dashboard shows them: the space record as its readable keys, scalars."""
    shown = {k: v for k, v in attrs.items() if k != SPACE_ATTR}
    if isinstance(attrs.get(SPACE_ATTR), Mapping):
        shown = {**space_attrs(attrs[SPACE_ATTR]), **shown}
    return readable(shown)


def readable(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes as the dashboard shows them: scalars, dotted keys, floats to 6 significant digits."""
    return {k: float(f"{v:.6g}") if isinstance(v, float) else v for k, v in flatten(attrs).items()}


def _trial_attrs(trial: optuna.trial.FrozenTrial) -> dict[str, Any]:
    """A trial's user attributes as shown: its run record as one readable row (record.row), its curves as text
    (`curves.<name>.<series>`), and the claim attributes."""
    from coatsearch.storage import record, store

    rec = store.record(trial)
    row = record.row(rec)
    shown = {k: v for k, v in row.items() if k not in _SHOWN_BY_OPTUNA and v is not None}
    claim = {k: v for k, v in trial.user_attrs.items() if k in record.CLAIM_ATTRS}
    return readable({**claim, **shown, "curves": record.to_json(rec.run)["curves"]})


_SHOWN_BY_OPTUNA = ("number", "state", "value", "start", "complete", "candidate", "seed")  # params and columns


WRITES = frozenset(
    {
        "create_new_study", "delete_study", "set_study_user_attr", "set_study_system_attr", "create_new_trial",
        "set_trial_param", "set_trial_state_values", "set_trial_intermediate_value", "set_trial_user_attr",
        "set_trial_system_attr", "set_study_directions",
    }
)  # fmt: skip  # BaseStorage's methods that write (test_dashboard checks every other one only reads)


class ReadOnly(PermissionError):
    """A write through a read-only dashboard view."""


Refusal = Callable[[str], Exception]  # makes the exception a refused write raises (ReadOnly or a subclass)


class ReadableStorage(BaseStorage):
    """A read-only view of a storage whose studies and trials show `readable` user attributes.

    Every write method raises `refuse(message)` (ReadOnly by default) and the storage is not touched (there is
    no writable view).
    """

    def __init__(self, inner: BaseStorage, refuse: Refusal = ReadOnly) -> None:
        self._inner, self._refuse = inner, refuse

    def get_study_user_attrs(self, study_id: int) -> dict[str, Any]:
        """The study's user attributes, readable."""
        return study_attrs(self._inner.get_study_user_attrs(study_id))

    def get_study_system_attrs(self, study_id: int) -> dict[str, Any]:
        """The study's system attributes, with its metric names from the space record (when it has none)."""
        user = self._inner.get_study_user_attrs(study_id)
        return _with_names(self._inner.get_study_system_attrs(study_id), user)

    def get_all_studies(self) -> list[Any]:
        """Every study, with readable user attributes and its metric names."""
        out = []
        for s in self._inner.get_all_studies():
            s = copy.copy(s)
            s.system_attrs = _with_names(s.system_attrs, s.user_attrs)
            s.user_attrs = study_attrs(s.user_attrs)
            out.append(s)
        return out

    def get_trial(self, trial_id: int) -> optuna.trial.FrozenTrial:
        """One trial, with readable user attributes."""
        return _readable_trial(self._inner.get_trial(trial_id))

    def get_all_trials(self, study_id: int, deepcopy: bool = True, states: Any = None) -> list[Any]:
        """A study's trials, with readable user attributes (always copies: the view never aliases records)."""
        return [_readable_trial(t) for t in self._inner.get_all_trials(study_id, deepcopy=False, states=states)]


def _readable_trial(trial: optuna.trial.FrozenTrial) -> optuna.trial.FrozenTrial:
    out = copy.copy(trial)
    out.user_attrs = _trial_attrs(trial)
    return out


def _with_names(system: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, Any]:
    """System attributes plus optuna's metric-names entry from the space record, when the study set none."""
    names = metric_names(user)
    out = dict(system)
    if names and _metric_names_key() not in out:
        out[_metric_names_key()] = names
    return out


@functools.cache
def _metric_names_key() -> str:
    """The study system attribute that optuna.Study.set_metric_names writes, found through public calls only."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            storage = optuna.storages.InMemoryStorage()
            study = optuna.create_study(storage=storage)
            study.set_metric_names(["value"])
    finally:
        optuna.logging.set_verbosity(verbosity)
    (key,) = storage.get_study_system_attrs(storage.get_study_id_from_name(study.study_name))
    return key


def refused(what: str) -> str:
    """The one-line reason a read-only dashboard gives for refusing `what`."""
    return f"the dashboard is read-only ({what} refused); serve it with --allow-writes to edit"


def _delegate(name: str) -> Any:
    def method(self: ReadableStorage, *args: Any, **kwargs: Any) -> Any:
        if name in WRITES:
            raise self._refuse(refused(name))
        return getattr(self._inner, name)(*args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"`{name}` of the wrapped storage."
    return method


for _name in sorted((BaseStorage.__abstractmethods__ | WRITES) - set(vars(ReadableStorage))):
    setattr(ReadableStorage, _name, _delegate(_name))
ReadableStorage.__abstractmethods__ = frozenset()


def serve(study: str, studies_dir: Path, host: str = "127.0.0.1", port: int = 8080, allow_writes: bool = False) -> None:
    """Check the study exists, print its URL, and serve optuna-dashboard until Ctrl-C.

    Read-only through `ReadableStorage`; `allow_writes` serves the journal storage itself (never the view)."""
    try:
        import optuna_dashboard
    except ImportError:
        raise UserError("optuna-dashboard is not installed: pip install 'coatsearch[dashboard]'") from None
    storage, artifacts = served(study, Path(studies_dir), allow_writes)  # a missing study: a UserError with its path
    _warn(host, allow_writes)
    _check_port(host, port)
    print(f"coatsearch: dashboard for study '{study}' at {url(host, port)} (Ctrl-C stops it)", flush=True)
    optuna_dashboard.run_server(storage, host=host, port=port, artifact_store=artifacts)


def wsgi_app(study: str, studies_dir: Path, allow_writes: bool = False) -> Any:
    """optuna-dashboard's WSGI app on what `serve` serves (for a WSGI server of your choice, and for tests)."""
    import optuna_dashboard

    storage, artifacts = served(study, Path(studies_dir), allow_writes)
    return optuna_dashboard.wsgi(storage, artifact_store=artifacts)


def served(study: str, studies_dir: Path, allow_writes: bool = False) -> tuple[BaseStorage, Any]:
    """(storage, artifact store) the dashboard serves: the read-only view and a store that refuses uploads, each
    refusing with 403 and its reason; with `allow_writes` the journal storage and the study's artifact store."""
    from optuna.artifacts import FileSystemArtifactStore

    from coatsearch.storage import store

    store.load_study(Path(studies_dir), study)  # a missing study is a UserError with the expected path
    journal = store.open_storage(store.storage_file(Path(studies_dir), study))
    artifacts = FileSystemArtifactStore(artifacts_folder(Path(studies_dir), study, create=allow_writes))
    if allow_writes:
        return journal, artifacts
    refuse = _http_refusal()
    return ReadableStorage(journal, refuse), ReadOnlyArtifacts(artifacts, refuse)  # type: ignore[abstract]


def _http_refusal() -> Refusal:
    """ReadOnly as the dashboard's JSON API answers it: 403 with the reason (bottle's HTTPError), not a bare 500."""
    import bottle

    class Refused(ReadOnly, bottle.HTTPError):
        def __init__(self, message: str) -> None:
            ReadOnly.__init__(self, message)
            bottle.HTTPError.__init__(self, 403, message)

    return Refused


class ReadOnlyArtifacts:
    """An artifact store that reads from `inner` and refuses every write (the read-only dashboard's)."""

    def __init__(self, inner: Any, refuse: Refusal = ReadOnly) -> None:
        self._inner, self._refuse = inner, refuse

    def open_reader(self, artifact_id: str) -> Any:
        """The stored artifact's bytes, as a file."""
        return self._inner.open_reader(artifact_id)

    def write(self, artifact_id: str, content_body: Any) -> None:
        """Refused: the dashboard is read-only."""
        raise self._refuse(refused("uploading an artifact"))

    def remove(self, artifact_id: str) -> None:
        """Refused: the dashboard is read-only."""
        raise self._refuse(refused("removing an artifact"))


ARTIFACTS = "artifacts"  # the study folder's optuna artifact store: the report's figures, for the note


def artifacts_folder(studies_dir: Path, study: str, create: bool = False) -> Path:
    """The study's artifact store folder `<study>/artifacts` (checked: not a link; made when `create`)."""
    from coatsearch.storage.paths import study_folder

    folder = study_folder(Path(studies_dir), study) / ARTIFACTS
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise UserError(f"{folder}: is not a folder (a link or a file); coatsearch keeps the note's figures there")
    if create:
        folder.mkdir(exist_ok=True)
    return folder


def _warn(host: str, allow_writes: bool) -> None:
    """One warning line when the dashboard is reachable from other machines, or can write."""
    who = "anyone who can reach this port" if not is_loopback(host) else "anyone with access to this machine"
    if not is_loopback(host) or allow_writes:
        can = (
            "read the study and edit it (notes, trials, even delete it; raw attributes, no readable view)"
            if allow_writes
            else "read the study"
        )
        where = f"serving on {host}, not loopback: " if not is_loopback(host) else ""
        print(f"coatsearch: warning: {where}the dashboard has no authentication: {who} can {can}", file=sys.stderr)


def _check_port(host: str, port: int) -> None:
    """A one-line UserError, before the URL is printed, when `host:port` cannot be served (in use, no such host)."""
    import socket

    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        raise UserError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None


def save_note(study: optuna.Study, text: str, verdicts: dict) -> None:
    """The study's optuna-dashboard note and user attr 'report_verdicts'; unchanged ones are not written again."""
    from optuna_dashboard import get_note
    from optuna_dashboard import save_note as save

    if get_note(study) != text:  # the journal only grows: write a note only when it changed
        save(study, text)
    if study.user_attrs.get("report_verdicts") != verdicts:
        study.set_user_attr("report_verdicts", verdicts)


def save_report_note(study_name: str, studies_dir: Path, report: Path) -> bool:
    """Write a written report (report.md, and the verdicts of its summary.json) as the study's dashboard note.

    The one place reporting writes to the journal, and only when asked (`coatsearch report --note`): its figures
    are uploaded to the study's artifact store (`note_figures`) and the note links them; an unchanged note or
    figure is not written again. False, with a note line, when optuna-dashboard is missing.
    """
    from coatsearch import fsafe
    from coatsearch.papers import summary_file
    from coatsearch.storage import store

    summary = summary_file.read(report.parent / "summary.json")  # bounded, typed; a damaged one: a UserError
    verdicts = {c.id: c.verdict for c in summary.claims}
    study = store.load_study(Path(studies_dir), study_name)
    text = fsafe.read_bytes(report, fsafe.JSON_MAX).decode("utf-8", "replace")
    try:
        import optuna_dashboard  # noqa: F401
    except ImportError:
        print("coatsearch: note: optuna-dashboard is not installed; the note was not saved", file=sys.stderr)
        return False
    text = note_figures(study, text, report.parent, artifacts_folder(Path(studies_dir), study_name, create=True))
    save_note(study, text, verdicts)
    return True


_FIGURE = re.compile(r"!\[([^\]]*)\]\(([^()\s/]+\.png)\)")  # a report's figure link: ![name](file.png), beside it


def note_figures(study: optuna.Study, text: str, report_dir: Path, folder: Path) -> str:
    """The report's Markdown with each figure link pointing at the figure in the study's artifact store.

    A figure is uploaded (`optuna.artifacts.upload_artifact`) unless the study holds an artifact of the same
    name and bytes already; the link is the dashboard's `/artifacts/<study id>/<artifact id>` path."""
    from optuna.artifacts import FileSystemArtifactStore, get_all_artifact_meta, upload_artifact
    from optuna_dashboard.artifact import get_artifact_path

    from coatsearch import fsafe

    artifacts = FileSystemArtifactStore(folder)
    held = {m.filename: m.artifact_id for m in get_all_artifact_meta(study)}

    def link(match: re.Match[str]) -> str:
        path = report_dir / match.group(2)
        if not path.is_file():
            return match.group(0)
        data = fsafe.read_bytes(path, fsafe.JSON_MAX)
        found = held.get(path.name)
        if found is None or _artifact_bytes(artifacts, found) != data:
            found = held[path.name] = upload_artifact(
                artifact_store=artifacts, file_path=str(path), study_or_trial=study
            )
        return f"![{match.group(1)}]({get_artifact_path(study, found)})"

    return _FIGURE.sub(link, text)


def _artifact_bytes(artifacts: Any, artifact_id: str) -> bytes | None:
    """A stored artifact's bytes (None when its file is gone)."""
    try:
        with artifacts.open_reader(artifact_id) as f:
            return f.read()
    except Exception:  # noqa: BLE001 - a missing or unreadable artifact is uploaded again
        return None


_Scalar = str | int | float | bool | None


def flatten(attrs: Mapping[str, Any], prefix: str = "") -> dict[str, _Scalar]:
    """Nested attributes as dotted scalar keys: dicts flattened, lists of scalars joined with ', '."""
    out: dict[str, _Scalar] = {}
    for key, value in attrs.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, list | tuple):
            if all(isinstance(v, str | int | float | bool) or v is None for v in value):
                out[name] = ", ".join(_short(v) for v in value)
            else:
                out[name] = str(value)
        else:
            out[name] = value
    return out


def _short(value: Any) -> str:
    """A list element as text: floats to 4 significant digits."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)
