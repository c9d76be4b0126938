"""The integer checks of monoprop.validation and the exception types of monoprop.exceptions."""

import numpy as np
import pytest

from monoprop.exceptions import NumberOfModesInvalidError
from monoprop.validation import check_int, check_system_size


class TestValidateSystemSize:
    @pytest.mark.parametrize("size", [0, 1, 7, 1024, 5000])
    def test_accepts_non_negative_int(self, size):
        out = check_system_size(size, argument_name="num_qubits")
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
            check_system_size(value, argument_name=name)
        assert fragment in str(info.value)

    def test_negative(self):
        with pytest.raises(ValueError, match="num_qubits must be non-negative; got -1."):
            check_system_size(-1, argument_name="num_qubits")

    def test_keyword_only(self):
        with pytest.raises(TypeError):
            check_system_size(3, "num_qubits")


def test_number_of_modes_invalid_error_is_value_error():
    assert issubclass(NumberOfModesInvalidError, ValueError)
    with pytest.raises(ValueError, match="Number of Fermionic modes 0"):
        raise NumberOfModesInvalidError("Number of Fermionic modes 0 invalid.")


class TestCheckInt:
    @pytest.mark.parametrize("value", [0, 5, np.int64(5), np.uint8(5)])
    def test_accepts_ints_and_numpy_integers(self, value):
        out = check_int(value, "n", minimum=0, maximum=5)
        assert out == value and type(out) is int

    @pytest.mark.parametrize(
        ("value", "text"),
        [
            (True, "n must be an integer; got True."),
            (np.bool_(True), "n must be an integer; got np.True_."),
            (2.0, "n must be an integer; got 2.0."),
            ("3", "n must be an integer; got '3'."),
            (None, "n must be an integer; got None."),
        ],
    )
    def test_type_error_message(self, value, text):
        with pytest.raises(TypeError) as info:
            check_int(value, "n")
        assert str(info.value) == text

    def test_bounds_are_inclusive(self):
        assert check_int(1, "n", minimum=1, maximum=3) == 1
        assert check_int(3, "n", minimum=1, maximum=3) == 3
        for bad in (0, 4):
            with pytest.raises(ValueError) as info:
                check_int(bad, "n", minimum=1, maximum=3)
            assert str(info.value) == f"n must be an integer; got {bad}."

    def test_message_fields_and_error_types(self):
        with pytest.raises(ValueError) as info:
            check_int(
                7,
                "k",
                maximum=6,
                range_message="{name}={value} ({type}) is not in {minimum}..{maximum}.",
            )
        assert str(info.value) == "k=7 (int) is not in None..6."
        with pytest.raises(ValueError, match=r"^k must be positive; got 1\.5\.$"):
            check_int(
                1.5, "k", type_error=ValueError, message="{name} must be positive; got {value!r}."
            )
        with pytest.raises(TypeError, match=r"^k is negative: -1$"):
            check_int(
                -1,
                "k",
                minimum=0,
                range_message="{name} is negative: {value}",
                range_error=TypeError,
            )

    def test_allow_bool_and_types(self):
        assert check_int(True, "n", allow_bool=True) == 1
        with pytest.raises(TypeError):
            check_int(np.int64(3), "n", types=int)
