"""Conversions of operators between monoprop and Qiskit, below :mod:`monoprop.qiskit_conversion`.

:func:`from_qiskit_operator` and :func:`to_qiskit_operator` (exported by
:mod:`monoprop.qiskit_conversion`, which see for the conventions) live here so that the circuit
reader (``_qiskit_gates``), which converts the operators of ``PauliEvolution`` and
``pauli_product_rotation`` gates, and the conversion module above it both import them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from qiskit.quantum_info import Pauli as QiskitPauli
from qiskit.quantum_info import SparseObservable, SparsePauliOp

from .pauli import Pauli, PauliOperator
from .validation import check_system_size

__all__ = ["from_qiskit_operator", "to_qiskit_operator"]


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
