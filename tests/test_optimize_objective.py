"""monoprop.optimize.Objective and value_and_grad: values against the dense reference, the
one-entry cache, and the guard across operator updates, graph extensions and failures."""

from __future__ import annotations

import dense_reference as dr
import numpy as np
import pytest

from monoprop import (
    Circuit,
    ExpGate,
    InvalidPropagatorError,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
)
from monoprop.optimize import Objective, value_and_grad


class Problem:
    """A random circuit problem with its exact (untruncated) propagator and dense reference."""

    def __init__(self, family: str, seed: int, n: int = 3, num_gates: int = 6) -> None:
        self.case = dr.random_case(seed, family, n, num_gates=num_gates, shared_parameters=True)
        self.make = PauliOperator if family == "pauli" else MajoranaOperator
        self.cls = PauliPropagator if family == "pauli" else MajoranaPropagator
        self.gates = [
            ExpGate(self.make(dict(g), n), self.case.mapping[i])
            for i, g in enumerate(self.case.generators)
        ]
        self.n = n

    def propagator(self, observable: dict | None = None, **config):
        observable = self.case.observable if observable is None else observable
        prop = self.cls(
            self.make(dict(observable), self.n), list(self.case.occupied), cutoff=2 * self.n
        )
        prop.build_graph(Circuit(self.gates, self.n), **config)
        return prop

    def dense(self, x, observable: dict | None = None) -> tuple[float, np.ndarray]:
        observable = self.case.operator_matrix(
            self.case.observable if observable is None else observable
        )
        generators = [self.case.operator_matrix(g) for g in self.case.generators]
        args = (observable, self.case.occupied, self.n, generators, x, self.case.mapping)
        return dr.circuit_expectation(*args), dr.circuit_gradient(*args)


@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize("seed", range(3))
def test_values_gradients_and_history_match_the_dense_reference(family, seed):
    problem = Problem(family, seed)
    obj = Objective(problem.propagator())
    f = value_and_grad(problem.propagator())
    rng = np.random.default_rng(seed)
    points = [rng.uniform(-2, 2, obj.n_parameters) for _ in range(3)]
    for x in points:
        expected_value, expected_gradient = problem.dense(x)
        value, gradient = obj(x)
        assert value == pytest.approx(expected_value, abs=1e-10)
        np.testing.assert_allclose(gradient, expected_gradient, atol=1e-10)
        assert f(list(x))[0] == value
        np.testing.assert_array_equal(f(x)[1], gradient)
    assert obj.nfev == len(obj.history) == 3
    for evaluation, x in zip(obj.history, points, strict=True):
        np.testing.assert_array_equal(evaluation.x, x)
        expected_value, expected_gradient = problem.dense(x)
        assert evaluation.value == pytest.approx(expected_value, abs=1e-10)
        assert evaluation.gradient_norm == pytest.approx(np.linalg.norm(expected_gradient))


def test_separate_value_and_gradient_calls_at_one_point_cost_one_replay():
    problem = Problem("pauli", 0)
    obj = Objective(problem.propagator())
    x = np.full(obj.n_parameters, 0.3)
    value = obj.value(x)
    gradient = obj.gradient(x)
    assert obj.nfev == 1
    gradient[0] += 1.0  # the caller's copy: the cache is not aliased
    fresh = problem.propagator()
    expected = fresh.expectation_value_and_gradient_functional()(x)
    assert value == expected[0]
    np.testing.assert_array_equal(obj.gradient(x), expected[1])
    assert obj.value(x + 1e-3) != value and obj.nfev == 2


def test_the_guard_refreshes_after_an_operator_update_and_never_reuses_the_cache():
    problem = Problem("pauli", 1)
    prop = problem.propagator()
    obj = Objective(prop)
    x = np.full(obj.n_parameters, -0.7)
    before = obj(x)[0]
    # New coefficients for the operator's own terms (Heisenberg picture: no new terms).
    new_observable = {
        term: (k - 1.5) * coefficient
        for k, (term, coefficient) in enumerate(problem.case.observable.items())
    }
    prop.update_initial_operator(PauliOperator(new_observable, problem.n))
    value, gradient = obj(x)  # the same x: the cached value belongs to the old operator
    assert obj.nfev == 2 and obj.refreshes == 1
    reference = problem.propagator(new_observable)
    fresh = reference.expectation_value_and_gradient_functional()(x)
    assert value == fresh[0] != before
    np.testing.assert_array_equal(gradient, fresh[1])
    np.testing.assert_allclose(gradient, problem.dense(x, new_observable)[1], atol=1e-10)
    obj(x)
    assert obj.nfev == 2 and obj.refreshes == 1  # current again: the cache serves


def test_the_guard_refreshes_after_build_graph_and_follows_the_grown_circuit():
    problem = Problem("majorana", 2)
    prop = problem.propagator()
    f = value_and_grad(prop)
    obj = Objective(prop)
    x = np.linspace(-1, 1, obj.n_parameters)
    obj(x), f(x)
    extra = ExpGate(problem.make({(0, 3): 0.5j}, problem.n))  # a new parameter
    prop.build_graph(Circuit([extra], problem.n))
    x = np.append(x, 0.4)
    value, gradient = obj(x)
    grown = problem.propagator()
    grown.build_graph(Circuit([extra], problem.n))
    expected = grown.expectation_value_and_gradient_functional()(x)
    assert obj.refreshes == 1 and gradient.shape == (len(x),)
    assert value == expected[0] and f(x)[0] == expected[0]
    np.testing.assert_array_equal(gradient, expected[1])


def test_an_invalid_propagator_is_reported_with_the_remedy():
    problem = Problem("pauli", 0)
    prop = problem.propagator()
    obj = Objective(prop)
    x = np.zeros(obj.n_parameters)
    prop._engine._inject_fault("evaluate")
    with pytest.raises(RuntimeError, match="injected fault"):
        prop.expectation_value(x)
    with pytest.raises(InvalidPropagatorError, match="pass rebuild="):
        obj(x)
    with pytest.raises(InvalidPropagatorError, match="Construct a new propagator"):
        value_and_grad(prop)
    assert obj.nfev == 0 and obj.history == []


@pytest.mark.parametrize("takes_seed", [False, True])
def test_an_invalid_propagator_is_rebuilt_through_rebuild(takes_seed):
    problem = Problem("pauli", 0)
    seeds = []

    def rebuild():
        return problem.propagator()

    def rebuild_at(seed):
        seeds.append(seed)
        return problem.propagator(seed_parameters=seed)

    prop = problem.propagator()
    obj = Objective(prop, rebuild=rebuild_at if takes_seed else rebuild)
    x = np.full(obj.n_parameters, 0.2)
    prop._engine._inject_fault("evaluate")
    with pytest.raises(RuntimeError, match="injected fault"):
        prop.expectation_value(x)
    value, gradient = obj(x)
    assert obj.rebuilds == 1 and obj.propagator is not prop
    assert len(seeds) == int(takes_seed)
    if takes_seed:
        np.testing.assert_array_equal(seeds[0], x)
    expected_value, expected_gradient = problem.dense(x)
    assert value == pytest.approx(expected_value, abs=1e-10)
    np.testing.assert_allclose(gradient, expected_gradient, atol=1e-10)


def test_a_rebuild_that_returns_the_wrong_thing_is_refused():
    problem = Problem("pauli", 0)
    for rebuild, error, message in (
        (lambda: "not a propagator", TypeError, "must return a new"),
        (lambda: Problem("pauli", 0, num_gates=2).propagator(), ValueError, "same circuit"),
    ):
        prop = problem.propagator()
        obj = Objective(prop, rebuild=rebuild)
        x = np.zeros(obj.n_parameters)
        prop._engine._inject_fault("evaluate")
        with pytest.raises(RuntimeError):
            prop.expectation_value(x)
        with pytest.raises(error, match=message):
            obj(x)


def test_bad_arguments_raise_before_anything_runs():
    problem = Problem("pauli", 0)
    prop = problem.propagator()
    with pytest.raises(TypeError, match="build_graph"):
        Objective(PauliOperator({"Z": 1.0}, 1))
    with pytest.raises(TypeError, match="rebuild must be a callable"):
        Objective(prop, rebuild=3)
    with pytest.raises(TypeError, match="rebuild"):
        Objective(prop, rebuild=lambda a, b: prop)
    obj = Objective(prop)
    with pytest.raises(ValueError, match="must be 1-D"):
        obj(np.zeros((2, obj.n_parameters)))
    with pytest.raises(ValueError, match="reseeding needs rebuild"):
        obj.reseed(np.zeros(obj.n_parameters))
    assert obj.nfev == 0


def test_value_only_replays_without_the_gradient_and_matches():
    problem = Problem("pauli", 0)
    obj = Objective(problem.propagator())
    x = np.linspace(-0.5, 0.5, obj.n_parameters)
    value = obj.value_only(x)
    assert value == pytest.approx(problem.dense(x)[0], abs=1e-12)
    assert obj.nfev == 1 and np.isnan(obj.history[-1].gradient_norm)
    obj(x)  # value and gradient: a second replay, now cached
    assert obj.value_only(x) == value and obj.nfev == 2
