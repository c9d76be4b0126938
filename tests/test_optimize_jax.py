"""monoprop.optimize.jax.expectation against value_and_grad and the dense reference under
jax.grad, jax.jit and jax.vmap."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from test_optimize_objective import Problem

from monoprop import PauliOperator
from monoprop.optimize import value_and_grad
from monoprop.optimize.jax import expectation


@pytest.fixture(autouse=True)
def float64():
    """JAX defaults to float32; the comparisons below are at float64 precision."""
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_grad_jit_and_vmap_match_value_and_grad(family):
    problem = Problem(family, 1)
    prop = problem.propagator()
    f = expectation(prop)
    reference = value_and_grad(prop)
    points = np.random.default_rng(0).uniform(-2, 2, (4, prop.n_parameters))
    for x in points:
        value, gradient = reference(x)
        assert float(f(x)) == value
        np.testing.assert_array_equal(jax.grad(f)(x), gradient)
        jit_value, jit_gradient = jax.jit(jax.value_and_grad(f))(x)
        assert float(jit_value) == value
        np.testing.assert_array_equal(jit_gradient, gradient)
        np.testing.assert_allclose(gradient, problem.dense(x)[1], atol=1e-10)
    expected = [reference(x) for x in points]
    np.testing.assert_array_equal(jax.jit(jax.vmap(f))(points), [v for v, _ in expected])
    np.testing.assert_array_equal(jax.vmap(jax.grad(f))(points), [g for _, g in expected])


def test_the_chain_rule_runs_through_the_callback():
    problem = Problem("pauli", 0)
    prop = problem.propagator()
    f = expectation(prop)
    reference = value_and_grad(prop)
    a = np.linspace(-1, 1, prop.n_parameters)

    def composed(scale):
        return 3.0 * f(scale * a) ** 2

    value, gradient = reference(0.7 * a)
    assert float(jax.grad(composed)(0.7)) == pytest.approx(6 * value * gradient @ a, rel=1e-12)


def test_the_bridge_is_guarded_across_operator_updates():
    problem = Problem("pauli", 1)
    prop = problem.propagator()
    f = jax.jit(jax.grad(expectation(prop)))
    x = np.full(prop.n_parameters, 0.3)
    before = f(x)
    new_observable = {t: -c for t, c in problem.case.observable.items()}
    prop.update_initial_operator(PauliOperator(new_observable, problem.n))
    np.testing.assert_allclose(f(x), -before, atol=1e-12)  # compiled once, replays anew


def test_float32_mode_replays_in_float64_and_rounds_the_results_once():
    """With 64-bit types disabled (JAX's default) a float64 input is float32 to JAX: the bridge
    replays at that float32 point in float64 and rounds value and gradient to float32 once."""
    jax.config.update("jax_enable_x64", False)
    problem = Problem("pauli", 0)
    prop = problem.propagator()
    f = expectation(prop)
    x = np.random.default_rng(3).uniform(-2, 2, prop.n_parameters)
    point = x.astype(np.float32).astype(np.float64)  # where JAX holds x
    value, gradient = value_and_grad(prop)(point)
    for given in (x, x.astype(np.float32)):
        got_value, got_gradient = jax.jit(jax.value_and_grad(f))(given)
        assert got_value.dtype == got_gradient.dtype == np.float32
        assert got_value == np.float32(value)
        np.testing.assert_array_equal(got_gradient, gradient.astype(np.float32))
        assert f(given) == np.float32(value)
    # Against the dense reference: float32 rounding of results of order one, nothing worse.
    dense_value, dense_gradient = problem.dense(point)
    assert abs(float(f(x)) - dense_value) < 1e-6
    np.testing.assert_allclose(jax.grad(f)(x), dense_gradient, atol=1e-6)


def test_results_take_the_input_dtype_in_x64_mode_too():
    problem = Problem("majorana", 0)
    prop = problem.propagator()
    f = expectation(prop)
    x = np.full(prop.n_parameters, 0.3)
    value, gradient = value_and_grad(prop)(x.astype(np.float32).astype(np.float64))
    got = jax.grad(f)(x.astype(np.float32))
    assert got.dtype == np.float32 and f(x.astype(np.float32)).dtype == np.float32
    np.testing.assert_array_equal(got, gradient.astype(np.float32))
    assert f(x).dtype == jax.grad(f)(x).dtype == np.float64


def test_lists_are_vectors_and_bad_shapes_are_refused_before_the_replay():
    problem = Problem("pauli", 0)
    prop = problem.propagator()
    f = expectation(prop)
    x = [0.1 * k for k in range(prop.n_parameters)]
    # jax.grad of a list argument is a list, one entry per element.
    assert [float(g) for g in jax.grad(f)(x)] == value_and_grad(prop)(np.array(x))[1].tolist()
    n = prop.n_parameters
    for call in (f, jax.jit(f), jax.grad(f)):
        with pytest.raises(ValueError, match="1-D parameter vector"):
            call(np.zeros((2, n)))
        with pytest.raises(ValueError, match=f"vector of {n + 1} parameters but the graph has {n}"):
            call(np.zeros(n + 1))
