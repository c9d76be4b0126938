"""Dense Jordan-Wigner reference for the operator tests (deliberately naive).

Qubit 0 is the leftmost Kronecker factor; |0> = (1, 0), |1> = (0, 1).
m_{2j} = Z_0..Z_{j-1} X_j, m_{2j+1} = Z_0..Z_{j-1} Y_j; c_j^† = Z_0..Z_{j-1} |1><0|_j.
Nothing here imports monoprop's conversion code: it reads only `.terms`.
"""

from functools import reduce

import numpy as np

I2 = np.eye(2, dtype=complex)
X = np.array([[0, 1], [1, 0]], dtype=complex)
Y = np.array([[0, -1j], [1j, 0]], dtype=complex)
Z = np.array([[1, 0], [0, -1]], dtype=complex)
RAISE = np.array([[0, 0], [1, 0]], dtype=complex)  # |1><0|
LETTER = {"I": I2, "X": X, "Y": Y, "Z": Z}


def kron(factors):
    return reduce(np.kron, factors, np.eye(1, dtype=complex))


def pauli_matrix(letters_by_qubit, n):
    """Dense matrix of {qubit: letter} on n qubits."""
    return kron([LETTER[letters_by_qubit.get(q, "I")] for q in range(n)])


def majoranas(n):
    out = []
    for j in range(n):
        for last in (X, Y):
            out.append(kron([Z] * j + [last] + [I2] * (n - j - 1)))
    return out


def creation(n):
    return [kron([Z] * j + [RAISE] + [I2] * (n - j - 1)) for j in range(n)]


def pauli_operator_matrix(op):
    n = op.num_qubits
    total = np.zeros((2**n, 2**n), dtype=complex)
    for pauli, c in op.terms.items():
        total += c * pauli_matrix(dict(zip(pauli.qubits, pauli.string, strict=True)), n)
    return total


def majorana_operator_matrix(op):
    n = op.num_modes
    ms = majoranas(n)
    total = np.zeros((2**n, 2**n), dtype=complex)
    for key, c in op.terms.items():
        total += c * reduce(np.matmul, [ms[i] for i in key], np.eye(2**n, dtype=complex))
    return total


def fermi_operator_matrix(op):
    n = op.num_modes
    cdag = creation(n)
    total = np.zeros((2**n, 2**n), dtype=complex)
    for term, c in zip(op.terms, op.coefficients, strict=False):
        factors = [cdag[i] if kind == "+" else cdag[i].conj().T for i, kind in term.expression]
        total += c * reduce(np.matmul, factors, np.eye(2**n, dtype=complex))
    return total
