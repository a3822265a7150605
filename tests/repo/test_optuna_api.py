"""The package uses Optuna's public API only, writes no pickled weights, and runs on the Optuna range it pins."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import optuna
from packaging.requirements import Requirement

import coatsearch

PACKAGE = Path(coatsearch.__file__).resolve().parent
PRIVATE = {"_storage", "_trial_id", "_study_id", "_backend", "_file_path", "_SYSTEM_ATTR_METRIC_NAMES"}


def _offences(source: str) -> list[str]:
    """Private Optuna attributes read, and `torch.save` / `torch.load` calls, in one module's source."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE:
            out.append(f"line {node.lineno}: .{node.attr}")
        if isinstance(node, ast.Attribute) and node.attr in {"save", "load"}:
            if isinstance(node.value, ast.Name) and node.value.id == "torch":
                out.append(f"line {node.lineno}: torch.{node.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            args = node.args[1:2]
            if args and isinstance(args[0], ast.Constant) and args[0].value in PRIVATE:
                out.append(f"line {node.lineno}: getattr {args[0].value}")
    return out


def test_no_private_optuna_attribute_and_no_pickled_weights_in_the_package():
    found = {str(p.relative_to(PACKAGE)): o for p in sorted(PACKAGE.rglob("*.py")) if (o := _offences(p.read_text()))}
    assert found == {}


def test_the_rule_sees_each_offence():
    probe = (
        "s = study._storage\n"
        "s.set_trial_user_attr(t._trial_id, 'k', 1)\n"
        "torch.save(net.state_dict(), 'w.pt')\n"
        "getattr(study, '_storage')\n"
        "x = optuna.study.study._SYSTEM_ATTR_METRIC_NAMES\n"
    )
    assert len(_offences(probe)) == 5


def test_the_installed_optuna_is_in_the_pinned_range():
    reqs = [Requirement(r) for r in importlib.metadata.requires("coatsearch") or []]
    (pin,) = [r for r in reqs if r.name == "optuna" and r.marker is None]
    assert str(pin.specifier) and optuna.__version__ in pin.specifier, (optuna.__version__, str(pin.specifier))


def test_the_public_calls_the_store_relies_on_exist():
    """The storage methods and `Study.tell` by trial number that claiming and kill accounting use."""
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(storage=storage, study_name="s")
    other = optuna.load_study(study_name="s", storage=storage)  # another worker's view of the same study
    trial = study.ask()
    tid = storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name("s"), trial.number)
    storage.set_trial_user_attr(tid, "fail_reason", "gone")
    other.tell(trial.number, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
    other.tell(trial.number, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)  # told twice: no error
    study.enqueue_trial({})  # a WAITING trial cannot be told: its state goes through the storage
    waiting = storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name("s"), 1)
    assert storage.set_trial_state_values(waiting, optuna.trial.TrialState.FAIL)
    done, left = study.get_trials()
    assert done.state == optuna.trial.TrialState.FAIL and done.user_attrs == {"fail_reason": "gone"}
    assert left.state == optuna.trial.TrialState.FAIL
