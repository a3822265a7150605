"""YAML → validated SpaceDoc: safe loading, profiles, spec checks, errors with file:line and field path."""

from __future__ import annotations

import copy
import dataclasses
import re
import stat
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # no stubs installed here (types-PyYAML)
from pydantic import ValidationError

from coatsearch import scores
from coatsearch.errors import UserError
from coatsearch.space import schema
from coatsearch.vocab import kinds, samplers, specs

_SEARCH_ROOTS = ("model", "train")  # a search path starts with one of these
SHARED = ("train", "search", "budget", "scores")  # shared sections merged into each candidate besides `model`
_MODEL_KEYS = tuple(f.name for f in dataclasses.fields(schema.CandidateSpec) if f.name not in ("name", *SHARED))
_UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")
MISSING = ("missing", "missing_argument", "missing_keyword_only_argument")

MAX_BYTES = 1_000_000  # a space file's size
_MAX_NODES = 100_000  # YAML values after expanding anchors and aliases
_MAX_DEPTH = 100  # nesting of mappings and lists


class SpaceError(UserError):
    """A space file is invalid: one message with file, line, field path, found and allowed."""


def load_document(path: str | Path, profile: str = "default", text: str | None = None) -> schema.SpaceDoc:
    """Read a space file, apply `profile`, validate it; raise SpaceError on any problem.

    `text`, when given, is the file's content (e.g. the copy recorded with a study): `path` then only names it.
    """
    path = Path(path)
    text = _read_space_text(path) if text is None else text
    root = _compose(path, text)
    data = _construct(path, text)
    if not isinstance(data, dict):
        raise SpaceError(f"{path}:1: the file must be a mapping of sections, found {type(data).__name__}")
    data = _apply_profile(path, root, data, profile)
    data = {k: v for k, v in data.items() if not str(k).startswith("x-")}  # scratch keys for YAML anchors
    data.setdefault("name", path.stem)
    _check_shared_model(path, root, data.get("model"))
    try:
        doc = schema.document().validate_python(_merge_candidates(data))
    except ValidationError as exc:
        raise SpaceError(_describe(path, root, data, exc)) from None
    for loc, message in _check_document(doc):
        loc = _origin(data, loc)
        raise SpaceError(f"{path}:{_line(root, loc)}: field '{_dotted(loc)}': {message}")
    return doc


def where(path: str | Path, loc: tuple, text: str | None = None) -> str:
    """'file:line: field 'a.b'' for a candidate's field `loc`, at the line where the value was written."""
    path = Path(path)
    text = _read_space_text(path) if text is None else text
    data = _construct(path, text)
    loc = _origin(data, loc) if isinstance(data, dict) else loc
    return f"{path}:{_line(_compose(path, text), loc)}: field '{_dotted(loc)}'"


def _check_document(doc: schema.SpaceDoc) -> Iterator[tuple[tuple, str]]:
    """Yield (field location, message) for every constraint, model shape or search dimension that is invalid."""
    seen: set[str] = set()
    choices: dict[str, tuple] = {}
    prunes = samplers.PRUNERS.entry(doc.study.pruner).prunes
    if prunes and doc.study.objectives:
        yield ("study", "pruner"), "Optuna does not prune multi-objective studies (study.objectives): use pruner: none"
    elif prunes and (doc.study.direction != "maximize" or not doc.study.objective.endswith("acc")):
        yield ("study", "pruner"), "a pruner needs an accuracy objective ('<score>.eval_acc') and direction maximize"
    yield from _objective_problem(doc)
    if why := sampler_problem(doc):
        yield ("study", "sampler"), why
    for i, cand in enumerate(doc.candidates):
        if cand.name in seen:
            yield ("candidates", i, "name"), f"candidate name '{cand.name}' is used twice"
        seen.add(cand.name)
        if doc.study.baselines and cand.name in specs.BASELINES:
            yield ("candidates", i, "name"), f"'{cand.name}' is a regime baseline's name (study.baselines is on)"
        yield from _layout_problems(doc, i, cand)
        problem = _model_problem(cand, doc.input)
        if problem:
            yield ("candidates", i), problem
        for path, dim in cand.search.items():
            if dim is None:
                continue
            loc = ("search", path) if doc.search.get(path) == dim else ("candidates", i, "search", path)
            if dim.choices is not None and len(dim.choices) > 1:
                if choices.setdefault(path, tuple(map(str, dim.choices))) != tuple(map(str, dim.choices)):
                    yield loc, "every candidate must search the same choices for one path (Optuna needs one list)"
            if path.split(".", 1)[0] not in _SEARCH_ROOTS or "." not in path:
                yield loc, "a search path starts with 'model.' or 'train.'"
                continue
            for value in dim.choices if dim.choices is not None else (dim.low, dim.high):
                try:
                    problem = _model_problem(schema.with_params(cand, {path: value}), doc.input)
                except ValueError as exc:
                    problem = _first_error(exc)
                if problem:
                    yield loc, f"value {value!r} is not valid there: {problem}"
                    break


def sampler_problem(doc: schema.SpaceDoc) -> str:
    """Why `study.sampler` does not fit the space's dimensions or objectives ("" when it does), by what its
    registry entry says it takes (vocab.samplers.SamplerKind)."""
    name, kind = doc.study.sampler, samplers.SAMPLERS.entry(doc.study.sampler)
    dims = {p: d for c in doc.candidates for p, d in c.search.items() if d is not None}
    varied = {p: d for p, d in dims.items() if not (d.choices is not None and len(d.choices) == 1)}
    general = [n for n, k in samplers.SAMPLERS.items() if k.replays]  # the general-purpose ones
    either = " or ".join(filter(None, (", ".join(general[:-1]), general[-1])))
    if not kind.single and not doc.study.objectives:
        return f"{name} is for multi-objective studies (study.objectives); use {either} for one objective"
    if not kind.multi and doc.study.objectives:
        return f"{name} takes one objective (study.objective), not study.objectives; use {either}"
    if not kind.choices and (choice := next((p for p, d in varied.items() if d.choices is not None), None)):
        return f"{name} samples int and float ranges only, and '{choice}' is a choice list; use {either}"
    if not kind.choices and not varied:
        return f"{name} needs at least one int or float range to sample; this space has none"
    if kind.grid and (cont := next((p for p, d in dims.items() if d.values() is None), None)):
        return f"{name} needs a finite space, and '{cont}' is a continuous range (give it choices or an int step)"
    if kind.grid:
        from coatsearch.vocab.specs import POINTS_MAX

        sized = [(specs.grid_size(c.search), c.name) for c in doc.candidates if c.search]  # counted, not listed
        sizes = [n for n, _ in sized]
        if sized and max(sized)[0] > POINTS_MAX:
            return (f"the grid of candidate '{max(sized)[1]}' holds {max(sized)[0]:,} points; the grid sampler plans "
                    f"at most {POINTS_MAX:,} (use fewer choices, or the {either} sampler)")  # fmt: skip
        if sizes and doc.study.samples > min(sizes):
            return f"study.samples ({doc.study.samples}) is more than the grid holds ({min(sizes)} points)"
    return ""


def _layout_problems(doc: schema.SpaceDoc, i: int, cand: schema.CandidateSpec) -> Iterator[tuple[tuple, str]]:
    """The constraints on a candidate's layout: its own, or, when it searches the layout, some sampled one."""
    dims = sorted((p, d.choices) for p, d in cand.search.items() if d is not None and _is_layout(p))
    if not dims:
        if why := kinds.constraint_problem(doc.constraints.conv_before_attention, cand.layout):
            yield ("candidates", i, "layout"), why
        return
    if any(d is None for _, d in dims):
        return  # a non-choice layout dimension: the value check names it
    if not kinds.satisfiable(doc.constraints.conv_before_attention, cand.layout, [(p, c or ()) for p, c in dims]):
        path = dims[0][0]
        loc = ("search", path) if path in doc.search else ("candidates", i, "search", path)
        yield loc, "no sampled layout satisfies constraints.conv_before_attention: every point would be rejected"


def _is_layout(path: str) -> bool:
    return path == "model.layout" or (path.startswith("model.layout.") and path.rsplit(".", 1)[1].isdigit())


def _objective_problem(doc: schema.SpaceDoc) -> Iterator[tuple[tuple, str]]:
    """The study objective must be a metric some candidate's enabled scores record (the others fall back)."""
    measured = [m.key for c in doc.candidates for score, _ in scores.enabled(c.scores) for m in score.metrics]
    listed = ", ".join(dict.fromkeys(measured)) or "nothing (no score is enabled)"
    if doc.study.objectives:  # multi-objective: every candidate must measure every objective (no fallback)
        trained = [(c.name, c.scores) for c in doc.candidates]  # the regime baselines train the shared scores
        trained += [(name, doc.scores) for name in specs.BASELINES] if doc.study.baselines else []
        for i, key in enumerate(doc.study.objectives):
            for name, section in trained:
                if key not in [m.key for score, _ in scores.enabled(section) for m in score.metrics]:
                    what = "the regime baseline" if name in specs.BASELINES and doc.study.baselines else "candidate"
                    yield ("study", "objectives", i), f"{what} '{name}' does not measure '{key}'; {listed}" + (
                        " (baselines train the shared scores: enable it there or set study.baselines: false)"
                        if what != "candidate" else "")  # fmt: skip
                    return
    elif doc.study.objective not in measured:
        yield ("study", "objective"), f"no enabled score measures '{doc.study.objective}'; measured: {listed}"


def _model_problem(cand: schema.CandidateSpec, inp: specs.InputSpec) -> str:
    """Why `cand` cannot be built for `inp` images, or is too large to size ("" when it can)."""
    try:
        floor = cand.model(inp).macs_floor()
    except ValueError as exc:
        return str(exc)
    if floor > specs.MACS_MAX:
        return f"the model needs at least {floor:.3g} MACs per image; allowed: at most {specs.MACS_MAX:.0e}"
    return ""


def _first_error(exc: Exception) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc)
    err = exc.errors()[0]
    if err["type"] in _UNKNOWN:
        return f"unknown field '{err['loc'][-1]}'"
    msg = re.sub(r"^(Value error|Assertion failed), ", "", err["msg"])
    return f"{'.'.join(map(str, err['loc']))}: {msg}" if err["loc"] else msg


def _origin(data: dict, loc: tuple) -> tuple:
    """Where a candidate's value at `loc` was written: the candidate itself, or the shared section it came from."""
    cands = data.get("candidates")
    if len(loc) < 3 or loc[0] != "candidates" or not isinstance(cands, list) or loc[1] >= len(cands):
        return loc
    rest = loc[2:]
    if _has(cands[loc[1]], rest):
        return loc
    shared = rest if rest[0] in SHARED else ("model", *rest)
    return shared if _has(data, shared) else loc


def _has(node: Any, loc: tuple) -> bool:
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return False
    return True


def _check_shared_model(path: Path, root: yaml.Node | None, shared: Any) -> None:
    """The shared `model` section holds model fields only (a `train:` there would be merged silently)."""
    for key in shared if isinstance(shared, dict) else ():
        if key not in _MODEL_KEYS:
            loc = ("model", key)
            hint = f" ('{key}' is a top-level section)" if key in SHARED else ""
            raise SpaceError(
                f"{path}:{_line(root, loc)}: field '{_dotted(loc)}': unknown key '{key}' under 'model'{hint}; "
                f"allowed: {', '.join(_MODEL_KEYS)}"
            )


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
                **_deep_merge(shared, own),
                "train": _deep_merge(_mapping(data.get("train")), _mapping(cand.get("train"))),
                "search": {**_mapping(data.get("search")), **_mapping(cand.get("search"))},
                "budget": _deep_merge(_mapping(data.get("budget")), _mapping(cand.get("budget"))) or None,
                "scores": _deep_merge(_mapping(data.get("scores")), _mapping(cand.get("scores"))),
            }
        merged.append(cand)
    return {**data, "candidates": merged}


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def read_text(path: str | Path) -> str:
    """A space file's text, checked as load_document reads it (a regular UTF-8 file within MAX_BYTES)."""
    return _read_space_text(Path(path))


def _read_space_text(path: Path) -> str:
    """The space file's text: a regular file of at most MAX_BYTES, UTF-8; a one-line SpaceError otherwise.

    The type is checked with stat before opening, so a FIFO or a device such as /dev/zero never blocks.
    """
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise SpaceError(f"{path}: not a regular file (a space file is a YAML text file)")
        if info.st_size > MAX_BYTES:
            raise SpaceError(f"{path}: {info.st_size} bytes; a space file may have at most {MAX_BYTES}")
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise SpaceError(f"{path}: cannot read the space file ({exc.strerror or exc})") from None
    if len(raw) > MAX_BYTES:
        raise SpaceError(f"{path}: more than {MAX_BYTES} bytes; a space file may have at most {MAX_BYTES}")
    nul = raw.find(b"\0")
    if nul >= 0:
        raise SpaceError(f"{path}: a binary file (NUL byte at offset {nul}), not YAML text")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpaceError(f"{path}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None


def parsed(path: Path, text: str) -> Any:
    """The space text as plain data, after the checks load_document makes (size, depth, aliases, duplicate keys)."""
    _compose(path, text)
    return _construct(path, text)


def _compose(path: Path, text: str) -> yaml.Node | None:
    """Parse to a node tree (for line numbers), rejecting duplicate keys and alias bombs."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise SpaceError(_yaml_message(path, exc)) from None
    except RecursionError:
        raise SpaceError(f"{path}: invalid YAML: nested too deeply") from None
    _check_size(path, root)
    _check_duplicates(path, root)
    return root


def _construct(path: Path, text: str) -> Any:
    """Build plain Python data with the safe loader only (a !!python tag is an error, never run)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpaceError(_yaml_message(path, exc)) from None
    except RecursionError:
        raise SpaceError(f"{path}: invalid YAML: nested too deeply") from None


def _check_size(path: Path, root: yaml.Node | None) -> None:
    """Reject a document whose aliases expand to more than _MAX_NODES nodes, or deeper than _MAX_DEPTH, or refer
    to themselves (a node shared through anchors counts once per use, as the loaded data holds it)."""
    size: dict[int, int] = {}  # node id -> expanded node count, shared nodes computed once
    stack = [(root, 0, False)] if root is not None else []
    while stack:
        node, depth, done = stack.pop()
        kids = _children(node)
        if done:
            size[id(node)] = 1 + sum(size[id(k)] for k in kids)
            if size[id(node)] > _MAX_NODES:
                raise SpaceError(
                    f"{path}:{node.start_mark.line + 1}: YAML anchors and aliases expand to more than "
                    f"{_MAX_NODES} values; at most {_MAX_NODES} are allowed"
                )
            continue
        if id(node) in size:
            continue
        if depth > _MAX_DEPTH:
            raise SpaceError(f"{path}:{node.start_mark.line + 1}: invalid YAML: nested deeper than {_MAX_DEPTH}")
        size[id(node)] = -1  # in progress: meeting it again below means an alias refers to itself
        stack.append((node, depth, True))
        for kid in kids:
            if size.get(id(kid)) == -1:
                raise SpaceError(f"{path}:{kid.start_mark.line + 1}: invalid YAML: an alias refers to itself")
            stack.append((kid, depth + 1, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _yaml_message(path: Path, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = f":{mark.line + 1}" if mark is not None else ""
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())  # one line, whatever the error
    if "python/" in str(exc):
        problem = f"{problem} (only plain YAML is allowed: no !!python tags)"
    return f"{path}{line}: invalid YAML: {problem}"


def _check_duplicates(path: Path, root: yaml.Node | None) -> None:
    """Reject a mapping with a key twice; each node is visited once, however many aliases share it."""
    seen_nodes: set[int] = set()
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str | int] = set()  # scalar keys, and the ids of complex ones
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value in keys:
                    raise SpaceError(f"{path}:{key.start_mark.line + 1}: duplicate key '{key.value}'")
                keys.add(key.value if isinstance(key, yaml.ScalarNode) else id(key))
        stack.extend(_children(node))


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
    return _deep_merge(data, patch)


def _deep_merge(base: dict, patch: dict) -> dict:
    """Return `base` with `patch` merged in: mappings merge recursively, anything else replaces."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _describe(path: Path, root: yaml.Node | None, data: dict, exc: ValidationError) -> str:
    """Turn pydantic's first error into 'file:line: field a.b[2].c: message (found X)'."""
    err = exc.errors()[0]
    written = tuple(p for p in err["loc"] if not (isinstance(p, str) and _is_union_tag(p)))
    msg = re.sub(r"^(Value error|Assertion failed), ", "", err["msg"])
    written, msg = _refine(data, written, msg)
    loc = _origin(data, written)
    found = err.get("input")
    shown = "" if err["type"] in MISSING or isinstance(found, dict) else f" (found {found!r})"
    if err["type"] in _UNKNOWN:
        msg = f"unknown key '{loc[-1]}'; allowed: {_allowed_keys(written)}"
        shown = ""
    return f"{path}:{_line(root, loc)}: field '{_dotted(loc)}': {msg}{shown}"


def _refine(data: dict, loc: tuple, msg: str) -> tuple[tuple, str]:
    """A check across fields may name the field it is about, 'key: message' (nested: 'a: b: message'); point
    the location at that field when the file writes it (else the message reads 'key message')."""
    while m := re.match(r"^(\w+): (.*)$", msg):
        if not _has(data, _origin(data, (*loc, m.group(1)))):
            return loc, f"{m.group(1)} {m.group(2)}"
        loc, msg = (*loc, m.group(1)), m.group(2)
    return loc, msg


def _is_union_tag(part: str) -> bool:
    return part.startswith(("function-", "literal[", "list[", "tagged-union")) or part in {
        "int",
        "float",
        "str",
    }


def _allowed_keys(loc: tuple) -> str:
    """The keys the spec at `loc[:-1]` accepts, as a space file writes them."""
    cls: Any = schema.SpaceDoc
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        hints = typing.get_type_hints(cls, include_extras=True) if dataclasses.is_dataclass(cls) else {}
        cls = _spec_of(hints.get(part))
        if cls is None:
            return "see the DSL reference in docs/dsl.md"
    return ", ".join(f.name for f in dataclasses.fields(cls))


def _spec_of(annotation: Any) -> Any:
    """The spec dataclass inside an annotation (X, X | None, tuple[X, ...], Annotated[X, ...]), or None."""
    if annotation is scores.ScoresSection:  # a `scores:` field (scores.ScoresField): the registry's spec now
        return scores.scores_spec()
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return annotation
    for arg in typing.get_args(annotation):
        found = _spec_of(arg)
        if found is not None:
            return found
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
