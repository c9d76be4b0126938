"""monoprop.optimize.jax.expectation against value_and_grad and the dense reference under
jax.grad, jax.jit and jax.vmap, and a vmapped batch reaching the propagator in one call."""

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


def spy_on_functionals(prop) -> list[tuple[str, tuple[int, ...]]]:
    """Record ``(functional kind, shape of its argument)`` for every call of the functionals
    the propagator hands out from now on (the guard takes them from the propagator)."""
    calls: list[tuple[str, tuple[int, ...]]] = []

    def spying(kind, make):
        def make_functional(*args, **kwargs):
            functional = make(*args, **kwargs)

            def call(parameters):
                calls.append((kind, np.shape(parameters)))
                return functional(parameters)

            call.check = functional.check
            return call

        return make_functional

    prop.expectation_value_functional = spying("value", prop.expectation_value_functional)
    prop.expectation_value_and_gradient_functional = spying(
        "value_and_gradient", prop.expectation_value_and_gradient_functional
    )
    return calls


@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_vmap_matches_pointwise_calls_bitwise(family):
    problem = Problem(family, 2)
    prop = problem.propagator()
    f = expectation(prop)
    points = np.random.default_rng(1).uniform(-2, 2, (7, prop.n_parameters))
    single = [prop.expectation_value_and_gradient(x) for x in points]
    values = np.array([v for v, _ in single])
    gradients = np.array([g for _, g in single])
    np.testing.assert_array_equal(jax.vmap(f)(points), values)
    np.testing.assert_array_equal(jax.jit(jax.vmap(f))(points), values)
    got_values, got_gradients = jax.jit(jax.vmap(jax.value_and_grad(f)))(points)
    np.testing.assert_array_equal(got_values, values)
    np.testing.assert_array_equal(got_gradients, gradients)
    # A batch of batches: (2, 3) points.
    grid = points[:6].reshape(2, 3, -1)
    np.testing.assert_array_equal(jax.vmap(jax.vmap(f))(grid), values[:6].reshape(2, 3))
    nested_values, nested_gradients = jax.vmap(jax.vmap(jax.value_and_grad(f)))(grid)
    np.testing.assert_array_equal(nested_values, values[:6].reshape(2, 3))
    np.testing.assert_array_equal(nested_gradients, gradients[:6].reshape(grid.shape))
    # The batch on another axis than the first.
    np.testing.assert_array_equal(jax.vmap(f, in_axes=1)(points.T), values)


def test_a_vmapped_batch_reaches_the_propagator_in_one_call():
    problem = Problem("pauli", 1)
    prop = problem.propagator()
    calls = spy_on_functionals(prop)
    f = expectation(prop)
    n = prop.n_parameters
    points = np.random.default_rng(2).uniform(-2, 2, (5, n))
    jax.vmap(f)(points)
    assert calls == [("value", (5, n))]
    calls.clear()
    jax.jit(jax.vmap(jax.value_and_grad(f)))(points)
    assert calls == [("value_and_gradient", (5, n))]
    calls.clear()
    jax.vmap(jax.vmap(jax.grad(f)))(np.concatenate([points, points[:1]]).reshape(3, 2, n))
    assert calls == [("value_and_gradient", (6, n))]
    calls.clear()
    f(points[0])  # a single point stays a vector
    assert calls == [("value", (n,))]


def test_a_batch_after_a_failure_is_rebuilt_once_seeded_at_its_first_point():
    problem = Problem("pauli", 0)
    seeds = []

    def rebuild_at(seed):
        seeds.append(seed)
        return problem.propagator(seed_parameters=seed)

    prop = problem.propagator()
    f = expectation(prop, rebuild=rebuild_at)
    points = np.random.default_rng(4).uniform(-2, 2, (4, prop.n_parameters))
    prop._engine._inject_fault("evaluate")
    with pytest.raises(RuntimeError, match="injected fault"):
        prop.expectation_value(points[0])
    values, gradients = jax.vmap(jax.value_and_grad(f))(points)
    assert len(seeds) == 1
    np.testing.assert_array_equal(seeds[0], points[0])
    fresh = problem.propagator(seed_parameters=points[0])
    for x, value, gradient in zip(points, values, gradients, strict=True):
        expected_value, expected_gradient = fresh.expectation_value_and_gradient(x)
        assert float(value) == expected_value
        np.testing.assert_array_equal(gradient, expected_gradient)


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
