"""Majorana monomials and operators (sums of bare sorted Majorana products).

Representation. ``MajoranaOperator.terms`` maps a sorted index tuple
``S = (s1 < s2 < ... < sw)`` to the complex coefficient ``c_S`` of the *bare* product
``m_{s1} m_{s2} ... m_{sw}``. Indices are 0-based: mode ``j`` owns ``m_{2j}`` and
``m_{2j+1}``. A Hermitian operator has real ``c_S`` on weights 0, 1 (mod 4) and
imaginary ``c_S`` on weights 2, 3 (mod 4); e.g. ``{(0, 1): 1j}`` is ``-Z_0``.

Keys given in any order are canonicalised with :meth:`Majorana.from_unsorted`
(``m_i m_j = -m_j m_i`` for ``i != j`` and ``m_i**2 = 1``); colliding keys are summed.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from monoprop.operator_arithmetic import OperatorArithmeticWithMatmul
from monoprop.validation import check_finite, check_system_size

__all__ = ["Majorana", "MajoranaOperator"]

_REPR_MAX_TERMS = 8


# Anything sorted() can order: mode indices, or (kind, index) keys.
Sortable = TypeVar("Sortable", bound=Any)


def sort_with_parity(values: Sequence[Sortable]) -> tuple[list[Sortable], int]:
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


def _check_non_negative(indices: tuple) -> None:
    if any(i < 0 for i in indices):
        raise ValueError(
            f"Majorana indices must be non-negative; got {indices}. "
            f"Mode j owns indices 2j and 2j+1, starting at 0."
        )


class Majorana:
    """A canonical Majorana monomial ``m_{i1} m_{i2} … m_{iw}`` with ``i1 < … < iw``.

    ``Majorana()`` is the identity. Use :meth:`from_unsorted` for indices in any order.
    ``indices`` is the tuple of Majorana indices ``(i1, ..., iw)``, strictly increasing; index
    ``2j`` and ``2j + 1`` belong to mode ``j``.

    >>> Majorana(4, 5)
    Majorana(4, 5)
    >>> Majorana.from_unsorted(5, 4, 1)
    (Majorana(1, 4, 5), -1.0)
    """

    __slots__ = ("indices",)

    def __init__(self, *indices: int, skip_validation: bool = False) -> None:
        if not skip_validation:
            _check_non_negative(indices)
            if any(a >= b for a, b in itertools.pairwise(indices)):
                raise ValueError(
                    f"Majorana indices must be distinct and sorted; got {indices}. "
                    f"Use Majorana.from_unsorted(*indices) to canonicalise with a sign."
                )
        self.indices = tuple(indices)

    @classmethod
    def from_unsorted(cls, *indices: int) -> tuple[Majorana, float]:
        """Canonicalise a product of Majoranas given in any order.

        Returns ``(Majorana, sign)`` with ``sign = (-1)**(strict inversions)`` as a
        float; equal indices cancel in pairs (``m_i**2 = 1``).

        >>> Majorana.from_unsorted(1, 2, 1)
        (Majorana(2), -1.0)
        """
        ints = tuple(operator.index(i) for i in indices)
        _check_non_negative(ints)
        ordered, parity = sort_with_parity(ints)
        # After sorting, equal factors are adjacent: each pair squares to 1 with no sign.
        kept = tuple(i for i, run in itertools.groupby(ordered) if len(list(run)) % 2)
        return cls(*kept, skip_validation=True), (-1.0 if parity else 1.0)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Majorana):
            return NotImplemented
        return self.indices == other.indices

    def __hash__(self) -> int:
        return hash(self.indices)

    def __repr__(self) -> str:
        return f"Majorana({', '.join(str(i) for i in self.indices)})"


def _key_indices(key: object) -> tuple:
    """The raw index tuple of a ``MajoranaOperator`` key (Majorana or index sequence)."""
    if isinstance(key, Majorana):
        return key.indices
    if isinstance(key, Sequence | np.ndarray) and not isinstance(key, str | bytes):
        return tuple(key)
    raise TypeError(
        f"MajoranaOperator keys must be Majorana objects or index sequences; got "
        f"{key!r} ({type(key).__name__}). Write a single Majorana m_3 as (3,)."
    )


class MajoranaOperator(OperatorArithmeticWithMatmul):
    """A sum of bare sorted Majorana products with complex coefficients.

    ``terms`` maps index tuples to Python ``complex``; ``num_modes`` n allows indices
    ``0 .. 2n-1``. Exact zeros are kept. Supports ``+``, ``-``, scalar ``*`` and ``/``,
    and the operator product ``*`` / ``@`` (signs from :meth:`Majorana.from_unsorted`).
    A coefficient with a NaN or infinite part (even with ``skip_validation``), scalar factor
    or divisor raises ``ValueError``.

    >>> op = MajoranaOperator({(1, 0): 1.0, (2, 3): -0.5j}, 2)
    >>> op
    MajoranaOperator(2 terms, 2 modes: (-1+0j)*[0, 1], -0.5j*[2, 3])
    >>> (op * op).terms
    {(): (-0.75+0j), (0, 1, 2, 3): 1j}
    """

    __hash__ = None  # type: ignore[assignment]  # a mutable value object is not hashable
    _size_unit = "modes"

    def __init__(
        self,
        terms: Mapping[Any, complex],  # keys: tuples of Majorana indices
        num_modes: int,
        *,
        skip_validation: bool = False,
    ) -> None:
        if not isinstance(terms, Mapping):
            raise TypeError(
                f"MajoranaOperator terms must be a mapping {{indices: coefficient}}; got "
                f"{type(terms).__name__}. Use MajoranaOperator._from_terms for parallel lists."
            )
        self._init(terms.items(), num_modes, check_range=not skip_validation)

    def _init(
        self, pairs: Iterable[tuple[object, complex]], num_modes: int, *, check_range: bool
    ) -> None:
        self.num_modes = check_system_size(num_modes, argument_name="num_modes")
        limit = 2 * self.num_modes
        terms: dict[tuple[int, ...], complex] = {}
        for key, value in pairs:
            # Checked even with skip_validation: NaN or inf poisons every result.
            check_finite(value, f"terms[{key!r}]", fix="give every term a finite coefficient")
            raw = _key_indices(key)
            majorana, sign = Majorana.from_unsorted(*raw)
            if check_range and raw and max(raw) >= limit:
                raise ValueError(
                    f"Majorana term {raw} acts on an index >= num_modes={self.num_modes} "
                    f"covers (largest index {max(raw)} must be < 2*num_modes = {limit}). "
                    f"Increase num_modes or fix the term."
                )
            # Starting the sum at 0j also turns -0.0 parts into 0.0 (cleaner reprs).
            terms[majorana.indices] = terms.get(majorana.indices, 0j) + complex(value) * sign
        self.terms = terms

    @classmethod
    def _from_terms(
        cls, majoranas: Sequence[object], coefficients: Sequence[complex], num_modes: int
    ) -> MajoranaOperator:
        """Build from parallel lists, canonicalising and summing collisions; no range check."""
        op = cls.__new__(cls)
        op._init(zip(majoranas, coefficients, strict=True), num_modes, check_range=False)
        return op

    def get_majorana_operator(self) -> MajoranaOperator:
        """Return ``self``: every operator a propagator or gate takes as Majorana products has
        this method (``PauliOperator`` maps by Jordan-Wigner, ``FermiOperator`` expands its
        ladder operators)."""
        return self

    def __len__(self) -> int:
        return len(self.terms)

    def __repr__(self) -> str:
        head = f"MajoranaOperator({len(self)} terms, {self.num_modes} modes"
        if 0 < len(self) <= _REPR_MAX_TERMS:
            head += ": " + ", ".join(f"{c}*{list(k)}" for k, c in self.terms.items())
        return head + ")"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MajoranaOperator):
            return NotImplemented
        return self.num_modes == other.num_modes and self.terms == other.terms

    def isclose(self, other: MajoranaOperator, rtol: float = 1e-05, atol: float = 1e-8) -> bool:
        """Coefficient-wise ``numpy.isclose`` over the union of keys (missing = 0).

        Different ``num_modes`` compare as not close.
        """
        if not isinstance(other, MajoranaOperator):
            raise TypeError(
                f"Cannot compare MajoranaOperator with {type(other).__name__}; "
                f"convert it first (e.g. other.get_majorana_operator())."
            )
        if self.num_modes != other.num_modes:
            return False
        keys = self.terms.keys() | other.terms.keys()
        mine = np.array([self.terms.get(k, 0j) for k in keys], dtype=complex)
        theirs = np.array([other.terms.get(k, 0j) for k in keys], dtype=complex)
        return bool(np.all(np.isclose(mine, theirs, rtol=rtol, atol=atol)))

    def all_pairwise_commute(self) -> bool:
        """True iff every pair of monomials commutes.

        Monomials with supports S1, S2 commute iff ``|S1|*|S2| - |S1 & S2|`` is even.
        """
        if len(self) < 2:
            return True
        width = 1 + max((max(k) for k in self.terms if k), default=0)
        # float64 so the matmul uses BLAS; the counts (<= width) are exact integers.
        support = np.zeros((len(self), width))
        for row, key in enumerate(self.terms):
            support[row, list(key)] = 1
        weights = support.sum(axis=1)
        shared = support @ support.T
        return not np.any((np.outer(weights, weights) - shared).astype(np.int64) % 2)

    # ---- arithmetic: the primitives of OperatorArithmetic ---------------------------------

    def _combine(self, other: MajoranaOperator, sign: int) -> MajoranaOperator:
        keys = [*self.terms, *other.terms]
        coeffs = [*self.terms.values(), *(sign * c for c in other.terms.values())]
        return MajoranaOperator._from_terms(keys, coeffs, self.num_modes)

    def _scaled(self, factor: complex) -> MajoranaOperator:
        coeffs = [factor * c for c in self.terms.values()]
        return MajoranaOperator._from_terms(list(self.terms), coeffs, self.num_modes)

    def _product(self, other: MajoranaOperator) -> MajoranaOperator:
        # Concatenated keys are canonicalised (with their reordering sign) by _from_terms.
        keys, coeffs = [], []
        for (ka, ca), (kb, cb) in itertools.product(self.terms.items(), other.terms.items()):
            keys.append(ka + kb)
            coeffs.append(ca * cb)
        return MajoranaOperator._from_terms(keys, coeffs, self.num_modes)
