"""Dense evaluation of Pauli-family monoprop circuits (rotations and Clifford gates).

Until the propagators apply ``CliffordGate`` objects, the Qiskit conversion is checked against
this: a circuit's unitary is the product, in application order, of ``expm(+i θ H)`` per
``ExpGate`` (``θ`` its slot's value) and ``expm(+i k π/4 H)`` per ``CliffordGate`` factor
``(H, k)``. Matrices are in monoprop's order (qubit 0 = leftmost Kronecker factor, see
``tests/dense_reference.py``); Qiskit operators and states put qubit 0 rightmost, so observables
are read label-reversed and unitaries compared after :func:`to_qiskit_order`.

Only public attributes of the circuit are read (``gates``, ``system_size``, ``parameters``,
``resolved_mapping``, ``initial_state``, ``ExpGate.generator``, ``CliffordGate.factors``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from dense_reference import basis_state, pauli_operator_matrix, pauli_terms_to_strings
from scipy.linalg import expm

__all__ = [
    "circuit_expectation",
    "circuit_gradient",
    "circuit_unitary",
    "equal_up_to_phase",
    "gate_unitaries",
    "observable_matrix",
    "operator_matrix",
    "to_qiskit_order",
]


def operator_matrix(operator, n: int) -> np.ndarray:
    """Dense matrix of a PauliOperator (anything with ``.terms`` keyed by Pauli-like keys)."""
    return pauli_operator_matrix(pauli_terms_to_strings(operator.terms, n), n)


def observable_matrix(observable, n: int) -> np.ndarray:
    """Dense matrix (monoprop order) of a Qiskit ``SparsePauliOp``: labels are reversed."""
    terms: dict[str, complex] = {}
    for label, coeff in zip(observable.paulis.to_labels(), observable.coeffs, strict=True):
        terms[label[::-1]] = terms.get(label[::-1], 0) + complex(coeff)
    return pauli_operator_matrix(terms, n)


def _values(circuit, parameters: Sequence[float] | None) -> np.ndarray:
    values = circuit.parameters if parameters is None else parameters
    values = np.asarray(values, dtype=float)
    if values.size != circuit.n_parameters:
        raise ValueError(f"{values.size} values for {circuit.n_parameters} parameter slots")
    return values


def gate_unitaries(circuit, parameters: Sequence[float] | None = None):
    """Per gate, in order: ``(unitary, generator matrix or None, slot or None)``.

    Rotations carry their generator ``H`` and slot (``dU/dθ = i H U``); Clifford gates carry
    neither. ``parameters`` defaults to the circuit's own (bound) values.
    """
    n = circuit.system_size
    values = _values(circuit, parameters)
    slots = iter(circuit.resolved_mapping)
    out = []
    for gate in circuit.gates:
        factors = getattr(gate, "factors", None)
        if factors is None:  # an ExpGate rotation
            slot = next(slots)
            h = operator_matrix(gate.generator, n)
            out.append((expm(1j * values[slot] * h), h, slot))
            continue
        u = np.eye(2**n, dtype=complex)
        for operator, k in factors:
            u = expm(1j * k * np.pi / 4 * operator_matrix(operator, n)) @ u
        out.append((u, None, None))
    return out


def circuit_unitary(circuit, parameters: Sequence[float] | None = None) -> np.ndarray:
    """``U = U_L … U_1`` in monoprop order."""
    u = np.eye(2**circuit.system_size, dtype=complex)
    for gate_u, _, _ in gate_unitaries(circuit, parameters):
        u = gate_u @ u
    return u


def _reference(circuit, initial_state: Iterable[int] | None) -> np.ndarray:
    occupied = circuit.initial_state if initial_state is None else initial_state
    return basis_state(occupied, circuit.system_size)


def circuit_expectation(
    circuit,
    observable,
    parameters: Sequence[float] | None = None,
    initial_state: Iterable[int] | None = None,
) -> float:
    """``<ref| U† O U |ref>`` for a Qiskit ``SparsePauliOp`` observable ``O``.

    ``ref`` is the basis state with ``initial_state`` (default: the circuit's) in ``|1>``;
    ``parameters`` (default: the circuit's own) holds one value per slot.
    """
    psi = circuit_unitary(circuit, parameters) @ _reference(circuit, initial_state)
    value = np.vdot(psi, observable_matrix(observable, circuit.system_size) @ psi)
    return float(value.real)


def circuit_gradient(
    circuit,
    observable,
    parameters: Sequence[float] | None = None,
    initial_state: Iterable[int] | None = None,
) -> np.ndarray:
    """Exact ``d<O>/d(slot values)``: rotations sharing a slot add up; Clifford gates have none."""
    values = _values(circuit, parameters)
    gates = gate_unitaries(circuit, values)
    forward = [_reference(circuit, initial_state)]
    for u, _, _ in gates:
        forward.append(u @ forward[-1])
    bra = observable_matrix(observable, circuit.system_size) @ forward[-1]
    grad = np.zeros(values.size)
    tail = np.eye(2**circuit.system_size, dtype=complex)  # U_L … U_{i+1}
    for i in reversed(range(len(gates))):
        u, h, slot = gates[i]
        if h is not None:
            grad[slot] += 2 * np.vdot(bra, tail @ (1j * h @ forward[i + 1])).real
        tail = tail @ u
    return grad


def to_qiskit_order(matrix: np.ndarray, n: int) -> np.ndarray:
    """A 2^n x 2^n matrix with its qubit order reversed (monoprop <-> Qiskit)."""
    tensor = matrix.reshape([2] * (2 * n))
    axes = list(range(n))[::-1] + list(range(n, 2 * n))[::-1]
    return tensor.transpose(axes).reshape(2**n, 2**n)


def equal_up_to_phase(a: np.ndarray, b: np.ndarray, atol: float = 1e-10) -> bool:
    """Whether ``a = e^{iφ} b`` for some global phase ``φ``."""
    k = int(np.argmax(np.abs(b)))
    if abs(b.flat[k]) < atol:
        return bool(np.allclose(a, b, atol=atol))
    phase = a.flat[k] / b.flat[k]
    return bool(abs(abs(phase) - 1) < atol and np.allclose(a, phase * b, atol=atol))
