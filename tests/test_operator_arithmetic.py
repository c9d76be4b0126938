"""Operator arithmetic, checked against dense matrix algebra.

``+``, ``-``, negation, scalar ``*`` and ``/`` and the operator product (``*`` and ``@``) of
Pauli, Majorana and Fermi operators match the same operations on their matrices. Operands
must be of the same class and width (a width mismatch is a ValueError naming both, any other
operand a TypeError); results are new operators and the operands are unchanged. A
PauliOperator keeps real coefficients, so a product or scalar that would make one complex
raises ValueError.
"""

import itertools

import numpy as np
import pytest
from _jw import fermi_operator_matrix, majorana_operator_matrix, pauli_operator_matrix

from monoprop.fermi import FermiOperator
from monoprop.majorana import MajoranaOperator
from monoprop.pauli import Pauli, PauliOperator


def random_pauli_operator(rng, n, count):
    labels = {"".join(rng.choice(list("IXYZ"), size=n)) for _ in range(count)}
    return PauliOperator({s: float(rng.normal()) for s in labels}, n)


def random_majorana_operator(rng, n, count):
    terms = {}
    for _ in range(count):
        size = int(rng.integers(0, 2 * n + 1))
        key = tuple(sorted(rng.choice(2 * n, size=size, replace=False).tolist()))
        terms[key] = complex(rng.normal(), rng.normal())
    return MajoranaOperator(terms, n)


class TestPauliArithmetic:
    def test_linear_combinations_match_dense(self):
        rng = np.random.default_rng(1)
        a, b = random_pauli_operator(rng, 3, 6), random_pauli_operator(rng, 3, 6)
        A, B = pauli_operator_matrix(a), pauli_operator_matrix(b)
        for result, expected in [
            (a + b, A + B),
            (a - b, A - B),
            (-a, -A),
            (2.5 * a, 2.5 * A),
            (a * 2.5, 2.5 * A),
            (a / 4, A / 4),
            (np.float64(3.0) * a, 3.0 * A),
            (a * np.int64(2), 2 * A),
        ]:
            assert isinstance(result, PauliOperator) and result.num_qubits == 3
            np.testing.assert_allclose(pauli_operator_matrix(result), expected, atol=1e-12)

    def test_add_sums_keys_and_keeps_zeros(self):
        a = PauliOperator({"XI": 1.0, "ZZ": 2.0}, 2)
        b = PauliOperator({"ZZ": -2.0, "IY": 0.5}, 2)
        assert (a + b).terms == {Pauli("X", 0): 1.0, Pauli("ZZ"): 0.0, Pauli("Y", 1): 0.5}
        assert (a - a).terms == {Pauli("X", 0): 0.0, Pauli("ZZ"): 0.0}

    def test_operands_unchanged(self):
        a = PauliOperator({"XI": 1.0}, 2)
        b = PauliOperator({"XI": 2.0}, 2)
        _ = a + b, a * b, 3 * a, -a
        assert a.terms == {Pauli("X", 0): 1.0} and b.terms == {Pauli("X", 0): 2.0}

    def test_no_negative_zero(self):
        assert (
            repr(-PauliOperator({"X": 0.0}, 1))
            == "PauliOperator(1 terms, 1 qubits: 0.0*Pauli('X', (0,)))"
        )

    def test_square_is_hermitian_product(self):
        rng = np.random.default_rng(4)
        for _ in range(10):
            a = random_pauli_operator(rng, 3, 5)
            A = pauli_operator_matrix(a)
            for product in (a * a, a @ a):
                np.testing.assert_allclose(pauli_operator_matrix(product), A @ A, atol=1e-12)

    def test_single_term_products(self):
        # Every pair of 2-qubit strings whose product is Hermitian (i.e. they commute).
        for la, lb in itertools.product(
            map("".join, itertools.product("IXYZ", repeat=2)), repeat=2
        ):
            a, b = PauliOperator({la: 0.5}, 2), PauliOperator({lb: -2.0}, 2)
            A, B = pauli_operator_matrix(a), pauli_operator_matrix(b)
            if np.allclose(A @ B, B @ A):
                np.testing.assert_allclose(pauli_operator_matrix(a * b), A @ B, atol=1e-12)
            else:
                with pytest.raises(ValueError, match="Operator has complex terms"):
                    a * b

    def test_commuting_operators_product(self):
        a = PauliOperator({"XXI": 1.0, "ZZI": 0.5}, 3)
        b = PauliOperator({"YYZ": 2.0, "IIX": -1.0}, 3)
        expected = pauli_operator_matrix(a) @ pauli_operator_matrix(b)
        np.testing.assert_allclose(pauli_operator_matrix(a * b), expected, atol=1e-12)
        np.testing.assert_allclose(pauli_operator_matrix(a @ b), expected, atol=1e-12)

    def test_imaginary_parts_cancel(self):
        s = PauliOperator({"X": 1.0, "Y": 1.0}, 1)
        assert (s * s).terms == {Pauli(""): 2.0, Pauli("Z"): 0.0}

    def test_complex_product_raises(self):
        with pytest.raises(ValueError, match="Operator has complex terms"):
            PauliOperator({"X": 1.0}, 1) * PauliOperator({"Y": 1.0}, 1)
        with pytest.raises(ValueError, match="Operator has complex terms"):
            1j * PauliOperator({"X": 1.0}, 1)

    @pytest.mark.parametrize("op", ["__add__", "__sub__", "__mul__", "__matmul__"])
    def test_size_mismatch(self, op):
        a, b = PauliOperator({"X": 1.0}, 1), PauliOperator({"XX": 1.0}, 2)
        with pytest.raises(ValueError, match="1 qubits") as info:
            getattr(a, op)(b)
        assert "2 qubits" in str(info.value)

    def test_unsupported_operands(self):
        a = PauliOperator({"X": 1.0}, 1)
        with pytest.raises(TypeError):
            a + 1.0
        with pytest.raises(TypeError):
            a * "x"
        with pytest.raises(TypeError):
            a @ 2.0
        with pytest.raises(TypeError):
            a + MajoranaOperator({(0,): 1.0}, 1)


class TestMajoranaArithmetic:
    def test_linear_and_products_match_dense(self):
        rng = np.random.default_rng(8)
        for _ in range(8):
            a, b = random_majorana_operator(rng, 2, 5), random_majorana_operator(rng, 2, 5)
            A, B = majorana_operator_matrix(a), majorana_operator_matrix(b)
            for result, expected in [
                (a + b, A + B),
                (a - b, A - B),
                (-a, -A),
                (1j * a, 1j * A),
                (a * (2 - 1j), (2 - 1j) * A),
                (a / 2j, A / 2j),
                (np.complex128(0.5j) * a, 0.5j * A),
                (a * b, A @ B),
                (a @ b, A @ B),
                (b * a, B @ A),
            ]:
                assert isinstance(result, MajoranaOperator) and result.num_modes == 2
                np.testing.assert_allclose(majorana_operator_matrix(result), expected, atol=1e-12)

    def test_product_signs(self):
        m0 = MajoranaOperator({(0,): 1.0}, 1)
        m1 = MajoranaOperator({(1,): 1.0}, 1)
        assert (m1 * m0).terms == {(0, 1): -1.0}
        assert (m0 * m0).terms == {(): 1.0}
        assert (m0 * m1 * m0).terms == {(1,): -1.0}

    def test_size_mismatch(self):
        a, b = MajoranaOperator({(0,): 1.0}, 1), MajoranaOperator({(0,): 1.0}, 3)
        for binop in (
            lambda x, y: x + y,
            lambda x, y: x - y,
            lambda x, y: x * y,
            lambda x, y: x @ y,
        ):
            with pytest.raises(ValueError, match="1 modes") as info:
                binop(a, b)
            assert "3 modes" in str(info.value)

    def test_unsupported_operands(self):
        with pytest.raises(TypeError):
            MajoranaOperator({(0,): 1.0}, 1) + PauliOperator({"X": 1.0}, 1)
        with pytest.raises(TypeError):
            MajoranaOperator({(0,): 1.0}, 1) * None


class TestFermiArithmetic:
    def setup_method(self):
        self.a = FermiOperator([[(0, "+"), (1, "-")], [(1, "+")]], [1.0, 0.5j], 2)
        self.b = FermiOperator([[(1, "+"), (0, "-")], []], [-2.0, 0.25], 2)

    def test_linear_combinations_match_dense(self):
        a, b = self.a, self.b
        A, B = fermi_operator_matrix(a), fermi_operator_matrix(b)
        for result, expected in [
            (a + b, A + B),
            (a - b, A - B),
            (-a, -A),
            (3 * a, 3 * A),
            (a * 1j, 1j * A),
            (a / 2, A / 2),
            (np.float64(2.0) * a, 2 * A),
            (a * b, A @ B),
        ]:
            assert isinstance(result, FermiOperator) and result.num_modes == 2
            np.testing.assert_allclose(fermi_operator_matrix(result), expected, atol=1e-12)
            np.testing.assert_allclose(
                majorana_operator_matrix(result.get_majorana_operator()), expected, atol=1e-12
            )

    def test_add_concatenates(self):
        total = self.a + self.b
        assert total.terms == self.a.terms + self.b.terms
        assert total.coefficients == self.a.coefficients + self.b.coefficients

    def test_size_mismatch(self):
        with pytest.raises(ValueError, match="2 modes") as info:
            self.a + FermiOperator([], [], 3)
        assert "3 modes" in str(info.value)

    def test_unsupported_operands(self):
        with pytest.raises(TypeError):
            self.a + 1
        with pytest.raises(TypeError):
            self.a + self.a.get_majorana_operator()
