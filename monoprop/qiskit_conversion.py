"""Conversions between monoprop objects and Qiskit (needs the ``qiskit`` extra).

Two conventions differ between the libraries and are translated here:

* **Qubit order.** monoprop's Pauli string ``"XZ"`` puts ``X`` on qubit 0; Qiskit labels are
  little-endian, so the same operator is Qiskit's ``"ZX"``. Every label is reversed.
* **Sign of the exponent.** monoprop gates are ``exp(+iθH)``; Qiskit evolves with
  ``exp(-itH)`` and rotates with ``R_P(t) = exp(-i t P / 2)``. The conversions negate the
  *generator* and keep the angle: ``rx(t)`` becomes ``ExpGate(-0.5·X)`` at angle ``t``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

try:
    from qiskit import QuantumCircuit
    from qiskit.circuit.library import PauliEvolutionGate
    from qiskit.quantum_info import Pauli as QiskitPauli
    from qiskit.quantum_info import SparseObservable, SparsePauliOp
except ImportError as exc:  # pragma: no cover - exercised by a test that hides qiskit
    raise ImportError(
        "qiskit is required for monoprop.qiskit_conversion; install it with "
        "`pip install 'monoprop[qiskit]'` (qiskit>=2.0)."
    ) from exc

from .circuit import Circuit, ExpGate
from .pauli import Pauli, PauliOperator
from .validation import check_system_size

__all__ = [
    "PAULI_EVOLUTION_EQUIVALENT",
    "VALID_PAULI_GATES",
    "from_qiskit_circuit",
    "from_qiskit_operator",
    "to_qiskit_circuit",
    "to_qiskit_operator",
]

# Qiskit rotation gates r<P>(t) = exp(-i t P / 2); letter k of the name acts on qarg k.
PAULI_EVOLUTION_EQUIVALENT = {"rx", "ry", "rz", "rxx", "ryy", "rzz", "rxy", "rxz", "ryz"}
VALID_PAULI_GATES = PAULI_EVOLUTION_EQUIVALENT | {"PauliEvolution", "pauli_product_rotation"}


def from_qiskit_operator(
    qiskit_op: Any, *, atol: float = 1e-8, skip_validation: bool = False
) -> PauliOperator:
    """Convert a Qiskit ``SparsePauliOp``, ``SparseObservable`` or ``Pauli`` to a PauliOperator.

    Sparse operators are simplified first (terms with ``|c| <= atol`` dropped, equal labels
    summed); a ``Pauli``'s phase is folded into its coefficient. Labels are reversed into
    monoprop's order. Complex coefficients raise ``ValueError`` unless ``skip_validation``,
    which keeps the real parts.

    >>> from qiskit.quantum_info import SparsePauliOp
    >>> from_qiskit_operator(SparsePauliOp(["XZ"], [2.0]))
    PauliOperator(1 terms, 2 qubits: 2.0*Pauli('ZX', (0, 1)))
    """
    if isinstance(qiskit_op, SparseObservable):
        qiskit_op = SparsePauliOp.from_sparse_observable(qiskit_op)
    if isinstance(qiskit_op, SparsePauliOp):
        # simplify() returns a single zero identity term when everything cancels; kept as is.
        sparse = qiskit_op.simplify(atol=atol)
    elif isinstance(qiskit_op, QiskitPauli):
        sparse = SparsePauliOp(qiskit_op)  # folds the group phase (-i)**q into the coefficient
    else:
        raise TypeError(
            "from_qiskit_operator expects a qiskit SparsePauliOp, SparseObservable or Pauli; "
            f"got {type(qiskit_op).__name__}."
        )
    labels = sparse.paulis.to_labels()
    coeffs = np.asarray(sparse.coeffs)
    real = np.real_if_close(coeffs)
    if np.iscomplexobj(real) and not skip_validation:
        bad = [(label, complex(c)) for label, c in zip(labels, coeffs, strict=True) if c.imag != 0]
        raise ValueError(
            f"Operator has complex terms (qiskit label, coefficient): {bad[:4]}. A Hermitian "
            "observable needs real coefficients; pass skip_validation=True to keep real parts."
        )
    terms: dict[Pauli, float] = {}
    for label, c in zip(labels, np.real(coeffs), strict=True):
        key = Pauli(label[::-1])
        terms[key] = terms.get(key, 0.0) + float(c)
    return PauliOperator(terms, sparse.num_qubits, skip_validation=skip_validation)


def to_qiskit_operator(
    pauli_operator: PauliOperator, num_qubits: int | None = None
) -> SparsePauliOp:
    """Convert a PauliOperator to a Qiskit ``SparsePauliOp`` on ``num_qubits`` qubits.

    ``num_qubits`` defaults to the operator's. Each term is widened and its label reversed.

    >>> op = PauliOperator({"XZI": 1.0, "IIY": 0.5}, 3)
    >>> to_qiskit_operator(op).paulis.to_labels()
    ['IZX', 'YII']
    """
    if not isinstance(pauli_operator, PauliOperator):
        raise TypeError(
            f"to_qiskit_operator expects a PauliOperator; got {type(pauli_operator).__name__}."
        )
    if num_qubits is None:
        n = pauli_operator.num_qubits
    else:
        n = check_system_size(num_qubits, argument_name="num_qubits")
    labels = [
        _qiskit_label(p, list(range(n)), context="to_qiskit_operator") for p in pauli_operator.terms
    ]
    if not labels:
        return SparsePauliOp.from_list([], num_qubits=n)
    coeffs = np.array(list(pauli_operator.terms.values()), dtype=complex)
    return SparsePauliOp(labels, coeffs=coeffs)


def from_qiskit_circuit(circuit: QuantumCircuit, initial_state: Iterable[int] | None) -> Circuit:
    """Convert a Qiskit circuit of Pauli rotations to a Pauli-family ``Circuit``.

    Supported instructions (one ``ExpGate`` each, with its own angle): ``PauliEvolution``
    (generator ``-H``, angle ``t``), ``r<P>(t)`` for ``<P>`` in ``PAULI_EVOLUTION_EQUIVALENT``
    and ``pauli_product_rotation`` (generator ``-P/2``, angle ``t``). Barriers are skipped.

    >>> from qiskit import QuantumCircuit
    >>> qc = QuantumCircuit(2)
    >>> _ = qc.rx(0.5, 0)
    >>> _ = qc.rzz(0.3, 0, 1)
    >>> c = from_qiskit_circuit(qc, [0])
    >>> [g.generator.terms for g in c], c.parameters
    ([{Pauli('X', (0,)): -0.5}, {Pauli('ZZ', (0, 1)): -0.5}], (0.5, 0.3))
    """
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
    gates: list[ExpGate] = []
    angles: list[float] = []
    for pos, instruction in enumerate(circuit.data):
        operation = instruction.operation
        if operation.name == "barrier":
            continue
        qubits = [circuit.find_bit(q).index for q in instruction.qubits]
        terms, angle = _instruction_terms(operation, qubits, pos)
        try:
            gates.append(ExpGate(PauliOperator(terms, n)))
        except ValueError as exc:
            raise ValueError(f"Instruction {pos} ({operation.name}): {exc}") from exc
        angles.append(angle)
    return Circuit(gates, n, angles, initial_state)


def to_qiskit_circuit(circuit: Circuit, num_qubits: int) -> QuantumCircuit:
    """Convert a bound Pauli-family ``Circuit`` to a Qiskit circuit of PauliEvolutionGates.

    Gate ``k`` becomes ``PauliEvolutionGate(-generator, time=parameters[resolved_mapping[k]])``
    restricted to, and appended on, the sorted qubits the generator touches.

    >>> gate = ExpGate(PauliOperator({Pauli("ZXY", (3, 1, 2)): 1.5}, 5))
    >>> qc = to_qiskit_circuit(Circuit([gate], 5, parameters=[0.7]), 5)
    >>> op = qc.data[0].operation
    >>> op.operator.paulis.to_labels(), op.operator.coeffs.real.tolist(), op.params
    (['ZYX'], [-1.5], [0.7])
    >>> [qc.find_bit(q).index for q in qc.data[0].qubits]
    [1, 2, 3]
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
    for pos, (gate, slot) in enumerate(zip(circuit, circuit.resolved_mapping, strict=True)):
        if gate.family != "pauli":
            raise TypeError(
                f"to_qiskit_circuit cannot convert a majorana-family gate (gate {pos}); only "
                "Pauli-family circuits map onto qubit gates."
            )
        theta = circuit.parameters[slot]
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


def _qiskit_label(pauli: Pauli, qubits: Sequence[int], *, context: str) -> str:
    """Qiskit label of ``pauli`` on ``qubits`` (sorted): character of ``qubits[k]`` at ``-1-k``."""
    position = {q: k for k, q in enumerate(qubits)}
    chars = ["I"] * len(qubits)
    for qubit, letter in zip(pauli.qubits, pauli.string, strict=True):
        if qubit not in position:
            raise ValueError(
                f"{context}: term {pauli!r} acts on qubit {qubit}, outside the "
                f"{len(qubits)} target qubits; pass a larger num_qubits."
            )
        chars[len(qubits) - 1 - position[qubit]] = letter
    return "".join(chars)


def _instruction_terms(operation: Any, qubits: list[int], pos: int) -> tuple[dict, float]:
    """Generator terms (on circuit qubits, monoprop sign) and angle of one instruction."""
    name = operation.name
    if name in PAULI_EVOLUTION_EQUIVALENT:
        letters = name[1:].upper()
        return {Pauli(letters, qubits): -0.5}, _angle(operation, pos)
    if name == "pauli_product_rotation":
        pauli = operation.pauli
        local = from_qiskit_operator(pauli() if callable(pauli) else pauli)
        return _placed(local, qubits, -0.5), _angle(operation, pos)
    if name == "PauliEvolution":
        parts = operation.operator
        terms: dict[Pauli, float] = {}
        # A list of operators evolves their sum.
        for part in parts if isinstance(parts, list) else [parts]:
            for key, c in _placed(from_qiskit_operator(part), qubits, -1.0).items():
                terms[key] = terms.get(key, 0.0) + c
        return terms, _angle(operation, pos)
    raise ValueError(
        f"Unsupported gate {name!r} at instruction {pos}; from_qiskit_circuit accepts "
        f"{sorted(VALID_PAULI_GATES)} (transpile to these first) and skips barriers."
    )


def _placed(local: PauliOperator, qubits: list[int], scale: float) -> dict[Pauli, float]:
    """Move an operator on an instruction's local qubits ``0..k-1`` onto circuit qubits."""
    return {
        Pauli(p.string, [qubits[q] for q in p.qubits]): scale * c for p, c in local.terms.items()
    }


def _angle(operation: Any, pos: int) -> float:
    value = operation.params[0]
    try:
        return float(value)
    except TypeError as exc:
        raise ValueError(
            f"Instruction {pos} ({operation.name}) has an unbound parameter {value}; bind it "
            "with QuantumCircuit.assign_parameters before converting."
        ) from exc
