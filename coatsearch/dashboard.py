"""optuna-dashboard on a study's JournalStorage: the same store of record the report reads."""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path

from coatsearch.errors import UserError


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


def serve(study: str, studies_dir: Path, host: str = "127.0.0.1", port: int = 8080) -> None:
    """Check the study exists, print its URL, and serve optuna-dashboard until Ctrl-C."""
    from coatsearch import store

    try:
        import optuna_dashboard
    except ImportError:
        raise UserError("optuna-dashboard is not installed: pip install 'coatsearch[dashboard]'") from None
    store.load_study(Path(studies_dir), study)  # a missing study is a UserError with the expected path
    storage = store.open_storage(store.storage_file(Path(studies_dir), study))
    if not is_loopback(host):
        print(
            f"coatsearch: warning: serving on {host}, not loopback: the dashboard has no authentication, and "
            "anyone who can reach this port can read the study and write notes to it",
            file=sys.stderr,
            flush=True,
        )
    print(f"coatsearch: dashboard for study '{study}' at {url(host, port)} (Ctrl-C stops it)", flush=True)
    try:
        optuna_dashboard.run_server(storage, host=host, port=port)
    except OSError as exc:
        raise UserError(f"cannot serve on {host}:{port}: {exc}") from None


def save_note(study, text: str, verdicts: dict) -> None:
    """The study's optuna-dashboard note and user attr 'report_verdicts'; unchanged ones are not written again."""
    from optuna_dashboard import get_note
    from optuna_dashboard import save_note as save

    if get_note(study) != text:  # the journal only grows: write a note only when it changed
        save(study, text)
    if study.user_attrs.get("report_verdicts") != verdicts:
        study.set_user_attr("report_verdicts", verdicts)
