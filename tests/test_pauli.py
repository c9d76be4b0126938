"""Pauli and PauliOperator, with the Jordan-Wigner image checked against dense matrices.

A ``Pauli`` is a string of letters X, Y, Z on distinct non-negative qubits, kept in canonical
form (identities removed, qubits sorted); a plain string puts character k on qubit k. A
``PauliOperator`` maps Paulis to real coefficients on a given number of qubits (equal keys
summed, zeros kept). Its Majorana image uses ``X_j = Z_0...Z_{j-1} m_{2j}``,
``Y_j = Z_0...Z_{j-1} m_{2j+1}`` and ``Z_j = -i m_{2j} m_{2j+1}``, e.g. ``Z -> {(0, 1): -1j}``
and ``IX -> {(0, 1, 2): -1j}``; its local form puts X_q on slot 2q, Y_q on 2q+1 and Z_q on both.
"""

import copy
import itertools
import pickle

import numpy as np
import pytest
from _jw import majorana_operator_matrix, pauli_operator_matrix

from monoprop.majorana import MajoranaOperator
from monoprop.pauli import Pauli, PauliOperator


class TestPauli:
    def test_default_qubits_and_canonical_form(self):
        p = Pauli("XIZ")
        assert p.string == "XZ" and p.qubits == (0, 2)
        assert type(p.qubits) is tuple

    @pytest.mark.parametrize(
        ("left", "right"),
        [
            (Pauli("IX"), Pauli("X", 1)),
            (Pauli("XY", (1, 0)), Pauli("YX")),
            (Pauli("III"), Pauli("")),
            (Pauli("ZXY", [3, 1, 2]), Pauli("XYZ", (1, 2, 3))),
            (Pauli("X", np.int64(2)), Pauli("IIX")),
        ],
    )
    def test_equalities(self, left, right):
        assert left == right
        assert hash(left) == hash(right)

    def test_inequality_and_foreign_types(self):
        assert Pauli("X") != Pauli("Y")
        assert Pauli("X", 0) != Pauli("X", 1)
        assert (Pauli("X") == "X") is False
        assert Pauli.__eq__(Pauli("X"), "X") is NotImplemented

    @pytest.mark.parametrize(
        ("pauli", "text"),
        [
            (Pauli("IX"), "Pauli('X', (1,))"),
            (Pauli("ZZ"), "Pauli('ZZ', (0, 1))"),
            (Pauli(""), "Pauli('', ())"),
            (Pauli("III"), "Pauli('', ())"),
        ],
    )
    def test_repr(self, pauli, text):
        assert repr(pauli) == text

    def test_slots(self):
        assert Pauli.__slots__ == ("qubits", "string")
        with pytest.raises(AttributeError):
            Pauli("X").other = 1

    @pytest.mark.parametrize(
        ("args", "fragment"),
        [
            (("XA",), "Invalid characters"),
            (("xy",), "Invalid characters"),
            (("XY", (0,)), "same length"),
            (("XY", (0, 1, 2)), "same length"),
            (("XY", (1, 1)), "Duplicate qubit indices"),
            (("X", -1), "must be non-negative"),
            (("XY", (0, -2)), "must be non-negative"),
        ],
    )
    def test_validation(self, args, fragment):
        with pytest.raises(ValueError, match=fragment):
            Pauli(*args)

    def test_skip_validation_still_canonicalises(self):
        p = Pauli("ZIX", (2, 0, 1), skip_validation=True)
        assert (p.string, p.qubits) == ("XZ", (1, 2))
        # Nothing is checked: a bad letter passes through unchanged.
        assert Pauli("A", (0,), skip_validation=True).string == "A"

    def test_hashable_and_pickles(self):
        p = Pauli("XZ", (3, 1))
        assert {p: 1}[Pauli("ZIX", (1, 2, 3))] == 1
        assert pickle.loads(pickle.dumps(p)) == p
        assert copy.deepcopy(p) == p


class TestPauliOperatorConstruction:
    def test_string_and_pauli_keys_summed(self):
        op = PauliOperator({"IX": 1.0, Pauli("X", 1): 2.0, "ZZ": -1}, 2)
        assert op.terms == {Pauli("X", 1): 3.0, Pauli("ZZ"): -1.0}
        assert list(op.terms) == [Pauli("X", 1), Pauli("ZZ")]  # first-occurrence order
        assert all(type(c) is float for c in op.terms.values())
        assert op.num_qubits == 2
        assert len(op) == 2

    def test_string_key_is_full_width(self):
        assert PauliOperator({"IIZ": 1}, 3).terms == {Pauli("Z", 2): 1.0}

    def test_num_qubits_required(self):
        with pytest.raises(TypeError):
            PauliOperator({"X": 1.0})

    @pytest.mark.parametrize("skip", [False, True])
    @pytest.mark.parametrize(
        ("num_qubits", "error", "fragment"),
        [
            (True, TypeError, "num_qubits must be an integer (not bool)"),
            (2.0, TypeError, "num_qubits must be an integer (not float)"),
            (None, TypeError, "num_qubits must be an integer"),
            (-1, ValueError, "num_qubits must be non-negative; got -1"),
        ],
    )
    def test_num_qubits_validated_even_when_skipping(self, num_qubits, error, fragment, skip):
        with pytest.raises(error) as info:
            PauliOperator({}, num_qubits, skip_validation=skip)
        assert fragment in str(info.value)

    def test_zero_qubits_allowed(self):
        op = PauliOperator({"": 1.5}, 0)
        assert op.terms == {Pauli(""): 1.5}

    def test_complex_coefficients(self):
        with pytest.raises(ValueError, match="Operator has complex terms"):
            PauliOperator({"X": 1 + 0.5j}, 1)
        # real_if_close accepts a negligible imaginary part.
        assert PauliOperator({"X": 1 + 1e-17j}, 1).terms == {Pauli("X"): 1.0}
        assert PauliOperator({"X": np.complex128(2.0)}, 1).terms == {Pauli("X"): 2.0}
        skipped = PauliOperator({"X": 1 + 0.5j}, 1, skip_validation=True)
        assert skipped.terms == {Pauli("X"): 1.0}

    def test_qubit_range(self):
        with pytest.raises(ValueError, match="qubit index") as info:
            PauliOperator({Pauli("X", 3): 1.0}, 2)
        assert "num_qubits=2" in str(info.value)
        with pytest.raises(ValueError, match="qubit index"):
            PauliOperator({"XYZ": 1.0}, 2)

    def test_zero_terms_kept(self):
        op = PauliOperator({"XY": 0.0}, 2)
        assert op.terms == {Pauli("XY"): 0.0}
        assert op != PauliOperator({}, 2)

    def test_bad_keys_and_terms(self):
        with pytest.raises(TypeError, match="keys must be Pauli"):
            PauliOperator({(0, 1): 1.0}, 2)
        with pytest.raises(TypeError, match="mapping"):
            PauliOperator([("X", 1.0)], 1)
        with pytest.raises(ValueError, match="Invalid characters"):
            PauliOperator({"XQ": 1.0}, 2)

    def test_from_terms(self):
        op = PauliOperator._from_terms(["XI", Pauli("X", 0), "IZ"], [1.0, 2.0, 3.0], 2)
        assert op.terms == {Pauli("X", 0): 3.0, Pauli("Z", 1): 3.0}
        with pytest.raises(TypeError, match="num_qubits must be an integer"):
            PauliOperator._from_terms(["X"], [1.0])
        with pytest.raises(ValueError, match="Operator has complex terms"):
            PauliOperator._from_terms(["X"], [1j], 1)
        assert PauliOperator._from_terms(["X"], [1j], 1, skip_validation=True).terms == {
            Pauli("X"): 0.0
        }


class TestPauliOperatorValueSemantics:
    def test_repr(self):
        op = PauliOperator({"XZ": 1.0}, 2)
        assert repr(op) == "PauliOperator(1 terms, 2 qubits: 1.0*Pauli('XZ', (0, 1)))"
        two = PauliOperator({"XZ": 1.0, "IY": -0.5}, 2)
        assert repr(two) == (
            "PauliOperator(2 terms, 2 qubits: 1.0*Pauli('XZ', (0, 1)), -0.5*Pauli('Y', (1,)))"
        )

    def test_repr_lists_at_most_eight_terms(self):
        eight = PauliOperator({Pauli("X", q): 1.0 for q in range(8)}, 9)
        nine = PauliOperator({Pauli("X", q): 1.0 for q in range(9)}, 9)
        assert repr(eight).startswith("PauliOperator(8 terms, 9 qubits: 1.0*Pauli('X', (0,))")
        assert repr(nine) == "PauliOperator(9 terms, 9 qubits)"

    def test_eq_exact_and_unhashable(self):
        a = PauliOperator({"XY": 1.0, "ZZ": 2.0}, 2)
        assert a == PauliOperator({"ZZ": 2.0, "XY": 1.0}, 2)
        assert a != PauliOperator({"XY": 1.0, "ZZ": 2.0}, 3)
        assert a != PauliOperator({"XY": 1.0, "ZZ": 2.0 + 1e-15}, 2)
        assert a != {"XY": 1.0, "ZZ": 2.0}
        assert PauliOperator.__hash__ is None
        with pytest.raises(TypeError):
            hash(a)

    def test_pickle_and_copy(self):
        a = PauliOperator({"XY": 1.0, "ZZ": 2.0}, 3)
        assert pickle.loads(pickle.dumps(a)) == a
        b = copy.deepcopy(a)
        b.terms[Pauli("X")] = 1.0
        assert a != b

    def test_isclose(self):
        a = PauliOperator({"XY": 1.0, "ZZ": 2.0}, 2)
        assert a.isclose(PauliOperator({"XY": 1.0 + 1e-9, "ZZ": 2.0}, 2))
        assert not a.isclose(PauliOperator({"XY": 1.1, "ZZ": 2.0}, 2))
        # Missing keys count as zero.
        assert a.isclose(PauliOperator({"XY": 1.0, "ZZ": 2.0, "XX": 1e-9}, 2))
        assert not a.isclose(PauliOperator({"XY": 1.0}, 2))
        assert not a.isclose(PauliOperator({"XY": 1.0, "ZZ": 2.0}, 3))
        assert a.isclose(PauliOperator({"XY": 1.05, "ZZ": 2.0}, 2), rtol=0.1)
        assert a.isclose(PauliOperator({"XY": 1.5, "ZZ": 2.0}, 2), atol=1.0)
        assert PauliOperator({}, 2).isclose(PauliOperator({"X": 0.0}, 2))

    def test_isclose_type_error(self):
        with pytest.raises(TypeError, match="Cannot compare PauliOperator with dict"):
            PauliOperator({"X": 1.0}, 1).isclose({"X": 1.0})
        with pytest.raises(TypeError, match="Cannot compare PauliOperator with MajoranaOperator"):
            PauliOperator({"X": 1.0}, 1).isclose(MajoranaOperator({(0,): 1.0}, 1))


class TestJordanWigner:
    @pytest.mark.parametrize(
        ("label", "expected"),
        [
            ("Z", {(0, 1): -1j}),
            ("I", {(): 1.0}),
            ("X", {(0,): 1.0}),
            ("Y", {(1,): 1.0}),
            ("IX", {(0, 1, 2): -1j}),
            ("ZZ", {(0, 1, 2, 3): -1.0}),
            ("YYX", {(1, 2, 4): 1j}),
            ("IZ", {(2, 3): -1j}),
        ],
    )
    def test_documented_examples(self, label, expected):
        out = PauliOperator({label: 1}, len(label)).get_majorana_operator()
        assert out.terms == expected
        assert out.num_modes == len(label)

    def test_identity_coefficient(self):
        assert PauliOperator({"I": 2.5}, 1).get_majorana_operator().terms == {(): 2.5}

    def test_returns_complex_majorana_operator(self):
        out = PauliOperator({"XZ": 2.0}, 3).get_majorana_operator()
        assert isinstance(out, MajoranaOperator) and out.num_modes == 3
        assert all(type(c) is complex for c in out.terms.values())

    @pytest.mark.parametrize("n", [1, 2, 3])
    def test_every_string_matches_dense(self, n):
        for letters in itertools.product("IXYZ", repeat=n):
            op = PauliOperator({"".join(letters): 0.7}, n)
            np.testing.assert_allclose(
                majorana_operator_matrix(op.get_majorana_operator()),
                pauli_operator_matrix(op),
                atol=1e-12,
                err_msg="".join(letters),
            )

    def test_random_sums_and_wide_strings(self):
        rng = np.random.default_rng(7)
        for n in (4, 5):
            labels = {"".join(rng.choice(list("IXYZ"), size=n)) for _ in range(12)}
            op = PauliOperator({s: rng.normal() for s in labels}, n)
            np.testing.assert_allclose(
                majorana_operator_matrix(op.get_majorana_operator()),
                pauli_operator_matrix(op),
                atol=1e-12,
            )

    def test_term_narrower_than_operator(self):
        op = PauliOperator({Pauli("Y", 1): 1.0}, 3)
        np.testing.assert_allclose(
            majorana_operator_matrix(op.get_majorana_operator()), pauli_operator_matrix(op)
        )

    def test_colliding_images_are_summed(self):
        # Distinct Pauli strings have distinct images, so only the coefficients add.
        op = PauliOperator({"XX": 1.0, "YY": 1.0}, 2)
        assert len(op.get_majorana_operator()) == 2


class TestLocalOperator:
    def test_api_example(self):
        out = PauliOperator({"XYZ": 2}, 3).get_local_operator()
        assert out.terms == {(0, 3, 4, 5): 2.0}
        assert out.num_modes == 3

    def test_slots_per_letter(self):
        op = PauliOperator({Pauli("X", 2): 1.0, Pauli("Y", 2): -1.0, Pauli("Z", 1): 0.5, "": 3}, 3)
        assert op.get_local_operator().terms == {(4,): 1, (5,): -1, (2, 3): 0.5, (): 3}


class TestAllPairwiseCommute:
    @pytest.mark.parametrize(
        ("terms", "expected"),
        [
            ({}, True),
            ({"XYZ": 1.0}, True),
            ({"XI": 1.0, "ZI": 1.0}, False),
            ({"XX": 1.0, "ZZ": 1.0}, True),
            ({"XX": 1.0, "YY": 1.0, "ZZ": 1.0}, True),
            ({"XX": 1.0, "ZI": 1.0}, False),
            ({"XI": 1.0, "IZ": 1.0}, True),
            ({"XYZ": 1.0, "ZZZ": 1.0, "III": 2.0}, True),
            ({"XYZ": 1.0, "YYY": 1.0}, True),  # two differing qubits
            ({"XYZ": 1.0, "YYZ": 1.0}, False),
        ],
    )
    def test_cases(self, terms, expected):
        assert PauliOperator(terms, 3).all_pairwise_commute() is expected

    def test_against_dense(self):
        rng = np.random.default_rng(3)
        for _ in range(40):
            labels = {"".join(rng.choice(list("IXYZ"), size=3)) for _ in range(3)}
            op = PauliOperator(dict.fromkeys(labels, 1.0), 3)
            mats = [pauli_operator_matrix(PauliOperator({s: 1.0}, 3)) for s in labels]
            dense = all(np.allclose(a @ b, b @ a) for a, b in itertools.combinations(mats, 2))
            assert op.all_pairwise_commute() == dense, labels
