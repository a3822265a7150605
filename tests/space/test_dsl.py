"""The space DSL: loading, merging, profiles, search dimensions and error messages."""

from pathlib import Path

import pytest

from coatsearch.space.load import SpaceError
from coatsearch.space.objects import load_space

HERE = Path(__file__).parents[1]
TINY = (HERE / "spaces" / "tiny.yaml").read_text()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return path


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(SpaceError) as info:
        load_space(write(tmp_path, text))
    return str(info.value)


def test_candidates_inherit_shared_model_and_override():
    space = load_space(HERE / "spaces" / "tiny.yaml")
    assert [c.name for c in space.candidates] == ["C-C", "C-T"]
    cc, ct = (c.resolve()[0] for c in space.candidates)
    assert cc.layout == "C-C" and ct.layout == "C-T"
    assert cc.stem == ct.stem and cc.stem.width == 8 and cc.stem.layers == 1
    assert [s.stride for s in ct.stages] == [1, 2]
    assert ct.feature_sizes() == (8, 4)
    assert ct.block.head_size == 16 and ct.block.downsample == "eq5"


def test_profile_deep_merges_and_unknown_profile_is_an_error():
    quick = load_space(HERE / "spaces" / "tiny.yaml", "quick")
    assert quick.scores.generalization.per_class == 10 and quick.scores.generalization.epochs == 1
    with pytest.raises(SpaceError, match="no profile 'huge'.*allowed: default, quick"):
        load_space(HERE / "spaces" / "tiny.yaml", "huge")


def test_budget_counts_accept_suffixes():
    space = load_space(HERE / "spaces" / "tiny.yaml")
    assert space.candidates[0].resolve()[2].macs == 400_000


def test_search_dimensions_resolve_into_specs(tmp_path):
    text = (
        TINY
        + "search:\n  model.block.head_size: {choices: [8, 16]}\n  train.lr: {low: 1.0e-4, high: 1.0e-2, log: true}\n"
    )
    space = load_space(write(tmp_path, text))
    dims = {d.path: d for d in space.candidates[1].dims}
    assert dims["model.block.head_size"].choices == (8, 16)
    assert dims["train.lr"].kind == "float" and dims["train.lr"].log
    model, optim, _ = space.candidates[1].resolve({"model.block.head_size": 8, "train.lr": 0.005})
    assert model.block.head_size == 8 and optim.lr == 0.005


def test_unknown_key_names_file_line_field_and_allowed(tmp_path):
    msg = error_of(tmp_path, TINY.replace("block: {head_size: 16}", "block: {head_sise: 16}"))
    assert msg.startswith(f"{tmp_path / 'space.yaml'}:11: field 'model.block.head_sise'")
    assert "unknown key 'head_sise'" in msg and "head_size" in msg


def test_out_of_range_value_names_what_was_found(tmp_path):
    msg = error_of(tmp_path, TINY.replace("tolerance: 0.1", "tolerance: 3"))
    assert ":12: field 'budget.tolerance'" in msg and "found 3" in msg


def test_inconsistent_candidate_points_at_its_line(tmp_path):
    msg = error_of(tmp_path, TINY.replace("- {name: C-T}", "- {name: C-T, depths: [1, 1, 1]}"))
    assert ":16: field 'candidates[1]'" in msg and "'depths' has 3 entries" in msg


def test_conv_before_attention_constraint(tmp_path):
    msg = error_of(tmp_path, TINY.replace("- {name: C-T}", "- {name: T-C, layout: T-C}"))
    assert "field 'candidates[1].layout'" in msg and "C stage after a T stage" in msg


def test_python_tags_are_rejected_not_executed(tmp_path):
    marker = tmp_path / "pwned"
    msg = error_of(tmp_path, f'name: x\ninput: !!python/object/apply:os.system ["touch {marker}"]\n')
    assert ":2: invalid YAML" in msg and "no !!python tags" in msg
    assert not marker.exists()


def test_duplicate_keys_and_broken_yaml(tmp_path):
    assert ":2: duplicate key 'name'" in error_of(tmp_path, "name: a\nname: b\n")
    assert "invalid YAML" in error_of(tmp_path, "a: [1, 2\n")


def test_bad_search_path_points_at_the_search_line(tmp_path):
    msg = error_of(tmp_path, TINY + "search:\n  train.lrr: {low: 0.1, high: 1.0}\n")
    assert ":30: field 'search.train.lrr'" in msg and "unknown field 'lrr'" in msg


def test_search_dimension_needs_a_shape(tmp_path):
    msg = error_of(tmp_path, TINY + "search:\n  train.lr: {low: 0.1}\n")
    assert "field 'search.train.lr'" in msg and "either 'choices' or both 'low' and 'high'" in msg


def test_differing_choice_lists_for_one_path_are_an_error(tmp_path):
    text = TINY.replace("- {name: C-T}", "- {name: C-T, search: {model.block.head_size: {choices: [8, 16]}}}")
    text += "search:\n  model.block.head_size: {choices: [16, 32]}\n"
    assert "same choices for one path" in error_of(tmp_path, text)


def test_pruner_needs_an_accuracy_objective(tmp_path):
    msg = error_of(
        tmp_path, TINY.replace("study: {seeds: [0]", "study: {pruner: median, objective: capacity.train_loss")
    )
    assert "field 'study.pruner'" in msg


def test_duplicate_candidate_names(tmp_path):
    msg = error_of(tmp_path, TINY.replace("- {name: C-T}", "- {name: C-C}"))
    assert "field 'candidates[1].name'" in msg and "used twice" in msg


def test_t_width_must_be_a_multiple_of_head_size(tmp_path):
    msg = error_of(tmp_path, TINY.replace("widths: [16, 32]", "widths: [16, 40]"))
    assert "not a multiple of head_size 16" in msg


@pytest.mark.parametrize("name", sorted(str(p.relative_to(HERE.parent / "spaces")) for p in
                                        (HERE.parent / "spaces").glob("**/*.yaml")))  # fmt: skip
def test_shipped_spaces_load(name):  # the pilots under spaces/pilots/ too
    space = load_space(HERE.parent / "spaces" / name)
    assert space.candidates
    for cand in space.candidates:
        model, _, _ = cand.resolve()
        assert all(n >= 1 for n in model.feature_sizes())


def test_dsl_reference_example_is_a_valid_space(tmp_path):  # the annotated example in docs/dsl.md
    reference = (HERE.parent / "docs" / "dsl.md").read_text(encoding="utf-8")
    block = reference.split("```yaml\n", 1)[1].split("```", 1)[0]
    space = load_space(write(tmp_path, block), "quick")
    assert [c.name for c in space.candidates] == ["C-C-C-C", "V1", "ViT_REL", "baseline-linear", "baseline-cnn"]
    assert space.candidate("ViT_REL").scores.transfer is None
    assert {d.path for d in space.candidate("V1").dims} == {"train.lr", "model.block.head_size"}
