"""Found architectures leave the tool: safetensors weights (never a pickle) and timm's model registry."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import torch

import coatsearch
from coatsearch.cli import main
from coatsearch.errors import UserError
from coatsearch.storage import found

SPACE = Path(__file__).resolve().parents[1] / "spaces" / "tiny_search.yaml"
X = torch.randn(4, 1, 16, 16, generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """The tiny search run once (two named candidates, six sampled points, one seed); its studies folder."""
    root = tmp_path_factory.mktemp("found") / "studies"
    coatsearch.run(coatsearch.load_space(SPACE), study="ts", workers=1, device="cpu", studies_dir=root,
                   report=False, progress=False)  # fmt: skip
    return root


@pytest.fixture(scope="module")
def saved(studies, tmp_path_factory):
    """`export --best 1 --format yaml --save-weights`: (the YAML, the weights file, the trial's model)."""
    out = tmp_path_factory.mktemp("out") / "found.yaml"
    assert main(["export", "ts", "--studies-dir", str(studies), "--best", "1", "--format", "yaml",
                 "--out", str(out), "--save-weights"]) == 0  # fmt: skip
    [(tm, _, _)] = found.best("ts", 1, studies)
    return out, out.with_name(f"found.{tm.architecture}.safetensors"), tm


def test_save_weights_writes_safetensors_that_load_back(studies, saved, capsys):
    from safetensors import safe_open

    out, path, tm = saved
    assert out.exists() and path.exists() and [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []
    raw = path.read_bytes()  # safetensors: the header's length, then its JSON (no pickle, no torch.save zip)
    assert isinstance(json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")]), dict)
    with safe_open(str(path), framework="pt") as f:
        meta = {k: json.loads(v) for k, v in f.metadata().items()}
        state = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    assert (meta["trial"], meta["seed"], meta["architecture"]) == (tm.number, tm.seed, tm.architecture)
    # seeded on the CPU: the recorded metric again, the same one (the trial value is another: validation images)
    assert meta["recorded"] == tm.measured and meta["retrained"] == pytest.approx(tm.measured)
    net = coatsearch.load_weights(path)
    untrained = coatsearch.build(study="ts", trial=tm.number, studies_dir=studies).eval()
    assert sum(p.numel() for p in net.parameters()) == tm.prepared.params
    with torch.no_grad():
        fresh = untrained(X)
        untrained.load_state_dict(state)  # the saved weights in the model the study builds
        assert torch.equal(net(X), untrained(X)) and not torch.equal(net(X), fresh)


@pytest.mark.parametrize("kind", ["pickle", "torch.save", "link", "garbage"])
def test_a_weights_file_that_is_a_pickle_a_link_or_garbage_is_one_line(saved, tmp_path, capsys, kind):
    _, path, _ = saved
    bad = tmp_path / "w.safetensors"
    if kind == "pickle":
        bad.write_bytes(pickle.dumps({"state_dict": {}}))
    elif kind == "torch.save":
        torch.save({"w": torch.zeros(2)}, bad)  # what an older --save-weights wrote
    elif kind == "link":
        bad.symlink_to(path)
    else:
        bad.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{not json")
    with pytest.raises(UserError) as err:
        coatsearch.load_weights(bad)
    msg = str(err.value)
    assert "\n" not in msg and str(bad) in msg
    assert {"pickle": "is a pickle", "torch.save": "is a pickle", "link": "link", "garbage": "not a coatsearch"}[
        kind
    ] in msg


def _rewritten(path: Path, out: Path, size: int, edit) -> Path:
    """`path`'s safetensors file with its header edited by `edit` (its data kept), made `size` bytes (sparse)."""
    import struct

    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    head = json.loads(raw[8 : 8 + n])
    edit(head)
    text = json.dumps(head).encode()
    out.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + n :])
    if size:
        with open(out, "r+b") as fh:
            fh.truncate(size)
    return out


def _one_huge_tensor(head: dict) -> None:
    name = next(k for k in head if k != "__metadata__")
    head[name] = {"dtype": "F32", "shape": [750_000_000], "data_offsets": [0, 3_000_000_000]}


def _beyond_the_file(head: dict) -> None:
    name = next(k for k in head if k != "__metadata__")
    head[name]["data_offsets"] = [0, 10**12]


@pytest.mark.parametrize("kind, size, edit, words", [
    ("a sparse 3 GB file naming one huge tensor", 3_000_100_000, _one_huge_tensor, "do not fit its model spec"),
    ("a small file naming a huge tensor", 0, _one_huge_tensor, "byte range"),
    ("a byte range beyond the file", 0, _beyond_the_file, "byte range"),
    ("a header of 1e15 bytes", 0, lambda head: None, "header claims"),
])  # fmt: skip
def test_a_weights_file_is_checked_header_first_never_read_whole(saved, tmp_path, monkeypatch, kind, size, edit,
                                                                  words):  # fmt: skip
    """load_weights and the timm route read the header by hand and check it against the spec before any tensor
    is read (safetensors' reader is never opened on a damaged file)."""
    import safetensors

    _, path, _ = saved
    bad = _rewritten(path, tmp_path / "w.safetensors", size, edit)
    if kind == "a header of 1e15 bytes":
        with open(bad, "r+b") as fh:
            fh.write((10**15).to_bytes(8, "little"))
    monkeypatch.setattr(safetensors, "safe_open", lambda *a, **k: pytest.fail("a tensor was read"))
    with pytest.raises(UserError) as err:
        coatsearch.load_weights(bad)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(str(bad)) and words in msg, msg


def test_timm_creates_the_found_network_with_the_trial_models_logits(studies, saved, capsys):
    import timm

    from coatsearch import timm_models

    _, path, tm = saved
    assert main(["export", "ts", "--studies-dir", str(studies), "--best", "1", "--format", "timm"]) == 0
    out = capsys.readouterr().out
    [name] = coatsearch.timm_models.register("ts", best=1, studies_dir=studies)
    assert name == f"coatsearch_ts_{tm.architecture}".lower().replace("-", "_") and name in out
    assert timm.is_model(name) and name in timm.list_models("coatsearch_ts_*")
    trial_model = coatsearch.load_weights(timm_models.weights_path(studies, "ts", tm.architecture))
    bare = timm.create_model(name, pretrained=False).eval()
    pretrained = timm.create_model(name, pretrained=True).eval()
    assert sum(p.numel() for p in bare.parameters()) == tm.prepared.params
    with torch.no_grad():
        assert torch.equal(pretrained(X), trial_model(X)) and not torch.equal(bare(X), trial_model(X))
        assert torch.equal(pretrained(X), coatsearch.load_weights(path)(X))  # the same retrain, the same weights
    head = timm.create_model(name, pretrained=True, num_classes=3).eval()  # a new head on the trained body
    assert head(X).shape == (4, 3)
    assert timm_models.register("ts", best=1, studies_dir=studies) == [name]  # registering again is fine


def test_a_timm_name_that_is_taken_is_one_line_and_registers_nothing(studies):
    import timm

    from coatsearch import timm_models

    with pytest.raises(UserError, match="^resnet18: timm already has a model of that name"):
        timm_models.register("ts", best=1, studies_dir=studies, name="resnet18")
    assert timm.create_model("resnet18").__class__.__name__ == "ResNet"
    assert main(["export", "ts", "--studies-dir", str(studies), "--best", "1", "--format", "timm",
                 "--save-weights"]) == 2  # fmt: skip


def _bad_weights(studies: Path, saved, tmp_path: Path, kind: str) -> Path:
    """A copy of the study whose timm weights file is the saved one with its spec or a tensor edited; the file."""
    import shutil

    from coatsearch import timm_models
    from coatsearch.runner import weights

    copy = tmp_path / "studies"
    shutil.copytree(studies / "ts", copy / "ts", ignore=shutil.ignore_patterns("weights"))
    _, path, tm = saved
    content = weights.read(path)
    stages = content["model"]["stages"]
    if kind == "width -5":
        stages[0]["width"] = -5
    elif kind == "width 8192 x depth 100":
        content["model"]["stages"] = [{**s, "width": 8192, "depth": 100} for s in stages]
    else:
        name = next(k for k, v in content["state_dict"].items() if v.dim() == 4)
        content["state_dict"][name] = torch.zeros(3, 3)
    target = timm_models.weights_path(copy, "ts", tm.architecture)
    target.parent.mkdir(parents=True)
    weights.save(target, content)
    return copy


@pytest.mark.parametrize("kind, words", [("width -5", "its model spec cannot be read"),
                                         ("width 8192 x depth 100", "the spec has at least"),
                                         ("a replaced tensor", "do not fit its model spec (tensor")])  # fmt: skip
def test_the_timm_route_bounds_a_weights_files_spec_as_load_weights_does(studies, saved, tmp_path, kind, words):
    import timm

    from coatsearch import timm_models

    copy = _bad_weights(studies, saved, tmp_path, kind)
    before = set(timm.list_models("mynet*"))
    with pytest.raises(UserError) as err:
        timm_models.register("ts", best=1, studies_dir=copy, name="mynet_{architecture}")
    msg = str(err.value)
    assert "\n" not in msg and words in msg and "weights" in msg
    assert set(timm.list_models("mynet*")) == before  # nothing registered
    with pytest.raises(UserError) as again:
        coatsearch.load_weights(timm_models.weights_path(copy, "ts", saved[2].architecture))
    assert str(again.value) == msg  # one check serves both routes


@pytest.mark.parametrize("name", ["{0}", "{nosuch}_x", "{", "{study.x}", "{architecture!r:>999}", "", "---", 5])
def test_a_bad_timm_name_template_is_one_line_and_registers_nothing(studies, name):
    import timm

    from coatsearch import timm_models

    before = set(timm.list_models())
    with pytest.raises(UserError) as err:
        timm_models.register("ts", best=1, studies_dir=studies, name=name)
    assert str(err.value).startswith("name") and "\n" not in str(err.value)
    assert set(timm.list_models()) == before


def test_two_architectures_never_share_one_timm_name(studies):
    import timm

    from coatsearch import timm_models

    with pytest.raises(UserError, match="gives 2 architectures the timm name 'mynet'; one architecture, one name"):
        timm_models.register("ts", best=2, studies_dir=studies, name="mynet")
    assert not timm.is_model("mynet")
    names = timm_models.register("ts", best=2, studies_dir=studies, name="mynet_{architecture}")
    assert len(set(names)) == 2 and all(timm.is_model(n) for n in names)


# A user's script in a fresh process: the found network as a full timm citizen, built by name after `register` or
# from a saved folder (`local-dir:`), with weights, features, another input width and other heads.
_CITIZEN = """
import json, sys
import timm, torch
from safetensors import safe_open
import coatsearch, coatsearch.timm_models
route, where, weights_file = sys.argv[1:4]
if route == "register":
    [name] = coatsearch.timm_models.register("ts", best=1, studies_dir=where)
else:
    name = "local-dir:" + where
x = torch.randn(4, 1, 16, 16, generator=torch.Generator().manual_seed(0))
with safe_open(weights_file, framework="pt") as f:
    norm = json.loads(f.metadata()["norm"])
trained = coatsearch.load_weights(weights_file)
net = timm.create_model(name, pretrained=True).eval()
feats = timm.create_model(name, pretrained=True, features_only=True).eval()
wide = timm.create_model(name, pretrained=True, in_chans=3).eval()
bare = timm.create_model(name, pretrained=True, num_classes=0).eval()
with torch.no_grad():
    out = {"equal": torch.equal(net(x), trained(x)),
           "maps": [list(t.shape) for t in feats(x)],
           "last_map": torch.allclose(feats(x)[-1], net.forward_features(x)),
           "wide": torch.allclose(wide(x.expand(-1, 3, -1, -1)), net(x), atol=1e-5),
           "bare": list(bare(x).shape)}
    net.reset_classifier(5)
    out["reset"] = list(net(x).shape)
cfg = timm.data.resolve_data_config({}, model=net)
out.update(channels=feats.feature_info.channels(), reduction=feats.feature_info.reduction(),
           mean=list(cfg["mean"]), std=list(cfg["std"]), input_size=list(cfg["input_size"]), norm=norm,
           num_features=net.num_features, three=list(timm.create_model(name, num_classes=3)(x).shape))
print(json.dumps(out))
"""


def _citizen(route: str, where: Path, weights_file: Path, cwd: Path) -> dict:
    """`_CITIZEN` run in a fresh Python (this checkout first on the path); its JSON line."""
    import os
    import subprocess
    import sys

    root = str(Path(coatsearch.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, "-c", _CITIZEN, route, str(where), str(weights_file)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check_citizen(got: dict, tm: found.TrialModel) -> None:
    """What a full timm citizen does: the trained logits, features per stage, 3 channels, other heads, the cfg."""
    spec = tm.prepared.model
    assert got["equal"] and got["last_map"] and got["wide"]
    sides = spec.feature_sizes()
    stem_side = -(-spec.image_size // spec.stem.total_stride)
    assert got["maps"] == [[4, c, s, s] for c, s in zip(got["channels"], (stem_side, *sides), strict=True)]
    assert got["channels"][1:] == [s.width for s in spec.stages] and got["reduction"][0] == spec.stem.total_stride
    assert got["bare"] == [4, got["num_features"]] and got["reset"] == [4, 5] and got["three"] == [4, 3]
    mean, std = got["norm"]
    assert len(mean) == spec.in_chans and 0 < mean[0] < 1 and std[0] > 0  # the train pool's, on [0, 1] pixels
    assert (got["mean"], got["std"]) == (mean, std) and got["input_size"] == [1, spec.image_size, spec.image_size]


def test_a_registered_network_is_a_full_timm_citizen_in_a_fresh_process(studies, saved, tmp_path):
    from coatsearch import timm_models

    tm = saved[2]
    assert main(["export", "ts", "--studies-dir", str(studies), "--best", "1", "--format", "timm"]) == 0
    path = timm_models.weights_path(studies, "ts", tm.architecture)
    _check_citizen(_citizen("register", studies, path, tmp_path), tm)


def test_a_saved_folder_loads_in_timm_without_the_study(studies, saved, tmp_path, capsys):
    import shutil

    tm = saved[2]
    copy = tmp_path / "studies"
    shutil.copytree(studies / "ts", copy / "ts")
    out = tmp_path / "shared"
    assert main(["export", "ts", "--studies-dir", str(copy), "--best", "1", "--format", "timm", "--out", str(out)]) == 0
    [folder] = list(out.iterdir())
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
    assert f"local-dir:{folder}" in capsys.readouterr().out
    shutil.rmtree(copy)  # the study is gone: the folder alone must do
    config = json.loads((folder / "config.json").read_text())
    assert config["architecture"] == "coatsearch_found" and config["coatsearch"]["trial"] == tm.number
    _check_citizen(_citizen("folder", folder, folder / "model.safetensors", tmp_path), tm)


def test_timm_folders_are_never_written_inside_a_study(studies):
    assert main(["export", "ts", "--studies-dir", str(studies), "--best", "1", "--format", "timm",
                 "--out", str(studies / "ts" / "shared")]) == 2  # fmt: skip
    assert not (studies / "ts" / "shared").exists()
