"""Clifford gates: fixed gates that map every Pauli string (or Majorana monomial) to one other.

A quarter turn ``exp(+i π/4 M)`` of a Hermitian monomial ``M`` (a Pauli string, or a Majorana
product in its Hermitian form ``i**C(w, 2) m_S``) sends a term ``P`` that anticommutes with
``M`` to ``±i P M``, exactly, and leaves every other term alone: no cos branch, no new term.
Every Clifford gate is a product of such quarter turns, so one form covers them all:

* ``CliffordGate(generator, quarter_turns=1)`` is ``exp(+i k π/4 H)`` for a generator ``H`` of
  pairwise commuting terms whose coefficients ``c`` make each ``k c`` an integer (the term's
  quarter turns; ``k c = 2`` is the Pauli gate ``M`` itself, up to a global phase);
* the named constructors (``CliffordGate.h``, ``cx``, ``swap``, ``braid``, …) are products of
  those, applied in order.

Global phases are dropped: they cancel in every expectation value. A Clifford gate has no
parameter; circuits mix it freely with :class:`~monoprop.circuit.ExpGate` rotations, and only
rotations take slots in the parameter vector.

>>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
>>> circuit = Circuit([CliffordGate.h(0, 1), ExpGate(PauliOperator({"Z": 1.0}, 1))], 1,
...                   parameters=[0.2])
>>> prop = PauliPropagator.from_circuit(circuit, PauliOperator({"X": 1.0}, 1), cutoff=1)
>>> round(prop.expectation_value(), 12)    # <+| e^{-0.2i Z} X e^{0.2i Z} |+> = cos(0.4)
0.921060994003
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from .encoding import HERMITIAN_ATOL, hermitian_phase, pauli_slots
from .majorana import Majorana, MajoranaOperator
from .pauli import Pauli, PauliOperator
from .validation import check_finite, check_int, check_system_size

__all__ = ["CliffordGate"]

GateFamily = Literal["pauli", "majorana"]

# Pauli terms of a named gate: (letters, qubits) -> coefficient.
_Terms = dict[tuple[str, tuple[int, ...]], float]

# How far k * c may sit from an integer and still count as a whole number of quarter turns.
QUARTER_TURN_ATOL = 1e-9


class CliffordGate:
    """A product of quarter turns ``exp(+i k π/4 M)`` of monomials, applied exactly.

    ``generator`` is a ``PauliOperator`` (family ``"pauli"``), a ``MajoranaOperator`` or an
    object with ``get_majorana_operator()`` (family ``"majorana"``) whose terms pairwise
    commute; ``quarter_turns`` (an int, default 1) multiplies it. Each term's coefficient times
    ``quarter_turns`` must be a whole number (Majorana terms: of their Hermitian form
    ``i**C(w, 2) m_S``), else ``ValueError``: such a gate is a rotation, write it as an
    ``ExpGate`` at a bound angle.

    ``factors`` lists ``(generator, quarter_turns)`` in application order: one for a gate made
    by the constructor, several for a named gate such as ``h``. ``family`` is ``"pauli"`` or
    ``"majorana"``, and ``system_size`` the number of qubits or modes the gate acts on.

    >>> gate = CliffordGate(PauliOperator({"XX": 1.0}, 2))      # exp(+i π/4 X0 X1)
    >>> gate.family, gate.system_size, len(gate.factors)
    ('pauli', 2, 1)
    >>> CliffordGate(PauliOperator({"Z": 0.3}, 1))
    Traceback (most recent call last):
    ...
    ValueError: CliffordGate term Pauli('Z', (0,)) turns by 0.3 quarter turns ...
    """

    __slots__ = ("_turns", "factors", "family", "system_size")
    __hash__ = None  # type: ignore[assignment]  # a mutable value object is not hashable

    def __init__(self, generator: Any, quarter_turns: int = 1) -> None:
        k = check_int(quarter_turns, "quarter_turns")
        family, operator = gate_operator(generator, "CliffordGate")
        if not operator.all_pairwise_commute():
            raise ValueError(
                "The provided generator must be composed of commuting terms. Got "
                f"{operator!r}; write one CliffordGate per commuting group and join them with "
                "CliffordGate.sequence."
            )
        self.family: GateFamily = family
        self.system_size = _width(operator)
        self.factors: tuple[tuple[PauliOperator | MajoranaOperator, int], ...] = ((operator, k),)
        self._turns = _engine_turns(operator, k)

    @classmethod
    def sequence(cls, gates: Iterable[CliffordGate]) -> CliffordGate:
        """One gate applying ``gates`` in order (the first acts first on the state).

        >>> s = CliffordGate(PauliOperator({"Z": -1.0}, 1))
        >>> len(CliffordGate.sequence([s, s]).factors)
        2
        """
        gates = list(gates)
        if not gates:
            raise ValueError("CliffordGate.sequence needs at least one gate.")
        for pos, gate in enumerate(gates):
            if not isinstance(gate, CliffordGate):
                raise TypeError(
                    f"CliffordGate.sequence takes CliffordGate objects; got "
                    f"{type(gate).__name__} at position {pos}."
                )
        first = gates[0]
        for pos, gate in enumerate(gates):
            if (gate.family, gate.system_size) != (first.family, first.system_size):
                raise ValueError(
                    f"CliffordGate.sequence: gate {pos} is {gate.family} on {gate.system_size} "
                    f"but gate 0 is {first.family} on {first.system_size}; join gates of one "
                    "family and width."
                )
        joined = object.__new__(cls)
        joined.family = first.family
        joined.system_size = first.system_size
        joined.factors = tuple(f for g in gates for f in g.factors)
        joined._turns = tuple(t for g in gates for t in g._turns)
        return joined

    def engine_layers(self) -> tuple[tuple[tuple[int, ...], int], ...]:
        """The gate as the core applies it: ``(slots, q)`` per quarter turn
        ``exp(+i q π/4 M_slots)`` of a Hermitian monomial, ``q`` in 1..3, in order; terms that
        turn by a multiple of four (the identity) are left out.

        >>> CliffordGate.cx(0, 1, 2).engine_layers()
        (((0, 1), 3), ((2,), 3), ((0, 1, 2), 1))
        """
        return self._turns

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CliffordGate):
            return NotImplemented
        return (
            self.family == other.family
            and self.system_size == other.system_size
            and self.factors == other.factors
        )

    def __repr__(self) -> str:
        inner = ", ".join(f"({op!r}, {k})" for op, k in self.factors)
        return f"CliffordGate(factors=[{inner}])"

    # -- named qubit gates (Qiskit's conventions; qubit indices as monoprop counts them) ----

    @classmethod
    def _pauli(cls, num_qubits: int, *factors: tuple[_Terms, int]) -> CliffordGate:
        n = check_system_size(num_qubits, argument_name="num_qubits")
        gates = []
        for terms, k in factors:
            for _, qubits in terms:
                for q in qubits:
                    _index(q, "qubit", n - 1)
            operator = PauliOperator({Pauli(s, q): c for (s, q), c in terms.items()}, n)
            gates.append(cls(operator, k))
        return cls.sequence(gates)

    @classmethod
    def x(cls, qubit: int, num_qubits: int) -> CliffordGate:
        """Pauli X (``exp(+i π/2 X)``)."""
        return cls._pauli(num_qubits, ({("X", (qubit,)): 1.0}, 2))

    @classmethod
    def y(cls, qubit: int, num_qubits: int) -> CliffordGate:
        """Pauli Y."""
        return cls._pauli(num_qubits, ({("Y", (qubit,)): 1.0}, 2))

    @classmethod
    def z(cls, qubit: int, num_qubits: int) -> CliffordGate:
        """Pauli Z."""
        return cls._pauli(num_qubits, ({("Z", (qubit,)): 1.0}, 2))

    @classmethod
    def s(cls, qubit: int, num_qubits: int) -> CliffordGate:
        """S = diag(1, i) = ``exp(-i π/4 Z)`` up to phase."""
        return cls._pauli(num_qubits, ({("Z", (qubit,)): -1.0}, 1))

    @classmethod
    def sdg(cls, qubit: int, num_qubits: int) -> CliffordGate:
        """S† = ``exp(+i π/4 Z)`` up to phase."""
        return cls._pauli(num_qubits, ({("Z", (qubit,)): 1.0}, 1))

    @classmethod
    def sx(cls, qubit: int, num_qubits: int) -> CliffordGate:
        """√X = ``exp(-i π/4 X)`` up to phase."""
        return cls._pauli(num_qubits, ({("X", (qubit,)): -1.0}, 1))

    @classmethod
    def sxdg(cls, qubit: int, num_qubits: int) -> CliffordGate:
        """√X† = ``exp(+i π/4 X)`` up to phase."""
        return cls._pauli(num_qubits, ({("X", (qubit,)): 1.0}, 1))

    @classmethod
    def h(cls, qubit: int, num_qubits: int) -> CliffordGate:
        """Hadamard: ``H = Z exp(+i π/4 Y)``, the quarter turn of Y first."""
        return cls._pauli(num_qubits, ({("Y", (qubit,)): 1.0}, 1), ({("Z", (qubit,)): 1.0}, 2))

    @classmethod
    def cx(cls, control: int, target: int, num_qubits: int) -> CliffordGate:
        """CNOT = ``exp(+i π/4 (1 - Z_c)(1 - X_t))`` up to phase."""
        _distinct(control, target)
        return cls._pauli(
            num_qubits,
            ({("Z", (control,)): -1.0, ("X", (target,)): -1.0, ("ZX", (control, target)): 1.0}, 1),
        )

    @classmethod
    def cy(cls, control: int, target: int, num_qubits: int) -> CliffordGate:
        """Controlled Y = ``exp(+i π/4 (1 - Z_c)(1 - Y_t))`` up to phase."""
        _distinct(control, target)
        return cls._pauli(
            num_qubits,
            ({("Z", (control,)): -1.0, ("Y", (target,)): -1.0, ("ZY", (control, target)): 1.0}, 1),
        )

    @classmethod
    def cz(cls, a: int, b: int, num_qubits: int) -> CliffordGate:
        """Controlled Z = ``exp(+i π/4 (1 - Z_a)(1 - Z_b))`` up to phase."""
        _distinct(a, b)
        return cls._pauli(
            num_qubits, ({("Z", (a,)): -1.0, ("Z", (b,)): -1.0, ("ZZ", (a, b)): 1.0}, 1)
        )

    @classmethod
    def swap(cls, a: int, b: int, num_qubits: int) -> CliffordGate:
        """SWAP = ``exp(+i π/4 (XX + YY + ZZ))`` up to phase."""
        _distinct(a, b)
        return cls._pauli(
            num_qubits, ({("XX", (a, b)): 1.0, ("YY", (a, b)): 1.0, ("ZZ", (a, b)): 1.0}, 1)
        )

    @classmethod
    def iswap(cls, a: int, b: int, num_qubits: int) -> CliffordGate:
        """iSWAP = ``exp(+i π/4 (XX + YY))``."""
        _distinct(a, b)
        return cls._pauli(num_qubits, ({("XX", (a, b)): 1.0, ("YY", (a, b)): 1.0}, 1))

    @classmethod
    def ecr(cls, a: int, b: int, num_qubits: int) -> CliffordGate:
        """Echoed cross-resonance, Qiskit's ``ecr(a, b)`` = ``X_a exp(-i π/4 Z_a X_b)``."""
        _distinct(a, b)
        return cls._pauli(num_qubits, ({("ZX", (a, b)): -1.0}, 1), ({("X", (a,)): 1.0}, 2))

    # -- named Majorana gates ---------------------------------------------------------------

    @classmethod
    def braid(cls, i: int, j: int, num_modes: int) -> CliffordGate:
        """The braid ``exp(+π/4 m_i m_j)``: ``m_i -> m_j`` and ``m_j -> -m_i`` (``i != j``).

        >>> CliffordGate.braid(0, 1, 1).engine_layers()
        (((0, 1), 3),)
        """
        n = check_system_size(num_modes, argument_name="num_modes")
        for name, index in (("i", i), ("j", j)):
            _index(index, name, 2 * n - 1)
        _distinct(i, j)
        canonical, sign = Majorana.from_unsorted(int(i), int(j))
        # exp(+π/4 m_i m_j) = exp(+i π/4 (-i m_i m_j))
        return cls(MajoranaOperator({tuple(canonical.indices): -1j * sign}, n))

    @classmethod
    def fswap(cls, p: int, q: int, num_modes: int) -> CliffordGate:
        """The fermionic swap of modes ``p`` and ``q``: ``a_p <-> a_q``, so ``m_{2p} <-> m_{2q}``
        and ``m_{2p+1} <-> m_{2q+1}``: two braids, then the parity ``-i m_{2q} m_{2q+1}`` of
        mode ``q`` to restore the signs the braids give.
        """
        n = check_system_size(num_modes, argument_name="num_modes")
        for name, mode in (("p", p), ("q", q)):
            _index(mode, name, n - 1)
        _distinct(p, q)
        parity = cls(MajoranaOperator({(2 * q, 2 * q + 1): -1j}, n), 2)
        return cls.sequence(
            [cls.braid(2 * p, 2 * q, n), cls.braid(2 * p + 1, 2 * q + 1, n), parity]
        )


def _index(value: Any, name: str, maximum: int) -> int:
    return check_int(
        value,
        name,
        minimum=0,
        maximum=maximum,
        range_message="{name}={value} is out of range 0..{maximum}; pass an index of the system.",
    )


def _distinct(a: int, b: int) -> None:
    if int(a) == int(b):
        raise ValueError(f"a two-qubit (two-index) gate needs two different indices; got {a} twice")


def _width(operator: PauliOperator | MajoranaOperator) -> int:
    return operator.num_qubits if isinstance(operator, PauliOperator) else operator.num_modes


def gate_operator(generator: Any, gate: str) -> tuple[GateFamily, PauliOperator | MajoranaOperator]:
    """The family and operator of a gate's generator: only whole operators are accepted, never
    bare terms; anything with ``get_majorana_operator()`` (a ``FermiOperator``) is converted."""
    # PauliOperator also has get_majorana_operator(), so it must be recognised first.
    if isinstance(generator, PauliOperator):
        return "pauli", generator
    if isinstance(generator, MajoranaOperator):
        return "majorana", generator
    convert = getattr(generator, "get_majorana_operator", None)
    if callable(convert):
        converted = convert()
        if isinstance(converted, MajoranaOperator):
            return "majorana", converted
    raise TypeError(
        f"{gate} generator must be an operator (PauliOperator, MajoranaOperator, or an object "
        "with get_majorana_operator() such as FermiOperator), not a bare term or other object; "
        f"got {type(generator).__name__}: {generator!r}. Wrap a single term in an operator, "
        "e.g. PauliOperator({Pauli('X', 0): 1.0}, num_qubits)."
    )


def _engine_turns(
    operator: PauliOperator | MajoranaOperator, k: int
) -> tuple[tuple[tuple[int, ...], int], ...]:
    """``(slots, q mod 4)`` per term with ``q`` its quarter turns on the Hermitian monomial."""
    out = []
    for key, c in operator.terms.items():
        if isinstance(key, Pauli):
            slots = pauli_slots(key.string, key.qubits)
            h = complex(c)
        else:
            slots = tuple(key)
            h = complex(c) / hermitian_phase(len(slots))
        if abs(h.imag) > HERMITIAN_ATOL:
            raise ValueError(
                f"CliffordGate term {key!r} with coefficient {c} is not Hermitian; a Majorana "
                "product of w factors needs a real coefficient for w mod 4 in {0, 1} and an "
                "imaginary one for w mod 4 in {2, 3}."
            )
        turns = check_finite(h.real * k, "quarter turns")
        whole = round(turns)
        if abs(turns - whole) > QUARTER_TURN_ATOL:
            raise ValueError(
                f"CliffordGate term {key!r} turns by {turns:g} quarter turns (coefficient "
                f"{h.real:g} times quarter_turns={k}); a Clifford gate needs a whole number. "
                "Write a rotation as ExpGate at a bound angle instead."
            )
        if whole % 4 and slots:
            out.append((slots, whole % 4))
    return tuple(out)
