"""expand_monomials and validate_parameter_mapping.

expand_monomials flattens gates into engine layers, one per generator term: the term's sorted
slots, its coefficient, its parameter slot and its gate. A Majorana term ``c m_S`` with
``w = |S|`` carries the structural coefficient ``g = -c / i**C(w,2)`` (so ``c = -g * i**C(w,2)``),
a Pauli term its own coefficient. The structural convention is checked three ways: worked
examples (``c = 1j`` on (4, 5) is ``g = -1``, ``c = 0.7`` on (0, 1, 2, 3) is ``g = 0.7``), a
table over weights 0..9, and a dense Jordan-Wigner simulation that rebuilds each gate from its
expanded layers and reproduces the verified vectors 7 and 8 of test_propagator_vectors.py.
validate_parameter_mapping wants one entry per gate (or layer), with values covering 0..max.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from scipy.linalg import expm
from test_propagator_vectors import ITEM8_EXPECTED

from monoprop.circuit import Circuit, ExpGate, expand_monomials, validate_parameter_mapping
from monoprop.fermi import FermiOperator
from monoprop.majorana import MajoranaOperator
from monoprop.pauli import Pauli, PauliOperator


def mgate(terms, n, index=None):
    return ExpGate(MajoranaOperator(terms, n), index)


# --------------------------------------------------------------------------- dense JW reference

_X = np.array([[0, 1], [1, 0]], dtype=complex)
_Y = np.array([[0, -1j], [1j, 0]], dtype=complex)
_Z = np.diag([1.0 + 0j, -1.0])
_I = np.eye(2, dtype=complex)


@functools.cache
def majorana_matrix(k: int, n: int) -> np.ndarray:
    """``m_k`` under 0-based Jordan-Wigner, qubit 0 the leftmost Kronecker factor."""
    j = k // 2
    factors = [_Z] * j + [_X if k % 2 == 0 else _Y] + [_I] * (n - j - 1)
    return functools.reduce(np.kron, factors)


def bare_product(indices, n):
    out = np.eye(2**n, dtype=complex)
    for k in indices:
        out = out @ majorana_matrix(k, n)
    return out


def hermitian_phase(w):
    return 1j ** (w * (w - 1) // 2)


def dense_heisenberg(layers, angles, observable, n):
    """``U^† O U`` with ``U = Π_layers exp(+iθ c M)`` (first layer first), decomposed into
    sorted bare products; each layer is ``(indices, g, slot)`` with ``c = -g i^C(w,2)``."""
    u = np.eye(2**n, dtype=complex)
    for indices, g, slot in layers:
        c = -g * hermitian_phase(len(indices))
        u = expm(1j * angles[slot] * c * bare_product(indices, n)) @ u
    o = sum(c * bare_product(s, n) for s, c in observable.items())
    evolved = u.conj().T @ o @ u
    out = {}
    for w in range(2 * n + 1):
        for s in itertools.combinations(range(2 * n), w):
            coeff = np.trace(bare_product(s, n).conj().T @ evolved) / 2**n
            if abs(coeff) > 1e-12:
                out[s] = coeff
    return out


def layers_of(circuit, num_modes):
    majoranas, coeffs, mapping, _ = expand_monomials(
        circuit.gates, circuit.resolved_mapping, num_modes
    )
    return list(zip(majoranas, coeffs, mapping, strict=True))


def assert_terms_close(actual, expected):
    assert set(actual) == set(expected)
    for key, value in expected.items():
        assert actual[key] == pytest.approx(value, abs=1e-10), key


# --------------------------------------------------------------------------- worked examples


class TestExamples:
    def test_majorana_example(self):
        gates = [mgate({(0, 2): 1j, (1, 3): 1j}, 2), mgate({(0, 1, 2, 3): 0.5}, 2)]
        majoranas, coeffs, mapping, gate_indices = expand_monomials(gates, [0, 1], 2)
        assert majoranas == [(0, 2), (1, 3), (0, 1, 2, 3)]
        # The last entry is g = -c / i^C(4,2) = -0.5 / -1 = +0.5, as c = 0.7 on (0,1,2,3) is
        # g = 0.7 (TestStructuralCoefficients) and as the dense vectors confirm (TestDenseVectors).
        assert coeffs == [-1.0, -1.0, 0.5]
        assert mapping == [0, 0, 1]
        assert gate_indices == [0, 0, 1]
        assert all(type(g) is float for g in coeffs)

    def test_pauli_example(self):
        gate = ExpGate(PauliOperator({"XZ": 0.5, "YY": -1}, 2))
        assert expand_monomials([gate], [0], 2) == (
            [(0, 2, 3), (1, 3)],
            [0.5, -1.0],
            [0, 0],
            [0, 0],
        )

    def test_dropped_gate_is_identity_layer(self):
        gate = mgate({(0, 1): 1e-12j}, 2)
        assert expand_monomials([gate], [0], 2) == ([()], [0.0], [0], [0])


class TestStructuralCoefficients:
    # (monomial, Hermitian bare coefficient c, structural g), with g = -c / i^C(w,2).
    EXAMPLES = [
        ((4, 5), 1j, -1.0),
        ((0, 1, 2, 3), 0.7, 0.7),
        ((1,), -1.0, 1.0),
        ((0, 2, 3), 0.5j, 0.5),
    ]

    @pytest.mark.parametrize(("monomial", "c", "g"), EXAMPLES)
    def test_hermitian_gate_to_g(self, monomial, c, g):
        majoranas, coeffs, _, _ = expand_monomials([mgate({monomial: c}, 3)], [0], 3)
        assert majoranas == [monomial]
        assert coeffs[0] == pytest.approx(g, abs=1e-15)

    @pytest.mark.parametrize(("monomial", "c", "g"), EXAMPLES)
    def test_structural_gate_keeps_g(self, monomial, c, g):
        circuit = Circuit.from_dense_arrays([monomial], [g], [0], 3)
        assert circuit.gates[0].generator.terms == {monomial: complex(g)}
        assert expand_monomials(circuit.gates, [0], 3)[1] == [g]

    @pytest.mark.parametrize(("monomial", "c", "g"), EXAMPLES)
    def test_structural_and_hermitian_agree_densely(self, monomial, c, g):
        """The two ways of writing one gate give the same unitary at every angle."""
        n = 3
        hermitian = expm(0.37j * c * bare_product(monomial, n))
        circuit = Circuit.from_dense_arrays([monomial], [g], [0], n)
        ((indices, g_out, _),) = layers_of(circuit, n)
        structural = expm(0.37j * -g_out * hermitian_phase(len(indices)) * bare_product(indices, n))
        np.testing.assert_allclose(structural, hermitian, atol=1e-12)
        assert np.allclose(hermitian @ hermitian.conj().T, np.eye(2**n))

    @pytest.mark.parametrize("w", range(10))
    def test_phase_table(self, w):
        # c = i^C(w,2) (the Hermitian basis monomial itself) has g = -1 at every weight.
        monomial = tuple(range(w))
        c = [1, 1j, -1, -1j][(w * (w - 1) // 2) % 4]
        assert expand_monomials([mgate({monomial: c}, 5)], [0], 5)[1] == [-1.0]

    def test_fermi_generator(self):
        hop = FermiOperator([[(0, "+"), (1, "-")], [(1, "+"), (0, "-")]], [1.0, 1.0], 2)
        majoranas, coeffs, _, _ = expand_monomials([ExpGate(hop)], [0], 2)
        assert dict(zip(majoranas, coeffs, strict=True)) == {(0, 3): -0.5, (1, 2): 0.5}


class TestNotHermitian:
    @pytest.mark.parametrize("terms", [{(0, 1): 1.0}, {(0,): 1j}, {(0, 1, 2, 3): 0.5j}])
    def test_hermitian_gate(self, terms):
        with pytest.raises(ValueError, match="not Hermitian"):
            expand_monomials([mgate(terms, 2)], [0], 2)

    def test_structural_gate_with_imaginary_g(self):
        gate = ExpGate._structural_gate(MajoranaOperator({(0, 1): 1j}, 2), 0)
        with pytest.raises(ValueError, match="not Hermitian"):
            expand_monomials([gate], [0], 2)

    def test_tolerance(self):
        gate = mgate({(0, 1): 1e-10 + 1j}, 2)
        assert expand_monomials([gate], [0], 2)[1] == [pytest.approx(-1.0)]
        with pytest.raises(ValueError, match="not Hermitian"):
            expand_monomials([mgate({(0, 1): 1e-8 + 1j}, 2)], [0], 2)


class TestLayout:
    def test_local_slot_encoding(self):
        gate = ExpGate(PauliOperator({"XYZ": 2}, 3))
        assert expand_monomials([gate], [0], 3) == ([(0, 3, 4, 5)], [2.0], [0], [0])

    def test_slots_sorted_for_any_qubit_order(self):
        gate = ExpGate(PauliOperator({Pauli("ZX", (4, 1)): 1.5}, 5))
        assert expand_monomials([gate], [0], 5)[0] == [(2, 8, 9)]

    def test_pauli_identity_term(self):
        gate = ExpGate(PauliOperator({"II": 0.5}, 2))
        assert expand_monomials([gate], [0], 2) == ([()], [0.5], [0], [0])

    def test_empty_pauli_gate(self):
        gate = ExpGate(PauliOperator({}, 2))
        assert expand_monomials([gate], [3], 2) == ([()], [0.0], [3], [0])

    def test_runs_and_shared_mapping(self):
        gates = [
            mgate({(0, 1): 1j}, 2),
            mgate({(0, 2): 1j, (1, 3): 1j, (0, 1, 2, 3): 1.0}, 2),
            mgate({(2, 3): 1j}, 2),
        ]
        _, _, mapping, gate_indices = expand_monomials(gates, [1, 0, 1], 2)
        assert mapping == [1, 0, 0, 0, 1]
        assert gate_indices == [0, 1, 1, 1, 2]

    def test_no_gates(self):
        assert expand_monomials([], [], 2) == ([], [], [], [])

    def test_generator_term_order(self):
        gate = mgate({(2, 3): 1j, (0, 1): 1j, (4, 5): 1j}, 3)
        assert expand_monomials([gate], [0], 3)[0] == [(2, 3), (0, 1), (4, 5)]

    def test_pauli_qubit_out_of_range(self):
        gate = ExpGate(PauliOperator({"IIX": 1.0}, 3))
        with pytest.raises(ValueError, match="num_qubits"):
            expand_monomials([gate], [0], 2)

    @pytest.mark.parametrize(
        ("size", "error", "fragment"),
        [
            (True, TypeError, r"num_qubits must be an integer \(not bool\)"),
            (2.5, TypeError, r"num_qubits must be an integer \(not float\)"),
            (-1, ValueError, "num_qubits must be non-negative; got -1"),
        ],
    )
    def test_num_qubits_rule(self, size, error, fragment):
        with pytest.raises(error, match=fragment):
            expand_monomials([], [], size)

    def test_mapping_length(self):
        with pytest.raises(ValueError, match="1 entries but there are 2 gates"):
            expand_monomials([mgate({(0, 1): 1j}, 2)] * 2, [0], 2)


class TestDenseVectors:
    """The verified vectors of test_propagator_vectors.py, recomputed densely from the layers."""

    def test_vector_7_weight_four(self):
        circuit = Circuit.from_dense_arrays([(1, 2, 3, 4)], [1.0], [0], 5, [math.pi / 6])
        evolved = dense_heisenberg(layers_of(circuit, 5), circuit.parameters, {(0, 1): 1j}, 5)
        assert_terms_close(evolved, {(0, 1): 0.5j, (0, 2, 3, 4): -0.8660254037844386})

    def test_vector_7_two_term_observable(self):
        p = 0.41
        circuit = Circuit.from_dense_arrays([(1, 2)], [1.0], [0], 2, [p])
        evolved = dense_heisenberg(
            layers_of(circuit, 2), circuit.parameters, {(0, 1): 1j, (0, 2): 1j}, 2
        )
        c, s = math.cos(2 * p), math.sin(2 * p)
        assert_terms_close(evolved, {(0, 1): 1j * (c - s), (0, 2): 1j * (c + s)})

    def test_vector_8(self):
        circuit = Circuit.from_dense_arrays(
            [(0,), (0, 1), (0, 1, 3), (2, 3)],
            [-1, 1, -1, 1],
            [0, 1, 2, 3],
            2,
            [0.1, 0.2, 0.2, 0.2],
        )
        evolved = dense_heisenberg(layers_of(circuit, 2), circuit.parameters, {(1, 2, 3): -1j}, 2)
        assert_terms_close(
            evolved,
            ITEM8_EXPECTED,
        )

    def test_vector_2_hermitian_gate(self):
        gate = mgate({(1, 2): 1j}, 2)
        circuit = Circuit([gate], 2, [0.3])
        evolved = dense_heisenberg(layers_of(circuit, 2), circuit.parameters, {(0, 1): 1j}, 2)
        assert_terms_close(evolved, {(0, 1): 0.8253356149096783j, (0, 2): -0.5646424733950354j})


# ------------------------------------------------------------- validate_parameter_mapping


class TestValidateParameterMapping:
    def test_valid(self):
        assert validate_parameter_mapping([0, 1, 1, 0, 2], 5) is None
        assert validate_parameter_mapping([], 0) is None
        assert validate_parameter_mapping(np.array([0, 0]), 2) is None

    def test_length(self):
        with pytest.raises(ValueError, match="3 entries but there are 2 gates"):
            validate_parameter_mapping([0, 1, 2], 2)
        with pytest.raises(ValueError, match="1 entries but there are 4 layers"):
            validate_parameter_mapping([0], 4, unit="layers")

    @pytest.mark.parametrize("mapping", [[0, 2], [1], [1, 2], [-1, 0], [0, 0, 3]])
    def test_not_contiguous(self, mapping):
        with pytest.raises(ValueError, match="contiguous") as info:
            validate_parameter_mapping(mapping, len(mapping))
        assert str(mapping) in str(info.value)

    def test_length_checked_first(self):
        with pytest.raises(ValueError, match="entries"):
            validate_parameter_mapping([0, 2], 3)
