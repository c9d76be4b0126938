"""integrals_to_fermion against an independent dense second-quantised Hamiltonian.

Dense reference: H = h0 + sum_pq h1[p,q] a_p^† a_q + 1/2 sum_pqrs (pq|rs) a_p^† a_r^† a_s a_q
over spin-orbitals (alpha 0..k-1, beta k..2k-1), chemists' notation, where a spin-orbital
integral is zero unless spin(p) = spin(q) and spin(r) = spin(s). The h2 blocks are indexed as
integrals_to_fermion reads them: h2[0] alpha-alpha, h2[1] the opposite-spin block
(alpha alpha|beta beta), i.e. p, q alpha and r, s beta, and h2[2] beta-beta.
"""

import numpy as np
import pytest
from _jw import creation, majorana_operator_matrix

from monoprop.fermi import FermiOperator, FermiString
from monoprop.integral_conversion import integrals_to_fermion


def random_integrals(k, rng):
    h1 = rng.normal(size=(2, k, k))
    h1 = (h1 + h1.transpose(0, 2, 1)) / 2
    h2 = rng.normal(size=(3, k, k, k, k))
    # (pq|rs) = (qp|rs) = (pq|sr) for every block ...
    h2 = (h2 + h2.transpose(0, 2, 1, 3, 4)) / 2
    h2 = (h2 + h2.transpose(0, 1, 2, 4, 3)) / 2
    # ... and (pq|rs) = (rs|pq) within the same-spin blocks.
    for sigma in (0, 2):
        h2[sigma] = (h2[sigma] + h2[sigma].transpose(2, 3, 0, 1)) / 2
    return float(rng.normal()), h1, h2


def spin_orbital_integrals(h1, h2):
    k = h1.shape[1]
    alpha, beta = slice(0, k), slice(k, 2 * k)
    one = np.zeros((2 * k, 2 * k))
    one[alpha, alpha], one[beta, beta] = h1[0], h1[1]
    two = np.zeros((2 * k,) * 4)
    two[alpha, alpha, alpha, alpha] = h2[0]
    two[beta, beta, beta, beta] = h2[2]
    two[alpha, alpha, beta, beta] = h2[1]
    two[beta, beta, alpha, alpha] = h2[1].transpose(2, 3, 0, 1)
    return one, two


def dense_hamiltonian(h0, h1, h2):
    one, two = spin_orbital_integrals(h1, h2)
    modes = one.shape[0]
    cdag = creation(modes)
    c = [m.conj().T for m in cdag]
    dim = 2**modes
    h = h0 * np.eye(dim, dtype=complex)
    for p in range(modes):
        for q in range(modes):
            h += one[p, q] * cdag[p] @ c[q]
    for p, q, r, s in np.ndindex(*two.shape):
        if two[p, q, r, s] != 0:
            h += 0.5 * two[p, q, r, s] * cdag[p] @ cdag[r] @ c[s] @ c[q]
    return h


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_dense_hamiltonian_k2(seed):
    rng = np.random.default_rng(seed)
    h0, h1, h2 = random_integrals(2, rng)
    op = integrals_to_fermion(h0, h1, h2)
    assert isinstance(op, FermiOperator) and op.num_modes == 4
    dense = dense_hamiltonian(h0, h1, h2)
    np.testing.assert_allclose(
        majorana_operator_matrix(op.get_majorana_operator()), dense, atol=1e-10
    )


def test_matches_dense_hamiltonian_k3():
    rng = np.random.default_rng(42)
    h0, h1, h2 = random_integrals(3, rng)
    op = integrals_to_fermion(h0, h1, h2)
    assert op.num_modes == 6
    np.testing.assert_allclose(
        majorana_operator_matrix(op.get_majorana_operator()),
        dense_hamiltonian(h0, h1, h2),
        atol=1e-10,
    )


def test_result_is_hermitian():
    h0, h1, h2 = random_integrals(2, np.random.default_rng(9))
    mat = majorana_operator_matrix(integrals_to_fermion(h0, h1, h2).get_majorana_operator())
    np.testing.assert_allclose(mat, mat.conj().T, atol=1e-10)


def coefficient_map(op):
    return {t.expression: c for t, c in zip(op.terms, op.coefficients, strict=True)}


def test_hand_checked_keys():
    k = 2
    h1 = np.zeros((2, k, k))
    h1[0, 0, 1] = 0.3
    h1[1, 1, 0] = -0.7
    h2 = np.zeros((3, k, k, k, k))
    h2[1, 0, 1, 1, 0] = 0.25  # (ps|qr) with p=0, s=1 (alpha); q=1, r=0 (beta)
    h2[0, 0, 1, 1, 0] = 2.0  # alpha-alpha (01|10)
    h2[2, 1, 1, 0, 0] = 4.0  # beta-beta (11|00)
    terms = coefficient_map(integrals_to_fermion(1.5, h1, h2))

    assert terms[()] == 1.5
    assert terms[((0, "+"), (1, "-"))] == 0.3
    assert terms[((3, "+"), (2, "-"))] == -0.7  # beta block shifted by k = 2
    # Opposite spin: key ((p,+),(q+k,+),(r+k,-),(s,-)), value hh[1,p,q,r,s] = h2[1,p,s,q,r].
    assert terms[((0, "+"), (3, "+"), (2, "-"), (1, "-"))] == 0.25
    # Same spin, p<q=(0,1), r<s=(0,1): C = hh[0101] - hh[0110] - hh[1001] + hh[1010],
    # hh[p,q,r,s] = h2[p,s,q,r]: h2[0,1,1,0]=2 enters as hh[0,1,0,1]; h2[1,1,0,0] = 0 here.
    assert terms[((0, "+"), (1, "+"), (0, "-"), (1, "-"))] == pytest.approx(2.0 / 2)
    # beta-beta with every index shifted by k: h2[2,1,1,0,0] = hh[2,1,0,0,1] -> -hh[qprs] term.
    assert terms[((2, "+"), (3, "+"), (2, "-"), (3, "-"))] == pytest.approx(-4.0 / 2)
    # Nothing else survives the 1e-12 drop.
    assert len(terms) == 6


def test_small_coefficients_dropped_and_zero_h0_skipped():
    k = 1
    h1 = np.full((2, k, k), 1e-13)
    h1[1, 0, 0] = 2e-12
    h2 = np.zeros((3, k, k, k, k))
    h2[1] = 1e-12  # exactly at the threshold: dropped
    op = integrals_to_fermion(0.0, h1, h2)
    assert coefficient_map(op) == {((1, "+"), (1, "-")): 2e-12}
    assert op.num_modes == 2


def test_coefficients_are_python_numbers():
    h0, h1, h2 = random_integrals(2, np.random.default_rng(3))
    op = integrals_to_fermion(np.float64(h0), h1, h2)
    assert all(type(c) is float for c in op.coefficients)
    assert all(isinstance(t, FermiString) for t in op.terms)


def test_one_orbital_hubbard_atom():
    # k = 1: E = h0 + e (n_a + n_b) + U n_a n_b with U = (00|00)_{alpha beta}.
    h1 = np.full((2, 1, 1), -1.0)
    h2 = np.zeros((3, 1, 1, 1, 1))
    h2[1] = 3.0
    mat = majorana_operator_matrix(integrals_to_fermion(0.5, h1, h2).get_majorana_operator())
    # Basis |n_a n_b> with qubit 0 = alpha: energies for 00, 01, 10, 11.
    np.testing.assert_allclose(np.diag(mat).real, [0.5, -0.5, -0.5, 1.5], atol=1e-12)
    np.testing.assert_allclose(mat, np.diag(np.diag(mat)), atol=1e-12)


@pytest.mark.parametrize(
    ("h1_shape", "h2_shape", "fragment"),
    [
        ((1, 2, 2), (3, 2, 2, 2, 2), "h1 must have shape"),
        ((2, 2, 3), (3, 2, 2, 2, 2), "h1 must have shape"),
        ((2, 2, 2), (2, 2, 2, 2, 2), "h2 must have shape"),
        ((2, 2, 2), (3, 3, 3, 3, 3), "h2 must have shape"),
    ],
)
def test_shape_errors(h1_shape, h2_shape, fragment):
    with pytest.raises(ValueError, match=fragment):
        integrals_to_fermion(0.0, np.zeros(h1_shape), np.zeros(h2_shape))
