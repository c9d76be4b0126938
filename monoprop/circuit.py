"""Gates and circuits: what a propagator applies to an operator.

A gate is ``ExpGate(H, index)``: the unitary ``U = exp(+i θ H)`` for a Hermitian generator
``H`` whose terms pairwise commute, at an angle ``θ`` taken from the circuit's parameter vector.
A ``Circuit`` lists gates in *application order* (first gate acts first on the state) together
with the system size, optional bound angles and an optional reference state.

Parameter sharing has exactly one mechanism: the gate's ``index`` (its slot in the parameter
vector). Gates that share an index share one angle.

The rotations (``ExpGate``) and how they flatten into the engine's layers, with the structural
coefficients ``g`` of Majorana layers, are in :mod:`monoprop.exp_gate`; a circuit's own layers,
Clifford gates and noise channels included, are :func:`circuit_layers`.

A circuit may also hold :class:`~monoprop.clifford.CliffordGate` objects: fixed gates applied
exactly, which take no parameter, and noise channels (:mod:`monoprop.noise`), whose rate is fixed
or read from the parameter slot their ``index`` names. ``resolved_mapping`` and a gate's
``index`` count the rotations (``ExpGate``) only; the parameter vector's slots are those of the
rotations and of the channels together.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

from ._channel import Channel, NoiseLayer
from .arguments import PARAMETER_FIX
from .clifford import CliffordGate, GateFamily
from .exp_gate import ExpGate, expand_monomials, is_identity_gate
from .majorana import Majorana, MajoranaOperator
from .validation import check_finite, check_finite_array, check_system_size

__all__ = [
    "CircuitFamily",
    "Circuit",
    "ExpGate",
    "Gate",
    "GateFamily",
    "circuit_layers",
    "expand_monomials",
    "validate_parameter_mapping",
]

CircuitFamily = Literal["pauli", "majorana", "empty"]


Gate = ExpGate | CliffordGate | Channel


class Circuit:
    """Gates in application order on ``system_size`` qubits or modes.

    ``gates`` is a tuple of ``ExpGate`` rotations and ``CliffordGate`` fixed gates (empty for a
    gateless circuit, whose ``family`` is ``"empty"``). ``parameters`` (empty = unbound) holds
    one finite angle per parameter slot (NaN or infinite raises ``ValueError``); slots belong
    to the rotations, in order, unless they set ``index``. ``initial_state`` lists the occupied
    qubits/modes of the reference product state (``None`` = leave it to the propagator). Under
    the default mapping (no rotation sets ``index``), identity rotations are dropped together
    with their angles.

    >>> from monoprop.pauli import PauliOperator
    >>> x0 = ExpGate(PauliOperator({"XI": 1.0}, 2))
    >>> zz = ExpGate(PauliOperator({"ZZ": 0.5}, 2))
    >>> c = Circuit([x0, zz], 2, parameters=[0.1, 0.2], initial_state=[1])
    >>> c.family, c.resolved_mapping, c.n_parameters, c.initial_state
    ('pauli', (0, 1), 2, (1,))
    """

    __hash__ = None  # type: ignore[assignment]  # a mutable value object is not hashable

    def __init__(
        self,
        gates: Iterable[Gate],
        system_size: int,
        parameters: Iterable[float] = (),
        initial_state: Iterable[int] | None = None,
    ) -> None:
        self.system_size: int = check_system_size(system_size, argument_name="system_size")
        gates = list(gates)
        _check_gates(gates, self.system_size)
        self.parameters: tuple[float, ...] = tuple(float(p) for p in parameters)
        check_finite_array(self.parameters, "parameters", fix=PARAMETER_FIX)
        self._state_given: bool = initial_state is not None
        self.initial_state: tuple[int, ...] = _check_initial_state(initial_state, self.system_size)
        self.gates: tuple[Gate, ...] = tuple(gates)
        # Dropping an identity rotation renumbers the slots after it, which a channel's index
        # would then miss: with channel slots every rotation stays.
        if all(g.index is None for g in self.rotations) and not self.channel_slots:
            self._drop_identity_gates()
        self._check_parameter_count()

    @property
    def rotations(self) -> tuple[ExpGate, ...]:
        """The ``ExpGate`` rotations, in order: the gates that take parameter slots."""
        return tuple(g for g in self.gates if isinstance(g, ExpGate))

    @property
    def channels(self) -> tuple[Channel, ...]:
        """The noise channels, in order."""
        return tuple(g for g in self.gates if isinstance(g, Channel))

    @property
    def channel_slots(self) -> tuple[int, ...]:
        """The parameter slots the channels read their rates from, in order (one per rate)."""
        return tuple(slot for c in self.channels for slot in c.slots)

    @property
    def n_gates(self) -> int:
        """Gates that take parameter slots: the rotations, then one per channel rate read from
        a slot. A per-gate ``parameter_mapping`` of a propagator has this many entries."""
        return len(self.rotations) + len(self.channel_slots)

    def _drop_identity_gates(self) -> None:
        """Remove ``exp(0)`` rotations (default mapping only), with their entries in parameters."""
        rotations = self.rotations
        dropped = {id(g) for g in rotations if is_identity_gate(g)}
        if not dropped:
            return
        if self.parameters:
            if len(self.parameters) != len(rotations):
                raise ValueError(
                    f"parameters has {len(self.parameters)} values but the circuit has "
                    f"{len(rotations)} gates. Under the default mapping each rotation as written "
                    "(identity gates included; they are dropped with their value) takes one."
                )
            self.parameters = tuple(
                p for p, g in zip(self.parameters, rotations, strict=True) if id(g) not in dropped
            )
        self.gates = tuple(g for g in self.gates if id(g) not in dropped)

    def _check_parameter_count(self) -> None:
        n = self.n_parameters  # also validates the gates' indices
        if self.parameters and len(self.parameters) != n:
            raise ValueError(
                f"parameters has {len(self.parameters)} values but the circuit has {n} "
                "parameters. Pass one value per parameter, or none to leave it unbound."
            )

    @property
    def resolved_mapping(self) -> tuple[int, ...]:
        """Per rotation (``ExpGate``, in order), its slot in the parameter vector.

        Identity ``(0, 1, …)`` when no rotation sets ``index``; the rotations' indices when all
        do (they must cover ``0..max`` without gaps).
        """
        indices = [g.index for g in self.rotations]
        unset = [i for i, index in enumerate(indices) if index is None]
        if len(unset) == len(indices):
            _check_contiguous(list(range(len(indices))), self.channel_slots)
            return tuple(range(len(indices)))
        if unset:
            raise ValueError(
                "Either every gate must set `index`, or none of them must (then each gate gets "
                f"its own parameter); gates at positions {unset} have index=None."
            )
        given = [i for i in indices if i is not None]  # all of them, as none is unset
        _check_contiguous(given, self.channel_slots)
        return tuple(given)

    @property
    def n_parameters(self) -> int:
        """Length of the parameter vector: one more than the largest slot a rotation or a
        channel reads (0 without any)."""
        slots = self.resolved_mapping + self.channel_slots
        return max(slots) + 1 if slots else 0

    @property
    def family(self) -> CircuitFamily:
        """``"pauli"``, ``"majorana"`` or ``"empty"`` (no gates)."""
        return self.gates[0].family if self.gates else "empty"

    def __add__(self, other: object) -> Circuit:
        """Concatenate: ``a + b`` applies ``a`` first; ``b``'s angles follow ``a``'s."""
        if not isinstance(other, Circuit):
            return NotImplemented
        families = {self.family, other.family} - {"empty"}
        if len(families) > 1:
            raise TypeError(
                f"Cannot concatenate circuits whose gate families differ: {self.family!r} + "
                f"{other.family!r}. Convert one of them first."
            )
        if self.system_size != other.system_size:
            raise ValueError(
                "Cannot concatenate circuits with different system_size: "
                f"{self.system_size} + {other.system_size}."
            )
        # Order and repeats do not change which modes are occupied.
        if (
            self._state_given
            and other._state_given
            and set(self.initial_state) != set(other.initial_state)
        ):
            raise ValueError(
                "Cannot concatenate circuits with different initial states: "
                f"{list(self.initial_state)} + {list(other.initial_state)}. Give the state on "
                "one of them only, or make them equal."
            )
        if (_is_unbound(self) and other.parameters) or (_is_unbound(other) and self.parameters):
            raise ValueError(
                "Cannot concatenate a bound circuit with an unbound one "
                f"({len(self.parameters)} + {len(other.parameters)} parameter values); "
                "bind both or neither."
            )
        gates = _indexed(self, 0) + _indexed(other, self.n_parameters)
        if self._state_given:
            state: tuple[int, ...] | None = self.initial_state
        elif other._state_given:
            state = other.initial_state
        else:
            state = None
        return Circuit(gates, self.system_size, self.parameters + other.parameters, state)

    @classmethod
    def from_dense_arrays(
        cls,
        majoranas: Sequence[Sequence[int]],
        gen_coeffs: Sequence[float],
        param_inds: Sequence[int],
        system_size: int,
        parameters: Iterable[float] = (),
        initial_state: Iterable[int] | None = None,
    ) -> Circuit:
        """Build a Majorana circuit from the "wire" format: parallel per-monomial arrays.

        ``gen_coeffs`` are real structural coefficients ``g``: monomial ``S`` with ``g`` is the
        generator term ``-g * i**C(|S|, 2) * m_S``; a NaN or infinite ``g`` raises
        ``ValueError``. Consecutive monomials with the same ``param_ind`` form one gate with that
        index; empty arrays give a gateless circuit (``gates == ()``, family ``"empty"``). The
        result always counts as having an explicit initial state (vacuum when omitted).

        >>> c = Circuit.from_dense_arrays(
        ...     [(0, 1), (2, 3), (0, 3)], [0.5, -0.5, 1.0], [0, 0, 1], 2, [1.0, 2.0], [0, 1])
        >>> [len(g.generator) for g in c], c.resolved_mapping, c.initial_state
        ([2, 1], (0, 1), (0, 1))
        """
        size = check_system_size(system_size, argument_name="system_size")
        lengths = (len(majoranas), len(gen_coeffs), len(param_inds))
        if len(set(lengths)) != 1:
            raise ValueError(
                "majoranas, gen_coeffs and param_inds must have the same length (one entry per "
                f"monomial); got {lengths[0]}, {lengths[1]} and {lengths[2]}."
            )
        groups: list[tuple[int, dict[tuple[int, ...], complex]]] = []
        for pos, (monomial, g, p) in enumerate(zip(majoranas, gen_coeffs, param_inds, strict=True)):
            key, coeff = _dense_term(pos, monomial, g, size)
            p = int(p)
            if not groups or groups[-1][0] != p:  # only *consecutive* repeats share a gate
                groups.append((p, {}))
            terms = groups[-1][1]
            terms[key] = terms.get(key, 0j) + coeff
        gates = [
            ExpGate._structural_gate(MajoranaOperator(terms, size, skip_validation=True), p)
            for p, terms in groups
        ]
        state = () if initial_state is None else initial_state
        return cls(gates, size, parameters, state)

    def __len__(self) -> int:
        return len(self.gates)

    def __iter__(self) -> Iterator[Gate]:
        return iter(self.gates)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Circuit):
            return NotImplemented
        return (
            self.system_size == other.system_size
            and self.parameters == other.parameters
            and self.initial_state == other.initial_state
            and self.gates == other.gates
        )

    def __repr__(self) -> str:
        return (
            f"Circuit(gates={list(self.gates)!r}, parameters={self.parameters!r}, "
            f"initial_state={self.initial_state!r}, system_size={self.system_size})"
        )


def _indexed(circuit: Circuit, offset: int) -> list[Gate]:
    """The circuit's gates with every rotation's slot made explicit and shifted by ``offset``."""
    slots = iter(circuit.resolved_mapping)
    out: list[Gate] = []
    for g in circuit.gates:
        if isinstance(g, ExpGate):
            out.append(ExpGate._with_index(g, next(slots) + offset))
        elif isinstance(g, Channel):
            out.append(g._shifted(offset))
        else:
            out.append(g)
    return out


def _check_contiguous(rotation_slots: Sequence[int], channel_slots: Sequence[int]) -> None:
    """The slots of rotations and channels together cover ``0..max`` without gaps."""
    slots = list(rotation_slots) + list(channel_slots)
    if slots and set(slots) != set(range(max(slots) + 1)):
        raise ValueError(
            f"Parameter slots must be contiguous 0..n-1 with no gaps or negatives; the rotations "
            f"take {list(rotation_slots)} and the noise channels {list(channel_slots)}. Renumber "
            "the gates' and channels' `index` values."
        )


def _is_unbound(circuit: Circuit) -> bool:
    return circuit.n_parameters > 0 and not circuit.parameters


def _check_gates(gates: list[Any], system_size: int) -> None:
    for pos, gate in enumerate(gates):
        if not isinstance(gate, (ExpGate, CliffordGate, Channel)):
            raise TypeError(
                f"Circuit gates must be ExpGate, CliffordGate or monoprop.noise channels; got "
                f"{type(gate).__name__} at position {pos}. Wrap the generator: ExpGate(operator)."
            )
    families = [g.family for g in gates]
    if "pauli" in families and "majorana" in families:
        raise TypeError(
            "A circuit cannot mix qubit and Majorana gates: gate "
            f"{families.index('pauli')} is 'pauli' and gate {families.index('majorana')} is "
            "'majorana'. Convert the Pauli generators with get_majorana_operator()."
        )
    for pos, gate in enumerate(gates):
        if isinstance(gate, Channel):
            if max(gate.sites) >= system_size:
                unit = "qubit" if gate.family == "pauli" else "mode"
                raise ValueError(
                    f"Channel {pos} ({gate.name}) acts on {unit} {max(gate.sites)}, outside the "
                    f"circuit's system_size={system_size}; raise system_size or fix the {unit}."
                )
            continue
        if gate.system_size != system_size:
            raise ValueError(
                f"Gate {pos} has system_size={gate.system_size}, which does not match circuit "
                f"system_size={system_size}."
            )


def _check_initial_state(state: Iterable[int] | None, system_size: int) -> tuple[int, ...]:
    if state is None:
        return ()
    entries = tuple(int(i) for i in state)
    if len(set(entries)) != len(entries):
        raise ValueError(f"Duplicate indices in initial state: {list(entries)}.")
    outside = [i for i in entries if not 0 <= i < system_size]
    if outside:
        raise ValueError(
            f"initial_state entries must be in 0..{system_size - 1}; got {outside} "
            f"(initial_state={list(entries)})."
        )
    return entries


def _dense_term(
    pos: int, monomial: Sequence[int], g: Any, system_size: int
) -> tuple[tuple[int, ...], complex]:
    """One wire-format monomial as a canonical ``(indices, g)`` pair, range-checked."""
    indices = tuple(int(i) for i in monomial)
    if any(i < 0 for i in indices):
        raise ValueError(f"Majorana indices must be non-negative; got {indices} at position {pos}.")
    if indices and max(indices) >= 2 * system_size:
        raise ValueError(
            f"Monomial {indices} at position {pos} acts on an index >= 2*system_size="
            f"{2 * system_size}; raise system_size or fix the index."
        )
    if isinstance(g, complex) or getattr(g, "dtype", None) is not None and g.dtype.kind == "c":
        raise TypeError(
            f"gen_coeffs must be real structural coefficients; got {g!r} at position {pos}."
        )
    value = check_finite(float(g), f"gen_coeffs[{pos}]", fix="pass finite structural coefficients")
    canonical, sign = Majorana.from_unsorted(*indices)
    return tuple(canonical.indices), complex(value) * sign


def validate_parameter_mapping(
    mapping: Sequence[int], expected_len: int, unit: str = "gates"
) -> None:
    """Check a per-gate (or per-layer) parameter mapping; raise ``ValueError`` if it is bad.

    It needs one entry per ``unit`` and its values must cover ``0..max`` (repeats allowed).

    >>> validate_parameter_mapping([0, 1, 1, 0], 4)
    >>> validate_parameter_mapping([0, 2], 2)
    Traceback (most recent call last):
    ...
    ValueError: parameter_mapping indices must be contiguous 0..n-1 with no gaps; got [0, 2].
    """
    mapping = list(mapping)
    if len(mapping) != expected_len:
        raise ValueError(
            f"parameter_mapping has {len(mapping)} entries but there are {expected_len} {unit}."
        )
    if mapping and set(mapping) != set(range(max(mapping) + 1)):
        raise ValueError(
            f"parameter_mapping indices must be contiguous 0..n-1 with no gaps; got {mapping}."
        )


def circuit_layers(
    circuit: Circuit, num_modes: int
) -> tuple[
    list[tuple[int, ...]],
    list[float],
    list[int],
    list[int],
    list[int],
    list[tuple[NoiseLayer, float, float] | None],
]:
    """All of a circuit's layers in order, as the core takes them: ``(slot_keys, coeffs,
    parameter_mapping, gate_indices, quarter_turns, noise)``.

    Rotations expand as in :func:`expand_monomials` (``gate_indices`` counts rotations 0..R-1)
    with ``quarter_turns`` 0; a ``CliffordGate`` gives one layer per quarter turn
    (:meth:`~monoprop.clifford.CliffordGate.engine_layers`) with coefficient 0, parameter and
    gate ``-1``, and its quarter turns (1 to 3) on the Hermitian monomial. A noise channel gives
    its engine layers, ``noise`` holding each with its rate's range (``None`` for the others):
    parameter and gate ``-1`` for a fixed rate, else its slot and a gate numbered after the
    rotations.

    >>> from monoprop.pauli import PauliOperator
    >>> c = Circuit([CliffordGate.s(0, 1), ExpGate(PauliOperator({"X": 0.5}, 1))], 1)
    >>> circuit_layers(c, 1)[:5]
    ([(0, 1), (0,)], [0.0, 0.5], [-1, 0], [-1, 0], [3, 0])
    """
    keys: list[tuple[int, ...]] = []
    coeffs: list[float] = []
    params: list[int] = []
    gate_indices: list[int] = []
    turns: list[int] = []
    noise: list[tuple[NoiseLayer, float, float] | None] = []
    slots = iter(circuit.resolved_mapping)
    rotation = 0
    channel_gate = len(circuit.rotations)
    for gate in circuit.gates:
        if isinstance(gate, Channel):
            for part in gate._parts:
                for layer in part.layers:
                    keys.append(layer.slots)
                    coeffs.append(0.0)
                    params.append(-1 if part.index is None else part.index)
                    gate_indices.append(-1 if part.index is None else channel_gate)
                    turns.append(0)
                    noise.append((layer, part.lowest, part.highest))
                if part.index is not None:
                    channel_gate += 1
            continue
        if isinstance(gate, CliffordGate):
            for key, q in gate.engine_layers():
                _check_slots(key, num_modes)
                keys.append(key)
                coeffs.append(0.0)
                params.append(-1)
                gate_indices.append(-1)
                turns.append(q)
                noise.append(None)
            continue
        k, g, p, _ = expand_monomials([gate], [next(slots)], num_modes)
        keys += k
        coeffs += g
        params += p
        gate_indices += [rotation] * len(k)
        turns += [0] * len(k)
        noise += [None] * len(k)
        rotation += 1
    return keys, coeffs, params, gate_indices, turns, noise


def _check_slots(key: tuple[int, ...], num_modes: int) -> None:
    if key and max(key) >= 2 * num_modes:
        raise ValueError(
            f"CliffordGate term with slots {list(key)} acts outside the system of {num_modes}."
        )
