"""Majorana and MajoranaOperator.

A ``Majorana`` is a bare product ``m_S`` of distinct, sorted, non-negative indices;
``from_unsorted`` sorts any index list with the sign of the permutation and cancels equal
pairs (``m_k^2 = 1``), e.g. ``(5, 4, 1) -> (1, 4, 5)`` with sign -1. A ``MajoranaOperator``
maps such products to complex coefficients on ``num_modes`` modes (``2 * num_modes``
Majoranas); unsorted keys are canonicalised the same way and equal keys summed. The bare
product of weight w is Hermitian only for w mod 4 in {0, 1}; ``i^{C(w,2)} m_S`` always is.
"""

import copy
import itertools
import pickle

import numpy as np
import pytest
from _jw import majorana_operator_matrix, majoranas

from monoprop.majorana import Majorana, MajoranaOperator


def brute_force_sign(indices):
    inversions = sum(a > b for a, b in itertools.combinations(indices, 2))
    return (-1.0) ** inversions


class TestMajorana:
    def test_identity_and_indices(self):
        assert Majorana().indices == ()
        assert Majorana(0, 3, 7).indices == (0, 3, 7)
        assert Majorana.__slots__ == ("indices",)

    def test_repr(self):
        assert repr(Majorana(4, 5)) == "Majorana(4, 5)"
        assert repr(Majorana(2)) == "Majorana(2)"
        assert repr(Majorana()) == "Majorana()"

    def test_validation(self):
        with pytest.raises(ValueError, match="non-negative"):
            Majorana(-1, 2)
        with pytest.raises(ValueError) as info:
            Majorana(5, 4, 1)
        assert "distinct" in str(info.value) and "sorted" in str(info.value)
        assert "Majorana indices must be distinct and sorted; got (5, 4, 1)." in str(info.value)
        with pytest.raises(ValueError, match="distinct"):
            Majorana(1, 1)

    def test_skip_validation_stores_as_given(self):
        assert Majorana(5, 4, skip_validation=True).indices == (5, 4)

    def test_eq_and_hash(self):
        assert Majorana(0, 1) == Majorana(0, 1)
        assert Majorana(0, 1) != Majorana(0, 2)
        assert (Majorana(0, 1) == (0, 1)) is False
        assert Majorana.__eq__(Majorana(0, 1), (0, 1)) is NotImplemented
        assert hash(Majorana(0, 1)) == hash(Majorana(0, 1))
        assert {Majorana(2, 3): "x"}[Majorana(2, 3)] == "x"

    def test_pickle(self):
        m = Majorana(1, 4, 5)
        assert pickle.loads(pickle.dumps(m)) == m


class TestFromUnsorted:
    @pytest.mark.parametrize(
        ("indices", "majorana", "sign"),
        [
            ((5, 4, 1), Majorana(1, 4, 5), -1.0),
            ((2, 0, 1), Majorana(0, 1, 2), 1.0),
            ((3, 1, 1, 3), Majorana(), 1.0),
            ((1, 2, 1), Majorana(2), -1.0),
            ((3, 1, 2), Majorana(1, 2, 3), 1.0),
            ((), Majorana(), 1.0),
            ((0, 0, 0), Majorana(0), 1.0),
        ],
    )
    def test_documented_examples(self, indices, majorana, sign):
        out, s = Majorana.from_unsorted(*indices)
        assert out == majorana
        assert s == sign and type(s) is float

    def test_negative_checked_first(self):
        with pytest.raises(ValueError, match="non-negative"):
            Majorana.from_unsorted(3, -1, 3)

    def test_random_against_brute_force_and_dense(self):
        rng = np.random.default_rng(11)
        ms = majoranas(3)
        for _ in range(100):
            indices = tuple(int(i) for i in rng.integers(0, 6, size=rng.integers(0, 8)))
            out, sign = Majorana.from_unsorted(*indices)
            assert sign == brute_force_sign(indices)
            assert list(out.indices) == sorted(out.indices)
            product = np.eye(8, dtype=complex)
            for i in indices:
                product = product @ ms[i]
            canonical = np.eye(8, dtype=complex)
            for i in out.indices:
                canonical = canonical @ ms[i]
            np.testing.assert_allclose(product, sign * canonical, atol=1e-12)


class TestMajoranaOperatorConstruction:
    @pytest.mark.parametrize(
        ("terms", "expected"),
        [
            ({(1, 0): 1.0, (0, 1): 2.0, (2, 3): 1e-15}, {(0, 1): 1.0, (2, 3): 1e-15}),
            ({(0, 0): 1.0}, {(): 1.0}),
            ({(1, 1, 2): 1}, {(2,): 1}),
            ({(1, 0): 1j, (2, 0, 1): 1}, {(0, 1): -1j, (0, 1, 2): 1}),
        ],
    )
    def test_documented_examples(self, terms, expected):
        op = MajoranaOperator(terms, 2)
        assert op.terms == expected
        assert list(op.terms) == list(expected)
        assert all(type(c) is complex for c in op.terms.values())

    def test_values_are_complex(self):
        assert MajoranaOperator({(0,): 1.0}, 1).terms[(0,)] == complex(1.0)
        assert repr(MajoranaOperator({(0,): 1.0}, 1).terms[(0,)]) == "(1+0j)"

    def test_keys_majorana_list_and_array(self):
        op = MajoranaOperator({Majorana(0, 1): 1.0, (np.int64(3), 2): 1.0}, 2)
        assert op.terms == {(0, 1): 1.0, (2, 3): -1.0}
        assert all(type(i) is int for key in op.terms for i in key)
        op = MajoranaOperator._from_terms([[3, 2], np.array([1, 0])], [1.0, 2.0], 2)
        assert op.terms == {(2, 3): -1.0, (0, 1): -2.0}
        assert all(type(i) is int for key in op.terms for i in key)

    def test_first_occurrence_order(self):
        op = MajoranaOperator({(2,): 1, (0,): 1, (2, 2, 2): 1}, 2)
        assert list(op.terms) == [(2,), (0,)]
        assert op.terms[(2,)] == 2

    def test_zeros_retained(self):
        assert MajoranaOperator({(0, 1): 0.0}, 1).terms == {(0, 1): 0.0}
        assert MajoranaOperator({(0, 1): 1.0, (1, 0): 1.0}, 1).terms == {(0, 1): 0.0}

    def test_num_modes_rule(self):
        with pytest.raises(TypeError):
            MajoranaOperator({(0,): 1.0})
        with pytest.raises(TypeError, match=r"num_modes must be an integer \(not bool\)"):
            MajoranaOperator({}, True)
        with pytest.raises(ValueError, match="num_modes must be non-negative; got -1"):
            MajoranaOperator({}, -1)
        assert MajoranaOperator({(): 1.0}, 0).num_modes == 0

    def test_range_check(self):
        assert MajoranaOperator({(3,): 1.0}, 2).terms == {(3,): 1.0}
        with pytest.raises(ValueError, match="acts on an index >= num_modes=2"):
            MajoranaOperator({(0, 4): 1.0}, 2)
        with pytest.raises(ValueError, match="acts on an index >= num_modes=2"):
            MajoranaOperator({(4, 0): 1.0}, 2)  # the largest index, wherever it is listed
        skipped = MajoranaOperator({(0, 4): 1.0}, 2, skip_validation=True)
        assert skipped.terms == {(0, 4): 1.0}

    def test_negative_index(self):
        with pytest.raises(ValueError, match="non-negative"):
            MajoranaOperator({(0, -1): 1.0}, 2)

    def test_bad_keys(self):
        with pytest.raises(TypeError, match=r"Write a single Majorana m_3 as \(3,\)"):
            MajoranaOperator({3: 1.0}, 2)
        with pytest.raises(TypeError, match="mapping"):
            MajoranaOperator([((0,), 1.0)], 2)

    def test_from_terms(self):
        op = MajoranaOperator._from_terms([(1, 0), Majorana(0, 1), (5,)], [1.0, 3.0, 2.0], 2)
        assert op.terms == {(0, 1): 2.0, (5,): 2.0}  # summed, no range check
        assert op.num_modes == 2

    def test_get_majorana_operator_is_self(self):
        op = MajoranaOperator({(0,): 1.0}, 1)
        assert op.get_majorana_operator() is op

    def test_no_from_dict(self):
        assert not hasattr(MajoranaOperator, "from_dict")


class TestMajoranaOperatorValueSemantics:
    def test_repr_exact(self):
        op = MajoranaOperator({(0, 1): 1.0, (2, 3): -0.5j}, 2)
        assert repr(op) == "MajoranaOperator(2 terms, 2 modes: (1+0j)*[0, 1], -0.5j*[2, 3])"
        assert repr(MajoranaOperator({(): 2}, 1)) == "MajoranaOperator(1 terms, 1 modes: (2+0j)*[])"

    def test_repr_clean_after_sign_flip(self):
        # Canonical signs must not leave negative zeros in the printed coefficient.
        assert (
            repr(MajoranaOperator({(1, 0): 1j}, 1))
            == "MajoranaOperator(1 terms, 1 modes: -1j*[0, 1])"
        )

    def test_repr_many_terms(self):
        op = MajoranaOperator({(i,): 1.0 for i in range(9)}, 5)
        assert repr(op) == "MajoranaOperator(9 terms, 5 modes)"
        assert len(op) == 9

    def test_eq(self):
        a = MajoranaOperator({(0, 1): 1j}, 2)
        assert a == MajoranaOperator({(1, 0): -1j}, 2)
        assert a != MajoranaOperator({(0, 1): 1j}, 3)
        assert MajoranaOperator({(0, 1): 0.0}, 1) != MajoranaOperator({}, 1)
        assert a != {(0, 1): 1j}
        with pytest.raises(TypeError):
            hash(a)

    def test_pickle_and_deepcopy(self):
        a = MajoranaOperator({(0, 1): 1j, (2,): 0.5}, 2)
        assert pickle.loads(pickle.dumps(a)) == a
        b = copy.deepcopy(a)
        b.terms[()] = 1.0
        assert a != b

    def test_isclose(self):
        a = MajoranaOperator({(0, 1): 1j, (2,): 0.5}, 2)
        assert a.isclose(MajoranaOperator({(0, 1): 1j + 1e-9, (2,): 0.5}, 2))
        assert not a.isclose(MajoranaOperator({(0, 1): 1.0, (2,): 0.5}, 2))
        assert a.isclose(MajoranaOperator({(0, 1): 1j, (2,): 0.5, (3,): 1e-10}, 2))
        assert not a.isclose(MajoranaOperator({(0, 1): 1j}, 2))
        assert not a.isclose(MajoranaOperator({(0, 1): 1j, (2,): 0.5}, 3))
        assert a.isclose(MajoranaOperator({(0, 1): 1.2j, (2,): 0.5}, 2), atol=0.5)
        with pytest.raises(TypeError, match="Cannot compare MajoranaOperator with dict"):
            a.isclose({(0, 1): 1j})


class TestAllPairwiseCommute:
    @pytest.mark.parametrize(
        ("keys", "expected"),
        [
            ([(0,), (1,)], False),
            ([(0,), (0, 1)], False),
            ([(0, 2, 3, 5), (0, 2, 4, 6)], True),
            ([(0, 1), (2, 3), (0, 1, 2, 3)], True),
            ([(0, 1), (1, 2)], False),
            ([(0, 1, 2)], True),
            ([], True),
            ([(), (0,), (1,)], False),
        ],
    )
    def test_cases(self, keys, expected):
        op = MajoranaOperator(dict.fromkeys(keys, 1.0), 4)
        assert op.all_pairwise_commute() is expected

    def test_against_dense(self):
        rng = np.random.default_rng(5)
        ms = majoranas(3)
        for _ in range(40):
            keys = {
                tuple(sorted(rng.choice(6, size=rng.integers(0, 5), replace=False).tolist()))
                for _ in range(3)
            }
            op = MajoranaOperator(dict.fromkeys(keys, 1.0), 3)
            mats = [majorana_operator_matrix(MajoranaOperator({k: 1.0}, 3)) for k in keys]
            dense = all(np.allclose(a @ b, b @ a) for a, b in itertools.combinations(mats, 2))
            assert op.all_pairwise_commute() == dense, keys
        assert ms  # the helper built 6 Majoranas


class TestHermitianBasisExamples:
    """Hermitian examples (coefficient phase i^{C(w,2)}) are Hermitian; {(0,1): 1j} = -Z_0."""

    @pytest.mark.parametrize(
        "terms",
        [{(0, 1): 1j}, {(0, 1, 2, 3): 1.0}, {(0, 1, 3): 2j}, {(0, 1, 2, 3, 4, 5): 1j}],
    )
    def test_hermitian(self, terms):
        mat = majorana_operator_matrix(MajoranaOperator(terms, 3))
        np.testing.assert_allclose(mat, mat.conj().T, atol=1e-12)

    def test_minus_z0(self):
        mat = majorana_operator_matrix(MajoranaOperator({(0, 1): 1j}, 1))
        np.testing.assert_allclose(mat, -np.diag([1.0, -1.0]), atol=1e-12)
