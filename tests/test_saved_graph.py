"""load_or_build and run_study with saved graphs: a graph is built once and loaded after, a
build left unfinished is finished, and a save of another circuit is refused."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState
from test_optimize_objective import Problem

from monoprop import Circuit, _saved_state
from monoprop.optimize import load_or_build, minimize, run_study

optuna.logging.set_verbosity(optuna.logging.WARNING)


class Builds:
    """A propagator factory for load_or_build that counts the propagators it made."""

    def __init__(self, problem: Problem) -> None:
        self.problem, self.count = problem, 0

    def __call__(self):
        self.count += 1
        p = self.problem
        return p.cls(p.make(dict(p.case.observable), p.n), list(p.case.occupied), cutoff=2 * p.n)


def bitwise(a, b, x) -> None:
    value, gradient = a.expectation_value_and_gradient(x)
    other_value, other_gradient = b.expectation_value_and_gradient(x)
    assert other_value == value and other_gradient.tobytes() == gradient.tobytes()


@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_a_graph_is_built_once_then_loaded(family, tmp_path):
    problem = Problem(family, 3)
    circuit = Circuit(problem.gates, problem.n)
    builds = Builds(problem)
    first = load_or_build(tmp_path / "g", builds, circuit)
    again = load_or_build(tmp_path / "g", builds, circuit)
    assert builds.count == 1
    x = np.linspace(-1, 1, first.n_parameters)
    bitwise(first, again, x)
    # Both are the exact graph: the dense reference agrees.
    value, gradient = problem.dense(x)
    assert again.expectation_value(x) == pytest.approx(value, abs=1e-12)
    np.testing.assert_allclose(again.gradient(x), gradient, atol=1e-12)


def test_an_unfinished_build_is_finished_and_another_circuit_refused(tmp_path, monkeypatch):
    problem = Problem("pauli", 4, num_gates=8)
    circuit = Circuit(problem.gates, problem.n)
    builds = Builds(problem)
    real_save = _saved_state.save

    def die_after_two(prop, path):  # the worker is killed after its second checkpoint
        real_save(prop, path)
        if prop._build.done == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(_saved_state, "save", die_after_two)
    with pytest.raises(KeyboardInterrupt):
        load_or_build(tmp_path / "g", builds, circuit, checkpoint_every=0)
    monkeypatch.setattr(_saved_state, "save", real_save)
    finished = load_or_build(tmp_path / "g", builds, circuit)
    assert builds.count == 1  # finished from the checkpoint, not rebuilt
    whole = problem.propagator()
    bitwise(whole, finished, np.linspace(-1, 1, whole.n_parameters))
    other = Circuit(problem.gates[:-1], problem.n)
    with pytest.raises(ValueError, match="same circuit"):
        load_or_build(tmp_path / "g", builds, other)
    whole.save(tmp_path / "plain")
    with pytest.raises(ValueError, match="saved by save"):
        load_or_build(tmp_path / "plain", builds, circuit)


def test_a_study_loads_a_saved_graph_in_every_trial(tmp_path):
    """make_problem may return the path of a save: each trial loads it, and the optimisation
    is the one on the original propagator."""
    problem = Problem("pauli", 0)
    prop = problem.propagator()
    prop.save(tmp_path / "g")

    def make_problem(trial):
        start = trial.suggest_float("start", -1.0, 1.0)
        return tmp_path / "g", np.full(prop.n_parameters, start), {"method": "BFGS"}

    study = run_study(make_problem, n_trials=2, storage=optuna.storages.InMemoryStorage())
    for trial in study.trials:
        assert trial.state == TrialState.COMPLETE
        expected = minimize(prop, np.full(prop.n_parameters, trial.params["start"]), method="BFGS")
        assert trial.value == expected.fun
        assert trial.user_attrs["graph_entries"] == sum(prop.graph_size())


def test_a_study_refuses_a_damaged_save_as_a_failed_trial(tmp_path):
    (tmp_path / "g").mkdir()
    study_args = {"n_trials": 1, "storage": optuna.storages.InMemoryStorage()}
    with pytest.raises(ValueError, match="not a monoprop save"):
        run_study(lambda trial: (tmp_path / "g", np.zeros(1)), **study_args)
