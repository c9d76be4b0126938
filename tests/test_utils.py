"""monoprop.utils, monoprop.exceptions, monoprop.quantum_data (API §1.3, §1.5, §8.2, §8.3)."""

import pytest

from monoprop.exceptions import NumberOfModesInvalidError
from monoprop.fermi import FermiOperator
from monoprop.majorana import MajoranaOperator
from monoprop.pauli import PauliOperator
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

    @pytest.mark.parametrize(
        ("value", "name", "fragment"),
        [
            (True, "num_qubits", "num_qubits must be an integer (not bool)."),
            (False, "num_modes", "num_modes must be an integer (not bool)."),
            (2.0, "system_size", "system_size must be an integer (not float)."),
            ("3", "num_qubits", "(not str)"),
            (None, "num_qubits", "num_qubits must be an integer (not NoneType)"),
        ],
    )
    def test_type_errors(self, value, name, fragment):
        with pytest.raises(TypeError) as info:
            _validate_system_size(value, argument_name=name)
        assert fragment in str(info.value)

    def test_negative(self):
        with pytest.raises(ValueError, match="num_qubits must be non-negative; got -1."):
            _validate_system_size(-1, argument_name="num_qubits")

    def test_keyword_only(self):
        with pytest.raises(TypeError):
            _validate_system_size(3, "num_qubits")


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
        with pytest.raises(ValueError, match="non-negative"):
            jordan_wigner_basis_change(-1)
        with pytest.raises(TypeError, match="must be an integer"):
            jordan_wigner_basis_change(1.5)


class TestValidateBasisChange:
    def test_valid(self):
        assert validate_basis_change(None, 3) is None
        assert validate_basis_change(jordan_wigner_basis_change(3), 3) is None

    def test_wrong_length(self):
        with pytest.raises(ValueError, match="Basis change must have length 6, but got 4."):
            validate_basis_change(jordan_wigner_basis_change(2), 3)


def test_number_of_modes_invalid_error_is_value_error():
    assert issubclass(NumberOfModesInvalidError, ValueError)
    with pytest.raises(ValueError, match="Number of Fermionic modes 0"):
        raise NumberOfModesInvalidError("Number of Fermionic modes 0 invalid.")


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
