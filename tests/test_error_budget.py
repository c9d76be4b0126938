"""max_error: an error budget that chooses the truncation layer by layer.

Checked against the dense references of ``test_truncation_error`` (random circuits in both
families and pictures, with noise channels and Clifford gates): the estimate budget keeps the
actual error within ``eps`` in most cases and within ``3 eps`` in all; the rigorous one keeps
the bound, and so the actual error, within ``eps`` in every case. A one-qubit circuit checks
the thresholds exactly; bad input is refused before anything changes.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from test_truncation_error import CASES, PICTURES, SLACK, X1, make, random_case, to_circuit

from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator, error_budget

EPSILONS = (0.01, 0.05, 0.2)


def budget_config(case, picture: str) -> dict:
    """No cutoff and no lower_atol: the budget alone chooses what to drop."""
    width = case.n if case.family == "pauli" else 2 * case.n
    config = {"cutoff": width}
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = width
    return config


def budgeted_runs(rigorous: bool) -> list[tuple]:
    """(context, eps, actual error, truncation error, thresholds) of every random case."""
    runs = []
    for (family, channels, cliffords), picture, seed, eps in itertools.product(
        CASES, PICTURES, range(6), EPSILONS
    ):
        case = random_case(seed, family, channels=channels, cliffords=cliffords)
        prop = make(case, budget_config(case, picture))
        prop.propagate(to_circuit(case, case.parameters), max_error=eps, rigorous=rigorous)
        actual = abs(prop.expectation_value() - case.expectation())
        context = f"{family} channels={channels} cliffords={cliffords} {picture} seed={seed}"
        runs.append((context, eps, actual, prop.truncation_error(), prop.max_error_thresholds))
    return runs


def test_the_estimate_budget_holds_the_actual_error():
    runs = budgeted_runs(rigorous=False)
    # Not vacuous: the budget dropped terms, and the values it left carry an error.
    assert sum(bool(thresholds) for *_, thresholds in runs) >= 0.8 * len(runs)
    assert sum(actual > 1e-9 for _, _, actual, _, _ in runs) >= 0.5 * len(runs)
    within = [actual <= eps for _, eps, actual, _, _ in runs]
    assert sum(within) >= 0.8 * len(runs), f"{sum(within)} of {len(runs)} within eps"
    for context, eps, actual, error, _ in runs:
        assert actual <= 3 * eps, f"{context} eps={eps}: actual {actual:.3g}"
        assert error.estimate <= eps * (1 + 1e-9), f"{context} eps={eps}: {error}"
        assert actual <= error.bound + SLACK, context


def test_the_rigorous_budget_holds_the_bound():
    runs = budgeted_runs(rigorous=True)
    assert sum(bool(thresholds) for *_, thresholds in runs) >= 0.5 * len(runs)
    for context, eps, actual, error, _ in runs:
        assert error.bound <= eps * (1 + 1e-12), f"{context} eps={eps}: {error}"
        assert actual <= error.bound + SLACK, f"{context} eps={eps}: actual {actual:.3g}"


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize(("family", "channels", "cliffords"), CASES, ids=str)
@pytest.mark.parametrize("rigorous", [False, True])
def test_a_budgeted_build_at_its_seed_makes_the_choices_of_propagate(
    family, channels, cliffords, picture, rigorous
):
    case = random_case(3, family, channels=channels, cliffords=cliffords)
    circuit = to_circuit(case, case.parameters)
    prop = make(case, budget_config(case, picture))
    prop.propagate(circuit, max_error=0.05, rigorous=rigorous)
    graph = make(case, budget_config(case, picture))
    graph.build_graph(circuit, max_error=0.05, rigorous=rigorous)
    assert graph.max_error_thresholds == prop.max_error_thresholds
    seed = list(case.parameters)
    assert graph.expectation_value(seed) == pytest.approx(prop.expectation_value(), abs=1e-12)
    assert graph.truncation_error(seed).bound == pytest.approx(
        prop.truncation_error().bound, rel=1e-12, abs=1e-14
    )
    # The graph stays exact where the budget kept everything: away from the seed it drops
    # only what it dropped there.
    assert abs(graph.expectation_value(seed) - case.expectation()) <= (
        graph.truncation_error(seed).bound + SLACK
    )


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_a_budgeted_build_in_pieces_records_the_graph_of_one_build(family, picture, tmp_path):
    from test_resume import fresh, state

    whole, circuit, x = fresh(family, picture, lower_atol=None)
    pieces, _, _ = fresh(family, picture, lower_atol=None)
    whole.build_graph(circuit, seed_parameters=x, max_error=0.05)
    pieces.build_graph(
        circuit, seed_parameters=x, max_error=0.05, checkpoint=tmp_path / "c", checkpoint_every=0
    )
    assert state(pieces) == state(whole)
    assert pieces.max_error_thresholds == whole.max_error_thresholds != []


def one_drop(t: float) -> Circuit:
    """Z under exp(+i pi/4 X) exp(+i t X): the first layer (t) makes the branch sin(2t) Y,
    which the quarter turn after it would turn into -Z (so it reaches |0> in full); the second
    makes a Y that no gate follows (dark: <0|Y|0> = 0)."""
    return Circuit([ExpGate(X1), ExpGate(X1)], 1, parameters=[math.pi / 4, t])


def test_the_thresholds_are_the_weights_dropped_layer_by_layer():
    t = 0.05
    branch = abs(math.sin(2 * t))
    # The budget counts Y at the root of its reach, sqrt(0.2) (one unpaired mode): 0.045 fits
    # the first layer's share of 0.05, half the budget; the dark Y of the second layer costs
    # nothing and goes too. The budget is a model: this Y reaches the state in full.
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
    prop.propagate(one_drop(t), max_error=0.1)
    assert prop.max_error_thresholds == [(0, branch), (1, abs(math.cos(2 * t)))]
    assert prop.truncation_error().bound == branch
    assert prop.truncation_error().estimate == pytest.approx(0.7 * 0.2 * branch, rel=1e-12)
    exact = math.cos(2 * (math.pi / 4 + t))
    assert abs(prop.expectation_value() - exact) == pytest.approx(branch, rel=1e-12)
    # At a smaller budget, and in the rigorous one (which counts Y in full), it does not fit:
    # the layers rotate every term and the value is exact.
    for kwargs in ({"max_error": 0.08}, {"max_error": 0.1, "rigorous": True}):
        kept = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
        kept.propagate(one_drop(t), **kwargs)
        assert kept.max_error_thresholds == [], kwargs
        assert kept.truncation_error() == (0.0, 0.0)
        assert kept.expectation_value() == pytest.approx(exact, abs=1e-15)


def test_error_budget_sets_the_budget_of_a_block():
    def run(**kwargs):
        prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
        prop.propagate(one_drop(0.05), **kwargs)
        return prop.max_error_thresholds

    dropping = run(max_error=0.1)
    assert run() == [] != dropping
    with error_budget(0.1):
        assert run() == dropping
        with error_budget(0.1, rigorous=True):
            assert run() == [] == run(max_error=0.1, rigorous=True)
        assert run() == dropping
        assert run(max_error=0.08) == []  # its own wins
    assert run() == []


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_error": "1e-3"}, TypeError, "max_error must be a number"),
        ({"max_error": True}, TypeError, "max_error must be a number"),
        ({"max_error": 0.0}, ValueError, "max_error=0.0 must be a positive"),
        ({"max_error": -1e-3}, ValueError, "max_error=-0.001 must be a positive"),
        ({"max_error": math.nan}, ValueError, "max_error=nan must be a positive"),
        ({"max_error": math.inf}, ValueError, "max_error=inf must be a positive"),
        ({"max_error": 1e-3, "rigorous": 1}, TypeError, "rigorous must be True or False"),
        ({"rigorous": True}, ValueError, "pass max_error too"),
        ({"max_error": 1e-3, "only_rotate_len_k": 1}, ValueError, "only_rotate_len_k=1"),
    ],
)
@pytest.mark.parametrize("call", ["propagate", "build_graph"])
def test_bad_budgets_are_refused_before_anything_changes(call, kwargs, error, match):
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
    before = (prop.size(), prop.evolved_operator(atol=0.0), prop.graph_size())
    with pytest.raises(error, match=match):
        getattr(prop, call)(one_drop(0.05), **kwargs)
    assert (prop.size(), prop.evolved_operator(atol=0.0), prop.graph_size()) == before
    assert prop.max_error_thresholds == []


def test_a_structural_build_is_refused_a_budget():
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
    structural = Circuit([ExpGate(X1), ExpGate(X1)], 1)
    with pytest.raises(ValueError, match="max_error=0.05 needs coefficients.*seed_parameters"):
        prop.build_graph(structural, max_error=0.05)
    assert prop.graph_size() == (0, 0)
    prop.build_graph(structural, seed_parameters=[math.pi / 4, 0.05], max_error=0.1)
    assert prop.max_error_thresholds == [(0, abs(math.sin(0.1))), (1, abs(math.cos(0.1)))]


@pytest.mark.parametrize("bad", [None, 0.0, "x"])
def test_error_budget_refuses_what_max_error_refuses(bad):
    with pytest.raises((TypeError, ValueError)), error_budget(bad):
        pass


def test_a_budget_keeps_fewer_terms_than_the_lower_atol_reaching_its_error():
    """On a 6-qubit Heisenberg-chain Trotter circuit: the budget spends where branches cannot
    reach the state; a uniform lower_atol whose actual error is no larger holds more terms."""
    n = 6
    observable = PauliOperator({"ZIIIII": 1.0}, n)
    gates, angles = [], []
    rng = np.random.default_rng(5)
    for _ in range(4):
        for q in range(n - 1):
            for p in ("XX", "YY", "ZZ"):
                gates.append(ExpGate(PauliOperator({"I" * q + p + "I" * (n - q - 2): 1.0}, n)))
                angles.append(float(rng.uniform(0.1, 0.3)))
        for q in range(n):
            gates.append(ExpGate(PauliOperator({"I" * q + "X" + "I" * (n - q - 1): 1.0}, n)))
            angles.append(float(rng.uniform(0.1, 0.3)))
    circuit = Circuit(gates, n, parameters=angles)
    exact = PauliPropagator(observable, [], cutoff=n)
    exact.propagate(circuit)
    truth = exact.expectation_value()
    budgeted = PauliPropagator(observable, [], cutoff=n)
    budgeted.propagate(circuit, max_error=1e-3)
    actual = abs(budgeted.expectation_value() - truth)
    assert 0 < actual <= 1e-3
    for atol in np.geomspace(1e-2, 1e-6, 17):
        uniform = PauliPropagator(observable, [], cutoff=n, lower_atol=float(atol))
        uniform.propagate(circuit)
        if abs(uniform.expectation_value() - truth) <= actual:
            assert budgeted.size() < uniform.size(), (atol, budgeted.size(), uniform.size())
            break
    else:
        pytest.fail("no lower_atol reached the budget's actual error")
