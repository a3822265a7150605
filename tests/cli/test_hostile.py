"""Hostile and broken input: every case exits 2 with one line, no traceback, and writes nothing."""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from torch import nn

from coatsearch.cli import main
from coatsearch.errors import UserError
from coatsearch.scores import ScoresSpec
from coatsearch.scores.transfer import TransferSpec
from coatsearch.space.load import MAX_BYTES, load_document
from coatsearch.space.objects import load_space
from coatsearch.storage import paths
from coatsearch.training import data as D
from coatsearch.training import subsets
from coatsearch.training.datacheck import check_matches
from coatsearch.training.fit import fit
from coatsearch.training.history import NonFinite, NonFiniteLoss, check_finite
from coatsearch.vocab.specs import DataSpec, OptimSpec, SubsetSpec
from tests.tiny import TINY, tiny_text, tiny_variant

HERE = Path(__file__).parents[1]


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _refused(argv: list[str], tmp_path: Path, capsys, expected: str, code: int = 2) -> str:
    """Run the CLI in `tmp_path`; assert exit `code`, one line on stderr containing `expected`, nothing written."""
    before = _listing(tmp_path)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse
            rc = exc.code
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert rc == code, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert expected in err, err
    assert _listing(tmp_path) == before
    return err


def _space(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------ 1. names cannot escape


@pytest.mark.parametrize("study", ["../../x", "/abs/path", "", "a b", ".", "..", "x/y", "a\\b", "é", "n" * 101])
def test_study_names_that_escape_or_are_not_one_component(tmp_path, capsys, study):
    (tmp_path / "a" / "b").mkdir(parents=True)
    argv = ["run", str(TINY), "--study", study, "--studies-dir", "a/b/studies", "--reports-dir", "a/b/reports"]
    _refused(argv, tmp_path, capsys, "study name")


@pytest.mark.parametrize("command", ["report", "dashboard"])
def test_report_and_dashboard_names_are_checked(tmp_path, capsys, command):
    _refused([command, "../x", "--studies-dir", "studies"], tmp_path, capsys, "study name '../x' is not allowed")


def test_space_name_and_profile_cannot_escape(tmp_path, capsys):
    text = TINY.read_text().replace("name: tiny", "name: ..")
    _refused(["run", str(_space(tmp_path, text))], tmp_path, capsys, "study name '..'")
    text = TINY.read_text().replace("  quick:", "  a/b:")
    _refused(["run", str(_space(tmp_path, text)), "--profile", "a/b"], tmp_path, capsys, "study name 'tiny-a/b'")


@pytest.mark.parametrize("flag", ["--studies-dir", "--reports-dir"])
def test_a_file_where_a_root_folder_is_expected(tmp_path, capsys, flag):
    (tmp_path / "f").write_text("x")
    _refused(["run", str(TINY), flag, "f"], tmp_path, capsys, "is a file, not a folder")
    _refused(["run", str(TINY), flag, "f/sub"], tmp_path, capsys, "is a file, not a folder")


def test_a_study_folder_linked_outside_its_root(tmp_path, capsys):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "tiny").symlink_to(tmp_path / "elsewhere")
    _refused(["run", str(TINY), "--studies-dir", "studies"], tmp_path, capsys, "leads outside it")


def test_path_rule_accepts_plain_names(tmp_path):
    assert paths.check_name("tiny-quick.v2_1") == "tiny-quick.v2_1"
    assert paths.study_folder(tmp_path / "new" / "studies", "x") == (tmp_path / "new" / "studies" / "x").resolve()
    assert not (tmp_path / "new").exists()  # checking writes nothing


# ------------------------------------------------------------------------------ 2. bounded resources


def _bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "text, expected",
    [
        (_bomb(9), "expand to more than 100000 values"),
        ("a: &a [*a]\n", "an alias refers to itself"),
        ("a: " + "[" * 3000 + "]" * 3000 + "\n", "nested"),
        ("a: " + "[" * 150 + "]" * 150 + "\n", "nested"),
        ("# " + "x" * MAX_BYTES + "\n", f"at most {MAX_BYTES}"),
        ("name: tiny\x00\x01\x02\n", "a binary file (NUL byte"),
        ("{a: 1, a: 2}\n", "duplicate key 'a'"),
    ],
)
def test_bombs_and_binary_space_files(tmp_path, capsys, text, expected):
    _refused(["show", str(_space(tmp_path, text))], tmp_path, capsys, expected)


def test_non_utf8_space_file(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_bytes(b"name: tiny\nscale: \xff\xfe caf\xe9\n")
    _refused(["show", str(path)], tmp_path, capsys, "s.yaml:2: not UTF-8 text (byte 0xff")


def test_an_alias_fan_out_under_the_cap_is_accepted():
    """9**5 values (under the cap) compose and pass the checks; shared nodes are walked once, not per use."""
    from coatsearch.space.load import _compose

    assert _compose(Path("x.yaml"), _bomb(5)) is not None


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "folder"])
def test_non_regular_space_files_do_not_block(tmp_path, capsys, special):
    target = {"/dev/zero": Path("/dev/zero"), "fifo": tmp_path / "fifo", "folder": tmp_path}[special]
    if special == "fifo":
        os.mkfifo(target)
    _refused(["show", str(target)], tmp_path, capsys, "not a regular file")


@pytest.mark.parametrize(
    "flags, expected",
    [
        (["--workers", "0"], "allowed: an integer 1..64"),
        (["--workers", "1000"], "allowed: an integer 1..64"),
        (["--workers", "two"], "allowed: an integer 1..64"),
        (["--trials", "0"], "allowed: an integer 1..100000"),
        (["--trials", "100001"], "allowed: an integer 1..100000"),
        (["--backend", "ray", "--cpus-per-trial", "nan"], "finite number > 0"),
        (["--backend", "ray", "--gpus-per-trial", "-1"], "finite number > 0"),
    ],
)
def test_flag_bounds(tmp_path, capsys, flags, expected):
    _refused(["run", str(TINY), *flags], tmp_path, capsys, expected)


def _edit(old: str, new: str) -> str:
    return tiny_text((old, new))


BOUNDS = [  # (edit of tiny.yaml, what the one line must say)
    (("widths: [16, 32]", "widths: [16, 9000]"), "less than or equal to 8192"),
    (("depths: [1, 1]", "depths: [1, 101]"), "less than or equal to 100"),
    (("width: 8, stride: 2", "width: 100000, stride: 2"), "less than or equal to 8192"),
    (("layers: 1", "layers: 9"), "less than or equal to 8"),
    (("image_size: 16", "image_size: 4096"), "less than or equal to 1024"),
    (("block: {head_size: 16}", "block: {head_size: 2048}"), "less than or equal to 1024"),
    (("block: {head_size: 16}", "block: {head_size: 16, window_size: 5000}"), "less than or equal to 1024"),
    (("block: {head_size: 16}", "block: {head_size: 16, mlp_ratio: 1000}"), "less than or equal to 16"),
    (("batch_size: 64", "batch_size: 100000"), "less than or equal to 8192"),
    (("eval_size: 100", "eval_size: 10000000"), "less than or equal to 200000"),
    (("per_class: 20, epochs: 2", "per_class: 1000000, epochs: 2"), "less than or equal to 100000"),
    (("per_class: 20, epochs: 2", "per_class: 20, epochs: 100000"), "less than or equal to 1000"),
    (("warmup_epochs: 0", "warmup_epochs: 5000"), "less than or equal to 1000"),
    (("classes: 10}", "classes: 1000000}"), "less than or equal to 100000"),
    (("study: {seeds: [0]", "study: {seeds: [" + ", ".join(map(str, range(101))) + "]"), "at most 100 items"),
    (("study: {seeds: [0]", "study: {seeds: [-1]"), "greater than or equal to 0"),
    (("study: {seeds: [0]", "study: {seeds: [0], samples: 1000000"), "less than or equal to 10000"),
    (("macs: 0.4M", "macs: 5T"), "allowed: a whole count 1..1e+12"),
    (
        (
            "  generalization: {per_class: 20, epochs: 2}",
            "  length: {per_class: 5, epochs: [" + ", ".join(map(str, range(1, 22))) + "]}\n"
            "  generalization: {per_class: 20, epochs: 2}",
        ),
        "at most 20 items",
    ),
]
NON_FINITE = [
    (("lr: 3.0e-3", "lr: .inf"), "train.lr"),
    (("lr: 3.0e-3", "lr: .nan"), "train.lr"),
    (("lr: 3.0e-3", "lr: 3.0e-3, weight_decay: .inf"), "train.weight_decay"),
    (("lr: 3.0e-3", "lr: 3.0e-3, grad_clip: .nan"), "train.grad_clip"),
    (("lr: 3.0e-3", "lr: 3.0e-3, mixup: .inf"), "train.mixup"),
    (("warmup_epochs: 0", "warmup_epochs: .nan"), "train.warmup_epochs"),
    (("tolerance: 0.1", "tolerance: .nan"), "budget.tolerance"),
    (("macs: 0.4M", "macs: .inf"), "budget.macs"),
    (("macs: 0.4M", "macs: .nan"), "budget.macs"),
    (("block: {head_size: 16}", "block: {head_size: 16, expand_ratio: .inf}"), "expand_ratio"),
    (("block: {head_size: 16}", "block: {head_size: 16, se_ratio: .nan}"), "se_ratio"),
    (("block: {head_size: 16}", "block: {head_size: 16, drop_path: .nan}"), "drop_path"),
    (("study: {seeds: [0]", "search: {train.lr: {low: 1.0e-4, high: .inf}}\nstudy: {seeds: [0]"), "search"),
    (("study: {seeds: [0]", "search: {train.lr: {low: .nan, high: 1.0}}\nstudy: {seeds: [0]"), "search"),
    (("study: {seeds: [0]", "search: {train.lr: {choices: [0.001, .inf]}}\nstudy: {seeds: [0]"), "train.lr"),
]


@pytest.mark.parametrize("edit, expected", BOUNDS + NON_FINITE)
def test_numeric_bounds_and_non_finite_numbers(tmp_path, capsys, edit, expected):
    err = _refused(["show", str(_space(tmp_path, _edit(*edit)))], tmp_path, capsys, expected)
    assert "s.yaml:" in err and "field '" in err


def test_bounds_are_declared_once_and_admit_the_shipped_spaces():
    from coatsearch.vocab import specs as S

    assert S.MACS_MAX == 10**12 and S.WIDTH_MAX == 8192
    for path in sorted((HERE.parent / "spaces").glob("*.yaml")):
        assert load_space(path).candidates


_M = "layout: C-T\n  depths: [1, 1]\n  widths: [16, 32]\n  strides: [1, 2]\n  block: {head_size: 16}"
SHAPES = [  # found at load, where `show` runs, not inside a trial
    (("stem: {kind: conv, layers: 1, width: 8, stride: 2}", "stem: {kind: patch, patch_size: 32}"), "patch size 32"),
    (("stem: {kind: conv, layers: 1, width: 8, stride: 2}", "stem: {kind: patch, patch_size: 5}"), "patch size 5"),
    (("layout: C-T", "layout: C-M"), None),  # M without window: the whole map, fine (control)
    ((_M, _M.replace("C-T", "C-M").replace("16}", "16, window_size: 3}")), "does not divide into window_size 3"),
    ((_M, _M.replace("C-T", "C-M").replace("16}", "16, grid_size: 16}")), "does not divide into grid_size 16"),
    (("widths: [16, 32]", "widths: [16, 24]"), "not a multiple of head_size 16"),
    (("stem: {kind: conv, layers: 1, width: 8, stride: 2}", "stem: {kind: vitc, channels: [8]}"), "vitc stem"),
    (
        ("stem: {kind: conv, layers: 1, width: 8, stride: 2}", "stem: {kind: vitc, channels: [8], strides: [2]}"),
        "fit arch",
    ),
]


@pytest.mark.parametrize("edit, expected", SHAPES)
def test_impossible_shapes_are_found_at_load(tmp_path, capsys, edit, expected):
    text = _edit(*edit).replace("budget: {macs: 0.4M, tolerance: 0.1, scale: width}\n", "")
    if expected is None:
        assert load_document(_space(tmp_path, text)).name == "tiny"
        return
    _refused(["show", str(_space(tmp_path, text))], tmp_path, capsys, expected)


def test_a_model_too_large_to_size_is_one_line(tmp_path, capsys):
    text = _edit("image_size: 16", "image_size: 1024").replace("widths: [16, 32]", "widths: [8192, 8192]")
    text = text.replace("depths: [1, 1]", "depths: [100, 100]").replace("strides: [1, 2]", "strides: [1, 1]")
    err = _refused(["show", str(_space(tmp_path, text))], tmp_path, capsys, "MACs per image; allowed: at most 1e+12")
    assert "field 'candidates[0]'" in err


def test_the_macs_floor_is_a_lower_bound():
    from coatsearch.budget.count import count

    for path in [TINY, *sorted((HERE.parent / "spaces").glob("*.yaml"))]:
        for cand in load_space(path).candidates:
            model = cand.resolve()[0]
            assert 0 < model.macs_floor() <= count(model).macs, (path.name, cand.name)


@pytest.mark.parametrize(
    "edit, expected",
    [
        (("study: {seeds: [0]", "study: {seeds: [0], objective: accuracy.eval_acc"), "no enabled score measures"),
        (
            ("study: {seeds: [0]", "study: {seeds: [0], objective: nonsense"),
            "measured: generalization.train_loss, generalization.eval_acc",
        ),
        (("study: {seeds: [0]", "study: {seeds: [0], objective: capacity.train_loss"), "transfer.finetune_acc"),
    ],
)
def test_an_objective_no_enabled_score_measures(tmp_path, capsys, edit, expected):
    err = _refused(["show", str(_space(tmp_path, _edit(*edit)))], tmp_path, capsys, expected)
    assert "field 'study.objective'" in err


@pytest.mark.parametrize(
    "key, expected",
    [
        ("train: {lr: 0.1}", "unknown key 'train' under 'model' ('train' is a top-level section)"),
        ("scores: {generalization: null}", "unknown key 'scores' under 'model'"),
        ("name: X", "unknown key 'name' under 'model'"),
        ("foo: 1", "allowed: arch, stem, layout, depths, widths, strides, block"),
    ],
)
def test_the_shared_model_section_takes_model_fields_only(tmp_path, capsys, key, expected):
    text = _edit("  block: {head_size: 16}", f"  block: {{head_size: 16}}\n  {key}")
    err = _refused(["show", str(_space(tmp_path, text))], tmp_path, capsys, expected)
    assert "s.yaml:12: field 'model." in err and "name, " not in err.split("allowed:")[-1]


# ------------------------------------------------------------------------------ 3. every error is one line


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["run"], "the following arguments are required: space"),
        (["run", str(TINY), "--nope"], "unrecognized arguments: --nope"),
        (["run", str(TINY), "--backend", "spark"], "invalid choice: 'spark'"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "required: command"),
        (["dashboard", "s", "--port", "0"], "allowed: an integer 1..65535"),
        (["dashboard", "s", "--port", "70000"], "allowed: an integer 1..65535"),
    ],
)
def test_argparse_errors_are_one_line(tmp_path, capsys, argv, expected):
    assert _refused(argv, tmp_path, capsys, expected).startswith("coatsearch")


def test_an_unexpected_error_is_one_line_with_a_hint(tmp_path, capsys, monkeypatch):
    import coatsearch.cli as cli

    def boom(args):
        raise RuntimeError("something broke\nsecond line")

    monkeypatch.setattr(cli, "_show", boom)
    monkeypatch.delenv("COATSEARCH_DEBUG", raising=False)
    err = _refused(["show", str(TINY)], tmp_path, capsys, "RuntimeError: something broke (run with", code=1)
    assert "COATSEARCH_DEBUG=1" in err and "second line" not in err
    monkeypatch.setenv("COATSEARCH_DEBUG", "1")
    with pytest.raises(RuntimeError):
        main(["show", str(TINY)])


def _png(path: Path, color: int) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), (color, color, color)).save(path)


def _folder(root: Path, classes: int, per_class: int = 5) -> Path:
    for c in range(classes):
        for i in range(per_class):
            _png(root / f"c{c}" / f"{i}.png", 20 * c + i)
    return root


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_corrupt_image_names_the_file(tmp_path, damage):
    root = _folder(tmp_path / "imgs", 2)
    bad = root / "c1" / "3.png"
    raw = bad.read_bytes()
    bad.write_bytes({"garbage": b"not a png at all", "truncated": raw[: len(raw) // 2], "empty": b""}[damage])
    with pytest.raises(UserError, match=r"c1/3\.png: cannot decode this image"):
        D.load(DataSpec("imagefolder", str(root)), 8, 1)


def test_a_file_where_the_data_root_is_expected(tmp_path):
    (tmp_path / "f").write_text("x")
    for dataset in ("imagefolder", "fashion_mnist", "mnist"):
        with pytest.raises(UserError, match="is a file|is not a folder"):
            D.load(DataSpec(dataset, str(tmp_path / "f")), 8, 1)


def _workers_in(folder: Path) -> list[int]:
    """Live spawned worker processes whose working directory is `folder` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes()
            here = os.readlink(entry / "cwd")
        except (OSError, ValueError):
            continue
        if b"spawn_main" in cmd and here == str(folder):
            found.append(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_kill_with_several_workers_is_one_line_and_leaves_no_worker(tmp_path, sig):
    # 100 planned trials: the run cannot end on its own between the workers' start and the signal
    seeds = ", ".join(str(i) for i in range(50))
    space = tiny_variant(tmp_path, ("study: {seeds: [0],", f"study: {{seeds: [{seeds}],"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "coatsearch.cli", "run", str(space), "--workers", "2", "--quiet", "--no-report"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(HERE.parent)},
        # as from a terminal: a background shell (nohup, `&`) hands children SIGINT ignored, and Python keeps that
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "studies" / "tiny" / "claim.lock").exists() and time.monotonic() < deadline:
        time.sleep(0.5)  # wait for a worker to claim (a wait for a condition, not a timing)
    while not _workers_in(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)  # the parent creates the study (and claim.lock) before it spawns the workers
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    said = [line for line in err.splitlines() if not line.startswith("coatsearch: pilot")]  # progress lines aside
    assert len(said) == 1 and "interrupted" in said[0], err
    assert _workers_in(tmp_path) == []  # the parent terminated and joined its workers


def _to_main(sig: int) -> None:
    """Send `sig` to this process's main thread, as a terminal's Ctrl-C reaches the thread that runs the loop.

    Not `os.kill(os.getpid(), sig)`: a process-directed signal that the main thread blocks goes to any other thread
    that does not (a torch pool, an earlier test's helper), whose C handler trips Python's flag when the scheduler
    lets it; the test raced that moment, and lost it in CI (the interrupt landed after the block had ended).
    """
    signal.pthread_kill(threading.main_thread().ident, sig)


@contextlib.contextmanager
def _sigint_as(handler):
    """SIGINT as a terminal (Python's handler) or a background shell (`cmd &`: ignored) hands it; restored after."""
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_ctrl_c_or_sigterm_while_workers_start_is_held_until_every_worker_is_registered(sig):
    # a worker half-started when the parent unwinds dies of a truncated spawn pipe, printing a traceback; an
    # ignored SIGINT was discarded instead, and the run went on to its end (exit 0 after a Ctrl-C)
    from coatsearch.runner import interrupts

    reached = []
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the mask the block must give back
    with _sigint_as(signal.default_int_handler):  # as from a terminal, however pytest itself was started
        with pytest.raises(KeyboardInterrupt), interrupts.sigterm_as_interrupt():
            with interrupts.children_ignore_sigint():
                _to_main(sig)
                reached.append("after the signal")  # the block runs on: the signal is held
            reached.append("after the block")  # never: the held signal is raised at the block's end
        assert reached == ["after the signal"]
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before  # the mask is restored


def test_a_sigint_inherited_ignored_stays_ignored_and_sigterm_still_stops_the_block():
    # a background job (`python -m pytest &`, `coatsearch run ... &`) starts with SIGINT ignored: the parent chose
    # that, so the blocks neither take SIGINT over nor turn the ignored signal into an interrupt
    from coatsearch.runner import interrupts

    with _sigint_as(signal.SIG_IGN):
        reached = []
        with interrupts.sigterm_as_interrupt(), interrupts.children_ignore_sigint():
            _to_main(signal.SIGINT)
            reached.append("after the signal")
        reached.append("after the block")  # the ignored SIGINT stopped nothing
        assert reached == ["after the signal", "after the block"]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        with pytest.raises(KeyboardInterrupt), interrupts.sigterm_as_interrupt():
            with interrupts.children_ignore_sigint():
                _to_main(signal.SIGTERM)  # held, then raised as an interrupt
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)  # an ignored SIGTERM: the same rule
    try:
        with interrupts.sigterm_as_interrupt(), interrupts.children_ignore_sigint():
            _to_main(signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("inherited", ["terminal", "background"])
def test_a_child_started_in_the_block_has_sigint_blocked_and_sigterm_not(inherited):
    import multiprocessing as mp

    from coatsearch.runner import interrupts

    handler = signal.default_int_handler if inherited == "terminal" else signal.SIG_IGN
    with _sigint_as(handler), interrupts.children_ignore_sigint():
        child = mp.get_context("spawn").Process(target=time.sleep, args=(30,))
        child.start()
    try:
        status = Path(f"/proc/{child.pid}/status").read_text()
        lines = [line.split() for line in status.splitlines() if line[:6] in ("SigBlk", "SigIgn")]
        masks = {name.rstrip(":"): int(bits, 16) for name, bits in lines}
        sigint, sigterm = 1 << (signal.SIGINT - 1), 1 << (signal.SIGTERM - 1)
        stopped = masks["SigBlk"] if inherited == "terminal" else masks["SigIgn"]  # blocked, or left ignored
        assert stopped & sigint and not masks["SigBlk"] & sigterm and not masks["SigIgn"] & sigterm
    finally:
        child.terminate()  # SIGTERM still stops it
        child.join(30)
    assert child.exitcode == -signal.SIGTERM


# ------------------------------------------------------------------------------ 4. the data must match the space

SYN = DataSpec("synthetic")


def _refuse_match(expected: str, *args, **kwargs) -> None:
    with pytest.raises(UserError, match=expected):
        check_matches(*args, **kwargs)


def test_class_count_must_match_input_classes(tmp_path, capsys):
    text = TINY.read_text().replace("classes: 10}", "classes: 5}")
    _refused(
        ["run", str(_space(tmp_path, text))], tmp_path, capsys, "the space says 5 classes, dataset synthetic has 10"
    )
    _refuse_match("says 12 classes, dataset synthetic has 10", 12, SYN, 16, 1)


def test_a_one_class_dataset_is_refused(tmp_path):
    root = _folder(tmp_path / "one", 1)
    _refuse_match("has 1 class; a classifier needs >= 2", 1, DataSpec("imagefolder", str(root)), 8, 1)


@pytest.mark.parametrize(
    "scores, expected",
    [
        (ScoresSpec(generalization=SubsetSpec(5, 1, (0, 12))), r"scores.generalization.classes': class ids \[12\]"),
        (ScoresSpec(capacity=SubsetSpec(5, 1, (-1, 2))), r"class ids \[-1\] are outside .* has 10 classes"),
        (ScoresSpec(accuracy=SubsetSpec(5, 1, (3,))), "1 distinct class id"),
        (ScoresSpec(transfer=TransferSpec(SubsetSpec(5, 1, (0, 1)), SubsetSpec(5, 1, (4, 4)))), "finetune.classes"),
    ],
)
def test_score_classes_must_be_in_the_dataset(scores, expected):
    _refuse_match(expected, 10, SYN, 16, 1, [scores], source="tiny.yaml")


def test_a_transfer_target_dataset_is_checked_on_its_own(tmp_path):
    root = _folder(tmp_path / "three", 3)
    target = SubsetSpec(2, 1, (0, 5), DataSpec("imagefolder", str(root)))
    scores = ScoresSpec(transfer=TransferSpec(SubsetSpec(2, 1, (0, 5)), target))
    _refuse_match(r"class ids \[5\] are outside dataset imagefolder .* has 3 classes", 10, SYN, 8, 1, [scores])


def test_a_matching_space_passes():
    space = load_space(TINY)
    check_matches(space.classes, space.data, space.image_size, space.channels, [c.scores for c in space.candidates])


# ------------------------------------------------------------------------------ 7. a run that diverges fails


class _NanWhenEval(nn.Module):
    """A classifier that is finite in training and NaN in eval mode (as a blown-up BatchNorm can be)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16 * 16, 10)

    def forward(self, x):
        out = self.fc(x.flatten(1))
        return out if self.training else out * float("nan")


def _tiny_data() -> D.TensorData:
    pool, _ = D.load(SYN, 16, 1)
    return subsets.subset(pool, 4, None, seed=0)


@pytest.mark.parametrize("with_eval, expected", [(True, "non-finite eval loss"), (False, "non-finite clean train")])
def test_a_nan_in_evaluation_or_the_clean_pass_fails_the_run(with_eval, expected):
    train = _tiny_data()
    optim = OptimSpec(optimizer="adamw", lr=1e-3, batch_size=8, warmup_epochs=0)
    with pytest.raises(NonFiniteLoss, match=expected):
        fit(_NanWhenEval(), train, train if with_eval else None, optim, 1, seed=0, device=torch.device("cpu"))


@pytest.mark.parametrize(
    "metrics",
    [{"a.eval_acc": float("nan")}, {"a.train_loss": float("inf")}, {"length.eval_acc": [0.5, float("-inf")]}],
)
def test_non_finite_metrics_are_refused(metrics):
    with pytest.raises(NonFinite, match="non-finite metric"):
        check_finite(metrics)


def test_finite_metrics_pass():
    check_finite({"a.eval_acc": 0.5, "a.images": 10, "length.eval_acc": [0.1, 0.2], "curves.a": {"x": [None]}})


# ------------------------------------------------------------------------------ 8. flags that do nothing


@pytest.mark.parametrize(
    "flags, expected",
    [
        (["--address", "auto"], "--address: only used with --backend ray"),
        (["--cpus-per-trial", "2"], "--cpus-per-trial: only used with --backend ray"),
        (["--gpus-per-trial", "1"], "--gpus-per-trial: only used with --backend ray"),
        (["--backend", "ray", "--workers", "2"], "--workers: only used with --backend optuna"),
    ],
)
def test_flags_that_would_do_nothing(tmp_path, capsys, flags, expected):
    _refused(["run", str(TINY), *flags], tmp_path, capsys, expected)


# ------------------------------------------------------------------------------ 9. the dashboard stays private


def test_loopback_hosts():
    from coatsearch.dashboard import is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.1.2.3"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.5", "example.org"))


def test_a_public_dashboard_warns(tmp_path, capsys, monkeypatch):
    import optuna_dashboard

    from coatsearch.dashboard import serve
    from coatsearch.storage.store import create_study

    create_study(load_space(TINY), tmp_path, "tiny")
    calls = []
    monkeypatch.setattr(optuna_dashboard, "run_server", lambda storage, host, port, **kw: calls.append((host, port)))
    serve("tiny", tmp_path, "127.0.0.1", 0)  # port 0: any free one (the port is checked before serving)
    assert "warning" not in capsys.readouterr().err
    serve("tiny", tmp_path, "0.0.0.0", 0)
    assert "no authentication" in capsys.readouterr().err
    assert calls == [("127.0.0.1", 0), ("0.0.0.0", 0)]


def test_documents_still_load():
    assert load_document(TINY).name == "tiny"
