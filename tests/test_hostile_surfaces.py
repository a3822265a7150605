"""The newer surfaces under hostile use: diverging trials across processes, resumed search studies, refusals that
write nothing, device strings, huge search spaces.

Each test reproduces a failure a new user met, and a second member of its class.
"""

from __future__ import annotations

import os
import pickle
import signal
import time

import pytest

from coatsearch.errors import Pruned, TrialFailed, UserError
from coatsearch.runner.spawned import run_spawned
from coatsearch.space.load import SpaceError
from coatsearch.space.search import Rejected
from coatsearch.training.fit import NonFinite, NonFiniteLoss
from tests.support.hostile import deadline

# ------------------------------------------------------------- 2. exceptions cross processes; a dead worker is seen


@pytest.mark.parametrize(
    "exc",
    [NonFiniteLoss(3, 17), NonFiniteLoss(0, None, "eval loss (nan)"), NonFinite("non-finite metric x = nan"),
     Rejected("conv_before_attention"), TrialFailed("budget not met"), Pruned(), UserError("x: y"),
     SpaceError("s.yaml:1: z")],
)  # fmt: skip
def test_every_exception_a_trial_can_raise_pickles_with_its_fields(exc):
    # NonFiniteLoss needed `step` to be rebuilt, so a spawned pilot's divergence could not be read by its parent
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc) and vars(back) == vars(exc)


def _diverge(epoch: int) -> None:
    raise NonFiniteLoss(epoch, 5)


class _Unpicklable(Exception):
    def __init__(self, a: int, b: int) -> None:  # not rebuilt from its args: does not unpickle
        super().__init__(f"{a}/{b}")


def _raise_unpicklable() -> None:
    raise _Unpicklable(1, 2)


def _die(sig: int) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(60)


def test_a_spawned_task_that_diverges_or_raises_what_cannot_cross_is_raised_in_the_parent():
    with deadline(120):
        assert run_spawned(abs, [(-1,), (2,), (-3,)], 2) == [1, 2, 3]
        with pytest.raises(NonFiniteLoss, match="non-finite loss at epoch 4, step 5"):
            run_spawned(_diverge, [(4,)], 1)
        with pytest.raises(RuntimeError, match=r"_Unpicklable: 1/2"):  # multiprocessing.Pool waited forever
            run_spawned(_raise_unpicklable, [()], 1)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_a_spawned_process_that_dies_is_seen_by_its_parent_within_the_poll(sig):
    began = time.monotonic()
    with deadline(120), pytest.raises(RuntimeError, match=f"died \\(signal {sig}"):
        run_spawned(_die, [(sig,), (sig,)], 2)
    assert time.monotonic() - began < 60


@pytest.mark.slow
def test_a_plan_of_a_space_whose_training_diverges_ends_and_times_the_trials(tmp_path):
    # `run` of a space with lr: 1.0e4 hung in its pilots (killed after 120 s, the study left RUNNING)
    from coatsearch.planner.pilot import run_pilots
    from coatsearch.space.objects import load_space
    from tests.tiny import tiny_variant

    space = load_space(tiny_variant(tmp_path, ("lr: 3.0e-3", "lr: 1.0e4")))
    preps = [c.prepared for c in space.candidates]
    with deadline(240):
        timings = run_pilots(space, preps, 0, "cpu", 2, 1)
    assert [t.candidate for t in timings] == ["C-C", "C-T"] and all(t.pilot_s > 0 for t in timings)
