"""Tests of the dense reference itself (tests/dense_reference.py).

Nothing here imports monoprop: these check that the reference implements monoprop's
conventions (qubit 0 leftmost, occupied = |1>, 0-based Jordan-Wigner Majoranas, bare products
and their Hermitian forms i^{C(w,2)} m_S, gates exp(+i theta H) in application order, the
Heisenberg and Schrödinger pictures) and reproduces the numbers of the verified vectors of
test_propagator_vectors.py, so that the propagator tests compare against something known to
be right.
"""

import itertools
import math

import dense_reference as dr
import numpy as np
import pytest
from test_propagator_vectors import ITEM8_EXPECTED

THETA = 0.3


def assert_matrix_equal(actual, expected, atol=1e-12):
    np.testing.assert_allclose(actual, expected, rtol=0, atol=atol)


def assert_terms_close(actual, expected, atol=1e-12):
    worst, key = dr.max_coefficient_difference(actual, expected)
    assert worst <= atol, f"term {key!r}: {actual.get(key, 0)} != {expected.get(key, 0)}"


def pauli_on(letters_by_qubit, n):
    """Full-width Pauli string from {qubit: letter}."""
    return "".join(letters_by_qubit.get(q, "I") for q in range(n))


# ---------------------------------------------------------------------------------------
# Basic matrices and the Pauli-string convention: character k of a string acts on qubit k,
# qubit 0 is the leftmost Kronecker factor, and an occupied qubit is |1> (Z = -1)
# ---------------------------------------------------------------------------------------


def test_pauli_string_puts_qubit_zero_leftmost():
    # "XZ" = X on qubit 0 (leftmost Kronecker factor), Z on qubit 1.
    assert_matrix_equal(dr.pauli_string_matrix("XZ"), np.kron(dr.PAULI_X, dr.PAULI_Z))
    assert_matrix_equal(dr.pauli_string_matrix("IY"), np.kron(dr.I2, dr.PAULI_Y))


def test_pauli_algebra():
    x, y, z = dr.PAULI_X, dr.PAULI_Y, dr.PAULI_Z
    assert_matrix_equal(x @ y, 1j * z)
    assert_matrix_equal(y @ z, 1j * x)
    assert_matrix_equal(z @ x, 1j * y)


def test_basis_state_occupied_is_one_and_z_minus_one():
    n = 3
    psi = dr.basis_state([1], n)
    # |0 1 0>: qubit 0 most significant.
    assert np.flatnonzero(psi).tolist() == [0b010]
    for q in range(n):
        z = dr.pauli_string_matrix(pauli_on({q: "Z"}, n))
        assert dr.expectation(z, [1], n) == (-1.0 if q == 1 else 1.0)


def test_basis_state_rejects_out_of_range():
    with pytest.raises(ValueError, match="out of range"):
        dr.basis_state([3], 3)


def test_initial_state_example():
    # O = sum_q 10^q Z_q on 4 qubits, state [0, 1, 3] -> -911 (test_propagator_vectors.py item 3).
    n = 4
    obs = dr.pauli_operator_matrix({pauli_on({q: "Z"}, n): 10.0**q for q in range(n)}, n)
    assert dr.expectation(obs, [0, 1, 3], n) == pytest.approx(-911.0, abs=1e-12)
    # Order and duplicates of the occupied list do not matter.
    assert dr.expectation(obs, [3, 1, 0, 1], n) == pytest.approx(-911.0, abs=1e-12)


def test_reference_R_is_product_of_one_plus_sz():
    n = 3
    occupied = [0, 2]
    expected = np.eye(2**n, dtype=complex)
    for j in range(n):
        s = -1 if j in occupied else 1
        zj = dr.pauli_string_matrix(pauli_on({j: "Z"}, n))
        expected = expected @ (np.eye(2**n) + s * zj)
    assert_matrix_equal(dr.reference_R(occupied, n), expected)
    assert np.trace(dr.reference_R(occupied, n)) == pytest.approx(2**n)


# ---------------------------------------------------------------------------------------
# Jordan-Wigner Majoranas: m_{2j} = Z_0...Z_{j-1} X_j, m_{2j+1} = Z_0...Z_{j-1} Y_j, Hermitian,
# squaring to 1 and pairwise anticommuting
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_majoranas_are_hermitian_involutions_and_anticommute(n):
    mats = dr.majorana_matrices(n)
    assert len(mats) == 2 * n
    eye = np.eye(2**n)
    for a, ma in enumerate(mats):
        assert_matrix_equal(ma, ma.conj().T)
        for b, mb in enumerate(mats):
            assert_matrix_equal(ma @ mb + mb @ ma, 2 * eye if a == b else 0 * eye)


def test_majorana_definition_strings():
    n = 3
    for j in range(n):
        z_string = {q: "Z" for q in range(j)}
        assert_matrix_equal(
            dr.majorana_matrix(2 * j, n), dr.pauli_string_matrix(pauli_on({**z_string, j: "X"}, n))
        )
        assert_matrix_equal(
            dr.majorana_matrix(2 * j + 1, n),
            dr.pauli_string_matrix(pauli_on({**z_string, j: "Y"}, n)),
        )


def test_jw_identities():
    n = 3

    def m(*indices):
        return dr.majorana_product_matrix(indices, n)

    def p(letters):
        return dr.pauli_string_matrix(pauli_on(letters, n))

    for j in range(n):
        assert_matrix_equal(p({j: "Z"}), -1j * m(2 * j, 2 * j + 1))
    assert_matrix_equal(p({0: "X"}), m(0))
    assert_matrix_equal(p({0: "Y"}), m(1))
    assert_matrix_equal(p({1: "X"}), -1j * m(0, 1, 2))
    assert_matrix_equal(p({0: "Z", 1: "Z"}), -m(0, 1, 2, 3))
    assert_matrix_equal(p({0: "Y", 1: "Y", 2: "X"}), 1j * m(1, 2, 4))


def test_majorana_operator_matrix_uses_listed_order():
    n = 2
    assert_matrix_equal(
        dr.majorana_operator_matrix({(1, 0): 1.0}, n),
        -dr.majorana_operator_matrix({(0, 1): 1.0}, n),
    )
    assert_matrix_equal(dr.majorana_operator_matrix({(): 2.5}, n), 2.5 * np.eye(4))


# ---------------------------------------------------------------------------------------
# Fermionic ladder operators: c_j^dagger = (m_{2j} - i m_{2j+1}) / 2 = Z...Z |1><0|_j
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3])
def test_creation_operator_is_z_string_times_raising(n):
    raising = np.array([[0, 0], [1, 0]], dtype=complex)  # |1><0|
    for j in range(n):
        expected = dr.kron_all([dr.PAULI_Z] * j + [raising] + [dr.I2] * (n - j - 1))
        assert_matrix_equal(dr.creation_matrix(j, n), expected)
        assert_matrix_equal(dr.annihilation_matrix(j, n), expected.conj().T)


@pytest.mark.parametrize("n", [2, 3])
def test_canonical_anticommutation_relations(n):
    eye = np.eye(2**n)
    for i, j in itertools.product(range(n), repeat=2):
        ci, cj = dr.annihilation_matrix(i, n), dr.annihilation_matrix(j, n)
        cj_dag = dr.creation_matrix(j, n)
        assert_matrix_equal(ci @ cj_dag + cj_dag @ ci, eye if i == j else 0 * eye)
        assert_matrix_equal(ci @ cj + cj @ ci, 0 * eye)


def test_number_operator_forms():
    n = 3
    for j in range(n):
        nj = dr.number_matrix(j, n)
        pair = dr.majorana_product_matrix((2 * j, 2 * j + 1), n)
        z_j = dr.pauli_string_matrix(pauli_on({j: "Z"}, n))
        assert_matrix_equal(nj, (np.eye(2**n) + 1j * pair) / 2)
        assert_matrix_equal(nj, (np.eye(2**n) - z_j) / 2)
        # Occupied mode = qubit |1>.
        assert dr.expectation(nj, [j], n) == pytest.approx(1.0)
        assert dr.expectation(nj, [], n) == pytest.approx(0.0)


def test_ladder_majorana_coefficients():
    n = 2
    assert_terms_close(dr.majorana_decompose(dr.creation_matrix(0, n), n), {(0,): 0.5, (1,): -0.5j})
    assert_terms_close(dr.majorana_decompose(dr.number_matrix(0, n), n), {(): 0.5, (0, 1): 0.5j})
    hopping = dr.fermi_operator_matrix({((0, "+"), (1, "-")): 1.0, ((1, "+"), (0, "-")): 1.0}, n)
    # (0,2) and (1,3) cancel: FermiOperator.get_majorana_operator keeps them with
    # coefficient 0, the dense decomposition leaves them out.
    assert_terms_close(dr.majorana_decompose(hopping, n), {(0, 3): 0.5j, (1, 2): -0.5j})


# ---------------------------------------------------------------------------------------
# Bare products and the Hermitian basis: the bare product m_S of w Majoranas is Hermitian
# iff w mod 4 is 0 or 1, and i^{C(w,2)} m_S always is; a coefficient c on m_S is the
# Hermitian-basis coefficient h = c / i^{C(w,2)}; a structural entry (S, g) is c = -g i^{C(w,2)}
# ---------------------------------------------------------------------------------------


def test_hermitian_phase_values():
    expected = [1, 1, 1j, -1j, -1, -1, -1j, 1j, 1]
    assert [dr.hermitian_phase(w) for w in range(9)] == expected


def test_antihermitian_generator_correction_values():
    # i^(C(w,2)+1) for w = 0..9.
    expected = [1j, 1j, -1, 1, -1j, -1j, 1, -1, 1j, 1j]
    assert [1j * dr.hermitian_phase(w) for w in range(10)] == expected


def test_bare_product_hermiticity_depends_on_weight_mod_4():
    n = 5
    for w in range(2 * n + 1):
        bare = dr.majorana_product_matrix(tuple(range(w)), n)
        is_hermitian = np.allclose(bare, bare.conj().T)
        assert is_hermitian == (w % 4 in (0, 1)), w
        basis = dr.hermitian_phase(w) * bare
        assert_matrix_equal(basis, basis.conj().T)


@pytest.mark.parametrize(
    "terms",
    [
        {(0, 1): 1j},
        {(0, 1, 2, 3): 1.0},
        {(0, 1, 3): 2j},
        {(0, 1, 2, 3, 4, 5): 1j},
    ],
)
def test_hermitian_examples(terms):
    mat = dr.majorana_operator_matrix(terms, 3)
    assert_matrix_equal(mat, mat.conj().T)


def test_hermitian_basis_coefficient_examples():
    assert dr.hermitian_basis_coefficients({(0, 1, 2, 4): 1.0}) == {(0, 1, 2, 4): -1.0}
    assert dr.hermitian_basis_coefficients({(0, 1): 1j}) == {(0, 1): 1.0}
    assert dr.hermitian_basis_coefficients({(2,): 0.7}) == {(2,): 0.7}
    assert dr.hermitian_basis_coefficients({(0, 1, 3): 2j}) == {(0, 1, 3): -2.0}
    assert_matrix_equal(dr.majorana_operator_matrix({(0, 1): 1j}, 2), -dr.pauli_string_matrix("ZI"))


def test_structural_coefficient_examples():
    assert dr.structural_to_bare((4, 5), -1.0) == 1j
    assert dr.structural_to_bare((0, 1, 2, 3), 0.7) == pytest.approx(0.7)
    assert dr.structural_to_bare((1,), 1.0) == -1
    assert dr.structural_to_bare((0, 2, 3), 0.5) == 0.5j


def test_majorana_commutation_rule():
    assert dr.majorana_terms_anticommute((0,), (1,))
    assert dr.majorana_terms_anticommute((0,), (0, 1))
    assert not dr.majorana_terms_anticommute((0, 2, 3, 5), (0, 2, 4, 6))
    n = 4
    rng = np.random.default_rng(7)
    for _ in range(60):
        a = tuple(sorted(rng.choice(2 * n, size=int(rng.integers(0, 2 * n + 1)), replace=False)))
        b = tuple(sorted(rng.choice(2 * n, size=int(rng.integers(0, 2 * n + 1)), replace=False)))
        ma, mb = dr.majorana_product_matrix(a, n), dr.majorana_product_matrix(b, n)
        anticommute = np.allclose(ma @ mb, -(mb @ ma))
        assert anticommute == dr.majorana_terms_anticommute(a, b), (a, b)


def test_pauli_commutation_rule():
    for p1, p2 in itertools.product(dr.pauli_labels(2), repeat=2):
        a, b = dr.pauli_string_matrix(p1), dr.pauli_string_matrix(p2)
        assert np.allclose(a @ b, -(b @ a)) == dr.pauli_strings_anticommute(p1, p2), (p1, p2)


# ---------------------------------------------------------------------------------------
# Gates exp(+i theta H) and circuit order: U = U_L ... U_1 (the first gate acts first); under
# exp(+i theta c G) a term P anticommuting with G goes to cos(2c theta) P + i sin(2c theta) P G
# ---------------------------------------------------------------------------------------


def test_gate_is_exp_plus_i_theta_h():
    u = dr.gate_unitary(dr.PAULI_X, THETA)
    assert_matrix_equal(u, math.cos(THETA) * dr.I2 + 1j * math.sin(THETA) * dr.PAULI_X)


def test_gate_rejects_non_hermitian_generator():
    with pytest.raises(ValueError, match="not Hermitian"):
        dr.gate_unitary(1j * dr.PAULI_X, THETA)


def test_circuit_applies_first_gate_first():
    h1 = dr.pauli_string_matrix("XI")
    h2 = dr.pauli_string_matrix("ZY")
    u = dr.circuit_unitary([h1, h2], [0.4, -0.7])
    assert_matrix_equal(u, dr.gate_unitary(h2, -0.7) @ dr.gate_unitary(h1, 0.4))
    assert not np.allclose(u, dr.gate_unitary(h1, 0.4) @ dr.gate_unitary(h2, -0.7))


def test_gate_angles_follow_mapping():
    assert dr.gate_angles([0.1, 0.2], [1, 0, 1]) == [0.2, 0.1, 0.2]
    assert dr.gate_angles([0.1, 0.2], None) == [0.1, 0.2]


def test_worked_example_zz_under_x0():
    n = 2
    u = dr.circuit_unitary([dr.pauli_string_matrix("XI")], [THETA])
    evolved = dr.real_coefficients(
        dr.pauli_decompose(dr.heisenberg_operator(dr.pauli_string_matrix("ZZ"), u), n)
    )
    assert set(evolved) == {"ZZ", "YZ"}
    assert evolved["ZZ"] == pytest.approx(0.8253356149096783, abs=1e-14)
    assert evolved["YZ"] == pytest.approx(-0.5646424733950354, abs=1e-14)


@pytest.mark.parametrize("seed", range(10))
def test_single_term_rotation_rule_pauli(seed):
    # P -> cos(2c theta) P + i sin(2c theta) P G for anticommuting P; unchanged otherwise.
    rng = np.random.default_rng(seed)
    n = 3
    labels = dr.pauli_labels(n)[1:]
    p_label, g_label = (labels[int(k)] for k in rng.choice(len(labels), 2, replace=False))
    c, theta = rng.uniform(-1, 1), rng.uniform(-2, 2)
    p, g = dr.pauli_string_matrix(p_label), dr.pauli_string_matrix(g_label)
    evolved = dr.heisenberg_operator(p, dr.gate_unitary(c * g, theta))
    if dr.pauli_strings_anticommute(p_label, g_label):
        expected = math.cos(2 * c * theta) * p + 1j * math.sin(2 * c * theta) * p @ g
    else:
        expected = p
    assert_matrix_equal(evolved, expected)


@pytest.mark.parametrize("seed", range(10))
def test_single_term_rotation_rule_majorana(seed):
    rng = np.random.default_rng(100 + seed)
    n = 3
    labels = dr.majorana_labels(n)[1:]
    p_set, g_set = (labels[int(k)] for k in rng.choice(len(labels), 2, replace=False))
    c, theta = rng.uniform(-1, 1), rng.uniform(-2, 2)
    # Hermitian basis monomials G, P (each squares to 1).
    p = dr.hermitian_phase(len(p_set)) * dr.majorana_product_matrix(p_set, n)
    g = dr.hermitian_phase(len(g_set)) * dr.majorana_product_matrix(g_set, n)
    assert_matrix_equal(g @ g, np.eye(2**n))
    evolved = dr.heisenberg_operator(p, dr.gate_unitary(c * g, theta))
    if dr.majorana_terms_anticommute(p_set, g_set):
        expected = math.cos(2 * c * theta) * p + 1j * math.sin(2 * c * theta) * p @ g
    else:
        expected = p
    assert_matrix_equal(evolved, expected)


def test_commuting_multi_term_generator_factorises():
    n = 3
    terms = {"XXI": 0.4, "ZZI": -0.9, "IIY": 0.3}
    h = dr.pauli_operator_matrix(terms, n)
    product = np.eye(2**n)
    for label, c in terms.items():
        product = dr.gate_unitary(c * dr.pauli_string_matrix(label), 0.8) @ product
    assert_matrix_equal(dr.gate_unitary(h, 0.8), product)


# ---------------------------------------------------------------------------------------
# Pictures: Heisenberg evolves O -> U^dagger O U, Schrödinger evolves R = 2^n |ref><ref| ->
# U R U^dagger; both give the same expectation value
# ---------------------------------------------------------------------------------------


def test_vacuum_state_on_one_mode():
    # 2^n rho for the vacuum on 1 mode: {(): 1, (0,1): -1j} (test_propagator_vectors.py item 5).
    assert_terms_close(dr.majorana_decompose(dr.reference_R([], 1), 1), {(): 1.0, (0, 1): -1j})
    assert_terms_close(dr.majorana_decompose(dr.reference_R([0], 1), 1), {(): 1.0, (0, 1): 1j})


@pytest.mark.parametrize("seed", range(6))
def test_heisenberg_and_schrodinger_agree(seed):
    family = "pauli" if seed % 2 else "majorana"
    case = dr.random_case(seed, family, 3)
    obs = case.operator_matrix(case.observable)
    u = case.unitary()
    direct = case.expectation()
    heis = np.trace(dr.heisenberg_operator(obs, u) @ dr.reference_R(case.occupied, 3)) / 8
    schr = np.trace(obs @ dr.schrodinger_R(case.occupied, 3, u)) / 8
    assert heis.real == pytest.approx(direct, abs=1e-12)
    assert schr.real == pytest.approx(direct, abs=1e-12)


# ---------------------------------------------------------------------------------------
# Decompositions
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3])
def test_bases_are_orthogonal(n):
    for kind, labels in (("pauli", dr.pauli_labels(n)), ("majorana", dr.majorana_labels(n))):
        assert len(labels) == 4**n
        mats = [dr._basis_matrix(kind, lab, n) for lab in labels]
        gram = np.array([[np.vdot(a, b) for b in mats] for a in mats])
        assert_matrix_equal(gram, 2**n * np.eye(4**n))


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_decomposition_round_trip(n):
    rng = np.random.default_rng(n)
    mat = rng.normal(size=(2**n, 2**n)) + 1j * rng.normal(size=(2**n, 2**n))
    pauli = dr.pauli_decompose(mat, n, atol=0.0)
    majorana = dr.majorana_decompose(mat, n, atol=0.0)
    assert len(pauli) == len(majorana) == 4**n
    assert_matrix_equal(dr.pauli_operator_matrix(pauli, n), mat)
    assert_matrix_equal(dr.majorana_operator_matrix(majorana, n), mat)


def test_decomposition_of_known_operators():
    n = 3
    terms = {"XZI": 0.5, "IYY": -1.25, "III": 2.0}
    assert_terms_close(dr.pauli_decompose(dr.pauli_operator_matrix(terms, n), n), terms)
    mterms = {(0, 1): 1j, (0, 2, 5): -0.3j, (1,): 0.25, (0, 1, 2, 3): 0.7}
    assert_terms_close(dr.majorana_decompose(dr.majorana_operator_matrix(mterms, n), n), mterms)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_partial_trace_pauli_decomposition_matches_direct_traces(n):
    rng = np.random.default_rng(10 + n)
    mat = rng.normal(size=(2**n, 2**n)) + 1j * rng.normal(size=(2**n, 2**n))
    assert_terms_close(
        dr.pauli_decompose_partial_trace(mat, n, atol=0.0),
        dr.pauli_decompose(mat, n, atol=0.0),
        atol=1e-12,
    )


def test_large_pauli_decomposition_round_trip():
    # n = 6 goes through the qubit-by-qubit path.
    n = 6
    terms = {"XZIIYI": 0.5, "IIIIIZ": -0.25, "YYYYYY": 1.5, "IIIIII": 0.1}
    assert_terms_close(dr.pauli_decompose(dr.pauli_operator_matrix(terms, n), n), terms)


def test_real_coefficients_rejects_complex():
    assert dr.real_coefficients({"X": 1 + 1e-14j}) == {"X": 1.0}
    with pytest.raises(ValueError, match="not real"):
        dr.real_coefficients({"X": 1 + 1e-3j})


# ---------------------------------------------------------------------------------------
# Finite differences
# ---------------------------------------------------------------------------------------


def test_central_difference_on_known_function():
    def f(x):
        return math.sin(x[0]) * math.cos(x[1]) + x[2] ** 3

    x = [0.3, -0.4, 0.7]
    expected = [math.cos(0.3) * math.cos(-0.4), -math.sin(0.3) * math.sin(-0.4), 3 * 0.7**2]
    np.testing.assert_allclose(dr.central_difference(f, x), expected, atol=1e-9)


def test_single_gate_gradient_is_minus_two_sin():
    # test_propagator_vectors.py item 1: d/dtheta cos(2 theta) at 0.3 = -2 sin(0.6).
    obs = dr.pauli_string_matrix("ZZ")
    gens = [dr.pauli_string_matrix("XI")]

    def f(x):
        return dr.circuit_expectation(obs, [], 2, gens, x)

    np.testing.assert_allclose(dr.central_difference(f, [0.3]), [-1.1292849467900707], atol=1e-8)


# ---------------------------------------------------------------------------------------
# The verified vectors (items 1-9 of test_propagator_vectors.py), computed with the
# reference only
# ---------------------------------------------------------------------------------------


def test_vector_1_zz_under_x0():
    u = dr.circuit_unitary([dr.pauli_operator_matrix({"XI": 1.0}, 2)], [0.3])
    obs = dr.pauli_operator_matrix({"ZZ": 1.0}, 2)
    evolved = dr.real_coefficients(dr.pauli_decompose(dr.heisenberg_operator(obs, u), 2))
    assert_terms_close(evolved, {"ZZ": 0.8253356149096783, "YZ": -0.5646424733950354}, 1e-14)
    assert dr.expectation(obs, [], 2, u) == pytest.approx(0.8253356149096783, abs=1e-14)
    # Hermitian-basis coefficients (Pauli: the coefficients themselves) of contract_partially.
    assert sorted(evolved.values()) == pytest.approx(
        sorted([0.8253356149096783, -0.5646424733950354]), abs=1e-14
    )


def test_vector_2_majorana_hopping_rotation():
    n = 2
    obs = dr.majorana_operator_matrix({(0, 1): 1j}, n)
    gens = [dr.majorana_operator_matrix({(1, 2): 1j}, n)]
    u = dr.circuit_unitary(gens, [0.3])
    evolved = dr.majorana_decompose(dr.heisenberg_operator(obs, u), n)
    assert_terms_close(evolved, {(0, 1): 0.8253356149096783j, (0, 2): -0.5646424733950354j}, 1e-14)
    assert dr.expectation(obs, [], n, u) == pytest.approx(-0.8253356149096783, abs=1e-14)
    grad = dr.central_difference(lambda x: dr.circuit_expectation(obs, [], n, gens, x), [0.3])
    np.testing.assert_allclose(grad, [1.1292849467900707], atol=1e-8)
    assert sorted(dr.hermitian_basis_coefficients(evolved).values()) == pytest.approx(
        [-0.5646424733950354, 0.8253356149096783], abs=1e-14
    )


def test_vector_3_initial_states():
    n = 4
    obs = dr.pauli_operator_matrix({pauli_on({q: "Z"}, n): 10.0**q for q in range(n)}, n)
    assert dr.expectation(obs, [0, 1, 3], n) == pytest.approx(-911.0, abs=1e-12)
    weighted = sum(10.0**j * dr.number_matrix(j, 3) for j in range(3))
    assert dr.expectation(weighted, [1, 2], 3) == pytest.approx(110.0, abs=1e-12)
    n0 = dr.number_matrix(0, 1)
    assert dr.expectation(n0, [0], 1) == pytest.approx(1.0, abs=1e-14)
    assert dr.expectation(n0, [], 1) == pytest.approx(0.0, abs=1e-14)


def test_vector_4_hopping_gate():
    n = 2
    hopping = dr.fermi_operator_matrix({((0, "+"), (1, "-")): 1.0, ((1, "+"), (0, "-")): 1.0}, n)
    u = dr.circuit_unitary([hopping], [0.25])
    value = dr.expectation(dr.number_matrix(1, n), [0], n, u)
    assert value == pytest.approx(0.061208719054813676, abs=1e-14)
    assert value == pytest.approx(math.sin(0.25) ** 2, abs=1e-14)


def test_vector_5_schrodinger_vacuum_state():
    state = dr.majorana_decompose(dr.schrodinger_R([], 1, np.eye(2)), 1)
    assert_terms_close(state, {(): 1.0, (0, 1): -1.0j}, 1e-15)


def test_vector_7_structural_coefficients():
    n = 5
    gate = (1, 2, 3, 4)
    gens = [dr.majorana_operator_matrix({gate: dr.structural_to_bare(gate, 1.0)}, n)]
    u = dr.circuit_unitary(gens, [math.pi / 6])
    obs = dr.majorana_operator_matrix({(0, 1): 1j}, n)
    assert_terms_close(
        dr.majorana_decompose(dr.heisenberg_operator(obs, u), n),
        {(0, 1): 0.5j, (0, 2, 3, 4): -0.8660254037844386},
        1e-12,
    )

    n = 2
    gens = [dr.majorana_operator_matrix({(1, 2): dr.structural_to_bare((1, 2), 1.0)}, n)]
    obs = dr.majorana_operator_matrix({(0, 1): 1j, (0, 2): 1j}, n)
    for p in (0.1, 0.37, -1.2):
        u = dr.circuit_unitary(gens, [p])
        c, s = math.cos(2 * p), math.sin(2 * p)
        assert_terms_close(
            dr.majorana_decompose(dr.heisenberg_operator(obs, u), n),
            {(0, 1): 1j * (c - s), (0, 2): 1j * (c + s)},
            1e-12,
        )


def test_vector_8_non_fermionic_structural_circuit():
    n = 2
    majoranas = [(0,), (0, 1), (0, 1, 3), (2, 3)]
    g = [-1.0, 1.0, -1.0, 1.0]
    params = [0.1, 0.2, 0.2, 0.2]  # one parameter index per monomial: param_inds [0, 1, 2, 3]
    gens = [
        dr.majorana_operator_matrix({m: dr.structural_to_bare(m, gm)}, n)
        for m, gm in zip(majoranas, g, strict=True)
    ]
    u = dr.circuit_unitary(gens, params)
    obs = dr.majorana_operator_matrix({(1, 2, 3): -1j}, n)
    expected = ITEM8_EXPECTED  # vector item 8 of test_propagator_vectors.py
    assert_terms_close(dr.majorana_decompose(dr.heisenberg_operator(obs, u), n), expected, 1e-12)


def test_vector_9_circuit_ordering():
    n = 3
    obs = dr.pauli_operator_matrix({"ZXI": 1.0, "XYZ": 0.5, "IZY": -0.3}, n)
    a = [
        (dr.pauli_operator_matrix({"XII": 1.0}, n), 0.3),
        (dr.pauli_operator_matrix({"ZXI": 0.7}, n), 0.5),
    ]
    b = [
        (dr.pauli_operator_matrix({"YZX": 1.0}, n), 0.9),
        (dr.pauli_operator_matrix({"IYY": 0.4}, n), -0.4),
    ]

    def value(gates):
        u = dr.circuit_unitary([g for g, _ in gates], [t for _, t in gates])
        return dr.expectation(obs, [0], n, u)

    assert value(a + b) == pytest.approx(0.0230766978, abs=1e-10)
    assert value(b + a) == pytest.approx(-0.3261424686, abs=1e-10)


# ---------------------------------------------------------------------------------------
# Random cases (used by test_random_circuits.py)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("family,n", [("pauli", 3), ("pauli", 5), ("majorana", 2), ("majorana", 4)])
@pytest.mark.parametrize("shared", [False, True])
def test_random_case_shape(family, n, shared):
    for seed in range(5):
        case = dr.random_case(seed, family, n, shared_parameters=shared)
        assert case == dr.random_case(seed, family, n, shared_parameters=shared)
        assert len(case.generators) == 6
        for gen in case.generators:
            assert 1 <= len(gen) <= 2
            labels = list(gen)
            for t in labels:
                weight = (len(t) - t.count("I")) if family == "pauli" else len(t)
                assert 1 <= weight <= 4
            if len(labels) == 2:
                assert not (
                    dr.pauli_strings_anticommute(*labels)
                    if family == "pauli"
                    else dr.majorana_terms_anticommute(*labels)
                )
            mat = case.operator_matrix(gen)
            assert_matrix_equal(mat, mat.conj().T)
        obs = case.operator_matrix(case.observable)
        assert_matrix_equal(obs, obs.conj().T)
        assert len(case.observable) >= 3
        if shared:
            assert sorted(set(case.mapping)) == list(range(len(case.parameters)))
        else:
            assert case.mapping is None and len(case.parameters) == 6


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("family,n", [("pauli", 3), ("majorana", 2)])
def test_central_difference_matches_exact_circuit_gradient(seed, family, n):
    case = dr.random_case(seed, family, n, shared_parameters=bool(seed % 2))
    x = np.array(case.parameters) + 0.1
    exact = case.exact_gradient(x)
    np.testing.assert_allclose(
        case.finite_difference_gradient(x), exact, atol=1e-8, err_msg=f"seed={seed}"
    )
    assert np.any(np.abs(exact) > 1e-3), f"seed={seed}: gradient trivially zero"
