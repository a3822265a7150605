"""benchmarks/public_names.py: what counts as a public name, and as another file referring to one."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import public_names as PN  # noqa: E402  (the benchmark, read as a module)

SOURCE = """
__all__ = ["shown"]
LIMIT = 3
_hidden = 1
def shown(): ...
class Thing: ...
if True:
    typed: int = 2
"""


def test_public_names_are_top_level_not_private_and_not_declared_in_all() -> None:
    assert PN.definitions(ast.parse(SOURCE)) == ["LIMIT", "Thing", "typed"]


def test_a_builder_string_and_an_attribute_refer_to_a_name() -> None:
    used = PN.identifiers(ast.parse('load("coatsearch.models.stems:conv_stem"); kinds.STAGE_KINDS; x = "a message"'))
    assert {"conv_stem", "STAGE_KINDS", "load"} <= used and "message" not in used


def test_text_names_a_module_by_any_tail_of_its_path() -> None:
    found = PN.mentions("see `vocab.kinds.STAGE_KINDS` and coatsearch.cli:main")
    assert {("kinds", "STAGE_KINDS"), ("vocab.kinds", "STAGE_KINDS"), ("coatsearch.cli", "main")} <= found
    assert PN._tails("coatsearch.vocab.kinds") == ["coatsearch.vocab.kinds", "vocab.kinds", "kinds"]


def test_the_count_excludes_what_other_files_use() -> None:
    public, unused = PN.unused()
    assert "STAGE_KINDS" in public["coatsearch.vocab.kinds"] and "STAGE_KINDS" not in unused["coatsearch.vocab.kinds"]
    assert all(set(unused[m]) <= set(public[m]) for m in public)
