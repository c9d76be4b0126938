"""Verified numeric vectors (items 1-9 below), through the public monoprop API.

Small fixed problems with known results: single Pauli and Majorana rotations, reference
states, a hopping gate, the Schrödinger vacuum state, contraction without gates, structural
(dense-array) circuits, and the order of repeated build_graph calls in both pictures. Each
expected number is written here as a literal; where the dense reference can compute the same
quantity it is checked too (tests/dense_reference.py, no monoprop inside).
"""

import math

import dense_reference as dr
import numpy as np
import pytest

from monoprop import (
    Circuit,
    ExpGate,
    FermiOperator,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
)

COS06 = 0.8253356149096783  # cos(0.6)
SIN06 = 0.5646424733950354  # sin(0.6)
# evolved_operator rounds real and imaginary parts to 12 decimal places.
ROUNDED = 1e-14


def pauli_strings(op, n):
    """PauliOperator -> {full-width string: coefficient}."""
    return dr.pauli_terms_to_strings(op.terms, n)


def assert_terms_close(actual, expected, atol, context=""):
    worst, key = dr.max_coefficient_difference(actual, expected)
    assert worst <= atol, (
        f"{context} term {key!r}: got {actual.get(key, 0)!r}, expected {expected.get(key, 0)!r}"
    )


def number_operator(j, n, coefficient=1.0):
    return FermiOperator([[(j, "+"), (j, "-")]], [coefficient], n)


# ---------------------------------------------------------------------------------------
# Item 1: ZZ under exp(+i 0.3 X0), Pauli front-end
# ---------------------------------------------------------------------------------------


def x0_circuit(parameters=(0.3,)):
    return Circuit([ExpGate(PauliOperator({"X": 1.0}, 2))], 2, parameters=list(parameters))


def test_vector_1_from_circuit_evolved_operator():
    prop = PauliPropagator.from_circuit(x0_circuit(), PauliOperator({"ZZ": 1.0}, 2), cutoff=4)
    evolved = prop.evolved_operator()
    assert isinstance(evolved, PauliOperator)
    assert evolved.num_qubits == 2
    terms = pauli_strings(evolved, 2)
    assert set(terms) == {"ZZ", "YZ"}
    # The expected numbers are the 12-decimal rounded values evolved_operator reports.
    assert terms["ZZ"] == pytest.approx(0.82533561491, abs=ROUNDED)
    assert terms["YZ"] == pytest.approx(-0.564642473395, abs=ROUNDED)
    assert all(isinstance(c, float) for c in evolved.terms.values())
    # Reference.
    u = dr.circuit_unitary([dr.pauli_string_matrix("XI")], [0.3])
    ref = dr.real_coefficients(
        dr.pauli_decompose(dr.heisenberg_operator(dr.pauli_string_matrix("ZZ"), u), 2)
    )
    assert_terms_close(terms, ref, 1e-11)
    assert prop.expectation_value() == pytest.approx(COS06, abs=1e-12)
    assert prop.graph_layers == 0
    assert prop.n_parameters == 0
    assert prop.parameter_mapping == []


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "unbound"])
def test_vector_1_graph(bound):
    prop = PauliPropagator(PauliOperator({"ZZ": 1.0}, 2), [], cutoff=4)
    prop.build_graph(x0_circuit((0.3,) if bound else ()))
    value = prop.expectation_value([0.3])
    assert isinstance(value, float)
    assert value == pytest.approx(0.8253356149096783, abs=1e-12)
    assert prop.expval([0.3]) == pytest.approx(value, abs=0)
    grad = prop.gradient([0.3])
    assert isinstance(grad, np.ndarray) and grad.dtype == np.float64 and grad.shape == (1,)
    np.testing.assert_allclose(grad, [-1.1292849467900707], rtol=0, atol=1e-12)
    np.testing.assert_allclose(grad, [-2 * math.sin(0.6)], rtol=0, atol=1e-12)
    assert prop.graph_size() == (0, 1)
    assert prop.size() == 2
    contracted = prop.contract_partially([0.3], inplace=False)
    assert isinstance(contracted, np.ndarray) and contracted.dtype == np.float64
    # contract_partially returns coefficients in store order, which is not specified: sort.
    np.testing.assert_allclose(np.sort(contracted), sorted([COS06, -SIN06]), rtol=0, atol=1e-12)
    # A pure query: the graph is still there and gives the same numbers.
    assert prop.graph_layers == 1
    assert prop.expectation_value([0.3]) == pytest.approx(value, abs=1e-15)
    # Replay at another angle against the dense reference.
    obs, gens = dr.pauli_string_matrix("ZZ"), [dr.pauli_string_matrix("XI")]
    for theta in (-0.8, 1.1):
        assert prop.expval([theta]) == pytest.approx(
            dr.circuit_expectation(obs, [], 2, gens, [theta]), abs=1e-12
        )


# ---------------------------------------------------------------------------------------
# Item 2: i m0 m1 under exp(+i 0.3 * i m1 m2), Majorana front-end
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "unbound"])
def test_vector_2_majorana_graph(bound):
    prop = MajoranaPropagator(MajoranaOperator({(0, 1): 1j}, 2), [], cutoff=4)
    gate = ExpGate(MajoranaOperator({(1, 2): 1j}, 2))
    prop.build_graph(Circuit([gate], 2, parameters=[0.3] if bound else []))
    evolved = prop.evolved_operator([0.3])
    assert isinstance(evolved, MajoranaOperator)
    assert evolved.num_modes == 2
    assert set(evolved.terms) == {(0, 1), (0, 2)}
    assert_terms_close(evolved.terms, {(0, 1): 0.82533561491j, (0, 2): -0.564642473395j}, ROUNDED)
    assert prop.expectation_value([0.3]) == pytest.approx(-0.8253356149096783, abs=1e-12)
    np.testing.assert_allclose(prop.gradient([0.3]), [1.1292849467900707], rtol=0, atol=1e-12)
    contracted = prop.contract_partially([0.3], inplace=False)
    np.testing.assert_allclose(np.sort(contracted), [-SIN06, COS06], rtol=0, atol=1e-12)
    # Reference.
    obs = dr.majorana_operator_matrix({(0, 1): 1j}, 2)
    u = dr.circuit_unitary([dr.majorana_operator_matrix({(1, 2): 1j}, 2)], [0.3])
    assert_terms_close(
        evolved.terms, dr.majorana_decompose(dr.heisenberg_operator(obs, u), 2), 1e-11
    )
    assert dr.expectation(obs, [], 2, u) == pytest.approx(prop.expval([0.3]), abs=1e-12)


# ---------------------------------------------------------------------------------------
# Item 3: reference states
# ---------------------------------------------------------------------------------------


def test_vector_3_pauli_initial_state():
    n = 4
    terms = {dr.widen_pauli("Z", [q], n): 10.0**q for q in range(n)}
    prop = PauliPropagator(PauliOperator(terms, n), [0, 1, 3], cutoff=4)
    assert prop.expectation_value() == pytest.approx(-911.0, abs=1e-12)
    assert dr.expectation(dr.pauli_operator_matrix(terms, n), [0, 1, 3], n) == pytest.approx(
        prop.expectation_value(), abs=1e-12
    )


def test_vector_3_majorana_initial_state():
    n = 3
    weighted = FermiOperator(
        [[(j, "+"), (j, "-")] for j in range(n)], [10.0**j for j in range(n)], n
    )
    prop = MajoranaPropagator(weighted, [1, 2], cutoff=6)
    assert prop.expectation_value() == pytest.approx(110.0, abs=1e-12)
    dense = sum(10.0**j * dr.number_matrix(j, n) for j in range(n))
    assert dr.expectation(dense, [1, 2], n) == pytest.approx(110.0, abs=1e-12)


@pytest.mark.parametrize("state,expected", [([0], 1.0), ([], 0.0)])
def test_vector_3_single_number_operator(state, expected):
    prop = MajoranaPropagator(number_operator(0, 1), state, cutoff=2)
    assert prop.expectation_value() == pytest.approx(expected, abs=1e-15)


# ---------------------------------------------------------------------------------------
# Item 4: hopping gate
# ---------------------------------------------------------------------------------------


def hopping_gate():
    return ExpGate(FermiOperator([[(0, "+"), (1, "-")], [(1, "+"), (0, "-")]], [1.0, 1.0], 2))


def test_vector_4_hopping_from_circuit():
    circuit = Circuit([hopping_gate()], 2, parameters=[0.25], initial_state=[0])
    prop = MajoranaPropagator.from_circuit(circuit, number_operator(1, 2), cutoff=4)
    assert prop.expectation_value() == pytest.approx(0.061208719054813676, abs=1e-12)
    assert prop.expectation_value() == pytest.approx(math.sin(0.25) ** 2, abs=1e-12)


@pytest.mark.parametrize("schrodinger_cutoff", [None, 4])
def test_vector_4_hopping_graph_and_gradient(schrodinger_cutoff):
    prop = MajoranaPropagator(
        number_operator(1, 2), [0], cutoff=4, schrodinger_cutoff=schrodinger_cutoff
    )
    prop.build_graph(Circuit([hopping_gate()], 2, parameters=[0.25]))
    assert prop.expval([0.25]) == pytest.approx(0.061208719054813676, abs=1e-12)
    # d/dtheta sin^2(theta) = sin(2 theta).
    np.testing.assert_allclose(prop.grad([0.25]), [math.sin(0.5)], rtol=0, atol=1e-12)
    hop = dr.fermi_operator_matrix({((0, "+"), (1, "-")): 1.0, ((1, "+"), (0, "-")): 1.0}, 2)
    for theta in (0.25, -1.3):
        dense = dr.circuit_expectation(dr.number_matrix(1, 2), [0], 2, [hop], [theta])
        assert prop.expval([theta]) == pytest.approx(dense, abs=1e-12)


# ---------------------------------------------------------------------------------------
# Item 5: Schrödinger state of the vacuum on one mode
# ---------------------------------------------------------------------------------------


def test_vector_5_schrodinger_vacuum_state():
    prop = MajoranaPropagator(MajoranaOperator({}, 1), [], cutoff=2, schrodinger_cutoff=2)
    assert prop.schrodinger is True
    assert prop.evolved_operator().terms == {(): 1.0, (0, 1): -1.0j}
    ref = dr.majorana_decompose(dr.reference_R([], 1), 1)
    assert_terms_close(prop.evolved_operator().terms, ref, 1e-15)
    # Empty observable: expectation 0.
    assert prop.expectation_value() == pytest.approx(0.0, abs=1e-15)


# ---------------------------------------------------------------------------------------
# Item 6: contract_partially without gates, then update_initial_operator
# ---------------------------------------------------------------------------------------


def test_vector_6_contract_without_gates_and_update():
    prop = MajoranaPropagator(MajoranaOperator({(0, 1, 2, 4): 1.0}, 8), [], cutoff=8)
    first = prop.contract_partially(inplace=False)
    assert isinstance(first, np.ndarray) and first.dtype == np.float64
    np.testing.assert_array_equal(first, np.array([-1.0]))
    prop.update_initial_operator(MajoranaOperator({(0, 1, 2, 4): 2.0}, 8))
    np.testing.assert_array_equal(prop.contract_partially(inplace=False), np.array([-2.0]))
    # The bare coefficient is reported back unchanged by evolved_operator.
    assert prop.evolved_operator().terms == {(0, 1, 2, 4): 2.0}


# ---------------------------------------------------------------------------------------
# Item 7: structural coefficients from dense arrays
# ---------------------------------------------------------------------------------------


def test_vector_7_structural_length_4_gate():
    circuit = Circuit.from_dense_arrays([(1, 2, 3, 4)], [1.0], [0], 5, parameters=[math.pi / 6])
    prop = MajoranaPropagator.from_circuit(circuit, MajoranaOperator({(0, 1): 1j}, 5), cutoff=10)
    expected = {(0, 1): 0.5j, (0, 2, 3, 4): -0.8660254037844386}
    evolved = prop.evolved_operator().terms
    assert set(evolved) == set(expected)
    assert_terms_close(evolved, expected, 1e-12)
    # Reference with c = -g i^{C(w,2)}.
    gens = [
        dr.majorana_operator_matrix({(1, 2, 3, 4): dr.structural_to_bare((1, 2, 3, 4), 1.0)}, 5)
    ]
    u = dr.circuit_unitary(gens, [math.pi / 6])
    ref = dr.majorana_decompose(
        dr.heisenberg_operator(dr.majorana_operator_matrix({(0, 1): 1j}, 5), u), 5
    )
    assert_terms_close(evolved, ref, 1e-11)


@pytest.mark.parametrize("p", [0.3, -0.7, 1.2])
def test_vector_7_structural_two_held_terms_rotate_into_each_other(p):
    circuit = Circuit.from_dense_arrays([(1, 2)], [1.0], [0], 2)
    prop = MajoranaPropagator(MajoranaOperator({(0, 1): 1j, (0, 2): 1j}, 2), [], cutoff=4)
    prop.build_graph(circuit)
    c, s = math.cos(2 * p), math.sin(2 * p)
    expected = {(0, 1): 1j * (c - s), (0, 2): 1j * (c + s)}
    evolved = prop.evolved_operator([p]).terms
    assert_terms_close(evolved, expected, 1e-11, f"p={p}")
    assert prop.graph_size() == (0, 1)
    assert prop.size() == 2


# ---------------------------------------------------------------------------------------
# Item 8: a non-fermionic structural circuit
# ---------------------------------------------------------------------------------------

ITEM8_MAJORANAS = [(0,), (0, 1), (0, 1, 3), (2, 3)]
ITEM8_G = [-1.0, 1.0, -1.0, 1.0]
ITEM8_PARAMS = [0.1, 0.2, 0.2, 0.2]
ITEM8_EXPECTED = {
    (1, 2, 3): -0.8314427691150754j,
    (0, 1, 2, 3): -0.16854179325074592,
    (0, 2, 3): 0.35867804544976145j,
    (0, 2): 0.35152836455073294j,
    (2,): 0.07125832726038464,
    (1, 2): 0.1516466453264173j,
}


def test_vector_8_non_fermionic_propagate():
    # One parameter index per monomial (the four monomials form four gates).
    circuit = Circuit.from_dense_arrays(
        ITEM8_MAJORANAS, ITEM8_G, [0, 1, 2, 3], 2, parameters=ITEM8_PARAMS
    )
    assert len(circuit) == 4
    prop = MajoranaPropagator(MajoranaOperator({(1, 2, 3): -1j}, 2), [], cutoff=4)
    prop.propagate(circuit)
    evolved = prop.evolved_operator().terms
    assert set(evolved) == set(ITEM8_EXPECTED)
    assert_terms_close(evolved, ITEM8_EXPECTED, 1e-11)
    gens = [
        dr.majorana_operator_matrix({m: dr.structural_to_bare(m, g)}, 2)
        for m, g in zip(ITEM8_MAJORANAS, ITEM8_G, strict=True)
    ]
    u = dr.circuit_unitary(gens, ITEM8_PARAMS)
    obs = dr.majorana_operator_matrix({(1, 2, 3): -1j}, 2)
    assert_terms_close(evolved, dr.majorana_decompose(dr.heisenberg_operator(obs, u), 2), 1e-11)
    assert prop.expectation_value() == pytest.approx(dr.expectation(obs, [], 2, u), abs=1e-12)


# ---------------------------------------------------------------------------------------
# Item 9: ordering of multiple build_graph calls
# ---------------------------------------------------------------------------------------

ITEM9_OBS = {"ZXI": 1.0, "XYZ": 0.5, "IZY": -0.3}
ITEM9_A = ([("XII", 1.0), ("ZXI", 0.7)], [0.3, 0.5])
ITEM9_B = ([("YZX", 1.0), ("IYY", 0.4)], [0.9, -0.4])
A_THEN_B = 0.0230766978
B_THEN_A = -0.3261424686


def item9_circuit(spec):
    gates, params = spec
    return Circuit(
        [ExpGate(PauliOperator({s: c}, 3)) for s, c in gates],
        3,
        parameters=params,
        initial_state=[0],
    )


def item9_dense(*specs):
    gens, params = [], []
    for gates, p in specs:
        gens += [dr.pauli_operator_matrix({s: c}, 3) for s, c in gates]
        params += p
    obs = dr.pauli_operator_matrix(ITEM9_OBS, 3)

    def f(x):
        return dr.circuit_expectation(obs, [0], 3, gens, x)

    return f, params


def item9_propagator(schrodinger):
    return PauliPropagator(
        PauliOperator(ITEM9_OBS, 3), [0], cutoff=6, schrodinger_cutoff=3 if schrodinger else None
    )


def test_vector_9_dense_reference_values():
    f_ab, x_ab = item9_dense(ITEM9_A, ITEM9_B)
    f_ba, x_ba = item9_dense(ITEM9_B, ITEM9_A)
    assert f_ab(x_ab) == pytest.approx(A_THEN_B, abs=1e-10)
    assert f_ba(x_ba) == pytest.approx(B_THEN_A, abs=1e-10)


def test_vector_9_heisenberg_two_builds_is_b_then_a():
    prop = item9_propagator(schrodinger=False)
    prop.build_graph(item9_circuit(ITEM9_A))
    prop.build_graph(item9_circuit(ITEM9_B))
    assert prop.n_parameters == 4
    x = ITEM9_B[1] + ITEM9_A[1]  # [tB..., tA...]
    assert prop.expval(x) == pytest.approx(B_THEN_A, abs=1e-10)
    f, _ = item9_dense(ITEM9_B, ITEM9_A)
    np.testing.assert_allclose(prop.grad(x), dr.central_difference(f, x), rtol=0, atol=1e-6)


def test_vector_9_schrodinger_two_builds_is_a_then_b():
    prop = item9_propagator(schrodinger=True)
    prop.build_graph(item9_circuit(ITEM9_A))
    prop.build_graph(item9_circuit(ITEM9_B))
    assert prop.n_parameters == 4
    x = ITEM9_A[1] + ITEM9_B[1]  # [tA..., tB...]
    assert prop.expval(x) == pytest.approx(A_THEN_B, abs=1e-10)
    f, _ = item9_dense(ITEM9_A, ITEM9_B)
    np.testing.assert_allclose(prop.grad(x), dr.central_difference(f, x), rtol=0, atol=1e-6)


@pytest.mark.parametrize("schrodinger", [False, True], ids=["heisenberg", "schrodinger"])
def test_vector_9_single_build_of_concatenation(schrodinger):
    prop = item9_propagator(schrodinger)
    prop.build_graph(item9_circuit(ITEM9_A) + item9_circuit(ITEM9_B))
    x = ITEM9_A[1] + ITEM9_B[1]
    assert prop.expval(x) == pytest.approx(A_THEN_B, abs=1e-10)
    f, _ = item9_dense(ITEM9_A, ITEM9_B)
    np.testing.assert_allclose(prop.grad(x), dr.central_difference(f, x), rtol=0, atol=1e-6)
