"""YAML → validated document: safe loading, profiles, schema checks, errors with file:line and field path."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from coatsearch.errors import UserError
from coatsearch.schema import SpaceDoc
from coatsearch.space import check_search


class SpaceError(UserError):
    """A space file is invalid: one message with file, line, field path, found and allowed."""


def load_document(path: str | Path, profile: str = "default") -> SpaceDoc:
    """Read a space file, apply `profile`, validate it; raise SpaceError on any problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpaceError(f"{path}: cannot read the space file ({exc.strerror or exc})") from None
    root = _compose(path, text)
    data = _construct(path, text)
    if not isinstance(data, dict):
        raise SpaceError(f"{path}:1: the file must be a mapping of sections, found {type(data).__name__}")
    data = _apply_profile(path, root, data, profile)
    data = {k: v for k, v in data.items() if not str(k).startswith("x-")}  # scratch keys for YAML anchors
    data.setdefault("name", path.stem)
    try:
        doc = SpaceDoc.model_validate(_merge_candidates(data))
    except ValidationError as exc:
        raise SpaceError(_describe(path, root, exc)) from None
    for loc, message in check_search(doc):
        raise SpaceError(f"{path}:{_line(root, loc)}: field '{_dotted(loc)}': {message}")
    return doc


def _merge_candidates(data: dict) -> dict:
    """Give every candidate the shared `model`, `train`, `search`, `budget` and `scores`; its own keys win."""
    shared = data.get("model") or {}
    cands = data.get("candidates", [{"name": "model"}])
    if not isinstance(shared, dict) or not isinstance(cands, list):
        return data
    merged = []
    for cand in cands:
        if isinstance(cand, dict):
            own = {k: v for k, v in cand.items() if k not in ("train", "search", "budget", "scores")}
            cand = {
                **deep_merge(shared, own),
                "train": deep_merge(_mapping(data.get("train")), _mapping(cand.get("train"))),
                "search": {**_mapping(data.get("search")), **_mapping(cand.get("search"))},
                "budget": deep_merge(_mapping(data.get("budget")), _mapping(cand.get("budget"))) or None,
                "scores": deep_merge(_mapping(data.get("scores")), _mapping(cand.get("scores"))),
            }
        merged.append(cand)
    return {**data, "candidates": merged}


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _compose(path: Path, text: str) -> yaml.Node | None:
    """Parse to a node tree (for line numbers), rejecting duplicate keys."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise SpaceError(_yaml_message(path, exc)) from None
    _check_duplicates(path, root)
    return root


def _construct(path: Path, text: str) -> Any:
    """Build plain Python data with the safe loader only (a !!python tag is an error, never run)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpaceError(_yaml_message(path, exc)) from None


def _yaml_message(path: Path, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = f":{mark.line + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    if "python/" in str(exc):
        problem = f"{problem} (only plain YAML is allowed: no !!python tags)"
    return f"{path}{line}: invalid YAML: {problem}"


def _check_duplicates(path: Path, node: yaml.Node | None) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if key.value in seen:
                raise SpaceError(f"{path}:{key.start_mark.line + 1}: duplicate key '{key.value}'")
            seen.add(key.value)
            _check_duplicates(path, value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check_duplicates(path, item)


def _apply_profile(path: Path, root: yaml.Node | None, data: dict, profile: str) -> dict:
    """Deep-merge `profiles[profile]` into the document and drop the `profiles` section."""
    profiles = data.pop("profiles", None) or {}
    if not isinstance(profiles, dict):
        raise SpaceError(f"{path}:{_line(root, ('profiles',))}: field 'profiles' must be a mapping")
    if profile not in profiles and profile != "default":
        allowed = ", ".join(sorted({"default", *profiles})) or "default"
        raise SpaceError(f"{path}: no profile '{profile}' in this space; allowed: {allowed}")
    patch = profiles.get(profile) or {}
    if not isinstance(patch, dict):
        raise SpaceError(f"{path}:{_line(root, ('profiles', profile))}: profile '{profile}' must be a mapping")
    return deep_merge(data, patch)


def deep_merge(base: dict, patch: dict) -> dict:
    """Return `base` with `patch` merged in: mappings merge recursively, anything else replaces."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _describe(path: Path, root: yaml.Node | None, exc: ValidationError) -> str:
    """Turn pydantic's first error into 'file:line: field a.b[2].c: message (found X)'."""
    err = exc.errors()[0]
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and _is_union_tag(p)))
    field = _dotted(loc)
    msg = re.sub(r"^(Value error|Assertion failed), ", "", err["msg"])
    found = err.get("input")
    shown = "" if err["type"] == "missing" or isinstance(found, dict) else f" (found {found!r})"
    if err["type"] == "extra_forbidden":
        msg = f"unknown key '{loc[-1]}'; allowed: {_allowed_keys(exc, loc)}"
        shown = ""
    return f"{path}:{_line(root, loc)}: field '{field}': {msg}{shown}"


def _is_union_tag(part: str) -> bool:
    return part.startswith(("function-", "literal[", "list[", "tagged-union")) or part in {
        "int",
        "float",
        "str",
    }


def _allowed_keys(exc: ValidationError, loc: tuple) -> str:
    model = SpaceDoc
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return "see the DSL reference in README.md"
        model = _model_of(field.annotation)
        if model is None:
            return "see the DSL reference in README.md"
    return ", ".join(model.model_fields)


def _model_of(annotation: Any) -> Any:
    from pydantic import BaseModel

    candidates = [annotation, *getattr(annotation, "__args__", ())]
    for cand in candidates:
        for inner in (cand, *getattr(cand, "__args__", ())):
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                return inner
    return None


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _line(root: yaml.Node | None, loc: tuple) -> int:
    """The line of the deepest node on `loc` that exists in the file (1-based)."""
    node, line = root, (root.start_mark.line + 1 if root is not None else 1)
    for part in loc:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == part:
                    nxt, line = value, key.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            nxt = node.value[part]
            line = nxt.start_mark.line + 1
        if nxt is None:
            break
        node = nxt
    return line
