"""FermiString and FermiOperator, checked against dense Jordan-Wigner ladders.

A ``FermiString`` is a product of ladder operators ``(j, '+')`` = c_j^† and ``(j, '-')`` = c_j,
stored as given; its canonical form (creators, then annihilators, each by ascending mode)
carries the sign of the reordering as if every pair anticommuted. A ``FermiOperator`` is
parallel lists of strings and coefficients on ``num_modes`` modes. Its Majorana image uses
``c_j^† = (m_{2j} - i m_{2j+1}) / 2`` and ``c_j = (m_{2j} + i m_{2j+1}) / 2`` and keeps zero
entries, e.g. ``c_0^† -> {(0,): 0.5, (1,): -0.5j}`` and
``n_0 = c_0^† c_0 -> {(): 0.5, (0, 1): 0.5j}``.
"""

import copy
import pickle

import numpy as np
import pytest
from _jw import creation, fermi_operator_matrix, majorana_operator_matrix

from monoprop.fermi import FermiOperator, FermiString
from monoprop.fermi import MajoranaOperator as ReexportedMajoranaOperator
from monoprop.majorana import MajoranaOperator


def test_majorana_operator_reexported():
    assert ReexportedMajoranaOperator is MajoranaOperator


class TestFermiString:
    def test_expression_stored_as_given(self):
        s = FermiString([(0, "+"), [2, "-"]])
        assert s.expression == ((0, "+"), [2, "-"])
        assert isinstance(s.expression, tuple)
        assert isinstance(s.expression[1], list)

    def test_copy_constructor(self):
        s = FermiString([(0, "+")])
        assert FermiString(s).expression == s.expression
        assert FermiString(s) == s

    def test_empty_is_identity(self):
        assert FermiString([]).expression == ()
        assert repr(FermiString(())) == "FermiString()"

    def test_repr(self):
        assert repr(FermiString([(0, "+"), (2, "-")])) == "FermiString(c_0^+ c_2^-)"

    def test_validation(self):
        with pytest.raises(ValueError, match="Invalid index -1: must be non-negative"):
            FermiString([(-1, "+")])
        with pytest.raises(ValueError, match="must be '\\+' or '-'"):
            FermiString([(0, "x")])
        with pytest.raises(ValueError, match="must be '\\+' or '-'"):
            FermiString([(0, "^")])
        with pytest.raises(ValueError, match="expected a pair"):
            FermiString([(0, "+", 1)])
        with pytest.raises(TypeError, match="integers"):
            FermiString([(0.5, "+")])

    def test_eq_and_hash(self):
        a = FermiString([(0, "+"), (1, "-")])
        assert a == FermiString(((0, "+"), (1, "-")))
        assert a != FermiString([(1, "-"), (0, "+")])
        assert (a == ((0, "+"), (1, "-"))) is False
        assert hash(a) == hash(FermiString(((0, "+"), (1, "-"))))
        assert isinstance(hash(FermiString([[0, "+"]])), int)  # list pairs still hash
        assert pickle.loads(pickle.dumps(a)) == a

    @pytest.mark.parametrize(
        ("expression", "canonical", "sign"),
        [
            ([(1, "-"), (0, "+")], ((0, "+"), (1, "-")), -1.0),
            ([(0, "+"), (1, "-")], ((0, "+"), (1, "-")), 1.0),
            ([(2, "+"), (0, "+")], ((0, "+"), (2, "+")), -1.0),
            ([(0, "-"), (0, "+")], ((0, "+"), (0, "-")), -1.0),
            (
                [(2, "-"), (1, "+"), (0, "-"), (0, "+")],
                ((0, "+"), (1, "+"), (0, "-"), (2, "-")),
                -1.0,
            ),
            ([(0, "+"), (0, "+")], ((0, "+"), (0, "+")), 1.0),  # equal factors not swapped
            ([], (), 1.0),
        ],
    )
    def test_canonical(self, expression, canonical, sign):
        assert FermiString(expression)._canonical() == (canonical, sign)


class TestFermiOperatorConstruction:
    def test_attributes_and_copies(self):
        terms = [FermiString([(0, "+")]), [(1, "-")]]
        coefficients = [1.0, 2.0]
        op = FermiOperator(terms, coefficients, 2)
        assert op.terms == [FermiString([(0, "+")]), FermiString([(1, "-")])]
        assert all(isinstance(t, FermiString) for t in op.terms)
        assert op.coefficients == [1.0, 2.0] and op.num_modes == 2
        coefficients.append(3.0)
        terms.append([(0, "-")])
        assert len(op.coefficients) == 2 and len(op.terms) == 2
        assert len(op) == 2

    def test_num_modes_rule(self):
        with pytest.raises(TypeError):
            FermiOperator([], [])
        with pytest.raises(TypeError, match=r"num_modes must be an integer \(not float\)"):
            FermiOperator([], [], 2.0)
        with pytest.raises(ValueError, match="num_modes must be non-negative; got -1"):
            FermiOperator([], [], -1)

    def test_index_out_of_bounds(self):
        with pytest.raises(ValueError, match="Fermi term index out of bounds: 2 >= num_modes=2"):
            FermiOperator([[(0, "+"), (2, "-")]], [1.0], 2)

    def test_no_length_check(self):
        op = FermiOperator([[(0, "+")], [(0, "-")]], [1.0], 1)
        assert len(op.get_majorana_operator()) == 2  # the unmatched term is dropped by zip
        assert op.get_majorana_operator().terms == {(0,): 0.5, (1,): -0.5j}

    def test_from_dict(self):
        op = FermiOperator.from_dict({((0, "+"), (1, "-")): 1.5, (): 2.0}, 2)
        assert op.terms == [FermiString([(0, "+"), (1, "-")]), FermiString([])]
        assert op.coefficients == [1.5, 2.0]

    def test_repr(self):
        assert repr(FermiOperator([[(0, "+")]], [2.0], 1)) == (
            "FermiOperator(1 terms, 1 modes: 2.0*FermiString(c_0^+))"
        )
        many = FermiOperator([[(0, "+")]] * 9, [1.0] * 9, 1)
        assert repr(many) == "FermiOperator(9 terms, 1 modes)"

    def test_eq_order_matters_and_unhashable(self):
        a = FermiOperator([[(0, "+")], [(1, "-")]], [1.0, 2.0], 2)
        assert a == FermiOperator([[(0, "+")], [(1, "-")]], [1.0, 2.0], 2)
        assert a != FermiOperator([[(1, "-")], [(0, "+")]], [2.0, 1.0], 2)
        assert a != FermiOperator([[(0, "+")], [(1, "-")]], [1.0, 2.0], 3)
        assert a != "a"
        with pytest.raises(TypeError):
            hash(a)
        assert pickle.loads(pickle.dumps(a)) == a
        assert copy.deepcopy(a) == a


class TestFermiOperatorIsclose:
    def test_reordering_sign(self):
        a = FermiOperator([[(0, "+"), (1, "-")]], [1.0], 2)
        assert a.isclose(FermiOperator([[(1, "-"), (0, "+")]], [-1.0], 2))
        assert not a.isclose(FermiOperator([[(1, "-"), (0, "+")]], [1.0], 2))

    def test_union_and_tolerance(self):
        a = FermiOperator([[(0, "+")], [(1, "-")]], [1.0, 2.0], 2)
        assert a.isclose(FermiOperator([[(1, "-")], [(0, "+")]], [2.0, 1.0 + 1e-10], 2))
        assert not a.isclose(FermiOperator([[(0, "+")]], [1.0], 2))
        assert a.isclose(FermiOperator([[(0, "+")]], [1.0], 2), atol=3.0)
        assert not a.isclose(FermiOperator([[(0, "+")], [(1, "-")]], [1.0, 2.0], 3))

    def test_later_duplicate_overwrites(self):
        dup = FermiOperator([[(0, "+")], [(0, "+")]], [1.0, 5.0], 1)
        assert dup.isclose(FermiOperator([[(0, "+")]], [5.0], 1))
        assert not dup.isclose(FermiOperator([[(0, "+")]], [6.0], 1))

    def test_type_error(self):
        with pytest.raises(TypeError, match="Cannot compare FermiOperator with MajoranaOperator"):
            FermiOperator([], [], 1).isclose(MajoranaOperator({}, 1))


class TestFermiToMajorana:
    def test_documented_examples(self):
        cdag0 = FermiOperator([[(0, "+")]], [1.0], 1).get_majorana_operator()
        assert cdag0.terms == {(0,): 0.5, (1,): -0.5j}
        n0 = FermiOperator([[(0, "+"), (0, "-")]], [1.0], 1).get_majorana_operator()
        assert n0.terms == {(): 0.5, (0, 1): 0.5j}
        hop = FermiOperator([[(0, "+"), (1, "-")], [(1, "+"), (0, "-")]], [1.0, 1.0], 2)
        out = hop.get_majorana_operator()
        assert out.terms == {(0, 2): 0, (0, 3): 0.5j, (1, 2): -0.5j, (1, 3): 0}
        assert set(out.terms) == {(0, 2), (0, 3), (1, 2), (1, 3)}  # zero entries retained
        assert out.num_modes == 2

    def test_pauli_exclusion_zeros_kept(self):
        out = FermiOperator([[(0, "+"), (0, "+")]], [1.0], 1).get_majorana_operator()
        assert out.terms == {(): 0, (0, 1): 0}

    def test_identity(self):
        out = FermiOperator([[]], [2.0], 2).get_majorana_operator()
        assert out.terms == {(): 2} and out.num_modes == 2

    def test_number_operator_is_one_minus_z_over_two(self):
        mat = majorana_operator_matrix(
            FermiOperator([[(1, "+"), (1, "-")]], [1.0], 2).get_majorana_operator()
        )
        np.testing.assert_allclose(mat, np.kron(np.eye(2), np.diag([0.0, 1.0])), atol=1e-12)

    def test_creation_matrix(self):
        # c_j^† = Z_0..Z_{j-1} |1><0|_j, independent of the Majorana formulas.
        for j in range(3):
            op = FermiOperator([[(j, "+")]], [1.0], 3)
            np.testing.assert_allclose(
                majorana_operator_matrix(op.get_majorana_operator()), creation(3)[j], atol=1e-12
            )

    def test_random_products_against_dense(self):
        rng = np.random.default_rng(2024)
        for _ in range(30):
            n = int(rng.integers(1, 4))
            terms, coeffs = [], []
            for _ in range(int(rng.integers(1, 5))):
                length = int(rng.integers(0, 5))
                terms.append(
                    [
                        (int(rng.integers(0, n)), "+" if rng.random() < 0.5 else "-")
                        for _ in range(length)
                    ]
                )
                coeffs.append(complex(rng.normal(), rng.normal()))
            op = FermiOperator(terms, coeffs, n)
            np.testing.assert_allclose(
                majorana_operator_matrix(op.get_majorana_operator()),
                fermi_operator_matrix(op),
                atol=1e-12,
                err_msg=repr(op),
            )
