"""Noise channels: objects that go into a :class:`~monoprop.circuit.Circuit` next to gates.

A channel acts where it stands in the gate list, on the qubits (or fermionic modes) it names,
in the conventions of ``qiskit_aer.noise``. Qubit channels:

* ``depolarizing(p, qubits)`` on 1 or 2 qubits: ``ρ → (1 − p) ρ + p Tr(ρ) I / 2^k``, for
  ``p`` in ``[0, 4^k / (4^k − 1)]``;
* ``pauli_channel(probabilities, qubits)``: ``ρ → Σ_P p_P P ρ P`` over Pauli labels;
* ``bit_flip(p, q)``, ``phase_flip(p, q)`` (dephasing) and ``bit_phase_flip(p, q)``: ``X``,
  ``Z`` or ``Y`` with probability ``p``;
* ``amplitude_damping(gamma, q)``: Kraus operators ``[[1, 0], [0, √(1 − γ)]]`` and
  ``[[0, √γ], [0, 0]]``, which decay ``|1>`` to ``|0>``;
* ``pauli_lindblad(generators, rates)``: ``Π_k exp(λ_k (Q_k ρ Q_k − ρ))``, and
  :func:`from_pauli_lindblad_map` for Qiskit's ``PauliLindbladMap``.

:func:`after_gates` puts channels after the gates of a circuit ("1% depolarizing after every
two-qubit gate"); ``from_qiskit_circuit(..., noise_model=...)`` reads a ``qiskit_aer``
``NoiseModel`` into these channels, and into a ``"relaxation"`` channel (Pauli scaling, then a
decay ``I → I + t Z`` per qubit) for a decay none of them is, as thermal relaxation towards an
excited population.

Fermionic channels on mode ``j`` (Majoranas ``m_2j``, ``m_2j+1``; ``n_j`` its number operator,
``a_j`` its annihilator), for Majorana circuits:

* ``dephasing(p, j)``: Kraus ``√(1 − p) I`` and ``√p (1 − 2 n_j)``;
* ``particle_loss(gamma, j)``: Kraus ``1 − (1 − √(1 − γ)) n_j`` and ``√γ P a_j``, with
  ``P = (−1)^N`` the parity. On physical states (of fixed parity, or mixtures of such) and on
  even observables this is the channel with Kraus ``√γ a_j``; the parity keeps it local to
  mode ``j`` on odd monomials too, which ``a_j`` alone would couple to ``n_j``.

A channel takes either a fixed rate or ``index=k``, the slot of the circuit's parameter
vector its rate is read from: the same vector as the rotation angles, so values, gradients,
parameter mappings and the optimisers all see the rate. Rotations without ``index`` take
slots ``0 .. R − 1`` in order; the slots of rotations and channels together must cover
``0 .. max`` without gaps.

How a propagator applies them. In the Heisenberg picture a channel ``E`` acts on the observable
through its adjoint. A Pauli channel scales each Pauli string ``P`` by
``1 − 2 Σ {p_Q : Q anticommutes with P}``: depolarizing scales every string that is not the
identity on the channel's qubits by ``1 − p``, a bit flip scales ``Y`` and ``Z`` by ``1 − 2p``,
and a Lindblad generator ``Q`` scales the strings that anticommute with it by
``exp(−2 λ)``. Amplitude damping scales ``X`` and ``Y`` by ``√(1 − γ)`` and sends
``Z → (1 − γ) Z + γ I``, so it creates terms; in the Schrödinger picture it sends
``I → I + γ Z``. Fermionic dephasing scales monomials holding one Majorana of the mode by
``1 − 2p``; particle loss scales them by ``√(1 − γ)`` and sends the mode's pair ``i m_2j m_2j+1``
to ``(1 − γ)`` times itself plus ``−γ`` (its value on the empty mode). Decayed terms fall under
``lower_atol`` like any other, so noise makes propagation cheaper.

>>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator, noise
>>> rx = ExpGate(PauliOperator({"X": 1.0}, 1))
>>> circuit = Circuit([rx, noise.depolarizing(qubits=0, index=1)], 1)
>>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
>>> prop.build_graph(circuit)
>>> value, gradient = prop.expectation_value_and_gradient_functional()([0.3, 0.1])
>>> round(value, 12), gradient.round(12).tolist()  # (1 − p) cos(2θ) and its derivatives
(0.742802053419, [-1.016356452111, -0.82533561491])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import product
from typing import Any, Literal

from ._channel import Channel, NoiseLayer, _Part
from .circuit import Circuit
from .validation import check_int

__all__ = [
    "Channel",
    "after_gates",
    "amplitude_damping",
    "bit_flip",
    "bit_phase_flip",
    "depolarizing",
    "dephasing",
    "from_pauli_lindblad_map",
    "particle_loss",
    "pauli_channel",
    "pauli_lindblad",
    "phase_flip",
]

# Layer kinds and rate forms as the core numbers them (see monoprop.core_arrays.NoiseArrays).
_DAMP, _SELECT, _TRANSFER = 1, 2, 3
_LINEAR, _ROOT, _EXP = 0, 1, 2

# The slots of a Pauli letter on qubit q, as offsets from 2q.
_LETTER_SLOTS = {"I": (), "X": (0,), "Y": (1,), "Z": (0, 1)}


# -- qubit channels ---------------------------------------------------------------------------


def depolarizing(
    p: float | None = None, qubits: int | Iterable[int] = (), *, index: int | None = None
) -> Channel:
    """``ρ → (1 − p) ρ + p Tr(ρ) I / 2^k`` on ``k`` = 1 or 2 qubits.

    >>> depolarizing(0.01, [0, 1])
    Channel('depolarizing', sites=(0, 1), rate=0.01)
    """
    sites = _qubits(qubits, "depolarizing", most=2)
    highest = 4 ** len(sites) / (4 ** len(sites) - 1)
    every = (1 << (1 << 2 * len(sites))) - 2  # every pattern but the identity
    layer = (_SELECT, _pauli_slots(sites), _LINEAR, 1.0, -1.0, every)
    return _channel("depolarizing", "pauli", sites, p, index, [layer], 0.0, highest)


def bit_flip(p: float | None = None, qubit: int = 0, *, index: int | None = None) -> Channel:
    """``X`` on ``qubit`` with probability ``p``: ``Y`` and ``Z`` scale by ``1 − 2p``.

    >>> bit_flip(0.1, 2).sites
    (2,)
    """
    return _flip("bit_flip", "X", p, qubit, index)


def phase_flip(p: float | None = None, qubit: int = 0, *, index: int | None = None) -> Channel:
    """``Z`` on ``qubit`` with probability ``p`` (dephasing): ``X`` and ``Y`` scale by ``1 − 2p``.

    >>> phase_flip(index=3, qubit=0).slots
    (3,)
    """
    return _flip("phase_flip", "Z", p, qubit, index)


def bit_phase_flip(p: float | None = None, qubit: int = 0, *, index: int | None = None) -> Channel:
    """``Y`` on ``qubit`` with probability ``p``: ``X`` and ``Z`` scale by ``1 − 2p``.

    >>> bit_phase_flip(0.2, 0).rate
    0.2
    """
    return _flip("bit_phase_flip", "Y", p, qubit, index)


def _flip(name: str, letter: str, p: float | None, qubit: int, index: int | None) -> Channel:
    sites = _qubits(qubit, name, most=1)
    flipped = _patterns(sites, lambda labels: _anticommute(labels[0], letter))
    layer = (_SELECT, _pauli_slots(sites), _LINEAR, 1.0, -2.0, flipped)
    return _channel(name, "pauli", sites, p, index, [layer], 0.0, 1.0)


def amplitude_damping(
    gamma: float | None = None, qubit: int = 0, *, index: int | None = None
) -> Channel:
    """Decay of ``|1>`` to ``|0>`` with probability ``gamma``.

    >>> amplitude_damping(0.05, 1)
    Channel('amplitude_damping', sites=(1,), rate=0.05)
    """
    sites = _qubits(qubit, "amplitude_damping", most=1)
    slots = _pauli_slots(sites)
    layers = _damping_layers(slots, _patterns(sites, lambda s: s[0] in "XY"), 1 << 3)
    return _channel("amplitude_damping", "pauli", sites, gamma, index, layers, 0.0, 1.0)


def _damping_layers(slots: tuple[int, ...], odd: int, both: int) -> list[tuple]:
    """Amplitude damping on one qubit or mode, in circuit order: X, Y (or a lone Majorana)
    scale by √(1 − γ), Z (or the pair) by 1 − γ, and the transfer γ between Z and I. The
    Heisenberg picture applies them last first, so that the transfer reads Z before it is
    scaled; the Schrödinger picture scales Z before I feeds it."""
    return [
        (_SELECT, slots, _ROOT, 1.0, -1.0, odd),
        (_SELECT, slots, _LINEAR, 1.0, -1.0, both),
        (_TRANSFER, slots, _LINEAR, 0.0, 1.0, 0),
    ]


def pauli_channel(probabilities: Mapping[str, float], qubits: int | Iterable[int]) -> Channel:
    """``ρ → Σ_P p_P P ρ P`` on 1 or 2 qubits; label character ``j`` acts on ``qubits[j]``.

    The identity's probability is ``1 − Σ`` of the others unless its label is given, and
    then all must sum to 1.

    >>> pauli_channel({"X": 0.1, "Z": 0.05}, 0)
    Channel('pauli_channel', sites=(0,), rate=(('X', 0.1), ('Z', 0.05)))
    """
    sites = _qubits(qubits, "pauli_channel", most=2)
    k = len(sites)
    if not isinstance(probabilities, Mapping) or not probabilities:
        raise TypeError(
            f"probabilities must be a non-empty dict of Pauli labels to probabilities; got "
            f"{probabilities!r}."
        )
    table: dict[str, float] = {}
    for label, value in probabilities.items():
        if not isinstance(label, str) or len(label) != k or set(label) - set("IXYZ"):
            raise ValueError(
                f"pauli_channel label {label!r} must have {k} characters from 'IXYZ' (one per "
                f"qubit of {list(sites)})."
            )
        table[label] = _probability(value, f"probability of {label!r}", 0.0, 1.0)
    identity = "I" * k
    total = sum(v for label, v in table.items() if label != identity)
    if identity in table:
        total += table[identity]
        if abs(total - 1.0) > 1e-12:
            raise ValueError(
                f"pauli_channel probabilities sum to {total!r} with the identity given; they must "
                "sum to 1 (leave the identity out to have it fill the rest)."
            )
    elif total > 1.0 + 1e-12:
        raise ValueError(
            f"pauli_channel probabilities sum to {total!r}, above 1; lower them so that the "
            "identity keeps 1 - sum >= 0."
        )
    # Each non-identity pattern P scales by 1 - 2 Σ {p_Q : Q anticommutes with P}; one layer
    # per distinct scale.
    by_scale: dict[float, int] = {}
    for labels in product("IXYZ", repeat=k):
        if set(labels) == {"I"}:
            continue
        flips = sum(v for q, v in table.items() if _anticommute_strings(labels, q))
        scale = 1.0 - 2.0 * flips
        if scale != 1.0:
            by_scale[scale] = by_scale.get(scale, 0) | (1 << _code(sites, labels))
    slots = _pauli_slots(sites)
    layers = [(_SELECT, slots, _LINEAR, scale, 0.0, pats) for scale, pats in by_scale.items()]
    rate = tuple(sorted(table.items()))
    return Channel(
        "pauli_channel", "pauli", sites, rate, None, [_Part(None, _layers(layers, None), 0.0, 0.0)]
    )


def pauli_lindblad(
    generators: Sequence[tuple[str, Iterable[int]]],
    rates: Sequence[float] | None = None,
    *,
    index: Sequence[int] | None = None,
) -> Channel:
    """``Π_k exp(λ_k (Q_k ρ Q_k − ρ))`` for Pauli generators ``Q_k = (label, qubits)``.

    Each generator scales the strings that anticommute with it by ``exp(−2 λ_k)``. Rates may
    be negative: those are the inverse maps of error mitigation, not physical channels.
    ``index`` gives one parameter slot per generator instead of ``rates``.

    >>> pauli_lindblad([("XX", [0, 1]), ("Z", [1])], [0.01, 0.02]).sites
    (0, 1)
    """
    generators = list(generators)
    if not generators:
        raise ValueError("pauli_lindblad needs at least one generator, as a (label, qubits) pair.")
    keys: list[tuple[int, ...]] = []
    sites: set[int] = set()
    for k, generator in enumerate(generators):
        try:
            label, qubits = generator
        except (TypeError, ValueError):
            raise TypeError(
                f"pauli_lindblad generator {k} must be a (label, qubits) pair such as "
                f"('XZ', [0, 1]); got {generator!r}."
            ) from None
        on = _qubits(qubits, "pauli_lindblad", most=None)
        if not isinstance(label, str) or len(label) != len(on) or set(label) - set("XYZ"):
            raise ValueError(
                f"pauli_lindblad generator {k} label {label!r} must have one character from 'XYZ' "
                f"per qubit of {list(on)}."
            )
        keys.append(
            tuple(
                sorted(
                    2 * q + s
                    for q, letter in zip(on, label, strict=True)
                    for s in _LETTER_SLOTS[letter]
                )
            )
        )
        sites.update(on)
    count = len(generators)
    if (rates is None) == (index is None):
        raise ValueError(
            "pauli_lindblad takes either rates (fixed) or index (one parameter slot per "
            "generator), not both and not neither."
        )
    values: list[float | None]
    slots: list[int | None]
    if rates is not None:
        values = [_probability(r, f"rates[{k}]", -math.inf, math.inf) for k, r in enumerate(rates)]
        slots = [None] * len(values)
    else:
        slots = [_slot(i) for i in index]  # type: ignore[union-attr]
        values = [None] * len(slots)
    if len(values) != count:
        raise ValueError(
            f"pauli_lindblad has {count} generators but {len(values)} rates or indices; give one "
            "each."
        )
    parts = [
        _Part(
            slot,
            _layers([(_DAMP, key, _EXP, 0.0, -2.0, 0)], rate),
            -math.inf,
            math.inf,
        )
        for key, rate, slot in zip(keys, values, slots, strict=True)
    ]
    rate = None if rates is None else tuple(values)
    return Channel(
        "pauli_lindblad",
        "pauli",
        tuple(sorted(sites)),
        rate,
        None if index is None else tuple(slots),
        parts,
    )


def from_pauli_lindblad_map(plm: Any) -> Channel:
    """A :func:`pauli_lindblad` channel from a ``qiskit.quantum_info.PauliLindbladMap``.

    Qiskit labels put qubit 0 last; its generators and rates carry over one by one.

    >>> from qiskit.quantum_info import PauliLindbladMap
    >>> from_pauli_lindblad_map(PauliLindbladMap.from_list([("XI", 0.1)])).sites
    (1,)
    """
    try:
        terms = plm.to_sparse_list()
    except AttributeError:
        raise TypeError(
            f"from_pauli_lindblad_map takes a qiskit.quantum_info.PauliLindbladMap; got "
            f"{type(plm).__name__}."
        ) from None
    generators = [(label, list(qubits)) for label, qubits, _ in terms]
    return pauli_lindblad(generators, [float(rate) for _, _, rate in terms])


def _relaxation(
    sites: Sequence[int], fidelities: Mapping[str, float], decays: Mapping[int, float]
) -> Channel:
    """A fixed qubit channel: first a Pauli-diagonal map that scales each Pauli string ``P`` on
    ``sites`` by ``fidelities[P]`` (label character ``j`` on ``sites[j]``, identity label left
    out), then, for each position ``j`` in ``decays``, the decay ``I → I + t Z`` on
    ``sites[j]`` (Schrödinger; in the Heisenberg picture ``Z → Z + t I``), ``t = decays[j]``.

    Amplitude damping is the case ``X, Y → √(1 − γ)``, ``Z → 1 − γ``, ``t = γ``; thermal
    relaxation towards an excited population ``p₁`` has ``t = (1 − f_Z)(1 − 2 p₁)``. The
    diagonal part is one select layer per distinct scale on 1 or 2 qubits; on 3 or more it is
    the Pauli-Lindblad map with those fidelities (every one must be positive).
    """
    sites = _qubits(sites, "relaxation", most=None)
    k = len(sites)
    scales = {label: float(f) for label, f in fidelities.items() if f != 1.0}
    layers: list[tuple] = []
    if k <= 2:
        by_scale: dict[float, int] = {}
        for label, f in scales.items():
            by_scale[f] = by_scale.get(f, 0) | (1 << _code(sites, label))
        slots = _pauli_slots(sites)
        layers += [(_SELECT, slots, _LINEAR, f, 0.0, pats) for f, pats in by_scale.items()]
    elif scales:
        for label, lam in _lindblad_rates(fidelities).items():
            on = [(q, letter) for q, letter in zip(sites, label, strict=True) if letter != "I"]
            key = tuple(sorted(2 * q + s for q, letter in on for s in _LETTER_SLOTS[letter]))
            layers.append((_DAMP, key, _EXP, -2.0 * lam, 0.0, 0))
    for j, t in sorted(decays.items()):
        if t != 0.0:
            q = sites[j]
            layers.append((_TRANSFER, (2 * q, 2 * q + 1), _LINEAR, float(t), 0.0, 0))
    rate = (
        ("fidelities", tuple(sorted(scales.items()))),
        ("decays", tuple((sites[j], float(t)) for j, t in sorted(decays.items()) if t != 0.0)),
    )
    part = _Part(None, _layers(layers, None), 0.0, 0.0)
    return Channel("relaxation", "pauli", sites, rate, None, [part])


def _lindblad_rates(fidelities: Mapping[str, float]) -> dict[str, float]:
    """The rates ``λ_Q`` of the Pauli-Lindblad map ``Π_Q exp(λ_Q (Q ρ Q − ρ))`` with the given
    Pauli fidelities ``f_P`` (labels of one length ``k``; missing ones are 1; all positive).

    The map scales ``P`` by ``exp(−Σ_Q λ_Q (1 − χ_PQ))``, ``χ_PQ = ±1`` as ``P`` and ``Q``
    commute or not. The characters are orthogonal, ``Σ_Q χ_PQ χ_QR = 4^k δ_PR``, which
    inverts ``ln f_P = −Σ_Q λ_Q (1 − χ_PQ)`` to ``λ_Q = 4^−k Σ_P χ_PQ ln f_P`` (``Q ≠ I``).
    """
    lengths = {len(label) for label in fidelities}
    if len(lengths) != 1:
        raise ValueError(f"Pauli fidelities need labels of one length; got {sorted(fidelities)}.")
    (k,) = lengths
    labels = ["".join(t) for t in product("IXYZ", repeat=k)]
    logs = {}
    for label in labels[1:]:
        f = float(fidelities.get(label, 1.0))
        if not f > 0.0:
            raise ValueError(
                f"the Pauli fidelity of {label!r} is {f!r}: a Pauli-diagonal map on {k} qubits is "
                "a Pauli-Lindblad map only when every fidelity is positive."
            )
        logs[label] = math.log(f)
    return {
        q: sum(-v if _anticommute_strings(p, q) else v for p, v in logs.items()) / 4**k
        for q in labels[1:]
    }


# -- noise after gates ------------------------------------------------------------------------


def after_gates(
    circuit: Circuit, channel_for_gate: Callable[[Any, tuple[int, ...]], Any]
) -> Circuit:
    """A copy of ``circuit`` with noise after its gates.

    ``channel_for_gate(gate, sites)`` is called for every gate (``ExpGate`` or
    ``CliffordGate``; channels already in the circuit are kept and skipped), with ``sites`` the
    sorted qubits (or modes) the gate acts on, and returns a channel, a list of channels, or
    ``None``; the channels go right after the gate, in the order returned. Parameters and
    initial state carry over; channels whose rates take parameter slots (``index=``) must
    extend the circuit's slots without gaps.

    1% depolarizing after every two-qubit gate:

    >>> from monoprop import Circuit, CliffordGate, ExpGate, PauliOperator, PauliPropagator
    >>> rx = ExpGate(PauliOperator({"X": 1.0}, 2))
    >>> circuit = Circuit([rx, CliffordGate.cx(0, 1, 2)], 2, parameters=[0.3])
    >>> def noise_for(gate, qubits):
    ...     return depolarizing(0.01, qubits) if len(qubits) == 2 else None
    >>> noisy = after_gates(circuit, noise_for)
    >>> noisy.gates[2]
    Channel('depolarizing', sites=(0, 1), rate=0.01)
    >>> prop = PauliPropagator(PauliOperator({"IZ": 1.0}, 2), [], cutoff=4)
    >>> prop.propagate(noisy)
    >>> round(prop.expectation_value(), 12)  # <Z1> after the cx is (1 − 0.01) cos(2 · 0.3)
    0.817082258761
    """
    if not isinstance(circuit, Circuit):
        raise TypeError(
            f"after_gates takes a monoprop Circuit; got {type(circuit).__name__}. Convert a "
            "Qiskit circuit with from_qiskit_circuit first (or give it noise_model=...)."
        )
    if not callable(channel_for_gate):
        raise TypeError(
            f"channel_for_gate must be a function (gate, sites) -> channel, list of channels or "
            f"None; got {channel_for_gate!r}."
        )
    gates: list[Any] = []
    for pos, gate in enumerate(circuit.gates):
        gates.append(gate)
        if not isinstance(gate, Channel):
            returned = channel_for_gate(gate, _gate_sites(gate))
            gates += _returned_channels(returned, pos)
    state = circuit.initial_state if circuit._state_given else None
    return Circuit(gates, circuit.system_size, circuit.parameters, state)


def _gate_sites(gate: Any) -> tuple[int, ...]:
    """The sorted qubits (Pauli family) or modes (Majorana family) a gate's terms touch."""
    operators = [gate.generator] if hasattr(gate, "generator") else [op for op, _ in gate.factors]
    sites: set[int] = set()
    for operator in operators:
        for key, c in operator.terms.items():
            if c == 0:
                continue
            if gate.family == "pauli":
                sites.update(key.qubits)
            else:
                sites.update(i // 2 for i in getattr(key, "indices", key))
    return tuple(sorted(sites))


def _returned_channels(returned: Any, pos: int) -> list[Channel]:
    if returned is None:
        return []
    if isinstance(returned, Channel):
        return [returned]
    items = list(returned) if isinstance(returned, (list, tuple)) else None
    if items is None or not all(isinstance(c, Channel) for c in items):
        raise TypeError(
            f"channel_for_gate returned {returned!r} for gate {pos}; return a monoprop.noise "
            "channel, a list of them, or None."
        )
    return items


# -- fermionic channels -----------------------------------------------------------------------


def dephasing(p: float | None = None, mode: int = 0, *, index: int | None = None) -> Channel:
    """Parity-preserving dephasing of a fermionic mode: Kraus ``√(1 − p) I``, ``√p (1 − 2 n_j)``.

    >>> dephasing(0.1, 3).family
    'majorana'
    """
    sites = _modes(mode, "dephasing")
    layer = (_SELECT, (2 * sites[0], 2 * sites[0] + 1), _LINEAR, 1.0, -2.0, 0b0110)
    return _channel("dephasing", "majorana", sites, p, index, [layer], 0.0, 1.0)


def particle_loss(
    gamma: float | None = None, mode: int = 0, *, index: int | None = None
) -> Channel:
    """Fermionic amplitude damping of a mode: Kraus ``1 − (1 − √(1 − γ)) n_j`` and ``√γ P a_j``.

    ``P = (−1)^N`` is the parity: on parity-superselected states and even observables the
    channel is the usual one with Kraus ``√γ a_j``, and it acts on mode ``j`` alone.

    >>> particle_loss(0.2, 0).sites
    (0,)
    """
    sites = _modes(mode, "particle_loss")
    layers = _damping_layers((2 * sites[0], 2 * sites[0] + 1), 0b0110, 0b1000)
    return _channel("particle_loss", "majorana", sites, gamma, index, layers, 0.0, 1.0)


# -- helpers ----------------------------------------------------------------------------------


def _channel(
    name: str,
    family: Literal["pauli", "majorana"],
    sites: tuple[int, ...],
    rate: float | None,
    index: int | None,
    layers: list[tuple],
    lowest: float,
    highest: float,
) -> Channel:
    """A channel of one rate, fixed or read from parameter slot ``index``."""
    if (rate is None) == (index is None):
        raise ValueError(
            f"{name} takes either a fixed rate or index=k (the parameter slot of its rate), not "
            f"both and not neither; got rate={rate!r}, index={index!r}."
        )
    value = None if rate is None else _probability(rate, f"{name} rate", lowest, highest)
    slot = None if index is None else _slot(index)
    part = _Part(slot, _layers(layers, value), lowest, highest)
    return Channel(name, family, sites, value, slot, [part])


def _layers(layers: list[tuple], rate: float | None) -> tuple[NoiseLayer, ...]:
    """Engine layers; a fixed rate folds into alpha (``beta`` 0, the rate read as 0)."""
    out = []
    for kind, slots, form, alpha, beta, patterns in layers:
        if rate is not None:
            alpha, beta = alpha + beta * rate, 0.0
        out.append(NoiseLayer(kind, tuple(slots), form, alpha, beta, patterns))
    return tuple(out)


def _probability(value: Any, name: str, lowest: float, highest: float) -> float:
    if isinstance(value, (bool, complex, str)) or not hasattr(value, "__float__"):
        raise TypeError(f"{name} must be a real number; got {value!r}.")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} is {x!r}; give a finite number in [{lowest}, {highest}].")
    if not lowest <= x <= highest:
        raise ValueError(
            f"{name} = {x!r} is outside its range [{lowest}, {highest}]; give a rate inside it."
        )
    return x


def _slot(index: Any) -> int:
    return check_int(index, "index", minimum=0)


def _qubits(qubits: Any, name: str, most: int | None) -> tuple[int, ...]:
    raw = [qubits] if isinstance(qubits, int) else list(qubits)
    sites = tuple(check_int(q, f"{name} qubit", minimum=0) for q in raw)
    if not sites or len(set(sites)) != len(sites) or (most is not None and len(sites) > most):
        limit = "" if most is None else f"1 to {most} "
        raise ValueError(f"{name} acts on {limit}distinct qubits; got {list(raw)!r}.")
    return sites


def _modes(mode: Any, name: str) -> tuple[int, ...]:
    return (check_int(mode, f"{name} mode", minimum=0),)


def _pauli_slots(sites: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(s for q in sites for s in (2 * q, 2 * q + 1)))


def _code(sites: tuple[int, ...], labels: Sequence[str]) -> int:
    """The pattern of a Pauli string on ``sites``: bit k for the k-th of their slots, ascending."""
    slots = _pauli_slots(sites)
    held = {
        2 * q + s for q, letter in zip(sites, labels, strict=True) for s in _LETTER_SLOTS[letter]
    }
    return sum(1 << k for k, slot in enumerate(slots) if slot in held)


def _patterns(sites: tuple[int, ...], chosen: Any) -> int:
    """The pattern set of the Pauli strings on ``sites`` for which ``chosen(labels)`` holds."""
    return sum(
        1 << _code(sites, labels) for labels in product("IXYZ", repeat=len(sites)) if chosen(labels)
    )


def _anticommute(a: str, b: str) -> bool:
    return a != "I" and b != "I" and a != b


def _anticommute_strings(a: Sequence[str], b: Sequence[str]) -> bool:
    return sum(_anticommute(x, y) for x, y in zip(a, b, strict=True)) % 2 == 1
