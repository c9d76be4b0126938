"""Internal helpers shared by the operator modules (not public API)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

# i**k for k = 0..3 as exact constants. Built with complex(re, im) because the literal
# -1j is complex(-0.0, -1.0), whose negative zero would leak into printed coefficients.
_I_POWERS = (complex(1, 0), complex(0, 1), complex(-1, 0), complex(0, -1))


def i_power(k: int) -> complex:
    """Return ``1j ** k`` exactly, for any integer ``k``.

    >>> i_power(3), i_power(-1)
    (-1j, -1j)
    """
    return _I_POWERS[k % 4]


def hermitian_phase(weight: int) -> complex:
    """Phase ``i**C(w,2)`` turning a bare Majorana product of weight w Hermitian.

    ``M_S = hermitian_phase(len(S)) * m_S`` is Hermitian for every ``S``; the phase has
    period 8 in ``w`` (1, 1, i, -i, -1, -1, -i, i).

    >>> [hermitian_phase(w) for w in range(4)]
    [(1+0j), (1+0j), 1j, -1j]
    """
    return i_power(weight * (weight - 1) // 2)


def sort_with_parity(values: Sequence[int]) -> tuple[list[int], int]:
    """Stably sort ``values`` and return ``(sorted_values, parity)``.

    ``parity`` is the number of strict inversions modulo 2, i.e. the number of
    anticommuting swaps needed to sort a product of distinct-or-equal Majoranas
    (equal neighbours are never swapped). Computed from the cycle structure of the
    sorting permutation, so it is O(L log L) rather than the naive O(L^2).

    >>> sort_with_parity([5, 4, 1])
    ([1, 4, 5], 1)
    """
    order = sorted(range(len(values)), key=values.__getitem__)  # stable
    # A permutation of L elements with c cycles has parity (L - c) mod 2; for a
    # stable sort its inversions are exactly the strict inversions of ``values``.
    seen = [False] * len(order)
    cycles = 0
    for start in range(len(order)):
        if not seen[start]:
            cycles += 1
            j = start
            while not seen[j]:
                seen[j] = True
                j = order[j]
    return [values[j] for j in order], (len(order) - cycles) % 2


def is_scalar(value: object) -> bool:
    """True for Python and numpy numbers (the operands of scalar ``*`` and ``/``)."""
    return isinstance(value, numbers.Number)


def check_same_size(
    left: object, right: object, left_size: int, right_size: int, unit: str, verb: str
) -> None:
    """Raise ``ValueError`` naming both sizes when two operators differ in width."""
    if left_size != right_size:
        raise ValueError(
            f"Cannot {verb} {type(left).__name__} on {left_size} {unit} and "
            f"{type(right).__name__} on {right_size} {unit}: sizes must match. "
            f"Rebuild the smaller operator with the larger size first."
        )
