"""monoprop.optimize.run_study: trials run minimize and record what they cost; n_trials is
each worker's, max_trials the study's total, as in Optuna; workers share one SQLite storage
without losing trials, and a killed worker's trial is failed by the heartbeat and retried;
pruning stops bad trials; multi-objective studies."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from contextlib import closing
from pathlib import Path

import numpy as np
import optuna
import pytest
from _study_worker import finish, launch, wait_for
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
        assert attributes["segments"] == 1 and attributes["message"] == expected.message
        assert attributes["wall_time"] > 0
        # Every iteration's energy was reported, the last one the optimum.
        steps = trial.intermediate_values
        assert sorted(steps) == list(range(expected.nit))
        assert steps[expected.nit - 1] == pytest.approx(expected.fun, abs=1e-12)


def reseeding(trial):
    """A graph that each trial rebuilds at its point every few iterations."""
    problem = Problem("pauli", 1, num_gates=8)

    def rebuild(seed):
        return problem.propagator(seed_parameters=seed)

    x0 = np.full(problem.propagator().n_parameters, trial.suggest_float("start", 0.2, 0.4))
    return rebuild(x0), x0, {"method": "BFGS", "reseed_every": 3, "rebuild": rebuild}


def test_a_trial_that_reseeds_reports_every_iteration_of_every_segment():
    study = run_study(reseeding, n_trials=2, storage=optuna.storages.InMemoryStorage())
    for trial in study.trials:
        assert trial.state == TrialState.COMPLETE
        prop, x0, settings = reseeding(optuna.trial.FixedTrial(trial.params))
        expected = minimize(prop, x0, **settings)
        assert len(expected.segments) > 1
        attributes = trial.user_attrs
        assert trial.value == attributes["energy"] == expected.fun
        assert attributes["segments"] == len(expected.segments)
        assert attributes["message"] == expected.message
        assert attributes["iterations"] == expected.nit
        assert attributes["rebuilds"] == expected.rebuilds > 0
        steps = trial.intermediate_values
        assert sorted(steps) == list(range(expected.nit))
        assert steps[expected.nit - 1] == pytest.approx(expected.fun, abs=1e-12)


def truncated_problem(trial):
    """A graph seeded at small angles with a coarse lower_atol: its values carry error bars."""
    from test_optimize_reseed import start, truncated

    x0 = start(trial.suggest_int("seed", 0, 2))
    return truncated(x0), x0


def test_trials_record_their_error_bar_and_can_rank_on_energy_plus_bound():
    from test_optimize_reseed import true_energy

    plain = run_study(truncated_problem, n_trials=2, storage=optuna.storages.InMemoryStorage())
    ranked = run_study(
        truncated_problem,
        n_trials=2,
        storage=optuna.storages.InMemoryStorage(),
        rank_by="energy+bound",
    )
    for study, bounded in ((plain, False), (ranked, True)):
        for trial in study.trials:
            prop, x0 = truncated_problem(optuna.trial.FixedTrial(trial.params))
            expected = minimize(prop, x0)
            attributes = trial.user_attrs
            assert attributes["energy"] == expected.fun
            bound = attributes["truncation_bound"]
            assert bound == expected.truncation_error.bound > 0.0
            assert attributes["truncation_estimate"] == expected.truncation_error.estimate
            # The error bar holds the untruncated energy at the optimum.
            assert abs(true_energy(expected.x) - expected.fun) <= bound + 1e-12
            assert trial.value == (expected.fun + bound if bounded else expected.fun)
            # The last iteration reported the value the trial is ranked on.
            steps = trial.intermediate_values
            last = steps[expected.nit - 1]
            assert last == pytest.approx(trial.value, abs=1e-12)
    with pytest.raises(ValueError, match="rank_by='value'"):
        run_study(truncated_problem, n_trials=1, rank_by="value")


def test_the_default_storage_is_a_sqlite_file_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_study(tfim, n_trials=2)
    study = optuna.load_study(study_name="monoprop", storage=f"sqlite:///{tmp_path}/monoprop.db")
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    # n_trials is this worker's, as in Optuna: three more; max_trials caps the study's total.
    # (Optuna's default MedianPruner may prune a trial from the sixth on.)
    run_study(tfim, n_trials=3)
    assert len(study.trials) == 5
    run_study(tfim, n_trials=3, max_trials=6)
    assert len(study.trials) == 6
    run_study(tfim, max_trials=6)  # the study is full: no trial
    assert len(study.trials) == 6
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in study.trials)


def shared_trials(storage):
    return optuna.load_study(study_name="shared", storage=storage).trials


@pytest.mark.parametrize(
    ("limits", "total"),
    [(("--n-trials", "3"), 6), (("--n-trials", "3", "--max-trials", "4"), 4)],
    ids=["n_trials-per-worker", "max_trials-in-all"],
)
def test_two_workers_on_one_sqlite_storage_finish_the_trials_with_none_lost(
    tmp_path, limits, total
):
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    finish([launch(name, storage, tmp_path, "--workers", "2", *limits) for name in "ab"])
    trials = shared_trials(storage)
    assert [t.number for t in trials] == list(range(total))
    assert all(t.state == TrialState.COMPLETE for t in trials)
    workers = [t.user_attrs["worker"] for t in trials]
    assert set(workers) == {"a", "b"}
    assert max(workers.count("a"), workers.count("b")) <= 3  # n_trials=3 each
    for trial in trials:  # <ZZ + 0.5 XI> of this two-gate circuit is at least -sqrt(1.25)
        assert trial.value >= -np.sqrt(1.25) - 1e-9


def test_a_killed_workers_trial_is_failed_by_the_heartbeat_and_retried(tmp_path):
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    heartbeat = ("--heartbeat", "1", "--grace", "2")
    victim = launch("victim", storage, tmp_path, "--n-trials", "1", "--victim", *heartbeat)
    try:
        wait_for(tmp_path / "running-victim", victim)
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.communicate()
    (killed,) = shared_trials(storage)
    assert killed.state == TrialState.RUNNING  # as the killed worker left it
    # A live worker finds the study full (the killed trial counts) while a trial runs: it
    # waits up to the grace period, fails the silent trial and runs its retry.
    finish([launch("live", storage, tmp_path, "--max-trials", "3", *heartbeat)])
    trials = shared_trials(storage)
    assert [t.state for t in trials] == [TrialState.FAIL] + [TrialState.COMPLETE] * 3
    retry = trials[-1]
    assert retry.params == killed.params
    assert retry.system_attrs["failed_trial"] == killed.number == 0
    assert retry.user_attrs["worker"] == "live"


def test_a_storage_object_is_used_as_it_is_with_its_own_heartbeat(tmp_path):
    database = tmp_path / "study.db"
    url = f"sqlite:///{database}"
    run_study(tfim, n_trials=1, storage=optuna.storages.RDBStorage(url), study_name="plain")
    with warnings.catch_warnings():  # Optuna's heartbeat is "experimental"
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        beating = optuna.storages.RDBStorage(url, heartbeat_interval=5, grace_period=10)
    run_study(tfim, n_trials=1, storage=beating, study_name="beating")
    with closing(sqlite3.connect(database)) as connection:
        beats = connection.execute(
            "SELECT studies.study_name FROM trial_heartbeats JOIN trials USING (trial_id) "
            "JOIN studies USING (study_id)"
        ).fetchall()
    assert beats == [("beating",)]  # the plain storage has no heartbeat, run_study adds none


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
    # With catch the worker goes on; failed trials count towards n_trials and max_trials.
    run_study(broken, n_trials=3, storage=storage, study_name="s", catch=(ArithmeticError,))
    assert [t.state for t in study.trials] == [TrialState.FAIL] * 4
    run_study(broken, max_trials=5, storage=storage, study_name="s", catch=(ArithmeticError,))
    assert [t.state for t in study.trials] == [TrialState.FAIL] * 5


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
        ({"n_trials": None}, ValueError, "needs n_trials .* max_trials .* or timeout"),
        ({"max_trials": 0}, ValueError, "max_trials must be a positive integer"),
        ({"max_trials": "4"}, ValueError, "max_trials must be a positive integer"),
        ({"heartbeat_interval": 0}, ValueError, "heartbeat_interval must be a positive integer"),
        ({"heartbeat_interval": 1.5}, ValueError, "heartbeat_interval must be a positive"),
        ({"grace_period": 0}, ValueError, "grace_period must be a positive integer"),
        ({"grace_period": 60}, ValueError, "grace_period=60 must be longer than heartbeat"),
        ({"heartbeat_interval": None, "grace_period": 9}, ValueError, "grace_period needs"),
        ({"max_retry": -1}, ValueError, "max_retry must be a non-negative integer"),
        ({"max_retry": None}, ValueError, "max_retry must be a non-negative integer"),
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


def test_importing_monoprop_optimize_leaves_optuna_jax_and_matplotlib_unloaded(tmp_path):
    # A fresh interpreter: this one has imported them all. run_study brings in Optuna.
    code = (
        "import sys, monoprop, monoprop.optimize\n"
        "heavy = ('optuna', 'jax', 'matplotlib', 'sqlalchemy')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "from monoprop.optimize import run_study\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(monoprop.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "['optuna', 'sqlalchemy']"]


def budgeted_problem(trial):
    """A graph built at the trial's start with no lower_atol: the study's budget chooses its
    truncation; rebuilt, within the budget too, where the optimum passes it."""
    from test_optimize_reseed import budgeted, start

    x0 = start(trial.suggest_int("seed", 0, 1))
    return budgeted(x0), x0, {"rebuild": budgeted}


def test_a_study_with_max_error_builds_every_graph_within_it():
    from test_optimize_reseed import true_energy

    eps = 1e-2
    study = run_study(
        budgeted_problem, n_trials=2, storage=optuna.storages.InMemoryStorage(), max_error=eps
    )
    for trial in study.trials:
        assert trial.state == TrialState.COMPLETE
        attributes = trial.user_attrs
        assert attributes["within_max_error"] is True
        assert attributes["truncation_estimate"] <= eps
        # As minimize(max_error=eps) on the graph make_problem builds within the same budget.
        with monoprop.error_budget(eps):
            prop, x0, settings = budgeted_problem(optuna.trial.FixedTrial(trial.params))
        assert prop.max_error_thresholds
        expected = minimize(prop, x0, max_error=eps, **settings)
        assert attributes["energy"] == expected.fun
        x = expected.x
        assert abs(true_energy(x) - expected.fun) <= expected.truncation_error.bound + 1e-12
    with pytest.raises(ValueError, match="max_error=-1"):
        run_study(budgeted_problem, n_trials=1, max_error=-1.0)
