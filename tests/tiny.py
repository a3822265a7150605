"""The tiny test space (tests/spaces/tiny.yaml) and edited copies of it, and the tiny spec trio: one source."""

from __future__ import annotations

from pathlib import Path

from coatsearch.vocab import specs as S

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


# The tiny model, data and recipe of the score tests that run a trial without a space file.
STEM = S.StemSpec("conv", width=8, layers=1, stride=2)
MODEL = S.ModelSpec(
    "m", "coatnet", 16, 1, 5, STEM, (S.StageSpec("C", 1, 16, 1), S.StageSpec("T", 1, 16, 2)), S.BlockSpec(head_size=8)
)
DATA = S.DataSpec("synthetic", eval_size=40)  # 40 validation + 40 test images: room for 2-class subsets
OPTIM = S.OptimSpec(lr=3e-3, batch_size=32, warmup_epochs=0)
