"""Fermionic ladder-operator strings and their sums.

Ladder operators (0-based), with Jordan-Wigner ``c_j^† = Z_0...Z_{j-1} |1><0|_j``::

    c_j^† = (m_{2j} - i m_{2j+1}) / 2        c_j = (m_{2j} + i m_{2j+1}) / 2

so ``n_j = c_j^† c_j = (1 + i m_{2j} m_{2j+1}) / 2 = (1 - Z_j) / 2`` and an occupied mode
is qubit ``|1>``.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from monoprop.majorana import MajoranaOperator, sort_with_parity
from monoprop.operator_arithmetic import OperatorArithmetic
from monoprop.validation import check_finite, check_system_size

__all__ = ["FermiOperator", "FermiString", "MajoranaOperator"]

_REPR_MAX_TERMS = 8

# Each ladder factor on mode j is a sum of two Majoranas: (slot offset, weight).
_LADDER_EXPANSION = {
    "+": ((0, 0.5), (1, -0.5j)),
    "-": ((0, 0.5), (1, 0.5j)),
}


class FermiString:
    """A product of ladder operators, e.g. ``[(0, "+"), (2, "-")]`` = ``c_0^† c_2``.

    ``"+"`` is creation, ``"-"`` annihilation; the empty string is the identity. The
    pairs are stored as given (not normal-ordered).

    >>> FermiString([(0, "+"), (2, "-")])
    FermiString(c_0^+ c_2^-)
    """

    def __init__(self, expression: Sequence[tuple[int, str]] | FermiString) -> None:
        pairs = expression.expression if isinstance(expression, FermiString) else expression
        expression = tuple(pairs)
        for pair in expression:
            index, op = _unpack(pair)
            if index < 0:
                raise ValueError(
                    f"Invalid index {index}: must be non-negative (modes are numbered "
                    f"from 0) in {expression}."
                )
            if op not in ("+", "-"):
                raise ValueError(
                    f"Invalid operator {op!r} on mode {index}: must be '+' or '-' "
                    f"('+' creates, '-' annihilates)."
                )
        self.expression: tuple[tuple[int, str], ...] = expression

    def _normalised(self) -> tuple[tuple[int, str], ...]:
        return tuple((operator.index(i), op) for i, op in self.expression)

    def _canonical(self) -> tuple[tuple[tuple[int, str], ...], float]:
        """Creators (ascending) before annihilators (ascending), with the sign of the
        reordering as if every pair anticommuted (no contraction terms, no cancellation)."""
        # Sort key: creators first, then by mode. Strict inversions of the key sequence
        # = adjacent swaps of a stable insertion sort (equal factors are not swapped).
        keys = [(op == "-", i) for i, op in self._normalised()]
        ordered, parity = sort_with_parity(keys)
        canonical = tuple((i, "-" if annihilator else "+") for annihilator, i in ordered)
        return canonical, (-1.0 if parity else 1.0)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FermiString):
            return NotImplemented
        return self.expression == other.expression

    def __hash__(self) -> int:
        # Hash a tuple-of-tuples view so list pairs (stored as given) stay hashable.
        return hash(tuple(tuple(pair) for pair in self.expression))

    def __repr__(self) -> str:
        return f"FermiString({' '.join(f'c_{i}^{op}' for i, op in self.expression)})"


def _unpack(pair: Any) -> tuple[int, str]:
    try:
        index, op = pair
    except (TypeError, ValueError):
        raise ValueError(
            f"Invalid Fermi term entry {pair!r}: expected a pair (mode_index, '+' or '-')."
        ) from None
    try:
        index = operator.index(index)
    except TypeError:
        raise TypeError(
            f"Invalid index {index!r}: mode indices must be integers, e.g. (0, '+')."
        ) from None
    return index, op


class FermiOperator(OperatorArithmetic):
    """A linear combination of :class:`FermiString` terms on ``num_modes`` modes.

    ``terms`` and ``coefficients`` are parallel lists (copied; a length mismatch is
    truncated by ``zip`` where they are combined). Supports ``+``, ``-``, scalar ``*``
    and ``/``, and ``*`` between operators (concatenating the ladder strings); no
    simplification is done, so compare with :meth:`isclose` or via
    :meth:`get_majorana_operator`. A NaN or infinite coefficient, scalar factor or divisor
    raises ``ValueError``.

    >>> hop = FermiOperator.from_dict({((0, "+"), (1, "-")): 1.0, ((1, "+"), (0, "-")): 1.0}, 2)
    >>> hop.get_majorana_operator().terms
    {(0, 2): 0j, (0, 3): 0.5j, (1, 2): -0.5j, (1, 3): 0j}
    """

    __hash__ = None  # type: ignore[assignment]  # a mutable value object is not hashable
    _size_unit = "modes"

    def __init__(
        self,
        terms: Iterable[FermiString | Sequence[tuple[int, str]]],
        coefficients: Iterable[complex],
        num_modes: int,
    ) -> None:
        self.num_modes = check_system_size(num_modes, argument_name="num_modes")
        self.terms = [FermiString(t) for t in terms]
        self.coefficients = list(coefficients)
        for position, coefficient in enumerate(self.coefficients):
            check_finite(
                coefficient, f"coefficients[{position}]", fix="give every term a finite coefficient"
            )
        for term in self.terms:
            for index, _ in term.expression:
                if index >= self.num_modes:
                    raise ValueError(
                        f"Fermi term index out of bounds: {index} >= num_modes={self.num_modes} "
                        f"in {term!r}. Increase num_modes or fix the term."
                    )

    @classmethod
    def from_dict(
        cls,
        terms_dict: Mapping[Any, complex],
        num_modes: int,  # keys: (mode, "+"/"-") pairs
    ) -> FermiOperator:
        """Build from ``{expression: coefficient}``, e.g. ``{((0, "+"), (0, "-")): 1.0}``."""
        return cls(list(terms_dict.keys()), list(terms_dict.values()), num_modes)

    def __len__(self) -> int:
        return len(self.terms)

    def __repr__(self) -> str:
        head = f"FermiOperator({len(self)} terms, {self.num_modes} modes"
        if 0 < len(self) <= _REPR_MAX_TERMS:
            head += ": " + ", ".join(
                f"{c}*{t!r}" for t, c in zip(self.terms, self.coefficients, strict=False)
            )
        return head + ")"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FermiOperator):
            return NotImplemented
        return (
            self.num_modes == other.num_modes
            and self.terms == other.terms
            and self.coefficients == other.coefficients
        )

    def _canonical_map(self) -> dict:
        # A later duplicate canonical key overwrites (does not add), as the API states.
        out = {}
        for term, c in zip(self.terms, self.coefficients, strict=False):
            key, sign = term._canonical()
            out[key] = c * sign
        return out

    def isclose(self, other: FermiOperator, rtol: float = 1e-05, atol: float = 1e-8) -> bool:
        """Compare canonically reordered terms: ``np.isclose(l - r, 0)`` over the union.

        Reordering only tracks the anticommutation sign, so ``c0^+ c1^-`` with 1.0 is
        close to ``c1^- c0^+`` with -1.0; for exact operator equality compare
        ``get_majorana_operator()`` results instead.
        """
        if not isinstance(other, FermiOperator):
            raise TypeError(
                f"Cannot compare FermiOperator with {type(other).__name__}; "
                f"build a FermiOperator from it first."
            )
        if self.num_modes != other.num_modes:
            return False
        mine, theirs = self._canonical_map(), other._canonical_map()
        keys = mine.keys() | theirs.keys()
        diff = np.array([mine.get(k, 0) - theirs.get(k, 0) for k in keys], dtype=complex)
        return bool(np.all(np.isclose(diff, 0, rtol=rtol, atol=atol)))

    def get_majorana_operator(self) -> MajoranaOperator:
        """Expand every ladder product into bare Majorana products (zeros kept).

        >>> FermiOperator([[(0, "+"), (0, "-")]], [1.0], 1).get_majorana_operator().terms
        {(): (0.5+0j), (0, 1): 0.5j}
        """
        keys, coeffs = [], []
        for term, c in zip(self.terms, self.coefficients, strict=False):
            factors = [
                [(2 * i + offset, weight) for offset, weight in _LADDER_EXPANSION[op]]
                for i, op in term._normalised()
            ]
            for choice in itertools.product(*factors):
                keys.append(tuple(index for index, _ in choice))
                weight = c
                for _, w in choice:
                    weight = weight * w
                coeffs.append(weight)
        return MajoranaOperator._from_terms(keys, coeffs, self.num_modes)

    # ---- arithmetic: the primitives of OperatorArithmetic ---------------------------------

    def _pairs(self) -> list[tuple[FermiString, complex]]:
        return list(zip(self.terms, self.coefficients, strict=False))

    def _from_pairs(self, pairs: list[tuple[FermiString, complex]]) -> FermiOperator:
        return FermiOperator([t for t, _ in pairs], [c for _, c in pairs], self.num_modes)

    def _combine(self, other: FermiOperator, sign: int) -> FermiOperator:
        return self._from_pairs(self._pairs() + [(t, sign * c) for t, c in other._pairs()])

    def _scaled(self, factor: complex) -> FermiOperator:
        return self._from_pairs([(t, factor * c) for t, c in self._pairs()])

    def _product(self, other: FermiOperator) -> FermiOperator:
        # Ladder strings concatenate; nothing is normal-ordered or simplified.
        return self._from_pairs(
            [
                (FermiString(ta.expression + tb.expression), ca * cb)
                for (ta, ca), (tb, cb) in itertools.product(self._pairs(), other._pairs())
            ]
        )
