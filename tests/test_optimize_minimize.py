"""monoprop.optimize.minimize: the same optimum as scipy on the dense reference, callbacks,
and the guard mid-optimisation (operator updates, graph growth, failures, reseeding)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
from test_optimize_objective import Problem

from monoprop import Circuit, ExpGate, InvalidPropagatorError, PauliOperator, PauliPropagator
from monoprop.optimize import Objective, minimize

# gtol well above where BFGS's line search runs out of digits: on the exact dense
# reference with relative rounding noise of 2e-16 in value and gradient, gtol 1e-8 ends in
# "precision loss" in 2-3 of 20 runs of the Majorana problems and gtol 1e-7 in none, so
# whether 1e-8 succeeds depends on the order in which a replay rounds.
TIGHT = {"gtol": 1e-7, "maxiter": 500}


@pytest.mark.parametrize(
    ("method", "options"),
    [("L-BFGS-B", {"ftol": 1e-15, "gtol": 1e-10}), ("BFGS", TIGHT), ("Nelder-Mead", None)],
)
@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize("seed", range(2))
def test_minimize_reaches_scipys_optimum_on_the_dense_reference(family, seed, method, options):
    problem = Problem(family, seed)
    prop = problem.propagator()
    x0 = np.random.default_rng(seed).uniform(-1, 1, prop.n_parameters)
    result = minimize(prop, x0, method=method, options=options)
    dense = (
        scipy.optimize.minimize(problem.dense, x0, jac=True, method=method, options=options)
        if method != "Nelder-Mead"
        else scipy.optimize.minimize(lambda x: problem.dense(x)[0], x0, method=method)
    )
    assert result.success, result.message
    assert result.fun == pytest.approx(dense.fun, abs=1e-6)
    np.testing.assert_allclose(result.x, dense.x, atol=1e-5)
    assert result.nfev == len(result.history) > 0
    assert result.refreshes == result.rebuilds == 0
    final = problem.dense(result.x)
    assert result.fun == pytest.approx(final[0], abs=1e-10)
    if method != "Nelder-Mead":
        assert np.linalg.norm(final[1]) < 1e-4
    else:  # a gradient-free method replays the value alone
        assert all(np.isnan(e.gradient_norm) for e in result.history)


def test_callbacks_are_called_the_way_scipy_calls_them():
    problem = Problem("pauli", 0)
    prop = problem.propagator()
    x0 = np.full(prop.n_parameters, 0.3)
    results, points = [], []

    def stop_after_three(intermediate_result):
        results.append(intermediate_result)
        if len(results) == 3:
            raise StopIteration

    result = minimize(prop, x0, method="BFGS", callback=stop_after_three)
    assert len(results) == 3 and result.nit == 3
    for reported in results:
        assert reported.fun == pytest.approx(problem.dense(reported.x)[0], abs=1e-10)
    minimize(prop, x0, callback=lambda x: points.append(x), options={"maxiter": 4})
    assert 0 < len(points) <= 4 and all(isinstance(x, np.ndarray) for x in points)


def test_progress_shows_the_energy(capsys):
    problem = Problem("pauli", 0)
    result = minimize(problem.propagator(), np.zeros(5) + 0.2, progress=True)
    err = capsys.readouterr().err
    assert f"energy={result.fun:.10g}" in err and f"{result.nit}it" in err


def test_an_operator_update_mid_optimisation_is_picked_up():
    problem = Problem("pauli", 1)
    prop = problem.propagator()
    new_observable = {t: 2 * c for t, c in problem.case.observable.items()}
    updated = []

    def update_once(intermediate_result):
        if not updated:
            updated.append(True)
            prop.update_initial_operator(PauliOperator(new_observable, problem.n))

    x0 = np.full(prop.n_parameters, 0.4)
    result = minimize(prop, x0, method="BFGS", options=TIGHT, callback=update_once)
    assert result.refreshes == 1
    # Every replay after the update is of the new operator: the result is the new optimum.
    reference = problem.propagator(new_observable)
    fresh = reference.expectation_value_and_gradient_functional()
    assert result.fun == fresh(result.x)[0]
    assert result.fun == pytest.approx(
        minimize(reference, x0, method="BFGS", options=TIGHT).fun, abs=1e-6
    )


def grow(prop, extra, n):
    """Prepend ``extra`` (Heisenberg: the new gate acts first on the state) and drive it by
    parameter 0, so that the parameter vector keeps its length."""
    mapping = prop.parameter_mapping
    prop.build_graph(Circuit([extra], n))
    prop.parameter_mapping = [0, *mapping]


def test_build_graph_mid_optimisation_is_picked_up():
    problem = Problem("majorana", 0)
    prop = problem.propagator()
    extra = ExpGate(problem.make({(1, 4): 0.7j}, problem.n))
    grown = problem.propagator()
    grow(grown, extra, problem.n)
    fresh = grown.expectation_value_and_gradient_functional()
    grown_after = []

    def grow_once(intermediate_result):
        if not grown_after:
            grown_after.append(len(objective.history))
            grow(prop, extra, problem.n)

    objective = Objective(prop)
    result = minimize(objective, np.full(prop.n_parameters, 0.1), callback=grow_once)
    assert result.refreshes == 1 and prop.graph_layers == grown.graph_layers
    later = objective.history[grown_after[0] :]
    assert later
    for evaluation in later:
        assert evaluation.value == fresh(evaluation.x)[0]
    assert result.fun == fresh(result.x)[0]


def test_adapt_style_rounds_reuse_one_objective():
    problem = Problem("pauli", 2)
    prop = problem.propagator()
    objective = Objective(prop)
    x = minimize(objective, np.zeros(prop.n_parameters)).x
    for k, term in enumerate(("XYZ", "ZZY")):
        prop.build_graph(Circuit([ExpGate(PauliOperator({term: 1.0}, problem.n))], problem.n))
        # Heisenberg picture: the new gate acts first and its angle leads the vector.
        result = minimize(objective, np.insert(x, 0, 0.0))
        assert result.refreshes == 1 and objective.refreshes == k + 1
        x = result.x
        assert result.fun == prop.expectation_value(x)
    assert len(x) == problem.propagator().n_parameters + 2


def fault_after_first_iteration(prop):
    """A callback that breaks ``prop`` (a failure in some other operation on it)."""

    def callback(intermediate_result):
        if not callback.done:
            callback.done = True
            prop._engine._inject_fault("evaluate")
            with pytest.raises(RuntimeError, match="injected fault"):
                prop.expectation_value(intermediate_result.x)

    callback.done = False
    return callback


def test_a_failure_mid_optimisation_is_rebuilt_through_rebuild():
    problem = Problem("pauli", 0)
    x0 = np.full(problem.propagator().n_parameters, 0.5)
    clean = minimize(problem.propagator(), x0, method="BFGS", options=TIGHT)
    prop = problem.propagator()
    result = minimize(
        prop,
        x0,
        method="BFGS",
        options=TIGHT,
        callback=fault_after_first_iteration(prop),
        rebuild=lambda: problem.propagator(),
    )
    assert result.rebuilds == 1 and result.objective.propagator is not prop
    assert result.fun == pytest.approx(clean.fun, abs=1e-12)
    np.testing.assert_allclose(result.x, clean.x, atol=1e-10)


def test_a_failure_mid_optimisation_without_rebuild_is_reported():
    problem = Problem("pauli", 0)
    prop = problem.propagator()
    with pytest.raises(InvalidPropagatorError, match="pass rebuild="):
        minimize(prop, np.full(prop.n_parameters, 0.5), callback=fault_after_first_iteration(prop))


def test_reseed_every_rebuilds_the_graph_at_the_optimisers_point():
    problem = Problem("pauli", 1, num_gates=8)
    seeds, iterates = [], []

    def rebuild(seed):
        seeds.append(seed)
        return problem.propagator(seed_parameters=seed)

    prop = problem.propagator()
    prop.lower_atol = 1e-3  # coefficient-informed: the graph depends on the seed
    result = minimize(
        prop,
        np.full(prop.n_parameters, 0.3),
        method="BFGS",
        options={"maxiter": 7},
        reseed_every=3,
        rebuild=rebuild,
        callback=lambda intermediate_result: iterates.append(intermediate_result.x.copy()),
    )
    assert result.rebuilds == len(seeds) == len(iterates) // 3 >= 2
    for k, seed in enumerate(seeds):
        np.testing.assert_array_equal(seed, iterates[3 * k + 2])


def test_bad_arguments_raise_before_anything_runs():
    problem = Problem("pauli", 0)
    objective = Objective(problem.propagator())
    n = objective.n_parameters
    for kwargs, error, message in (
        ({"x0": np.zeros(n + 1)}, ValueError, f"length {n}"),
        ({"x0": np.zeros((1, n))}, ValueError, "1-D"),
        ({"reseed_every": 0}, ValueError, "positive integer"),
        ({"reseed_every": True}, ValueError, "positive integer"),
        ({"reseed_every": 2}, ValueError, "needs rebuild"),
        ({"rebuild": problem.propagator}, TypeError, "belong to the Objective"),
    ):
        with pytest.raises(error, match=message):
            minimize(objective, **{"x0": np.zeros(n), **kwargs})
    with pytest.raises(TypeError, match="PauliPropagator or MajoranaPropagator"):
        minimize(problem.dense, np.zeros(n))
    assert objective.nfev == 0


def several_minima():
    """<Z> = cos(2θ) cos(4θ), one angle driving two gates on one qubit: its least value is -1
    (θ = π/2 + kπ), and it has local minima of -0.2722 (θ = ±0.5751 + kπ)."""
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
    x, y = PauliOperator({"X": 1.0}, 1), PauliOperator({"Y": 2.0}, 1)
    prop.build_graph(Circuit([ExpGate(x, 0), ExpGate(y, 0)], 1))
    return prop


@pytest.mark.parametrize("method", ["L-BFGS-B", "Nelder-Mead"])
def test_multistart_returns_the_best_of_separate_runs(method):
    prop = several_minima()
    # The first start ends in a local minimum, the third in a global one.
    starts = np.array([[0.7], [-0.65], [1.3], [0.9], [-1.2], [2.0]])
    separate = [minimize(prop, x0, method=method) for x0 in starts]
    assert separate[0].fun == pytest.approx(-0.2722, abs=1e-4)
    best = minimize(prop, starts=starts, method=method)
    assert len(best.starts) == len(starts)
    for run, alone, x0 in zip(best.starts, separate, starts, strict=True):
        assert run.fun == alone.fun and run.nit == alone.nit and run.nfev == alone.nfev
        np.testing.assert_array_equal(run.x, alone.x)
        assert [e.value for e in run.history] == [e.value for e in alone.history]
        np.testing.assert_array_equal(run.history[0].x, x0)
    k = int(np.argmin([r.fun for r in separate]))  # the first of equals
    assert best.best_start == k >= 2 and best.fun == separate[k].fun == min(r.fun for r in separate)
    np.testing.assert_array_equal(best.x, separate[k].x)
    assert best.message == separate[k].message and best.truncation_error.bound == 0.0
    assert best is not best.starts[k]
    assert "starts" in repr(best)  # prints, though it lists itself among the starts


def test_multistart_with_reseeding_starts_each_run_on_a_graph_fresh_at_its_start():
    problem = Problem("pauli", 1, num_gates=8)
    seeds = []

    def rebuild(seed):
        seeds.append(seed.copy())
        observable = problem.make(dict(problem.case.observable), problem.n)
        occupied = list(problem.case.occupied)
        prop = problem.cls(observable, occupied, cutoff=2 * problem.n, lower_atol=1e-3)
        prop.build_graph(Circuit(problem.gates, problem.n), seed_parameters=seed)
        return prop

    starts = np.random.default_rng(6).uniform(-1, 1, (3, problem.propagator().n_parameters))
    arguments = {"method": "BFGS", "options": {"maxiter": 6}, "reseed_every": 3}
    best = minimize(rebuild(starts[0]), starts=starts, rebuild=rebuild, **arguments)
    for x0, run in zip(starts, best.starts, strict=True):
        alone = minimize(rebuild(x0), x0, rebuild=rebuild, **arguments)
        assert run.fun == alone.fun
        np.testing.assert_array_equal(run.x, alone.x)
    later_starts = [s for s in seeds if any(np.array_equal(s, x0) for x0 in starts[1:])]
    assert len(later_starts) >= 4  # reseeded there for the multistart, and built there alone


def test_bad_starts_raise_before_anything_runs():
    problem = Problem("pauli", 0)
    objective = Objective(problem.propagator())
    n = objective.n_parameters
    for starts, shape in (
        (np.zeros(n), rf"\({n},\)"),
        (np.zeros((2, n + 1)), rf"\(2, {n + 1}\)"),
        (np.zeros((0, n)), rf"\(0, {n}\)"),
        (np.zeros((1, 2, n)), rf"\(1, 2, {n}\)"),
    ):
        with pytest.raises(ValueError, match=rf"starts has shape {shape} but must be \(S, {n}\)"):
            minimize(objective, starts=starts)
    with pytest.raises(TypeError, match="both x0 and starts="):
        minimize(objective, np.zeros(n), starts=np.zeros((2, n)))
    with pytest.raises(TypeError, match="needs a starting point"):
        minimize(objective)
    with pytest.raises(ValueError, match="needs rebuild"):
        minimize(objective, starts=np.zeros((2, n)), reseed_every=2)
    assert objective.nfev == 0
