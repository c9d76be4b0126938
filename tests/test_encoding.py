"""The slot encoding, the Hermitian phase and the Jordan-Wigner basis change of
monoprop.encoding, on exact values."""

import itertools

import numpy as np

import monoprop
from monoprop.encoding import (
    HERMITIAN_ATOL,
    hermitian_phase,
    hermitian_phase_exponent,
    i_power,
    jordan_wigner_basis_change,
    pauli_slots,
    slots_to_pauli,
)
from monoprop.utils import jordan_wigner_basis_change as jordan_wigner_basis_change_old_path


class TestJordanWignerBasisChange:
    # Its values and size rule: tests/test_utils.py.
    def test_public_import_paths(self):
        assert monoprop.jordan_wigner_basis_change is jordan_wigner_basis_change
        assert jordan_wigner_basis_change_old_path is jordan_wigner_basis_change


class TestPhases:
    def test_i_power(self):
        assert [i_power(k) for k in range(-2, 6)] == [-1, -1j, 1, 1j, -1, -1j, 1, 1j]
        # No negative zeros: they would print as "-0j" in coefficients.
        assert all(str(i_power(k)) in ("(1+0j)", "1j", "(-1+0j)", "-1j") for k in range(4))

    def test_hermitian_phase_period_eight(self):
        expected = [1, 1, 1j, -1j, -1, -1, -1j, 1j]
        assert [hermitian_phase(w) for w in range(16)] == expected * 2

    def test_exponent_elementwise(self):
        weights = np.arange(8)
        assert (hermitian_phase_exponent(weights) % 4).tolist() == [0, 0, 1, 3, 2, 2, 3, 1]

    def test_tolerance(self):
        assert HERMITIAN_ATOL == 1e-9


class TestPauliSlots:
    def test_letters(self):
        assert pauli_slots("X", (3,)) == (6,)
        assert pauli_slots("Y", (3,)) == (7,)
        assert pauli_slots("Z", (3,)) == (6, 7)
        assert pauli_slots("", ()) == ()

    def test_sorted_for_any_qubit_order(self):
        assert pauli_slots("ZX", (4, 1)) == (2, 8, 9)

    def test_round_trip(self):
        for letters in itertools.product("XYZ", repeat=3):
            string = "".join(letters)
            slots = pauli_slots(string, (0, 2, 5))
            assert slots_to_pauli(slots) == (string, (0, 2, 5))
