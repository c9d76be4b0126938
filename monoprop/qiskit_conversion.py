"""Conversions between monoprop objects and Qiskit (needs the ``qiskit`` extra).

Two conventions differ between the libraries and are translated here:

* **Qubit order.** monoprop's Pauli string ``"XZ"`` puts ``X`` on qubit 0; Qiskit labels are
  little-endian, so the same operator is Qiskit's ``"ZX"``. Every label is reversed.
* **Sign of the exponent.** monoprop gates are ``exp(+iθH)``; Qiskit evolves with
  ``exp(-itH)`` and rotates with ``R_P(t) = exp(-i t P / 2)``. The conversions negate the
  *generator* and keep the angle: ``rx(t)`` becomes ``ExpGate(-0.5·X)`` at angle ``t``.

Circuits. :func:`from_qiskit_circuit` reads every gate of Qiskit's standard library (and any
gate with a ``definition``): Clifford gates become :class:`~monoprop.clifford.CliffordGate`
objects, everything else a few ``ExpGate`` rotations, each ``exp(i·angle·H)`` with ``H`` a sum
of commuting Pauli strings. Global phases are dropped. :func:`to_qiskit_circuit` goes back.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

try:
    from qiskit import QuantumCircuit
    from qiskit.circuit import Parameter
    from qiskit.circuit.library import PauliEvolutionGate
    from qiskit.quantum_info import SparsePauliOp
except ImportError as exc:  # pragma: no cover - exercised by a test that hides qiskit
    raise ImportError(
        "qiskit is required for monoprop.qiskit_conversion; install it with "
        "`pip install 'monoprop[qiskit]'` (qiskit>=2.0)."
    ) from exc

from ._qiskit_gates import (
    PAULI_EVOLUTION_EQUIVALENT,
    GateBuilder,
    check_instruction,
    instruction_steps,
)
from ._qiskit_noise import (
    NoiseModelReader,
    error_channels,
    error_instruction,
    instruction_key,
)
from ._qiskit_operators import _qiskit_label, from_qiskit_operator, to_qiskit_operator
from .circuit import Circuit
from .clifford import CliffordGate
from .noise import Channel
from .pauli import Pauli, PauliOperator
from .validation import check_system_size

__all__ = [
    "PAULI_EVOLUTION_EQUIVALENT",
    "VALID_PAULI_GATES",
    "from_qiskit_circuit",
    "from_qiskit_operator",
    "parameter_slots",
    "to_qiskit_circuit",
    "to_qiskit_operator",
]

VALID_PAULI_GATES = PAULI_EVOLUTION_EQUIVALENT | {"PauliEvolution", "pauli_product_rotation"}


def parameter_slots(circuit: QuantumCircuit) -> dict[Parameter, int]:
    """The parameter-vector slot of each free Parameter: ``circuit.parameters[k]`` has slot ``k``.

    :func:`from_qiskit_circuit` ties an unbound circuit's rotations by this rule, which is also
    Qiskit's order (``circuit.assign_parameters(values)`` with a sequence binds ``values[k]``
    to ``circuit.parameters[k]``), so one vector of values means the same in both libraries.

    >>> from qiskit.circuit import Parameter
    >>> qc = QuantumCircuit(1)
    >>> _ = qc.rx(Parameter("b"), 0)
    >>> _ = qc.rz(2 * Parameter("a"), 0)
    >>> {p.name: k for p, k in parameter_slots(qc).items()}
    {'a': 0, 'b': 1}
    """
    return {p: k for k, p in enumerate(circuit.parameters)}


def from_qiskit_circuit(
    circuit: QuantumCircuit,
    initial_state: Iterable[int] | None,
    *,
    clifford_angles: bool = False,
    noise_model: Any = None,
) -> Circuit:
    """Convert a Qiskit circuit to a Pauli-family ``Circuit`` of rotations and Clifford gates.

    **Gates.** Every gate of Qiskit's standard library is read exactly (up to a global phase):

    * Clifford gates (``x y z h s sdg sx sxdg cx cy cz swap iswap dcx ecr``, and controlled or
      composite gates that turn out Clifford) become ``CliffordGate`` objects;
    * rotations ``r<P>(t)`` (``rx ry rz rxx ryy rzz rzx``, ``rxy rxz ryz``),
      ``pauli_product_rotation`` and ``PauliEvolution`` become one ``ExpGate`` each, with the
      generator negated (``r<P>(t)``: ``-P/2`` at angle ``t``; ``PauliEvolution``: ``-H`` at
      ``t``); phases ``p u1 t tdg`` are ``exp(iλ(1 - Z)/2)``, i.e. ``-Z/2`` at angle ``λ``;
    * controlled gates (``crx cry crz cp cu1 cu3 cu cs csdg csx ch ccx ccz cswap c3sx mcx
      mcphase mcu1``, open controls, and any ``gate.control(...)``) are the base gate's
      rotations times the control projector, e.g. ``cp(λ)`` is one ``ExpGate`` with generator
      ``-Z_a/4 - Z_b/4 + Z_a Z_b/4`` at angle ``λ`` and ``ccx`` one with the seven terms of
      ``(1 - Z_a)(1 - Z_b)(1 - X_t)/8`` at angle ``π``;
    * gates that are a few such exponentials in a row (``u u2 u3 r h xx_plus_yy
      xx_minus_yy``) become that sequence, e.g. ``u(θ, φ, λ) = p(φ) ry(θ) p(λ)``, ``p(λ)``
      applied first;
    * an ``AnnotatedOperation`` (``gate.control(..., annotated=True)``, ``inverse``, whole
      ``power``) is its base operation's steps under each modifier; any other gate with a
      Qiskit ``definition`` is converted through its definition.

    ``barrier``, ``delay``, ``id`` and global phases are skipped. ``measure``, ``reset``,
    classically controlled instructions (``if_else`` …) and gates without a definition raise
    ``ValueError`` naming the instruction.

    **Angles.** Each rotation has one angle from the parameter vector.

    * A circuit without free Parameters gives a bound ``Circuit``: every rotation has its own
      slot, in order, holding its angle. Angles fixed by a gate itself (``t``, ``ccx``, ``ch``
      …) are rotations too, unless they are whole quarter turns (then a ``CliffordGate``).
    * A circuit with free Parameters gives an unbound ``Circuit`` (``parameters == ()``) whose
      slot ``k`` is ``circuit.parameters[k]`` (Qiskit's order, see :func:`parameter_slots`).
      A rotation at angle ``a·p + b`` (numbers ``a``, ``b``, one Parameter ``p``) is an
      ``ExpGate`` with index ``p``'s slot and ``a`` folded into its generator; an angle
      ``a·p + c·q + … + b`` (as the transpiler writes) is one such ``ExpGate`` per Parameter,
      in slot order. Other expressions (``p*p``, ``sin(p)``) raise ``ValueError``. The
      constant part ``b`` and any numeric angle must turn each generator term by a whole
      number of quarter turns (``π/4``), and become a ``CliffordGate`` (a numeric one-qubit
      gate may also be Clifford as a whole, as ``u(π, φ, λ)`` is when ``φ - λ`` is a quarter
      turn); otherwise ``ValueError`` (bind the circuit with ``assign_parameters`` first). A
      Parameter that reaches no rotation (e.g. only the global phase) keeps its slot through
      an identity ``ExpGate`` at the end, so ``n_parameters == len(circuit.parameters)``.
    * ``clifford_angles=True`` turns every numeric rotation whose angle makes each generator
      term a whole number of quarter turns (within ``1e-9``), and every numeric one-qubit gate
      that is Clifford as a whole, into an exact ``CliffordGate``, e.g. ``rzz(-π/2)``; such
      gates then take no slot.

    The circuit must hold a single quantum register. ``initial_state`` lists the qubits in
    ``|1>`` (``[]`` for ``|0…0>``; ``None`` leaves it to the propagator).

    **Noise.** ``noise_model``, a ``qiskit_aer.noise.NoiseModel``, puts its errors where
    ``AerSimulator(noise_model=...)`` would on this circuit, as :mod:`monoprop.noise` channels
    of fixed rate: after each instruction, on its qubits, the error for the instruction's
    label (if it has one) or name, the error for those exact qubits taking the place of the
    all-qubit one. Names are matched as the instructions stand in the circuit: a ``cz`` gets
    no error of a model that names ``ecr`` only, and the gates inside a composite gate get none
    of their own, so transpile first (``transpile(qc, basis_gates=noise_model.basis_gates)``);
    a ``UserWarning`` says when no error matched at all. ``id`` and ``delay`` take their
    errors, ``barrier`` none (a ``pauli`` instruction takes its error here, though qiskit-aer
    0.18 gives it none); the model's custom passes (the delay relaxation of
    ``NoiseModel.from_backend``) run first, and a ``QuantumError`` appended to the circuit is
    converted in place. Errors become channels by their Pauli transfer matrix: Pauli and
    depolarizing errors ``depolarizing``, a flip or ``pauli_channel`` (``pauli_lindblad`` on 3
    or more qubits), ``PauliLindbladError`` ``pauli_lindblad``, amplitude damping
    ``amplitude_damping``, phase damping ``phase_flip``, thermal relaxation
    ``amplitude_damping`` and ``phase_flip`` (a ``"relaxation"`` channel with an excited
    population, and for composed errors that decay). Coherent unitary and other Kraus errors
    that mix Paulis raise ``ValueError`` naming the error and the instruction, and so do
    readout errors (a propagated expectation value has no measured bits; build the model
    without them).

    >>> qc = QuantumCircuit(2)
    >>> _ = qc.rx(0.5, 0)
    >>> _ = qc.rzz(0.3, 0, 1)
    >>> c = from_qiskit_circuit(qc, [0])
    >>> [g.generator.terms for g in c], c.parameters
    ([{Pauli('X', (0,)): -0.5}, {Pauli('ZZ', (0, 1)): -0.5}], (0.5, 0.3))

    Clifford gates, and a circuit with free Parameters (slots ``a: 0``, ``b: 1``):

    >>> import math
    >>> from qiskit.circuit import Parameter
    >>> qc = QuantumCircuit(2)
    >>> _ = qc.h(0)
    >>> _ = qc.cx(0, 1)
    >>> _ = qc.rz(2 * Parameter("b") + math.pi, 1)
    >>> _ = qc.rx(Parameter("a"), 0)
    >>> c = from_qiskit_circuit(qc, [])
    >>> [type(g).__name__ for g in c]
    ['CliffordGate', 'CliffordGate', 'CliffordGate', 'ExpGate', 'ExpGate']
    >>> [(g.generator.terms, g.index) for g in c.rotations], c.parameters
    ([({Pauli('Z', (1,)): -1.0}, 1), ({Pauli('X', (0,)): -0.5}, 0)], ())

    >>> qc = QuantumCircuit(2)
    >>> _ = qc.rzz(-math.pi / 2, 0, 1)
    >>> from_qiskit_circuit(qc, [], clifford_angles=True).gates
    (CliffordGate(factors=[(PauliOperator(1 terms, 2 qubits: 1.0*Pauli('ZZ', (0, 1))), 1)]),)

    A noise model with 1% depolarizing after every ``cx`` and amplitude damping after ``sx`` on
    qubit 1 only:

    >>> from qiskit_aer.noise import NoiseModel, amplitude_damping_error, depolarizing_error
    >>> model = NoiseModel()
    >>> model.add_all_qubit_quantum_error(depolarizing_error(0.01, 2), ["cx"])
    >>> model.add_quantum_error(amplitude_damping_error(0.05), ["sx"], [1])
    >>> qc = QuantumCircuit(2)
    >>> _ = qc.sx(0)
    >>> _ = qc.sx(1)
    >>> _ = qc.cx(1, 0)
    >>> noisy = from_qiskit_circuit(qc, [], noise_model=model)
    >>> [getattr(g, "name", "gate") for g in noisy]
    ['gate', 'gate', 'amplitude_damping', 'gate', 'depolarizing']
    >>> [(c.sites, round(c.rate, 12)) for c in noisy.channels]
    [((1,), 0.05), ((1, 0), 0.01)]
    """
    reader = None if noise_model is None else NoiseModelReader(noise_model)
    if reader is not None:
        circuit = reader.prepared(circuit)
    n = _single_register_width(circuit)
    builder = GateBuilder(n, parameter_slots(circuit), bool(clifford_angles))
    placed: dict[int, Any] = {}  # converted errors of quantum_channel instructions
    keys: set[str] = set()
    for pos, instruction in enumerate(circuit.data):
        operation = instruction.operation
        where = f"Instruction {pos} ({operation.name})"
        qubits = [circuit.find_bit(q).index for q in instruction.qubits]
        error = error_instruction(operation)
        if error is not None:
            context = f"{where} on qubits {qubits}: the error"
            builder.gates += error_channels(error, qubits, context, placed)
            continue
        check_instruction(instruction, where)
        builder.add(instruction_steps(operation, where), qubits, where)
        if reader is not None:
            builder.gates += reader.channels(operation, qubits, where)
            keys.add(instruction_key(operation))
    message = None if reader is None else reader.unused_warning(keys)
    if message is not None:
        warnings.warn(message, UserWarning, stacklevel=2)
    return builder.circuit(initial_state)


def to_qiskit_circuit(circuit: Circuit, num_qubits: int) -> QuantumCircuit:
    """Convert a bound Pauli-family ``Circuit`` to a Qiskit circuit.

    Rotation ``k`` (``circuit.rotations[k]``) becomes
    ``PauliEvolutionGate(-generator, time=parameters[resolved_mapping[k]])`` restricted to, and
    appended on, the sorted qubits the generator touches. A ``CliffordGate`` becomes standard
    Clifford gates, exact up to a global phase: each quarter turn ``exp(+i q π/4 P)`` of a
    single-qubit ``P`` is ``x y z s sdg sx sxdg`` (``Y`` turns conjugated by ``s``), and of a
    longer ``P`` a basis change (``h``, ``sdg h``), a ``cx`` ladder, ``s``/``z``/``sdg`` on
    its last qubit, and the way back.

    >>> from monoprop import ExpGate
    >>> gate = ExpGate(PauliOperator({Pauli("ZXY", (3, 1, 2)): 1.5}, 5))
    >>> qc = to_qiskit_circuit(Circuit([gate], 5, parameters=[0.7]), 5)
    >>> op = qc.data[0].operation
    >>> op.operator.paulis.to_labels(), op.operator.coeffs.real.tolist(), op.params
    (['ZYX'], [-1.5], [0.7])
    >>> [qc.find_bit(q).index for q in qc.data[0].qubits]
    [1, 2, 3]
    >>> qc = to_qiskit_circuit(Circuit([CliffordGate.cz(0, 1, 2)], 2), 2)
    >>> [(i.operation.name, [qc.find_bit(q).index for q in i.qubits]) for i in qc.data]
    [('s', [0]), ('s', [1]), ('cx', [0, 1]), ('sdg', [1]), ('cx', [0, 1])]
    """
    n = check_system_size(num_qubits, argument_name="num_qubits")
    if not isinstance(circuit, Circuit):
        raise TypeError(f"to_qiskit_circuit expects a Circuit; got {type(circuit).__name__}.")
    if n != circuit.system_size:
        raise ValueError(
            f"num_qubits={n} does not match circuit.system_size={circuit.system_size}."
        )
    if len(circuit.parameters) != circuit.n_parameters:
        raise ValueError(
            "to_qiskit_circuit needs a bound circuit (one angle per parameter): this one has "
            f"{len(circuit.parameters)} values for {circuit.n_parameters} parameters. Build the "
            "Circuit with parameters=[...]."
        )
    qc = QuantumCircuit(n)
    slots = iter(circuit.resolved_mapping)
    for pos, gate in enumerate(circuit.gates):
        if isinstance(gate, Channel):
            raise TypeError(
                f"to_qiskit_circuit cannot convert the noise channel at position {pos} "
                f"({gate.name}): a QuantumCircuit holds gates only. Convert the circuit without "
                "its channels and give the noise to the simulator (for example a qiskit_aer "
                "NoiseModel)."
            )
        if gate.family != "pauli":
            raise TypeError(
                f"to_qiskit_circuit cannot convert a majorana-family gate (gate {pos}); only "
                "Pauli-family circuits map onto qubit gates."
            )
        if isinstance(gate, CliffordGate):
            for operator, k in gate.factors:
                assert isinstance(operator, PauliOperator)  # the family is "pauli"
                for pauli, c in operator.terms.items():
                    _append_quarter_turns(qc, pauli, round(k * c) % 4)
            continue
        theta = circuit.parameters[next(slots)]
        touched = sorted({q for p in gate.generator.terms for q in p.qubits})
        if not touched:
            # Only identity terms (or none): exp(+iθ c·I) is the global phase θ·c.
            qc.global_phase += theta * sum(gate.generator.terms.values())
            continue
        labels = [
            _qiskit_label(p, touched, context="to_qiskit_circuit") for p in gate.generator.terms
        ]
        coeffs = -np.array(list(gate.generator.terms.values()), dtype=complex)
        qc.append(PauliEvolutionGate(SparsePauliOp(labels, coeffs=coeffs), time=theta), touched)
    return qc


# --------------------------------------------------------------------------- Clifford output

# exp(+i q π/4 P) on one qubit, up to a global phase, as standard gates in application order.
# A Y turn is an X turn conjugated by S (S X S† = Y).
_SINGLE_QUBIT_TURNS = {
    ("X", 1): ("sxdg",),
    ("X", 2): ("x",),
    ("X", 3): ("sx",),
    ("Y", 1): ("sdg", "sxdg", "s"),
    ("Y", 2): ("y",),
    ("Y", 3): ("sdg", "sx", "s"),
    ("Z", 1): ("sdg",),
    ("Z", 2): ("z",),
    ("Z", 3): ("s",),
}
# V with V P V† = Z, in application order, and its inverse.
_TO_Z = {"X": ("h",), "Y": ("sdg", "h"), "Z": ()}
_FROM_Z = {"X": ("h",), "Y": ("h", "s"), "Z": ()}


def _append_quarter_turns(qc: QuantumCircuit, pauli: Pauli, q: int) -> None:
    """Append ``exp(+i q π/4 P)`` (``q`` in 0..3) as standard Clifford gates."""
    if q == 0 or not pauli.qubits:
        return
    if len(pauli.qubits) == 1:
        for name in _SINGLE_QUBIT_TURNS[pauli.string, q]:
            getattr(qc, name)(pauli.qubits[0])
        return
    pairs = list(zip(pauli.qubits, pauli.string, strict=True))
    for qubit, letter in pairs:
        for name in _TO_Z[letter]:
            getattr(qc, name)(qubit)
    ladder = list(zip(pauli.qubits, pauli.qubits[1:], strict=False))
    for a, b in ladder:
        qc.cx(a, b)  # Z_b -> Z_a Z_b: the parity collects on the last qubit
    for name in _SINGLE_QUBIT_TURNS["Z", q]:
        getattr(qc, name)(pauli.qubits[-1])
    for a, b in reversed(ladder):
        qc.cx(a, b)
    for qubit, letter in pairs:
        for name in _FROM_Z[letter]:
            getattr(qc, name)(qubit)


def _single_register_width(circuit: QuantumCircuit) -> int:
    if len(circuit.qregs) != 1:
        raise ValueError(
            "from_qiskit_circuit only supports a single quantum register; "
            f"got {len(circuit.qregs)}."
        )
    n = circuit.qregs[0].size
    if circuit.num_qubits != n:
        raise ValueError(
            f"from_qiskit_circuit only supports a single quantum register; the circuit has "
            f"{circuit.num_qubits - n} qubits outside register {circuit.qregs[0].name!r}."
        )
    return int(n)
