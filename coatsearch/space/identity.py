"""A space's identity: the sha256 of its parsed content as canonical JSON, so comments, blank lines, key order,
quoting and number formatting do not change it (docs/design.md, "A space's identity").

Studies, registrations and reports made before it hold the sha256 of the file's bytes (or only the file's text):
they still read, and a file matches a recorded hash when either of its hashes is that hash (`file_ids`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def bytes_sha256(raw: bytes) -> str:
    """The sha256 hex digest of a file's bytes (the identity recorded before content hashes)."""
    return hashlib.sha256(raw).hexdigest()


def canonical(data: Any) -> str:
    """Parsed YAML as canonical JSON: sorted keys (each key as text), no spaces, UTF-8, dates as ISO text."""

    def plain(x: Any) -> Any:
        if isinstance(x, Mapping):
            return {json.dumps(k) if not isinstance(k, str) else k: plain(v) for k, v in x.items()}
        return [plain(v) for v in x] if isinstance(x, list | tuple) else x

    return json.dumps(plain(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


IDENTITY_FREE = ("decides",)  # keys that change neither what the trials run nor how the verdicts read them


def _measured_part(data: Any) -> Any:
    """Parsed space content without the IDENTITY_FREE keys, at the top level and in each profile: a profile's
    declaration of what it decides is checked before a run (planner.power.undecided), not part of what was run."""
    if not isinstance(data, Mapping):
        return data
    out = {k: v for k, v in data.items() if k not in IDENTITY_FREE}
    profiles = out.get("profiles")
    if isinstance(profiles, Mapping):
        out["profiles"] = {name: _measured_part(p) for name, p in profiles.items()}
    return out


def content_sha256(text: str, where: str | Path = "space file") -> str:
    """The sha256 of the space text's parsed content (canonical, IDENTITY_FREE keys left out); a one-line
    SpaceError when it is not YAML a space file may hold (the loader's checks: size, depth, aliases, duplicate
    keys)."""
    from coatsearch.space.load import parsed

    return _digest(_measured_part(parsed(Path(where), text)))


def _digest(data: Any) -> str:
    """The sha256 of parsed content as canonical JSON."""
    return hashlib.sha256(canonical(data).encode("utf-8")).hexdigest()


def profile_sha256(text: str, profile: str, where: str | Path = "space file") -> str:
    """The identity of what one profile of a space runs: content_sha256 of the space with its other profiles left
    out, so adding or editing another profile of the file leaves a study of this one standing (a one-line
    SpaceError when the text does not parse)."""
    from coatsearch.space.load import parsed

    data = _measured_part(parsed(Path(where), text))
    if isinstance(data, Mapping) and isinstance(data.get("profiles"), Mapping):
        data = {**data, "profiles": {k: v for k, v in data["profiles"].items() if k == profile}}
    return _digest(data)


def file_ids(raw: bytes, where: str | Path = "space file") -> dict[str, str]:
    """A space file's identities: 'content' (when it parses) and 'bytes'; a recorded hash matches either."""
    from coatsearch.errors import UserError

    out = {"bytes": bytes_sha256(raw)}
    try:
        out["content"] = content_sha256(raw.decode("utf-8"), where)
    except (UserError, UnicodeDecodeError):
        pass
    return out


def space_hash(record: Mapping[str, Any]) -> str | None:
    """A study's space hash: the recorded content hash (`space_content_sha256`), else the file hash recorded before
    it (`space_sha256`), else (studies recorded before either) the sha256 of the recorded space text as run, UTF-8;
    None when none was recorded."""
    for key in ("space_content_sha256", "space_sha256"):
        if isinstance(record.get(key), str):
            return str(record[key])
    text = record.get("space_yaml")
    return bytes_sha256(text.encode("utf-8")) if isinstance(text, str) and text else None


def recorded_content(record: Mapping[str, Any]) -> str | None:
    """The content identity of the space a study ran: its recorded content hash, else that of the space text it
    recorded (a study made before content hashes), by today's rule; None when neither is there or parses."""
    from coatsearch.errors import UserError

    if isinstance(record.get("space_content_sha256"), str):
        return str(record["space_content_sha256"])
    text = record.get("space_yaml")
    try:
        return content_sha256(text, str(record.get("source") or "space file")) if isinstance(text, str) else None
    except UserError:
        return None


def recorded_profile(record: Mapping[str, Any]) -> str | None:
    """profile_sha256 of the space text a study recorded, for the profile it ran; None without a text that parses."""
    from coatsearch.errors import UserError

    text = record.get("space_yaml")
    try:
        where = str(record.get("source") or "space file")
        return profile_sha256(text, str(record.get("profile") or "default"), where) if isinstance(text, str) else None
    except UserError:
        return None


def space_ids(record: Mapping[str, Any]) -> set[str]:
    """Every identity a space record holds (content hash, file hash, hash of the recorded text), for matching
    against a hash recorded elsewhere under an older identity."""
    text = record.get("space_yaml")
    found = {record.get("space_content_sha256"), record.get("space_sha256"),
             bytes_sha256(text.encode("utf-8")) if isinstance(text, str) and text else None}  # fmt: skip
    return {x for x in found if isinstance(x, str)}
