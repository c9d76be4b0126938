"""Random circuits against the dense reference, both front-ends (50 seeds per family).

Each case (tests/dense_reference.py ``random_case``) has 6 gates of 1-2 pairwise commuting
terms of weight 1-4, a random reference state and a multi-term observable. With no
truncation (cutoff >= 2n) the propagators must reproduce the dense results exactly:

* one-shot ``from_circuit`` / ``propagate``: the expectation value, and the whole evolved
  operator U^dagger O U (Heisenberg) or evolved state 2^n rho(theta) (Schrödinger);
* stored graph with shared parameters (``ExpGate(index=...)``): value, gradient against
  central finite differences, and the evolved operator/state at a fresh parameter point.

The seed is in every test id and assertion message; rerun one case with
``pytest tests/test_random_circuits.py -k "pauli and seed=17"``.
"""

import functools

import dense_reference as dr
import numpy as np
import pytest

from monoprop import (
    Circuit,
    ExpGate,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
)

SEEDS = range(50)
FAMILIES = ["pauli", "majorana"]
VALUE_ATOL = 1e-10  # expectation values agree with the dense reference to 1e-10
TERM_ATOL = 1e-9
GRADIENT_ATOL = 1e-6


def system_size(family: str, seed: int) -> int:
    """3-4 qubits / 2-4 modes for the bulk; a few 5- and 6-qubit cases."""
    if family == "pauli":
        return {10: 5, 35: 5, 20: 6, 45: 6}.get(seed, 3 + seed % 2)
    return 2 + seed % 3


@functools.cache
def one_shot_case(family: str, seed: int) -> dr.RandomCase:
    return dr.random_case(seed, family, system_size(family, seed))


@functools.cache
def shared_case(family: str, seed: int) -> dr.RandomCase:
    return dr.random_case(10_000 + seed, family, system_size(family, seed), shared_parameters=True)


def operator(case: dr.RandomCase, terms: dict):
    if case.family == "pauli":
        return PauliOperator(dict(terms), case.n)
    return MajoranaOperator(dict(terms), case.n)


def circuit(case: dr.RandomCase, *, bound: bool = True, with_state: bool = True) -> Circuit:
    gates = [
        ExpGate(operator(case, gen), None if case.mapping is None else case.mapping[i])
        for i, gen in enumerate(case.generators)
    ]
    return Circuit(
        gates,
        case.n,
        parameters=list(case.parameters) if bound else [],
        initial_state=list(case.occupied) if with_state else None,
    )


def propagator_class(case: dr.RandomCase):
    return PauliPropagator if case.family == "pauli" else MajoranaPropagator


def picture_config(case: dr.RandomCase, picture: str) -> dict:
    config = {"cutoff": 2 * case.n}
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = 2 * case.n
    return config


def plain_terms(case: dr.RandomCase, op) -> dict:
    if case.family == "pauli":
        assert isinstance(op, PauliOperator) and op.num_qubits == case.n
        return dr.pauli_terms_to_strings(op.terms, case.n)
    assert isinstance(op, MajoranaOperator) and op.num_modes == case.n
    return dict(op.terms)


def describe(case: dr.RandomCase, seed: int, picture: str) -> str:
    return f"{case.family} seed={seed} n={case.n} {picture} state={case.occupied}"


def check_terms(actual: dict, expected: dict, context: str) -> None:
    worst, key = dr.max_coefficient_difference(actual, expected)
    assert worst <= TERM_ATOL, (
        f"{context}: term {key!r} got {actual.get(key, 0)!r}, dense {expected.get(key, 0)!r}"
    )


def dense_terms(case: dr.RandomCase, picture: str, parameters=None) -> dict:
    if picture == "heisenberg":
        return case.heisenberg_terms(parameters)
    return case.schrodinger_terms(parameters)


# ---------------------------------------------------------------------------------------
# One-shot propagation
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed={s}")
@pytest.mark.parametrize("family", FAMILIES)
def test_one_shot_matches_dense(family, seed, picture):
    case = one_shot_case(family, seed)
    context = describe(case, seed, picture)
    expected_value = case.expectation()
    expected_terms = dense_terms(case, picture)
    cls = propagator_class(case)
    observable = operator(case, case.observable)
    config = picture_config(case, picture)

    from_circuit = cls.from_circuit(circuit(case), observable, **config)
    # propagate() on a circuit that leaves the state to the propagator.
    propagated = cls(observable, list(case.occupied), **config)
    propagated.propagate(circuit(case, with_state=False))

    for route, prop in (("from_circuit", from_circuit), ("propagate", propagated)):
        assert prop.schrodinger is (picture == "schrodinger"), f"{context} {route}"
        assert prop.n_parameters == 0, f"{context} {route}"
        value = prop.expectation_value()
        assert abs(value - expected_value) <= VALUE_ATOL, (
            f"{context} {route}: expval {value!r}, dense {expected_value!r}"
        )
        evolved = plain_terms(case, prop.evolved_operator(atol=0.0))
        check_terms(evolved, expected_terms, f"{context} {route}")


# ---------------------------------------------------------------------------------------
# Stored graph with shared parameters
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed={s}")
@pytest.mark.parametrize("family", FAMILIES)
def test_graph_value_gradient_and_operator_match_dense(family, seed, picture):
    case = shared_case(family, seed)
    context = describe(case, seed, picture) + f" mapping={case.mapping}"
    prop = propagator_class(case)(
        operator(case, case.observable), list(case.occupied), **picture_config(case, picture)
    )
    # Even seeds seed the build with the circuit's parameters, odd seeds build structurally.
    prop.build_graph(circuit(case, bound=seed % 2 == 0))
    assert prop.n_parameters == len(case.parameters), context
    assert prop.n_gates == len(case.generators), context
    assert prop.graph_layers == sum(len(g) for g in case.generators), context

    rng = np.random.default_rng(seed)
    fresh = rng.uniform(-1.5, 1.5, size=len(case.parameters))
    for label, x in (("build point", np.array(case.parameters)), ("fresh point", fresh)):
        where = f"{context} at {label} {x.tolist()}"
        expected_value = case.expectation(x)
        value = prop.expectation_value(x)
        assert abs(value - expected_value) <= VALUE_ATOL, (
            f"{where}: expval {value!r}, dense {expected_value!r}"
        )
        grad = prop.gradient(x)
        fd = case.finite_difference_gradient(x)
        assert grad.shape == fd.shape, where
        assert np.max(np.abs(grad - fd)) <= GRADIENT_ATOL, f"{where}: grad {grad}, FD {fd}"
        both_value, both_grad = prop.expectation_value_and_gradient(x)
        assert abs(both_value - value) <= 1e-12, where
        assert np.max(np.abs(both_grad - grad)) <= 1e-12, where
        evolved = plain_terms(case, prop.evolved_operator(x, atol=0.0))
        check_terms(evolved, dense_terms(case, picture, x), where)
