"""monoprop.utils (the system-size rule, the basis-change helpers) and monoprop.quantum_data."""

import numpy as np
import pytest

from monoprop import Circuit, FermiOperator, MajoranaOperator, PauliOperator, validation
from monoprop.quantum_data import IQuantumOperator
from monoprop.utils import (
    _validate_system_size,
    jordan_wigner_basis_change,
    validate_basis_change,
)


class TestValidateSystemSize:
    @pytest.mark.parametrize("size", [0, 1, 7, 1024, 5000])
    def test_accepts_non_negative_int(self, size):
        out = _validate_system_size(size, argument_name="num_qubits")
        assert out == size and type(out) is int

    @pytest.mark.parametrize("size", [np.int64(3), np.int32(0), np.uint8(7)])
    def test_numpy_integers_are_integers(self, size):
        out = _validate_system_size(size, argument_name="num_modes")
        assert out == int(size) and type(out) is int

    @pytest.mark.parametrize(
        ("value", "name", "message"),
        [
            (
                True,
                "num_qubits",
                "num_qubits must be an integer (not bool). Got True; pass a Python int such as "
                "num_qubits=4.",
            ),
            (
                False,
                "num_modes",
                "num_modes must be an integer (not bool). Got False; pass a Python int such as "
                "num_modes=4.",
            ),
            (
                np.True_,
                "num_modes",
                "num_modes must be an integer (not bool). Got np.True_; pass a Python int such "
                "as num_modes=4.",
            ),
            (
                2.0,
                "system_size",
                "system_size must be an integer (not float). Got 2.0; pass a Python int such as "
                "system_size=4.",
            ),
            (
                "3",
                "num_qubits",
                "num_qubits must be an integer (not str). Got '3'; pass a Python int such as "
                "num_qubits=4.",
            ),
            (
                None,
                "num_qubits",
                "num_qubits must be an integer (not NoneType). Got None; pass a Python int such "
                "as num_qubits=4.",
            ),
        ],
    )
    def test_type_errors(self, value, name, message):
        with pytest.raises(TypeError) as info:
            _validate_system_size(value, argument_name=name)
        assert str(info.value) == message
        # the contract's sentence comes first, word for word
        assert message.startswith(f"{name} must be an integer (not {type(value).__name__}).")

    @pytest.mark.parametrize(
        ("value", "name", "message"),
        [
            (-1, "num_qubits", "num_qubits must be non-negative; got -1. Pass the number of "
             "qubits in the system (0 or more)."),
            (np.int64(-3), "num_modes", "num_modes must be non-negative; got -3. Pass the number "
             "of modes in the system (0 or more)."),
            (-1, "system_size", "system_size must be non-negative; got -1. Pass the number of "
             "qubits or modes in the system (0 or more)."),
        ],
    )  # fmt: skip
    def test_negative(self, value, name, message):
        with pytest.raises(ValueError) as info:
            _validate_system_size(value, argument_name=name)
        assert str(info.value) == message
        assert message.startswith(f"{name} must be non-negative; got {int(value)}.")

    def test_keyword_only(self):
        with pytest.raises(TypeError):
            _validate_system_size(3, "num_qubits")

    def test_is_the_one_size_check(self):
        assert _validate_system_size is validation.check_system_size

    @pytest.mark.parametrize(
        ("make", "message"),
        [
            (lambda n: PauliOperator({}, n), "num_qubits must be an integer (not bool)."),
            (lambda n: MajoranaOperator({}, n), "num_modes must be an integer (not bool)."),
            (lambda n: FermiOperator([], [], n), "num_modes must be an integer (not bool)."),
            (lambda n: Circuit([], n), "system_size must be an integer (not bool)."),
            (jordan_wigner_basis_change, "n_qubits must be an integer (not bool)."),
        ],
    )
    def test_used_by_the_constructors(self, make, message):
        with pytest.raises(TypeError) as info:
            make(True)
        assert str(info.value).startswith(message)
        assert make(np.int64(2)) is not None  # and numpy integers pass


class TestJordanWignerBasisChange:
    def test_small(self):
        assert jordan_wigner_basis_change(1) == [[0], [1]]
        assert jordan_wigner_basis_change(0) == []

    def test_entries(self):
        basis = jordan_wigner_basis_change(4)
        assert len(basis) == 8
        for i in range(4):
            assert basis[2 * i] == [*range(2 * i), 2 * i]
            assert basis[2 * i + 1] == [*range(2 * i), 2 * i + 1]

    def test_size_rule(self):
        with pytest.raises(ValueError, match="n_qubits must be non-negative; got -1."):
            jordan_wigner_basis_change(-1)
        with pytest.raises(TypeError, match=r"n_qubits must be an integer \(not float\)."):
            jordan_wigner_basis_change(1.5)


class TestValidateBasisChange:
    def test_valid(self):
        assert validate_basis_change(None, 3) is None
        assert validate_basis_change(jordan_wigner_basis_change(3), 3) is None
        assert validate_basis_change([], 0) is None

    def test_wrong_length(self):
        with pytest.raises(ValueError) as info:
            validate_basis_change(jordan_wigner_basis_change(2), 3)
        assert str(info.value) == (
            "Basis change must have length 6, but got 4. Give one slot list per Majorana "
            "(2 * num_modes with num_modes=3)."
        )

    def test_not_a_list(self):
        with pytest.raises(TypeError, match="basis_change must be None or a list .* got int 5"):
            validate_basis_change(5, 3)

    def test_num_modes_checked(self):
        with pytest.raises(ValueError, match="num_modes must be non-negative; got -2."):
            validate_basis_change(None, -2)


class TestIQuantumOperator:
    def test_is_protocol_with_one_abstract_method(self):
        assert IQuantumOperator.__abstractmethods__ == frozenset({"get_majorana_operator"})
        with pytest.raises(TypeError):
            IQuantumOperator()

    @pytest.mark.parametrize(
        "op",
        [
            PauliOperator({"X": 1.0}, 1),
            MajoranaOperator({(0,): 1.0}, 1),
            FermiOperator([[(0, "+")]], [1.0], 1),
        ],
    )
    def test_operators_implement_it(self, op):
        assert isinstance(op, IQuantumOperator)
        assert isinstance(op.get_majorana_operator(), MajoranaOperator)

    def test_other_objects_do_not(self):
        assert not isinstance({(0,): 1.0}, IQuantumOperator)
