"""The tiny test spaces (tests/spaces/tiny.yaml, tiny_search.yaml) and edited copies of them, and the tiny spec
trio: one source."""

from __future__ import annotations

from pathlib import Path

from coatsearch.vocab import specs as S

TINY = Path(__file__).resolve().parent / "spaces" / "tiny.yaml"
TINY_SEARCH = TINY.with_name("tiny_search.yaml")


def tiny_text(*edits: tuple[str, str], source: Path = TINY) -> str:
    """`source` (tiny.yaml) with each (old, new) replacement applied; every `old` must occur."""
    text = source.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


def tiny_variant(tmp_path: Path, *edits: tuple[str, str], name: str = "space.yaml", source: Path = TINY) -> Path:
    """An edited copy of `source` (tiny.yaml) written to `tmp_path / name`."""
    path = tmp_path / name
    path.write_text(tiny_text(*edits, source=source))
    return path


# The tiny model, data and recipe of the score tests that run a trial without a space file.
STEM = S.StemSpec("conv", width=8, layers=1, stride=2)
MODEL = S.ModelSpec(
    "m", "coatnet", 16, 1, 5, STEM, (S.StageSpec("C", 1, 16, 1), S.StageSpec("T", 1, 16, 2)), S.BlockSpec(head_size=8)
)
DATA = S.DataSpec("synthetic", eval_size=40)  # 40 validation + 40 test images: room for 2-class subsets
OPTIM = S.OptimSpec(lr=3e-3, batch_size=32, warmup_epochs=0)
