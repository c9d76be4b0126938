"""Qiskit instructions as monoprop gates: each standard gate as exact exponentials.

Every instruction becomes a list of steps ``exp(i·angle·H)`` (``H`` a sum of commuting Pauli
strings on the instruction's qubits), phase included; a builder then places the steps on the
circuit's qubits, ties their angles to parameter slots, and emits ``ExpGate`` rotations and
``CliffordGate`` quarter turns. :func:`monoprop.qiskit_conversion.from_qiskit_circuit` is the
public entry; this module holds the gate table and the builder.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from qiskit.circuit import (
    AnnotatedOperation,
    ControlFlowOp,
    ControlledGate,
    ControlModifier,
    InverseModifier,
    Parameter,
    ParameterExpression,
    PowerModifier,
)
from qiskit.circuit.library import CUGate

from ._qiskit_operators import from_qiskit_operator
from .circuit import Circuit, ExpGate, Gate
from .clifford import QUARTER_TURN_ATOL, CliffordGate
from .pauli import Pauli, PauliOperator

# Qiskit rotation gates r<P>(t) = exp(-i t P / 2); letter k of the name acts on qarg k.
PAULI_EVOLUTION_EQUIVALENT = {"rx", "ry", "rz", "rxx", "ryy", "rzz", "rxy", "rxz", "ryz"}

_PI = math.pi
_ID = Pauli("")


@dataclasses.dataclass(frozen=True)
class _Step:
    """``exp(i · angle · Σ terms)``, exactly: the identity term (a phase) is kept, as it matters
    once the step is controlled. Terms act on the instruction's qubits ``0..k-1`` (its qargs).
    ``tunable`` says the angle is one of the gate's parameters, not a constant of the gate."""

    terms: dict[Pauli, float]
    angle: Any  # a number or a qiskit ParameterExpression
    tunable: bool = True


def _rotation(letters: str, angle: Any, tunable: bool = True, qubits: Any = None) -> _Step:
    """``R_P(angle) = exp(-i angle P / 2)``: generator ``-P/2``."""
    return _Step({Pauli(letters, qubits): -0.5}, angle, tunable)


def _phase(letter: str, qubit: int, angle: Any, tunable: bool = True) -> _Step:
    """``exp(i angle (1 - P)/2)``: phase ``e^{i angle}`` on ``P``'s ``-1`` eigenspace (``P``
    itself at ``π``, ``p(λ)`` for ``Z``)."""
    return _Step({_ID: 0.5, Pauli(letter, qubit): -0.5}, angle, tunable)


def _cnot(control: int, target: int) -> _Step:
    """``exp(iπ (1 - Z_c)(1 - X_t)/4)`` = CX."""
    terms = {_ID: 0.25, Pauli("Z", control): -0.25, Pauli("X", target): -0.25}
    terms[Pauli("ZX", (control, target))] = 0.25
    return _Step(terms, _PI, False)


def _u(theta: Any, phi: Any, lam: Any) -> list[_Step]:
    """Qiskit's ``U(θ, φ, λ) = P(φ) RY(θ) P(λ)`` exactly, ``P(λ)`` first."""
    return [_phase("Z", 0, lam), _rotation("Y", theta), _phase("Z", 0, phi)]


# Native exact forms (phases included) of Qiskit's named gates, on qargs 0..k-1.
_NATIVE: dict[str, Any] = {
    "x": lambda p: [_phase("X", 0, _PI, False)],
    "y": lambda p: [_phase("Y", 0, _PI, False)],
    "z": lambda p: [_phase("Z", 0, _PI, False)],
    "s": lambda p: [_phase("Z", 0, _PI / 2, False)],
    "sdg": lambda p: [_phase("Z", 0, -_PI / 2, False)],
    "t": lambda p: [_phase("Z", 0, _PI / 4, False)],
    "tdg": lambda p: [_phase("Z", 0, -_PI / 4, False)],
    "sx": lambda p: [_phase("X", 0, _PI / 2, False)],
    "sxdg": lambda p: [_phase("X", 0, -_PI / 2, False)],
    # H = X RY(π/2)
    "h": lambda p: [_rotation("Y", _PI / 2, False), _phase("X", 0, _PI, False)],
    "p": lambda p: [_phase("Z", 0, p[0])],
    "u1": lambda p: [_phase("Z", 0, p[0])],
    "u": lambda p: _u(p[0], p[1], p[2]),
    "u3": lambda p: _u(p[0], p[1], p[2]),
    "u2": lambda p: [_phase("Z", 0, p[1]), _rotation("Y", _PI / 2, False), _phase("Z", 0, p[0])],
    # R(θ, φ) = RZ(φ) RX(θ) RZ(-φ)
    "r": lambda p: [
        _Step({Pauli("Z", 0): 0.5}, p[1]),
        _rotation("X", p[0]),
        _Step({Pauli("Z", 0): -0.5}, p[1]),
    ],
    "rzx": lambda p: [_rotation("ZX", p[0])],
    # SWAP = exp(iπ/4 (XX + YY + ZZ - 1)), iSWAP = exp(iπ/4 (XX + YY))
    "swap": lambda p: [
        _Step({_ID: -0.25, Pauli("XX"): 0.25, Pauli("YY"): 0.25, Pauli("ZZ"): 0.25}, _PI, False)
    ],
    "iswap": lambda p: [_Step({Pauli("XX"): 0.25, Pauli("YY"): 0.25}, _PI, False)],
    "dcx": lambda p: [_cnot(0, 1), _cnot(1, 0)],
    # ECR = X_0 exp(-iπ/4 Z_0 X_1)
    "ecr": lambda p: [_Step({Pauli("ZX"): -1.0}, _PI / 4, False), _phase("X", 0, _PI, False)],
    # RZ_0(-β) exp(-iθ (XX + YY)/4) RZ_0(β), RZ_0(β) first
    "xx_plus_yy": lambda p: [
        _Step({Pauli("Z", 0): -0.5}, p[1]),
        _Step({Pauli("XX"): -0.25, Pauli("YY"): -0.25}, p[0]),
        _Step({Pauli("Z", 0): 0.5}, p[1]),
    ],
    # RZ_1(β) exp(-iθ (XX - YY)/4) RZ_1(-β), RZ_1(-β) first
    "xx_minus_yy": lambda p: [
        _Step({Pauli("Z", 1): 0.5}, p[1]),
        _Step({Pauli("XX"): -0.25, Pauli("YY"): 0.25}, p[0]),
        _Step({Pauli("Z", 1): -0.5}, p[1]),
    ],
    "global_phase": lambda p: [_Step({_ID: 1.0}, p[0])],
}
# Parameters each native form reads (others take none); a gate named alike with another
# count (such as the 4-parameter "u" base of a controlled CUGate) goes through its definition.
_ARITY = {
    "p": 1,
    "u1": 1,
    "u": 3,
    "u3": 3,
    "u2": 2,
    "r": 2,
    "rzx": 1,
    "xx_plus_yy": 2,
    "xx_minus_yy": 2,
    "global_phase": 1,
}
_SKIPPED = {"barrier", "delay", "id", "i"}


def check_instruction(instruction: Any, where: str) -> None:
    """Refuse what is not a unitary gate, naming the instruction and the way out."""
    operation = instruction.operation
    name = operation.name
    if name == "measure":
        raise ValueError(
            f"{where}: measure is not a unitary gate; from_qiskit_circuit converts the unitary "
            "part of a circuit. Remove the measurements, e.g. "
            "qc.remove_final_measurements(inplace=False), and measure an observable instead."
        )
    if name == "reset":
        raise ValueError(
            f"{where}: reset is not a unitary gate and cannot be converted; remove it (the "
            "circuit starts from initial_state)."
        )
    if isinstance(operation, ControlFlowOp) or getattr(operation, "condition", None) is not None:
        raise ValueError(
            f"{where}: {name!r} is classically controlled, which a propagated circuit cannot "
            "express; remove the classical control (or convert each branch as its own circuit)."
        )
    if instruction.clbits:
        raise ValueError(
            f"{where}: {name!r} acts on classical bits; only unitary gates can be converted. "
            "Remove it from the circuit."
        )


def instruction_steps(operation: Any, where: str) -> list[_Step]:
    """The exact steps of one operation (phases included), on its qargs ``0..k-1``."""
    name = operation.name
    if name in _SKIPPED:
        return []
    if isinstance(operation, AnnotatedOperation):
        return _annotated_steps(operation, where)
    if (
        isinstance(operation, ControlledGate)
        and operation.num_qubits == operation.num_ctrl_qubits + operation.base_gate.num_qubits
        and _well_formed(operation.base_gate)
    ):
        return _controlled_steps(operation, where)
    params = list(operation.params)
    if name in PAULI_EVOLUTION_EQUIVALENT and len(params) == 1:
        return [_rotation(name[1:].upper(), params[0])]
    if name in _NATIVE and _well_formed(operation):
        return _NATIVE[name](params)
    if name == "pauli_product_rotation":
        pauli = operation.pauli
        local = from_qiskit_operator(pauli() if callable(pauli) else pauli)
        return [_Step({p: -0.5 * c for p, c in local.terms.items()}, params[0])]
    if name == "PauliEvolution":
        parts = operation.operator
        terms: dict[Pauli, float] = {}
        # A list of operators evolves their sum.
        for part in parts if isinstance(parts, list) else [parts]:
            for key, c in from_qiskit_operator(part).terms.items():
                terms[key] = terms.get(key, 0.0) - c
        return [_Step(terms, params[0])]
    return _definition_steps(operation, where)


def _well_formed(operation: Any) -> bool:
    """Whether a gate with a native name has the parameters its native form reads."""
    name = operation.name
    if name in PAULI_EVOLUTION_EQUIVALENT:
        return len(operation.params) == 1
    if name in _NATIVE:
        return len(operation.params) == _ARITY.get(name, 0)
    return True


def _controlled_steps(operation: Any, where: str) -> list[_Step]:
    """A controlled gate: each exact step of its base gate times the control projector."""
    if isinstance(operation, CUGate):  # e^{iγ} U(θ, φ, λ) under the control
        theta, phi, lam, gamma = operation.params
        base = [*_u(theta, phi, lam), _Step({_ID: 1.0}, gamma)]
    else:
        base = instruction_steps(operation.base_gate, where)
    return _control(base, operation.num_ctrl_qubits, operation.ctrl_state)


def _control(steps: list[_Step], nc: int, ctrl_state: int | None) -> list[_Step]:
    """``steps`` on qubits ``nc..``, each times the projector onto the control qubits
    ``0..nc-1`` being in ``ctrl_state`` (bit ``j`` for control ``j``; None: all ``|1>``)."""
    state = (1 << nc) - 1 if ctrl_state is None else int(ctrl_state)
    projector = {_ID: 1.0}
    for j in range(nc):
        # |1><1| = (1 - Z)/2 for a closed control (bit j set), |0><0| = (1 + Z)/2
        sign = -1.0 if (state >> j) & 1 else 1.0
        projector = _product(projector, {_ID: 0.5, Pauli("Z", j): 0.5 * sign})
    out = []
    for step in steps:
        shifted = {Pauli(p.string, [q + nc for q in p.qubits]): c for p, c in step.terms.items()}
        out.append(_Step(_product(projector, shifted), step.angle, step.tunable))
    return out


def _annotated_steps(operation: Any, where: str) -> list[_Step]:
    """An AnnotatedOperation: its base operation's steps under each modifier in turn."""
    steps = instruction_steps(operation.base_op, where)
    for modifier in operation.modifiers:
        if isinstance(modifier, ControlModifier):
            steps = _control(steps, modifier.num_ctrl_qubits, modifier.ctrl_state)
            continue
        power = -1.0 if isinstance(modifier, InverseModifier) else None
        if isinstance(modifier, PowerModifier):
            try:
                power = float(modifier.power)
            except TypeError:
                power = None
        if power is None or not power.is_integer():
            raise ValueError(
                f"{where}: the annotated operation's modifier {modifier!r} is not an inverse, a "
                "control or a whole power; transpile the circuit first, which synthesizes it."
            )
        if power < 0:
            steps = [_Step(s.terms, -s.angle, s.tunable) for s in reversed(steps)]
        steps = steps * int(abs(power))
    return steps


def _definition_steps(operation: Any, where: str) -> list[_Step]:
    """An operation through its Qiskit definition, global phase included."""
    definition = operation.definition
    if definition is None:
        raise ValueError(
            f"{where}: unsupported gate {operation.name!r}, which has no definition to "
            "decompose. from_qiskit_circuit reads Qiskit's standard gates, PauliEvolutionGate, "
            "pauli_product_rotation and any gate with a definition; transpile the circuit to "
            "standard gates first, e.g. transpile(qc, basis_gates=['rz', 'sx', 'cx']), or give "
            "the gate a definition."
        )
    steps: list[_Step] = []
    for pos, instruction in enumerate(definition.data):
        inner = f"{where}, definition instruction {pos} ({instruction.operation.name})"
        check_instruction(instruction, inner)
        qubits = [definition.find_bit(q).index for q in instruction.qubits]
        for step in instruction_steps(instruction.operation, inner):
            steps.append(_Step(_moved(step.terms, qubits), step.angle, step.tunable))
    phase = definition.global_phase
    steps.append(_Step({_ID: 1.0}, phase, isinstance(phase, ParameterExpression)))
    return steps


def _moved(terms: dict[Pauli, float], qubits: Sequence[int]) -> dict[Pauli, float]:
    """Terms on local qubits ``0..k-1`` moved to ``qubits[0..k-1]``."""
    return {Pauli(p.string, [qubits[q] for q in p.qubits]): c for p, c in terms.items()}


def _product(a: dict[Pauli, float], b: dict[Pauli, float]) -> dict[Pauli, float]:
    """The product of two operators on disjoint qubits, expanded."""
    out: dict[Pauli, float] = {}
    for pa, ca in a.items():
        for pb, cb in b.items():
            key = Pauli(pa.string + pb.string, pa.qubits + pb.qubits)
            out[key] = out.get(key, 0.0) + ca * cb
    return {p: c for p, c in out.items() if c != 0}


def _quarter_turns(terms: dict[Pauli, float], angle: float) -> dict[Pauli, float] | None:
    """``exp(i angle Σ c P)`` as quarter turns ``{P: q}`` (``q`` in 1..3; whole turns left out),
    or None when a term does not turn by a whole number of quarter turns."""
    turns: dict[Pauli, float] = {}
    for pauli, c in terms.items():
        q = angle * c / (_PI / 4)
        whole = round(q)
        if abs(q - whole) > QUARTER_TURN_ATOL:
            return None
        if whole % 4:
            turns[pauli] = float(whole % 4)
    return turns


def _real(value: Any, where: str, what: str) -> float:
    number = complex(value)
    if abs(number.imag) > 1e-12 * max(1.0, abs(number.real)) or not math.isfinite(number.real):
        raise ValueError(f"{where}: {what} is {value}, not a finite real number; use real angles.")
    return number.real


def _linear_angle(angle: Any, where: str) -> tuple[list[tuple[Any, float]], float]:
    """``angle = Σ_k a_k·p_k + b`` as ``([(p_k, a_k), …], b)`` (no pairs for a number)."""
    if not isinstance(angle, ParameterExpression) or not angle.parameters:
        return [], _real(angle, where, "the angle")
    slopes = []
    for param in sorted(angle.parameters, key=lambda p: p.name):
        slope = angle.gradient(param)
        if isinstance(slope, ParameterExpression) and slope.parameters:
            raise ValueError(
                f"{where}: the angle {angle} is not linear in {param}; only a·{param} + b with "
                "numbers a, b can share a parameter slot. Bind the circuit with "
                "assign_parameters before converting, or write the angle as a linear expression."
            )
        a = _real(slope, where, f"the slope of the angle {angle} in {param}")
        if a != 0:
            slopes.append((param, a))
    zero = angle.bind(dict.fromkeys(angle.parameters, 0))
    return slopes, _real(zero, where, f"the constant part of the angle {angle}")


class GateBuilder:
    """Collects the gates of a converted circuit, and the angles of a bound one."""

    def __init__(self, n: int, slots: dict[Parameter, int], clifford_angles: bool) -> None:
        self.n = n
        self.slots = slots
        self.clifford_angles = clifford_angles
        self.gates: list[Gate] = []
        self.angles: list[float] = []

    def add(self, steps: list[_Step], qubits: list[int], where: str) -> None:
        """One instruction's steps, placed on circuit ``qubits``; consecutive Clifford parts of
        one instruction are joined into one ``CliffordGate``."""
        angles: list[float] = []
        pieces: list[Gate] = []
        error: ValueError | None = None
        try:
            for step in steps:
                terms = {p: c for p, c in _moved(step.terms, qubits).items() if p.qubits and c}
                if terms:
                    pieces += self._pieces(terms, step, where, angles)
        except ValueError as exc:
            error = exc
        if (error is not None or angles) and (self.slots or self.clifford_angles):
            # A fixed one-qubit gate can be Clifford as a whole though its parts are not, as
            # u(π, φ, λ) with φ - λ a quarter turn is.
            turns = _single_qubit_clifford(steps) if len(qubits) == 1 else None
            if turns is not None:
                error, angles = None, []
                pieces = [
                    CliffordGate(PauliOperator({Pauli(letter, qubits[0]): 1.0}, self.n), q)
                    for letter, q in turns
                ]
        if error is not None:
            raise error
        self.angles += angles
        run: list[CliffordGate] = []
        for piece in [*pieces, None]:
            if isinstance(piece, CliffordGate):
                run.append(piece)
                continue
            if run:
                self.gates.append(CliffordGate.sequence(run))
                run = []
            if piece is not None:
                self.gates.append(piece)

    def _pieces(
        self, terms: dict[Pauli, float], step: _Step, where: str, angles: list[float]
    ) -> list[Gate]:
        """The gates of one step; a bound rotation's angle goes to ``angles``."""
        slopes, offset = _linear_angle(step.angle, where)
        if slopes:
            # exp(i(Σ a_k p_k + b)H) = exp(ibH) Π_k exp(i a_k p_k H): one rotation per Parameter.
            pieces: list[Gate] = []
            if offset:
                turns = _quarter_turns(terms, offset)
                if turns is None:
                    raise ValueError(
                        f"{where}: the angle {step.angle} has the constant part {offset:.10g}, "
                        "which does not turn every generator term by a whole number of quarter "
                        "turns (multiples of π/4), so it is neither a Clifford gate nor a "
                        "parameter. Bind the circuit with assign_parameters before converting."
                    )
                pieces += self._clifford(turns, where)
            for param, slope in sorted(slopes, key=lambda pair: self._slot(pair[0], step, where)):
                generator = PauliOperator({p: slope * c for p, c in terms.items()}, self.n)
                slot = self._slot(param, step, where)
                pieces.append(self._checked(where, ExpGate, generator, slot))
            return pieces
        if self.slots or self.clifford_angles or not step.tunable:
            turns = _quarter_turns(terms, offset)
            if turns is not None:
                return self._clifford(turns, where)
            if self.slots:
                raise ValueError(
                    f"{where}: the fixed angle {offset:.10g} of generator "
                    f"{PauliOperator(terms, self.n)!r} is not a whole number of quarter turns, "
                    "and in a circuit with free Parameters every slot belongs to a Parameter, "
                    "so no slot can hold it. Bind the circuit with assign_parameters before "
                    "converting (every rotation then gets its own slot)."
                )
        angles.append(offset)
        return [self._checked(where, ExpGate, PauliOperator(terms, self.n))]

    def _slot(self, param: Any, step: _Step, where: str) -> int:
        if param not in self.slots:
            raise ValueError(
                f"{where}: the angle {step.angle} uses Parameter {param}, which is not among the "
                "circuit's parameters (it hides in a gate definition); bind it with "
                "assign_parameters on the gate's own circuit before converting."
            )
        return self.slots[param]

    def _clifford(self, turns: dict[Pauli, float], where: str) -> list[Gate]:
        if not turns:
            return []  # whole turns only: the identity, up to a phase
        return [self._checked(where, CliffordGate, PauliOperator(turns, self.n))]

    @staticmethod
    def _checked(where: str, make: Any, *args: Any) -> Gate:
        """``make(*args)``, with ``where`` put in front of a ValueError's message."""
        try:
            gate: Gate = make(*args)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc
        return gate

    def circuit(self, initial_state: Iterable[int] | None) -> Circuit:
        if not self.slots:
            return Circuit(self.gates, self.n, self.angles, initial_state)
        used = {g.index for g in self.gates if isinstance(g, ExpGate)}
        # A Parameter that reaches no rotation keeps its slot: slot k stays parameters[k].
        padding: list[Gate] = [
            ExpGate(PauliOperator({}, self.n), k) for k in range(len(self.slots)) if k not in used
        ]
        return Circuit(self.gates + padding, self.n, (), initial_state)


_MATRIX_2X2 = {
    "": np.eye(2, dtype=complex),
    "X": np.array([[0, 1], [1, 0]], dtype=complex),
    "Y": np.array([[0, -1j], [1j, 0]], dtype=complex),
    "Z": np.diag([1.0 + 0j, -1.0]),
}


def _quarter_turn_2x2(letter: str, q: int) -> np.ndarray:
    """``exp(i q π/4 P)`` for a one-qubit Pauli ``P``."""
    c = q * _PI / 4
    return math.cos(c) * _MATRIX_2X2[""] + 1j * math.sin(c) * _MATRIX_2X2[letter]


# Every one-qubit Clifford gate is Z^a X^b Z^c in quarter turns (Z^a first), up to a phase.
_ZXZ_TURNS = [
    ((a, b, c), _quarter_turn_2x2("Z", c) @ _quarter_turn_2x2("X", b) @ _quarter_turn_2x2("Z", a))
    for a, b, c in itertools.product(range(4), repeat=3)
]


def _single_qubit_clifford(steps: list[_Step]) -> list[tuple[str, int]] | None:
    """The one-qubit gate of numeric ``steps`` as quarter turns ``Z^a X^b Z^c`` (``Z^a``
    first; zero turns left out), or None when it is not a Clifford gate (or not numeric)."""
    u = _MATRIX_2X2[""]
    for step in steps:
        if isinstance(step.angle, ParameterExpression) and step.angle.parameters:
            return None
        angle = complex(step.angle).real
        h = sum((c * _MATRIX_2X2[p.string] for p, c in step.terms.items()), np.zeros((2, 2)))
        values, vectors = np.linalg.eigh(h)
        u = (vectors * np.exp(1j * angle * values)) @ vectors.conj().T @ u
    for (a, b, c), v in _ZXZ_TURNS:
        overlap = np.vdot(v, u)  # 2 e^{iφ} when u = e^{iφ} v
        if abs(overlap) > 1 and np.abs(u - overlap / abs(overlap) * v).max() <= QUARTER_TURN_ATOL:
            return [(letter, q) for letter, q in (("Z", a), ("X", b), ("Z", c)) if q]
    return None
