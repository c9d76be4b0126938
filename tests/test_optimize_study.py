"""monoprop.optimize.run_study: trials run minimize and record what they cost, workers share
one SQLite storage without losing trials, pruning stops bad trials, multi-objective studies."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState
from test_optimize_objective import Problem

import monoprop
from monoprop.optimize import minimize, run_study

optuna.logging.set_verbosity(optuna.logging.WARNING)


def tfim(trial):
    """A 3-qubit Pauli problem whose start the trial suggests; exact (cutoff 2n) graph."""
    problem = Problem("pauli", 0)
    start = trial.suggest_float("start", -1.0, 1.0)
    prop = problem.propagator()
    return prop, np.full(prop.n_parameters, start), {"method": "BFGS"}


def test_each_trial_is_a_minimize_run_with_its_costs_recorded():
    study = run_study(tfim, n_trials=3, storage=optuna.storages.InMemoryStorage())
    problem = Problem("pauli", 0)
    prop = problem.propagator()
    assert len(study.trials) == 3
    for trial in study.trials:
        assert trial.state == TrialState.COMPLETE
        expected = minimize(prop, np.full(prop.n_parameters, trial.params["start"]), method="BFGS")
        attributes = trial.user_attrs
        assert trial.value == attributes["energy"] == expected.fun
        assert attributes["replays"] == expected.nfev
        assert attributes["iterations"] == expected.nit
        assert attributes["terms"] == prop.size()
        assert attributes["graph_size"] == list(prop.graph_size())
        assert attributes["graph_entries"] == sum(prop.graph_size())
        assert attributes["refreshes"] == attributes["rebuilds"] == 0
        assert attributes["wall_time"] > 0
        # Every iteration's energy was reported, the last one the optimum.
        steps = trial.intermediate_values
        assert sorted(steps) == list(range(expected.nit))
        assert steps[expected.nit - 1] == pytest.approx(expected.fun, abs=1e-12)


def test_the_default_storage_is_a_sqlite_file_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_study(tfim, n_trials=2)
    study = optuna.load_study(study_name="monoprop", storage=f"sqlite:///{tmp_path}/monoprop.db")
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    run_study(tfim, n_trials=3)  # n_trials is the study's total: one more trial
    assert len(study.trials) == 3


WORKER = """
import sys, time
from pathlib import Path
import numpy as np
import optuna
from monoprop import PauliOperator, PauliPropagator, Circuit, ExpGate
from monoprop.optimize import run_study

worker, storage, n_trials, folder = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
(folder / f"ready-{worker}").touch()
while len(list(folder.glob("ready-*"))) < 2:  # start together, so that both take trials
    time.sleep(0.01)

def make_problem(trial):
    trial.set_user_attr("worker", worker)
    angle = trial.suggest_float("angle", -1.0, 1.0)
    prop = PauliPropagator(PauliOperator({"ZZ": 1.0, "XI": 0.5}, 2), [], cutoff=2)
    prop.build_graph(Circuit([ExpGate(PauliOperator({"XY": 1.0}, 2)),
                              ExpGate(PauliOperator({"YI": 1.0}, 2))], 2))
    time.sleep(0.1)  # a trial that takes a while, as real ones do
    return prop, np.full(2, angle)

# No pruning (Optuna's default is a MedianPruner): every trial must complete.
run_study(make_problem, n_trials=n_trials, storage=storage, study_name="shared",
          pruner=optuna.pruners.NopPruner())
"""


def test_two_workers_on_one_sqlite_storage_finish_the_trials_with_none_lost(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(WORKER))
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    n_trials = 12
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(monoprop.__file__).parents[1]),
        "monoprop_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), name, storage, str(n_trials), str(tmp_path)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    try:
        for worker in workers:
            _, err = worker.communicate(timeout=240)
            assert worker.returncode == 0, err
    finally:  # a failed worker must not leave the other running
        for worker in workers:
            worker.kill()
            worker.communicate()
    trials = optuna.load_study(study_name="shared", storage=storage).trials
    # Two workers may both start the last trial: one extra at most, none lost or left running.
    assert n_trials <= len(trials) <= n_trials + 1
    assert [t.number for t in trials] == list(range(len(trials)))
    assert all(t.state == TrialState.COMPLETE for t in trials)
    assert {t.user_attrs["worker"] for t in trials} == {"a", "b"}
    for trial in trials:  # <ZZ + 0.5 XI> of this two-gate circuit is at least -sqrt(1.25)
        assert trial.value >= -np.sqrt(1.25) - 1e-9


def energies(start):
    """The energy at each iteration of the BFGS run a ``tfim`` trial makes from ``start``."""
    prop = Problem("pauli", 0).propagator()
    reported = []
    minimize(
        prop,
        np.full(prop.n_parameters, start),
        method="BFGS",
        callback=lambda intermediate_result: reported.append(intermediate_result.fun),
    )
    return reported


def test_pruning_stops_a_bad_trial():
    starts = np.linspace(-1, 1, 5)
    runs = sorted((energies(start)[1], start) for start in starts)
    (good_energy, good), (bad_energy, bad) = runs[0], runs[-1]
    threshold = (good_energy + bad_energy) / 2
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(storage=storage, study_name="pruned")
    study.enqueue_trial({"start": good})
    study.enqueue_trial({"start": bad})
    pruner = optuna.pruners.ThresholdPruner(upper=threshold, n_warmup_steps=1)
    run_study(tfim, n_trials=2, storage=storage, study_name="pruned", pruner=pruner)
    complete, pruned = study.trials
    assert complete.state == TrialState.COMPLETE
    assert len(complete.intermediate_values) == len(energies(good)) > 2
    assert pruned.state == TrialState.PRUNED, pruned.intermediate_values
    # Stopped at the first step the pruner may judge, with the energy above the threshold.
    assert pruned.intermediate_values == {0: energies(bad)[0], 1: bad_energy}
    assert pruned.user_attrs["replays"] > 0 and "energy" not in pruned.user_attrs


@pytest.mark.parametrize("cost", ["graph_entries", "replays", len])
def test_multi_objective_studies_trade_energy_against_cost(cost):
    def make_problem(trial):
        problem = Problem("pauli", 1, num_gates=8)
        prop = problem.propagator()
        prop.cutoff = trial.suggest_int("cutoff", 1, 6)
        x0 = np.full(prop.n_parameters, 0.2)
        return prop, x0, {"options": {"maxiter": trial.suggest_int("maxiter", 1, 20)}}

    study = run_study(
        make_problem,
        n_trials=4,
        storage=optuna.storages.InMemoryStorage(),
        directions=["minimize", "minimize"],
        cost=cost,
    )
    for trial in study.trials:
        energy, price = trial.values
        assert energy == trial.user_attrs["energy"]
        expected = len(trial.user_attrs) if callable(cost) else trial.user_attrs[cost]
        if not callable(cost):
            assert price == expected
        assert trial.intermediate_values == {}  # multi-objective trials are not reported
    assert study.best_trials


def test_a_failing_trial_is_stored_as_failed_and_raised_unless_caught():
    storage = optuna.storages.InMemoryStorage()

    def broken(trial):
        trial.suggest_float("start", 0, 1)
        raise ArithmeticError("no such problem")

    with pytest.raises(ArithmeticError, match="no such problem"):
        run_study(broken, n_trials=3, storage=storage, study_name="s")
    study = optuna.load_study(study_name="s", storage=storage)
    assert [t.state for t in study.trials] == [TrialState.FAIL]
    # With catch the worker goes on; failed trials count towards the study's n_trials.
    run_study(broken, n_trials=3, storage=storage, study_name="s", catch=(ArithmeticError,))
    assert [t.state for t in study.trials] == [TrialState.FAIL] * 3


def test_timeout_stops_the_worker_starting_trials():
    storage = optuna.storages.InMemoryStorage()

    def slow(trial):
        time.sleep(0.1)
        raise ArithmeticError("no such problem")

    run_study(
        slow, n_trials=100, storage=storage, study_name="s", timeout=0.25, catch=(ArithmeticError,)
    )
    assert 1 <= len(optuna.load_study(study_name="s", storage=storage).trials) <= 4


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n_trials": 0}, ValueError, "n_trials must be a positive integer"),
        ({"n_trials": 2.5}, ValueError, "n_trials must be a positive integer"),
        ({"directions": ["down"]}, ValueError, "directions"),
        ({"directions": ["minimize"] * 3}, ValueError, "directions"),
        ({"cost": "money"}, ValueError, "cost='money'"),
    ],
)
def test_bad_arguments_are_refused_before_the_storage_is_touched(
    tmp_path, monkeypatch, kwargs, error, message
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=message):
        run_study(tfim, **{"n_trials": 1, **kwargs})
    assert list(tmp_path.iterdir()) == []


def test_make_problem_must_return_a_problem():
    storage = optuna.storages.InMemoryStorage()
    with pytest.raises(TypeError, match=r"must return \(propagator, x0\)"):
        run_study(lambda trial: None, n_trials=1, storage=storage, study_name="s")
    assert optuna.load_study(study_name="s", storage=storage).trials[0].state == TrialState.FAIL
