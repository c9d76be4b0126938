"""minimize(..., reseed_every=k): a sequence of scipy runs, one per graph, each seeded at the
point where the last one stopped. Checked against the true (state-vector) energy, scipy's own
limits and messages, and the callbacks and counters that span the call."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

pytest.importorskip("qiskit")
from qiskit.circuit.library import efficient_su2  # noqa: E402
from qiskit.quantum_info import SparsePauliOp, Statevector  # noqa: E402

from monoprop import PauliOperator, PauliPropagator, from_qiskit_circuit  # noqa: E402
from monoprop.optimize import Segment, minimize  # noqa: E402

N = 6
# A Heisenberg chain, qubit 0 first in monoprop's labels.
HEISENBERG = {
    "".join(p if q in (i, i + 1) else "I" for q in range(N)): 1.0
    for i in range(N - 1)
    for p in "XYZ"
}
ANSATZ = efficient_su2(N, reps=2)
CIRCUIT = from_qiskit_circuit(ANSATZ, [])


def truncated(seed: np.ndarray, lower_atol: float = 3e-2) -> PauliPropagator:
    """A graph that keeps only the branches that matter at ``seed``."""
    prop = PauliPropagator(PauliOperator(HEISENBERG, N), [], cutoff=N, lower_atol=lower_atol)
    prop.build_graph(CIRCUIT, seed_parameters=seed)
    return prop


def true_energy(x: np.ndarray) -> float:
    """The untruncated energy, from Qiskit's state vector (its labels put qubit 0 last)."""
    observable = SparsePauliOp([label[::-1] for label in HEISENBERG], list(HEISENBERG.values()))
    return float(Statevector(ANSATZ.assign_parameters(x)).expectation_value(observable).real)


def start(seed: int) -> np.ndarray:
    """Small angles: a graph seeded there drops most branches the optimum needs."""
    return np.random.default_rng(seed).uniform(-0.05, 0.05, ANSATZ.num_parameters)


def check_segments(result) -> None:
    """Every segment but the last ended for a reseed; the last one's end is the call's."""
    segments = result.segments
    assert all(isinstance(s, Segment) for s in segments)
    assert [s.reason for s in segments[:-1]] == ["reseed"] * (len(segments) - 1)
    assert segments[-1].reason == result.message != "reseed"
    assert [s.start for s in segments] == [0] + [s.end for s in segments[:-1]]
    assert segments[-1].end == result.nit
    assert sum(s.nfev for s in segments) == result.nfev


@pytest.mark.parametrize("seed", range(3))
def test_reseeding_reaches_a_lower_true_energy_than_one_seeded_graph(seed):
    x0 = start(seed)
    once = minimize(truncated(x0), x0)
    reseeded = minimize(truncated(x0), x0, reseed_every=10, rebuild=truncated)
    check_segments(reseeded)
    # Each segment that reached k iterations rebuilt the graph, the call's last one too
    # when fresh graphs stopped paying.
    rebuilt = [s.reason == "reseed" or s.reason.startswith("reseeding") for s in reseeded.segments]
    assert len(rebuilt) > 1 and reseeded.rebuilds == sum(rebuilt)
    # One graph seeded at small angles optimises a function far from the true one.
    assert true_energy(reseeded.x) < true_energy(once.x) - 0.5
    # The last graph was seeded near the returned point, so its value is close to the truth.
    assert reseeded.fun == pytest.approx(true_energy(reseeded.x), abs=1e-2)
    # Each result's error bar holds the true energy at its point, the one graph's too.
    for result in (once, reseeded):
        assert abs(true_energy(result.x) - result.fun) <= result.truncation_error.bound + 1e-12
    assert reseeded.truncation_error.bound > 0.0
    if reseeded.success:
        assert reseeded.message.startswith("CONVERGENCE")


def test_limits_callback_progress_and_history_span_the_segments():
    x0 = start(0)
    iterates = []
    result = minimize(
        truncated(x0),
        x0,
        reseed_every=4,
        rebuild=truncated,
        options={"maxiter": 10},
        callback=lambda intermediate_result: iterates.append(intermediate_result.x.copy()),
    )
    # Two reseeds, then scipy's own limit, with its message, on what was left of maxiter.
    assert [(s.start, s.end) for s in result.segments] == [(0, 4), (4, 8), (8, 10)]
    assert not result.success and "ITERATIONS REACHED LIMIT" in result.message
    check_segments(result)
    assert len(iterates) == result.nit == 10
    np.testing.assert_array_equal(iterates[-1], result.x)
    # Each scipy call is one replay, except each segment's first, which the reseed's own
    # evaluation at the same point already made.
    assert len(result.history) == result.nfev
    assert result.history[-1].value == result.fun

    capped = minimize(truncated(x0), x0, reseed_every=4, rebuild=truncated, options={"maxfun": 9})
    assert sum(s.nfev for s in capped.segments) == capped.nfev <= 9 + 1
    assert not capped.success and "NO. OF F" in capped.message


def test_a_segment_that_fails_ends_the_call_without_success():
    """A line search that fails on one graph is reported as such, not papered over by the
    reseeds before it."""
    calls = []

    def lbfgsb_failing_on_the_second_graph(fun, x0, args=(), jac=None, callback=None, **options):
        calls.append(x0.copy())
        if len(calls) == 1:
            return scipy.optimize.minimize(fun, x0, jac=jac, method="L-BFGS-B", callback=callback)
        return scipy.optimize.OptimizeResult(
            x=x0, fun=fun(x0), nit=0, nfev=1, success=False, status=2, message="ABNORMAL: "
        )

    x0 = start(1)
    result = minimize(
        truncated(x0),
        x0,
        method=lbfgsb_failing_on_the_second_graph,
        reseed_every=5,
        rebuild=truncated,
    )
    assert len(calls) == 2 and result.rebuilds == 1
    assert not result.success and result.message == "ABNORMAL: " and result.status == 2
    check_segments(result)
    np.testing.assert_array_equal(result.x, calls[1])


def test_reseeding_that_cycles_between_graphs_ends_with_its_reason():
    """With a coarse tolerance, each graph's optimum seeds a graph whose optimum lies back
    near the last: the call ends once fresh graphs stop giving lower values."""
    x0 = start(1)
    result = minimize(truncated(x0), x0, reseed_every=10, rebuild=truncated)
    assert not result.success
    assert result.message.startswith("reseeding stopped lowering the energy")
    check_segments(result)
    # The returned value is that of the fresh graph seeded at the returned point.
    assert (
        result.fun
        == result.history[-1].value
        == result.objective.propagator.expectation_value(result.x)
    )
    assert result.fun == pytest.approx(true_energy(result.x), abs=1e-2)


def budgeted(seed: np.ndarray) -> PauliPropagator:
    """A graph whose truncation the error budget in force chooses (no lower_atol)."""
    prop = PauliPropagator(PauliOperator(HEISENBERG, N), [], cutoff=N)
    prop.build_graph(CIRCUIT, seed_parameters=seed)
    return prop


@pytest.mark.parametrize("seed", range(2))
def test_max_error_rebuilds_the_graph_until_the_energy_is_within_it(seed):
    eps = 1e-2
    x0 = start(seed)
    coarse = truncated(x0)  # seeded at small angles: far off at the optimum
    result = minimize(coarse, x0, max_error=eps, rebuild=budgeted)
    # The first run's end was over the budget: the graph was rebuilt there, with the budget.
    assert result.segments[0].reason == "max_error" and result.rebuilds >= 1
    assert result.within_max_error
    assert result.truncation_error.estimate <= eps
    assert result.objective.propagator.max_error_thresholds  # the budget chose its truncation
    assert abs(true_energy(result.x) - result.fun) <= 3 * eps
    assert abs(true_energy(result.x) - result.fun) <= result.truncation_error.bound + 1e-12
    # Without a rebuild the run ends where it ends, and says the error there is over budget.
    alone = minimize(truncated(x0), x0, max_error=eps)
    assert not alone.within_max_error and not alone.success
    assert alone.truncation_error.estimate > eps
    assert f"passes max_error={eps:g}" in alone.message
    assert "no rebuild(seed)" in alone.message
    # The same run without max_error: no check, no rebuild, no within_max_error.
    plain = minimize(truncated(x0), x0)
    assert plain.fun == alone.fun and "within_max_error" not in plain


def test_minimize_refuses_a_bad_max_error_before_running():
    x0 = start(0)
    prop = truncated(x0)
    for bad, error in (("1e-3", TypeError), (-1.0, ValueError), (float("nan"), ValueError)):
        with pytest.raises(error, match="max_error"):
            minimize(prop, x0, max_error=bad)
    with pytest.raises(ValueError, match="pass max_error too"):
        minimize(prop, x0, rigorous=True)
