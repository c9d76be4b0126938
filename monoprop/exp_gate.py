"""The rotation gate ``ExpGate``, and how rotations flatten into the engine's layers.

A gate is ``ExpGate(H, index)``: the unitary ``U = exp(+i θ H)`` for a Hermitian generator
``H`` whose terms pairwise commute, at an angle ``θ`` taken from the circuit's parameter vector
(slot ``index``; :class:`~monoprop.circuit.Circuit` lists gates and holds the vector).

The engine consumes circuits as flat per-layer lists (``expand_monomials``): one layer per
generator term, each a slot set (:mod:`monoprop.encoding`) with a real *structural*
coefficient ``g``. With ``M_S = i**C(w, 2) m_S`` the Hermitian form of the bare product ``m_S``
of ``w = |S|`` Majoranas, a Majorana layer ``(S, g)`` is the generator term ``c m_S = -g M_S``,
i.e. the gate ``exp(-i θ g M_S)``::

    g = -c / i**C(w, 2)        equivalently        c = -g * i**C(w, 2)

e.g. ``c = 1j`` on ``(4, 5)`` is ``g = -1``; ``c = 0.7`` on ``(0, 1, 2, 3)`` is ``g = 0.7``.
``g`` is real exactly when the term is Hermitian. Pauli generators use their real Pauli
coefficients unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .clifford import GateFamily, gate_operator
from .encoding import HERMITIAN_ATOL, hermitian_phase, pauli_slots
from .majorana import MajoranaOperator
from .pauli import PauliOperator
from .validation import check_finite, check_finite_array, check_system_size

__all__ = ["ExpGate", "expand_monomials", "is_identity_gate"]


class ExpGate:
    """The gate ``exp(+i θ H)`` for a generator ``H`` made of pairwise commuting terms.

    ``generator`` is a ``PauliOperator`` (family ``"pauli"``), a ``MajoranaOperator`` (family
    ``"majorana"``) or any object with ``get_majorana_operator()`` such as a ``FermiOperator``
    (converted, family ``"majorana"``). Terms with ``|coefficient| <= atol`` are dropped; the
    stored ``generator`` is a new operator. ``index`` is the gate's slot in the circuit's
    parameter vector (``None`` = one slot per gate, in order). A NaN or infinite ``atol`` or
    generator coefficient raises ``ValueError`` (a NaN term would otherwise be dropped).

    Attributes: ``family`` (``"pauli"`` or ``"majorana"``), ``generator`` (the stored
    operator ``H``, without the dropped terms), ``index`` (the parameter slot, an int, or
    None) and ``system_size`` (qubits or modes of the generator).

    >>> from monoprop.pauli import PauliOperator
    >>> gate = ExpGate(PauliOperator({"XX": 0.5, "ZZ": 1e-12}, 2), index=0)
    >>> gate.family, gate.system_size, len(gate.generator)
    ('pauli', 2, 1)
    """

    __slots__ = ("_atol", "_structural", "family", "generator", "index")
    __hash__ = None  # type: ignore[assignment]  # a mutable value object is not hashable

    def __init__(
        self,
        generator: Any,
        index: int | None = None,
        *,
        atol: float = 1e-8,
        _structural: bool = False,
    ) -> None:
        family, operator = gate_operator(generator, "ExpGate")
        self._atol = check_finite(float(atol), "atol")
        # The operator's constructor refused non-finite coefficients, but its terms may have been
        # edited since.
        check_finite_array(
            list(operator.terms.values()),
            "generator terms",
            fix="give every term a finite coefficient",
            labels=list(operator.terms),
        )
        self._structural = bool(_structural)
        self.family: GateFamily = family
        self.generator = _drop_small_terms(operator, self._atol)
        if not self.generator.all_pairwise_commute():
            raise ValueError(
                "The provided generator must be composed of commuting terms. "
                f"Got {self.generator!r}; split it into one ExpGate per commuting group."
            )
        self.index: int | None = None if index is None else int(index)

    @property
    def system_size(self) -> int:
        """Number of qubits (Pauli) or modes (Majorana) the generator lives on."""
        if self.family == "pauli":
            return self.generator.num_qubits
        return self.generator.num_modes

    @classmethod
    def _with_index(cls, gate: ExpGate, index: int | None) -> ExpGate:
        """Clone ``gate`` with a new ``index``, keeping its tolerance and structural flag."""
        return cls(gate.generator, index, atol=gate._atol, _structural=gate._structural)

    @classmethod
    def _structural_gate(cls, generator: MajoranaOperator, index: int | None) -> ExpGate:
        """A gate whose Majorana coefficients are already structural ``g`` values, taken as
        they are (see the module docstring), not converted from Hermitian coefficients."""
        return cls(generator, index, _structural=True)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ExpGate):
            return NotImplemented
        return (
            self.family == other.family
            and self.index == other.index
            and self._structural == other._structural
            and self.generator == other.generator
        )

    def __repr__(self) -> str:
        return f"ExpGate({self.generator!r}, index={self.index!r})"


def _drop_small_terms(operator: Any, atol: float) -> Any:
    """A new operator of the same type without the terms whose ``|coefficient| <= atol``."""
    kept = {key: c for key, c in operator.terms.items() if abs(c) > atol}
    # The source operator was validated by its own constructor; do not re-run that.
    if isinstance(operator, PauliOperator):
        return PauliOperator(kept, operator.num_qubits, skip_validation=True)
    return MajoranaOperator(kept, operator.num_modes, skip_validation=True)


def is_identity_gate(gate: ExpGate) -> bool:
    """True for ``exp(0) = 1``: no terms, or only exactly-zero coefficients."""
    return all(c == 0 for c in gate.generator.terms.values())


def expand_monomials(
    gates: Sequence[ExpGate], mapping: Sequence[int], num_qubits: int
) -> tuple[list[tuple[int, ...]], list[float], list[int], list[int]]:
    """Flatten gates into engine layers: ``(slot_keys, gen_coeffs, parameter_mapping,
    gate_indices)``, one layer per generator term in generator-term order.

    ``mapping[k]`` is gate ``k``'s parameter slot; ``num_qubits`` is the system size (qubits or
    modes). Each layer's key is its term's sorted slots (:mod:`monoprop.encoding`): a Majorana
    term's indices, or for a Pauli term ``X_q -> 2q``, ``Y_q -> 2q+1``, ``Z_q -> 2q, 2q+1``.
    Majorana layers carry the structural coefficient ``g = -c / i**C(w, 2)``, Pauli layers the
    Pauli coefficient. A gate without terms becomes one identity layer ``((), 0.0)``.

    >>> from monoprop.pauli import PauliOperator
    >>> expand_monomials([ExpGate(PauliOperator({"XZ": 0.5, "YY": -1}, 2))], [0], 2)
    ([(0, 2, 3), (1, 3)], [0.5, -1.0], [0, 0], [0, 0])
    """
    num_qubits = check_system_size(num_qubits, argument_name="num_qubits")
    mapping = [int(m) for m in mapping]
    if len(mapping) != len(gates):
        raise ValueError(
            f"parameter_mapping has {len(mapping)} entries but there are {len(gates)} gates."
        )
    slot_keys: list[tuple[int, ...]] = []
    coeffs: list[float] = []
    params: list[int] = []
    gate_indices: list[int] = []
    for pos, (gate, slot) in enumerate(zip(gates, mapping, strict=True)):
        layers = _gate_layers(gate, num_qubits) or [((), 0.0)]
        for key, g in layers:
            slot_keys.append(key)
            coeffs.append(g)
            params.append(slot)
            gate_indices.append(pos)
    return slot_keys, coeffs, params, gate_indices


def _gate_layers(gate: ExpGate, num_qubits: int) -> list[tuple[tuple[int, ...], float]]:
    if gate.family == "pauli":
        return [_pauli_layer(p, c, num_qubits) for p, c in gate.generator.terms.items()]
    return [
        _majorana_layer(key, c, gate._structural, num_qubits)
        for key, c in gate.generator.terms.items()
    ]


def _pauli_layer(pauli: Any, coeff: float, num_qubits: int) -> tuple[tuple[int, ...], float]:
    outside = [qubit for qubit in pauli.qubits if qubit >= num_qubits]
    if outside:
        raise ValueError(
            f"Gate term {pauli!r} acts on qubit {outside[0]} >= num_qubits={num_qubits}."
        )
    return pauli_slots(pauli.string, pauli.qubits), float(coeff)


def _majorana_layer(
    key: tuple[int, ...], coeff: complex, structural: bool, num_modes: int
) -> tuple[tuple[int, ...], float]:
    key = tuple(key)
    if key and max(key) >= 2 * num_modes:
        raise ValueError(f"Gate term {list(key)} acts on an index >= 2*num_modes={2 * num_modes}.")
    g = complex(coeff) if structural else -complex(coeff) / hermitian_phase(len(key))
    if abs(g.imag) > HERMITIAN_ATOL:
        if structural:
            raise ValueError(
                f"Structural gate term {list(key)} has coefficient {coeff}, which is not real, so "
                "the generator is not Hermitian; structural coefficients g must be real."
            )
        raise ValueError(
            f"Gate generator term {list(key)} with coefficient {coeff} is not Hermitian: a "
            "weight-w bare product needs a real coefficient for w mod 4 in {0, 1} and a purely "
            "imaginary one for w mod 4 in {2, 3}."
        )
    return key, float(g.real)
