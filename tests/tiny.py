"""The tiny test space and edited copies of it, shared by the test modules."""

from __future__ import annotations

from pathlib import Path

TINY = Path(__file__).resolve().parent / "spaces" / "tiny.yaml"


def tiny_text(*edits: tuple[str, str]) -> str:
    """tiny.yaml with each (old, new) replacement applied; every `old` must occur."""
    text = TINY.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


def tiny_variant(tmp_path: Path, *edits: tuple[str, str], name: str = "space.yaml") -> Path:
    """An edited copy of tiny.yaml written to `tmp_path / name`."""
    path = tmp_path / name
    path.write_text(tiny_text(*edits))
    return path
