"""Pauli strings and real-weighted sums of them (the qubit front-end operators).

Convention: in ``Pauli("XYZ")`` character k acts on qubit k (qubit 0 first), the
reverse of Qiskit's label order. A ``PauliOperator`` is Hermitian by construction:
its coefficients are real Python floats.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from monoprop.encoding import i_power, pauli_slots
from monoprop.majorana import MajoranaOperator
from monoprop.operator_arithmetic import OperatorArithmeticWithMatmul
from monoprop.validation import check_finite, check_system_size

__all__ = ["Pauli", "PauliOperator"]

_LETTERS = frozenset("IXYZ")
_REPR_MAX_TERMS = 8
_FIX = "give every term a finite coefficient"

# Single-qubit products a*b = i**k * c for a != b (both non-identity).
_LETTER_PRODUCT = {
    ("X", "Y"): ("Z", 1),
    ("Y", "Z"): ("X", 1),
    ("Z", "X"): ("Y", 1),
    ("Y", "X"): ("Z", 3),
    ("Z", "Y"): ("X", 3),
    ("X", "Z"): ("Y", 3),
}


class Pauli:
    """A Pauli string: ``string[k]`` acts on ``qubits[k]``.

    Canonical form drops identities and sorts by qubit, so equal operators compare
    equal however they were written.

    >>> Pauli("IX")
    Pauli('X', (1,))
    >>> Pauli("XY", (1, 0)) == Pauli("YX")
    True
    """

    __slots__ = ("qubits", "string")

    def __init__(
        self,
        string: str,
        qubits: int | Sequence[int] | None = None,
        *,
        skip_validation: bool = False,
    ) -> None:
        if qubits is None:
            qubit_tuple = tuple(range(len(string)))
        elif isinstance(qubits, numbers.Integral):
            qubit_tuple = (int(qubits),)
        else:
            qubit_tuple = tuple(int(q) for q in cast(Sequence[int], qubits))
        if not skip_validation:
            _validate_pauli(string, qubit_tuple)
        pairs = sorted(
            ((q, letter) for q, letter in zip(qubit_tuple, string, strict=False) if letter != "I"),
            key=lambda pair: pair[0],
        )
        self.string = "".join(letter for _, letter in pairs)
        self.qubits = tuple(q for q, _ in pairs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Pauli):
            return NotImplemented
        return (self.string, self.qubits) == (other.string, other.qubits)

    def __hash__(self) -> int:
        return hash((self.string, self.qubits))

    def __repr__(self) -> str:
        return f"Pauli({self.string!r}, {self.qubits!r})"


def _validate_pauli(string: str, qubits: tuple[int, ...]) -> None:
    bad = sorted(set(string) - _LETTERS)
    if bad:
        raise ValueError(
            f"Invalid characters {bad} in Pauli string {string!r}; "
            f"use only the uppercase letters I, X, Y, Z."
        )
    if len(string) != len(qubits):
        raise ValueError(
            f"Pauli string {string!r} and qubits {qubits} must have the same length "
            f"({len(string)} != {len(qubits)}); give one qubit per letter."
        )
    negative = [q for q in qubits if q < 0]
    if negative:
        raise ValueError(
            f"Qubit indices must be non-negative; got {negative} in {qubits}. "
            f"Qubits are numbered from 0."
        )
    if len(set(qubits)) != len(qubits):
        duplicates = sorted({q for q in qubits if qubits.count(q) > 1})
        raise ValueError(
            f"Duplicate qubit indices {duplicates} in {qubits}; multiply the letters "
            f"on each qubit together first so each qubit appears once."
        )


def _as_pauli(key: object, skip_validation: bool) -> Pauli:
    if isinstance(key, Pauli):
        return key
    if isinstance(key, str):
        return Pauli(key, skip_validation=skip_validation)
    raise TypeError(
        f"PauliOperator keys must be Pauli objects or strings; got {key!r} "
        f"({type(key).__name__}). Write e.g. Pauli('X', 3) or 'IIIX'."
    )


def _real_coefficient(value: Any, pauli: Pauli, skip_validation: bool) -> float:
    if skip_validation:
        return float(np.real(value))
    real = np.real_if_close(value)
    if np.iscomplexobj(real):
        raise ValueError(
            f"Operator has complex terms: {pauli!r} has coefficient {value}. "
            f"PauliOperator coefficients must be real (a Hermitian operator); pass "
            f"skip_validation=True to keep only the real part."
        )
    return float(real)


def _multiply_paulis(a: Pauli, b: Pauli) -> tuple[Pauli, int]:
    """Return ``(P, k)`` with ``a * b = i**k * P``."""
    letters = dict(zip(a.qubits, a.string, strict=True))
    k = 0
    for q, letter in zip(b.qubits, b.string, strict=True):
        mine = letters.get(q)
        if mine is None:
            letters[q] = letter
        elif mine == letter:
            letters[q] = "I"  # dropped by canonicalisation
        else:
            letters[q], dk = _LETTER_PRODUCT[(mine, letter)]
            k += dk
    qubits = sorted(letters)
    return Pauli("".join(letters[q] for q in qubits), qubits, skip_validation=True), k


def _jordan_wigner(pauli: Pauli) -> tuple[tuple[int, ...], int]:
    """Return ``(S, k)`` with ``pauli = i**k * m_S`` under Jordan-Wigner.

    Factors are multiplied in ascending qubit order, each already a sorted monomial:
    ``X_q = (-i)**q m_0 m_1 ... m_{2q-1} m_{2q}`` (``Y_q`` ends in ``m_{2q+1}``) and
    ``Z_q = -i m_{2q} m_{2q+1}``. Every index held so far is ``< 2q``, so moving the
    Z-string prefix of ``X_q``/``Y_q`` into place costs ``(-1)**(sum of held indices)``
    and the prefix toggles (complements) the held set; ``Z_q`` needs no reordering.
    """
    held = 0  # bitmask of held Majorana indices
    index_sum_parity = 0
    k = 0
    for q, letter in zip(pauli.qubits, pauli.string, strict=True):
        if letter == "Z":
            k += 3
            held ^= 0b11 << (2 * q)
            index_sum_parity ^= 1  # 2q + (2q + 1) is odd
        else:
            y = letter == "Y"
            k += 3 * q + 2 * index_sum_parity
            held ^= (1 << (2 * q)) - 1
            held ^= 1 << (2 * q + y)
            # sum(0..2q-1) - old_sum + (2q + y) has the parity of q + old_sum + y.
            index_sum_parity = (q + index_sum_parity + y) % 2
    indices = tuple(i for i, bit in enumerate(reversed(bin(held)[2:])) if bit == "1")
    return indices, k


class PauliOperator(OperatorArithmeticWithMatmul):
    """A real-weighted sum of Pauli strings on ``num_qubits`` qubits.

    ``terms`` maps canonical :class:`Pauli` keys to Python floats (insertion order;
    exact zeros kept). String keys are full-width labels (``"XZ"`` = X on qubit 0).

    Arithmetic: ``+``, ``-``, scalar ``*`` and ``/`` and the operator product ``*`` /
    ``@``. A product of non-commuting terms is not Hermitian; when its summed
    coefficients are complex it raises the usual ``"Operator has complex terms"``
    ``ValueError`` (``P * P`` and products of commuting operators are fine). A NaN or
    infinite coefficient (even with ``skip_validation``), scalar factor or divisor raises
    ``ValueError``.

    >>> op = PauliOperator({"XZ": 1, "IY": 0.5}, 2)
    >>> op
    PauliOperator(2 terms, 2 qubits: 1.0*Pauli('XZ', (0, 1)), 0.5*Pauli('Y', (1,)))
    >>> (op * op).terms
    {Pauli('', ()): 1.25, Pauli('XX', (0, 1)): 0.0}
    """

    __hash__ = None  # type: ignore[assignment]  # a mutable value object is not hashable
    _size_unit = "qubits"

    def __init__(
        self,
        terms: Mapping[Any, complex],  # keys: Pauli or str
        num_qubits: int,
        *,
        skip_validation: bool = False,
    ) -> None:
        if not isinstance(terms, Mapping):
            raise TypeError(
                f"PauliOperator terms must be a mapping {{Pauli or str: coefficient}}; got "
                f"{type(terms).__name__}. Use PauliOperator._from_terms for parallel lists."
            )
        self._init(terms.items(), num_qubits, skip_validation)

    def _init(
        self, pairs: Iterable[tuple[object, object]], num_qubits: int | None, skip_validation: bool
    ) -> None:
        # Validated even with skip_validation: a wrong width breaks every consumer.
        self.num_qubits = check_system_size(num_qubits, argument_name="num_qubits")
        terms: dict[Pauli, float] = {}
        for key, value in pairs:
            pauli = _as_pauli(key, skip_validation)
            coefficient = _real_coefficient(value, pauli, skip_validation)
            # Checked even with skip_validation: NaN or inf poisons every result.
            check_finite(coefficient, f"terms[{key!r}]", fix=_FIX)
            if not skip_validation and pauli.qubits and pauli.qubits[-1] >= self.num_qubits:
                raise ValueError(
                    f"Pauli term {pauli!r} acts on a qubit index >= num_qubits="
                    f"{self.num_qubits}. Increase num_qubits or fix the term."
                )
            # Starting at 0.0 also normalises -0.0 to 0.0.
            terms[pauli] = terms.get(pauli, 0.0) + coefficient
        self.terms = terms

    @classmethod
    def _from_terms(
        cls,
        strings: Sequence[Pauli | str],
        coefficients: Sequence[complex],
        num_qubits: int | None = None,
        *,
        skip_validation: bool = False,
    ) -> PauliOperator:
        """Build from parallel lists; keys that canonicalise alike are summed."""
        op = cls.__new__(cls)
        op._init(zip(strings, coefficients, strict=True), num_qubits, skip_validation)
        return op

    def __len__(self) -> int:
        return len(self.terms)

    def __repr__(self) -> str:
        head = f"PauliOperator({len(self)} terms, {self.num_qubits} qubits"
        if 0 < len(self) <= _REPR_MAX_TERMS:
            head += ": " + ", ".join(f"{c}*{p!r}" for p, c in self.terms.items())
        return head + ")"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PauliOperator):
            return NotImplemented
        return self.num_qubits == other.num_qubits and self.terms == other.terms

    def isclose(self, other: PauliOperator, rtol: float = 1e-05, atol: float = 1e-8) -> bool:
        """Coefficient-wise ``numpy.isclose`` over the union of keys (missing = 0).

        Different ``num_qubits`` compare as not close.
        """
        if not isinstance(other, PauliOperator):
            raise TypeError(
                f"Cannot compare PauliOperator with {type(other).__name__}; "
                f"build a PauliOperator from it first."
            )
        if self.num_qubits != other.num_qubits:
            return False
        keys = self.terms.keys() | other.terms.keys()
        mine = np.array([self.terms.get(k, 0.0) for k in keys], dtype=float)
        theirs = np.array([other.terms.get(k, 0.0) for k in keys], dtype=float)
        return bool(np.all(np.isclose(mine, theirs, rtol=rtol, atol=atol)))

    def get_majorana_operator(self) -> MajoranaOperator:
        """Jordan-Wigner map to bare Majorana products (``num_modes = num_qubits``).

        ``m_{2j} = Z_0...Z_{j-1} X_j``, ``m_{2j+1} = Z_0...Z_{j-1} Y_j``; e.g.
        ``Z_0 -> -i m_0 m_1``.
        """
        keys, coeffs = [], []
        for pauli, c in self.terms.items():
            indices, k = _jordan_wigner(pauli)
            keys.append(indices)
            coeffs.append(c * i_power(k))
        return MajoranaOperator._from_terms(keys, coeffs, self.num_qubits)

    def get_local_operator(self) -> MajoranaOperator:
        """Per-qubit slot encoding (not Jordan-Wigner): ``X_q -> {2q}``, ``Y_q -> {2q+1}``,
        ``Z_q -> {2q, 2q+1}``; coefficients unchanged. A container for the engine."""
        keys = [pauli_slots(p.string, p.qubits) for p in self.terms]
        return MajoranaOperator._from_terms(keys, list(self.terms.values()), self.num_qubits)

    def all_pairwise_commute(self) -> bool:
        """True iff every pair of terms commutes (symplectic form vanishes mod 2)."""
        if len(self) < 2:
            return True
        width = 1 + max((p.qubits[-1] for p in self.terms if p.qubits), default=0)
        # float64 so the matmuls use BLAS; the counts (<= width) are exact integers.
        x = np.zeros((len(self), width))
        z = np.zeros((len(self), width))
        rows = np.repeat(np.arange(len(self)), [len(p.qubits) for p in self.terms])
        cols = np.fromiter(itertools.chain.from_iterable(p.qubits for p in self.terms), np.int64)
        letters = np.frombuffer("".join(p.string for p in self.terms).encode(), np.uint8)
        x[rows, cols] = letters != ord("Z")  # X and Y have an x bit
        z[rows, cols] = letters != ord("X")  # Y and Z have a z bit
        return not np.any((x @ z.T + z @ x.T).astype(np.int64) % 2)

    # ---- arithmetic: the primitives of OperatorArithmetic ---------------------------------

    def _combine(self, other: PauliOperator, sign: int) -> PauliOperator:
        keys = [*self.terms, *other.terms]
        coeffs = [*self.terms.values(), *(sign * c for c in other.terms.values())]
        return PauliOperator._from_terms(keys, coeffs, self.num_qubits)

    def _scaled(self, factor: complex) -> PauliOperator:
        coeffs = [factor * c for c in self.terms.values()]
        return PauliOperator._from_terms(list(self.terms), coeffs, self.num_qubits)

    def _product(self, other: PauliOperator) -> PauliOperator:
        # Sum complex contributions first: imaginary parts of e.g. XY + YX cancel exactly.
        summed: dict[Pauli, complex] = {}
        for (pa, ca), (pb, cb) in itertools.product(self.terms.items(), other.terms.items()):
            pauli, k = _multiply_paulis(pa, pb)
            summed[pauli] = summed.get(pauli, 0j) + ca * cb * i_power(k)
        return PauliOperator(summed, self.num_qubits)
