"""How operators are written as sets of slots, and the phases that go with it.

Every monomial the engine holds is a set of *slots*. A Majorana monomial ``m_{s1} ... m_{sw}``
is the set of its indices: mode ``j`` owns slots ``2j`` and ``2j + 1``. A Pauli string uses the
same two slots per qubit: ``X_q`` is slot ``2q``, ``Y_q`` slot ``2q + 1`` and ``Z_q`` both. In
either family the slots of a product are the symmetric difference of the factors' slots (up to
a phase), which is what lets one engine hold both. This module is the one place those maps,
the Hermitian phase of a Majorana product and the tolerance on it are written down.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from monoprop.validation import check_system_size

__all__ = [
    "HERMITIAN_ATOL",
    "I_POWERS",
    "PAULI_LETTER_SLOTS",
    "hermitian_phase",
    "hermitian_phase_exponent",
    "i_power",
    "jordan_wigner_basis_change",
    "pauli_slots",
    "slots_to_pauli",
]

# i**k for k = 0..3 as exact constants. Built with complex(re, im) because the literal
# -1j is complex(-0.0, -1.0), whose negative zero would leak into printed coefficients.
I_POWERS = (complex(1, 0), complex(0, 1), complex(-1, 0), complex(0, -1))

# How far from real a coefficient that should be real (a structural gate coefficient, a
# Hermitian-basis coefficient) may be and still count as real. 1e-9 absorbs the rounding of
# user input such as 1j + 1e-10 while rejecting any deliberate imaginary part.
HERMITIAN_ATOL = 1e-9

# The slots of each Pauli letter on qubit q, as offsets from 2q.
PAULI_LETTER_SLOTS = {"X": (0,), "Y": (1,), "Z": (0, 1)}

# The inverse: (slot 2q held, slot 2q + 1 held) -> the letter on qubit q.
_SLOT_PAIR_LETTER = {(True, False): "X", (False, True): "Y", (True, True): "Z"}


def i_power(k: int) -> complex:
    """Return ``1j ** k`` exactly, for any integer ``k``.

    >>> i_power(3), i_power(-1)
    (-1j, -1j)
    """
    return I_POWERS[k % 4]


def hermitian_phase_exponent(weight: Any) -> Any:
    """``C(w, 2) = w (w - 1) / 2``, the power of ``i`` that makes a weight-``w`` product Hermitian.

    The bare product ``m_S`` of ``w`` distinct Majoranas satisfies ``m_S^† = (-1)**C(w, 2) m_S``
    (reversing ``w`` factors takes ``C(w, 2)`` swaps), so ``M_S = i**C(w, 2) m_S`` is Hermitian.
    Works elementwise on integer numpy arrays; only the value mod 4 matters.

    >>> [hermitian_phase_exponent(w) % 4 for w in range(8)]
    [0, 0, 1, 3, 2, 2, 3, 1]
    """
    return weight * (weight - 1) // 2


def hermitian_phase(weight: int) -> complex:
    """Phase ``i**C(w, 2)`` turning a bare Majorana product of weight ``w`` Hermitian.

    ``M_S = hermitian_phase(len(S)) * m_S`` is Hermitian for every ``S``; the phase has
    period 8 in ``w`` (1, 1, i, -i, -1, -1, -i, i).

    >>> [hermitian_phase(w) for w in range(4)]
    [(1+0j), (1+0j), 1j, -1j]
    """
    return i_power(hermitian_phase_exponent(weight))


def pauli_slots(string: str, qubits: Sequence[int]) -> tuple[int, ...]:
    """The sorted slots of the Pauli string with letter ``string[k]`` on ``qubits[k]``.

    >>> pauli_slots("XYZ", (0, 1, 2))
    (0, 3, 4, 5)
    """
    return tuple(
        sorted(
            2 * q + offset
            for letter, q in zip(string, qubits, strict=True)
            for offset in PAULI_LETTER_SLOTS[letter]
        )
    )


def slots_to_pauli(slots: Sequence[int]) -> tuple[str, tuple[int, ...]]:
    """Decode a slot set into ``(letters, qubits)``, qubits ascending (inverse of
    :func:`pauli_slots`).

    >>> slots_to_pauli((0, 3, 4, 5))
    ('XYZ', (0, 1, 2))
    """
    present = set(slots)
    qubits = sorted({s // 2 for s in slots})
    letters = "".join(_SLOT_PAIR_LETTER[(2 * q in present, 2 * q + 1 in present)] for q in qubits)
    return letters, tuple(qubits)


def jordan_wigner_basis_change(n_qubits: int) -> list[list[int]]:
    """Slot supports of the Jordan-Wigner images of the ``2n`` Majoranas.

    ``m_{2i} = Z_0 ... Z_{i-1} X_i`` touches slots ``0 .. 2i-1`` (the Z string,
    two slots per qubit) plus ``2i``; ``m_{2i+1}`` ends in ``2i+1`` instead.

    >>> jordan_wigner_basis_change(2)
    [[0], [1], [0, 1, 2], [0, 1, 3]]
    """
    n = check_system_size(n_qubits, argument_name="n_qubits")
    basis: list[list[int]] = []
    for i in range(n):
        z_string = list(range(2 * i))
        basis.append([*z_string, 2 * i])
        basis.append([*z_string, 2 * i + 1])
    return basis
