"""Slow, plainly-correct dense reference for the monoprop tests.

Everything here is built from explicit 2^n x 2^n matrices with numpy/scipy and knows
nothing about monoprop: inputs are plain Python data (dicts keyed by Pauli strings or by
Majorana index tuples), outputs are numpy arrays or plain dicts.

Conventions, the same as monoprop's and all fixed here once:

* qubit 0 is the *leftmost* Kronecker factor; a Pauli string ``"XZ"`` is X on qubit 0,
  Z on qubit 1 (character k on qubit k);
* an occupied mode / qubit in the reference state is ``|1>`` (Z eigenvalue -1);
* Jordan-Wigner, 0-based: ``m_{2j} = Z_0...Z_{j-1} X_j`` and ``m_{2j+1} = Z_0...Z_{j-1} Y_j``;
* a Majorana operator is ``sum_S c_S m_{s1} m_{s2} ... m_{sw}`` with the *bare* product taken
  in the order the indices are listed (sorted tuples in every output);
* a gate with Hermitian generator H at angle theta is ``U = expm(+i theta H)``; gates are
  listed in application order (first gate acts first on the state), so a circuit is
  ``U = U_L ... U_1``;
* Heisenberg picture: ``O(theta) = U^dagger O U``; Schrödinger picture:
  ``R(theta) = U R U^dagger`` with ``R = 2^n |ref><ref|`` (identity coefficient 1).

Decompositions use trace inner products: the 4^n Pauli strings and the 4^n sorted Majorana
products are each orthogonal bases with ``Tr(B^dagger B') = 2^n delta``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
from scipy.linalg import expm

I2 = np.eye(2, dtype=complex)
PAULI_X = np.array([[0, 1], [1, 0]], dtype=complex)
PAULI_Y = np.array([[0, -1j], [1j, 0]], dtype=complex)
PAULI_Z = np.array([[1, 0], [0, -1]], dtype=complex)
PAULI_MATRICES = {"I": I2, "X": PAULI_X, "Y": PAULI_Y, "Z": PAULI_Z}

# Matrices are cached (and stacked for decompositions) only up to this many qubits/modes;
# 5 keeps every cache below ~20 MB.
_MAX_CACHED_N = 5


# ---------------------------------------------------------------------------------------
# Basic matrices
# ---------------------------------------------------------------------------------------


def kron_all(factors: Iterable[np.ndarray]) -> np.ndarray:
    """Kronecker product of the factors, first factor leftmost (qubit 0)."""
    out = np.ones((1, 1), dtype=complex)
    for factor in factors:
        out = np.kron(out, factor)
    return out


def pauli_string_matrix(string: str) -> np.ndarray:
    """Matrix of a full-width Pauli string, character k acting on qubit k."""
    return kron_all(PAULI_MATRICES[ch] for ch in string)


def majorana_matrix(k: int, n: int) -> np.ndarray:
    """JW Majorana m_k on n modes: Z on modes < k//2, X (k even) or Y (k odd) on mode k//2."""
    if not 0 <= k < 2 * n:
        raise ValueError(f"Majorana index {k} out of range for {n} modes")
    j = k // 2
    letter = "X" if k % 2 == 0 else "Y"
    return pauli_string_matrix("Z" * j + letter + "I" * (n - j - 1))


@functools.cache
def _majorana_matrices_cached(n: int) -> tuple[np.ndarray, ...]:
    mats = tuple(majorana_matrix(k, n) for k in range(2 * n))
    for m in mats:
        m.setflags(write=False)
    return mats


def majorana_matrices(n: int) -> list[np.ndarray]:
    """The 2n JW Majorana matrices m_0 ... m_{2n-1}."""
    return list(_majorana_matrices_cached(n))


def majorana_product_matrix(indices: Sequence[int], n: int) -> np.ndarray:
    """The bare product m_{i1} m_{i2} ... in the listed order (identity for ())."""
    mats = _majorana_matrices_cached(n)
    out = np.eye(2**n, dtype=complex)
    for k in indices:
        out = out @ mats[k]
    return out


def pauli_operator_matrix(terms: Mapping[str, complex], n: int) -> np.ndarray:
    """sum_P c_P P for full-width Pauli strings."""
    out = np.zeros((2**n, 2**n), dtype=complex)
    for string, coeff in terms.items():
        if len(string) != n:
            raise ValueError(f"Pauli string {string!r} is not {n} characters wide")
        out += coeff * pauli_string_matrix(string)
    return out


def majorana_operator_matrix(terms: Mapping[Sequence[int], complex], n: int) -> np.ndarray:
    """sum_S c_S m_S with m_S the bare product in the listed index order."""
    out = np.zeros((2**n, 2**n), dtype=complex)
    for indices, coeff in terms.items():
        out += coeff * majorana_product_matrix(tuple(indices), n)
    return out


# ---------------------------------------------------------------------------------------
# Fermionic ladder operators from the Majoranas: c_j^dagger = (m_{2j} - i m_{2j+1}) / 2
# ---------------------------------------------------------------------------------------


def creation_matrix(j: int, n: int) -> np.ndarray:
    """c_j^dagger = (m_{2j} - i m_{2j+1}) / 2."""
    mats = _majorana_matrices_cached(n)
    return (mats[2 * j] - 1j * mats[2 * j + 1]) / 2


def annihilation_matrix(j: int, n: int) -> np.ndarray:
    """c_j = (m_{2j} + i m_{2j+1}) / 2."""
    mats = _majorana_matrices_cached(n)
    return (mats[2 * j] + 1j * mats[2 * j + 1]) / 2


def number_matrix(j: int, n: int) -> np.ndarray:
    """n_j = c_j^dagger c_j."""
    return creation_matrix(j, n) @ annihilation_matrix(j, n)


def fermi_operator_matrix(terms: Mapping[Sequence[tuple[int, str]], complex], n: int) -> np.ndarray:
    """sum of coefficient * product of ladder operators, ``(j, "+")`` = c_j^dagger, in order."""
    out = np.zeros((2**n, 2**n), dtype=complex)
    for expression, coeff in terms.items():
        product = np.eye(2**n, dtype=complex)
        for mode, op in expression:
            if op == "+":
                product = product @ creation_matrix(mode, n)
            elif op == "-":
                product = product @ annihilation_matrix(mode, n)
            else:
                raise ValueError(f"ladder operator must be '+' or '-', got {op!r}")
        out += coeff * product
    return out


# ---------------------------------------------------------------------------------------
# Reference states
# ---------------------------------------------------------------------------------------


def basis_state(occupied: Iterable[int], n: int) -> np.ndarray:
    """Computational basis vector with the listed qubits in |1> (qubit 0 leftmost)."""
    occ = set(occupied)
    if any(not 0 <= q < n for q in occ):
        raise ValueError(f"occupied qubits {sorted(occ)} out of range for n={n}")
    return kron_all(
        np.array([[0], [1]] if q in occ else [[1], [0]], dtype=complex) for q in range(n)
    ).ravel()


def reference_R(occupied: Iterable[int], n: int) -> np.ndarray:
    """R = 2^n |ref><ref| = prod_j (1 + s_j Z_j), s_j = -1 for occupied j."""
    psi = basis_state(occupied, n)
    return 2**n * np.outer(psi, psi.conj())


# ---------------------------------------------------------------------------------------
# Gates, circuits, pictures
# ---------------------------------------------------------------------------------------


def gate_unitary(generator: np.ndarray, theta: float) -> np.ndarray:
    """U = expm(+i theta H)."""
    if not np.allclose(generator, generator.conj().T, atol=1e-12):
        raise ValueError("gate generator is not Hermitian")
    return expm(1j * theta * generator)


def circuit_unitary(generators: Sequence[np.ndarray], angles: Sequence[float]) -> np.ndarray:
    """U = U_L ... U_1 for generators in application order (first gate first)."""
    if len(generators) != len(angles):
        raise ValueError("one angle per gate")
    dim = generators[0].shape[0] if generators else 1
    u = np.eye(dim, dtype=complex)
    for generator, theta in zip(generators, angles, strict=True):
        u = gate_unitary(generator, theta) @ u
    return u


def gate_angles(parameters: Sequence[float], mapping: Sequence[int] | None) -> list[float]:
    """Per-gate angles: ``parameters[mapping[i]]`` (identity mapping when None)."""
    if mapping is None:
        return [float(p) for p in parameters]
    return [float(parameters[k]) for k in mapping]


def heisenberg_operator(observable: np.ndarray, unitary: np.ndarray) -> np.ndarray:
    """U^dagger O U."""
    return unitary.conj().T @ observable @ unitary


def schrodinger_R(occupied: Iterable[int], n: int, unitary: np.ndarray) -> np.ndarray:
    """U R U^dagger with R = 2^n |ref><ref|."""
    return unitary @ reference_R(occupied, n) @ unitary.conj().T


def expectation(
    observable: np.ndarray, occupied: Iterable[int], n: int, unitary: np.ndarray | None = None
) -> float:
    """<ref| U^dagger O U |ref> (U = identity when None); must be real."""
    psi = basis_state(occupied, n)
    if unitary is not None:
        psi = unitary @ psi
    value = np.vdot(psi, observable @ psi)
    if abs(value.imag) > 1e-9:
        raise ValueError(f"expectation value is not real: {value}")
    return float(value.real)


def circuit_expectation(
    observable: np.ndarray,
    occupied: Iterable[int],
    n: int,
    generators: Sequence[np.ndarray],
    parameters: Sequence[float],
    mapping: Sequence[int] | None = None,
) -> float:
    """f(theta) for a circuit whose gate i uses ``parameters[mapping[i]]``."""
    u = circuit_unitary(generators, gate_angles(parameters, mapping))
    return expectation(observable, occupied, n, u)


def circuit_gradient(
    observable: np.ndarray,
    occupied: Iterable[int],
    n: int,
    generators: Sequence[np.ndarray],
    parameters: Sequence[float],
    mapping: Sequence[int] | None = None,
) -> np.ndarray:
    """Exact df/dparameters by differentiating each gate: dU_i/dtheta = i H_i U_i.

    df/dtheta_i = 2 Re <psi| O U_L...U_{i+1} (i H_i) U_i...U_1 |ref>, summed over the
    gates sharing a parameter.
    """
    angles = gate_angles(parameters, mapping)
    gates = [gate_unitary(h, t) for h, t in zip(generators, angles, strict=True)]
    psi_ref = basis_state(occupied, n)
    # forward[i] = U_i ... U_1 |ref>
    forward, state = [], psi_ref
    for u in gates:
        state = u @ state
        forward.append(state)
    bra = observable @ state  # O |psi>
    grad = np.zeros(len(parameters))
    # tail = U_L ... U_{i+1}, built from the last gate backwards.
    tail = np.eye(2**n, dtype=complex)
    for i in reversed(range(len(gates))):
        d_state = tail @ (1j * generators[i] @ forward[i])
        k = i if mapping is None else mapping[i]
        grad[k] += 2 * np.vdot(bra, d_state).real
        tail = tail @ gates[i]
    return grad


# ---------------------------------------------------------------------------------------
# Decompositions into Pauli strings and bare sorted Majorana products
# ---------------------------------------------------------------------------------------


def pauli_labels(n: int) -> list[str]:
    """All 4^n full-width Pauli strings, in lexicographic I<X<Y<Z order."""
    return ["".join(p) for p in itertools.product("IXYZ", repeat=n)]


def majorana_labels(n: int) -> list[tuple[int, ...]]:
    """All 4^n sorted index tuples over 0..2n-1, by weight then lexicographically."""
    return [combo for w in range(2 * n + 1) for combo in itertools.combinations(range(2 * n), w)]


@functools.cache
def _stacked_basis(kind: str, n: int) -> np.ndarray:
    """Rows = flattened conjugated basis matrices, for the cached sizes only."""
    labels = pauli_labels(n) if kind == "pauli" else majorana_labels(n)
    rows = np.empty((len(labels), 4**n), dtype=complex)
    for r, label in enumerate(labels):
        rows[r] = _basis_matrix(kind, label, n).conj().ravel()
    rows.setflags(write=False)
    return rows


def _basis_matrix(kind: str, label, n: int) -> np.ndarray:
    if kind == "pauli":
        return pauli_string_matrix(label)
    return majorana_product_matrix(label, n)


def _decompose(kind: str, matrix: np.ndarray, n: int, atol: float) -> dict:
    if matrix.shape != (2**n, 2**n):
        raise ValueError(f"matrix shape {matrix.shape} does not fit n={n}")
    labels = pauli_labels(n) if kind == "pauli" else majorana_labels(n)
    if n <= _MAX_CACHED_N:
        coeffs = _stacked_basis(kind, n) @ matrix.ravel() / 2**n
    elif kind == "pauli":
        by_label = _pauli_partial_trace(matrix, n)
        coeffs = [by_label[lab] for lab in labels]
    else:
        # Tr(B^dagger M) / 2^n, one basis element at a time.
        coeffs = np.array([np.vdot(_basis_matrix(kind, lab, n), matrix) / 2**n for lab in labels])
    return {lab: complex(c) for lab, c in zip(labels, coeffs, strict=True) if abs(c) > atol}


def _pauli_partial_trace(matrix: np.ndarray, n: int) -> dict[str, complex]:
    """Tr(P M) / 2^n for all Pauli strings, one qubit at a time.

    With M = sum_{a,b} |a><b| (x) M_ab on qubit 0,
    Tr((P (x) Q) M) / 2^n = Tr(Q S_P) / 2^(n-1) where S_P = (1/2) sum_{a,b} P_ba M_ab.
    Same numbers as the direct trace (tested), without 4^n dense basis matrices.
    """
    if n == 0:
        return {"": complex(matrix[0, 0])}
    half = 2 ** (n - 1)
    blocks = matrix.reshape(2, half, 2, half)
    out = {}
    for letter, pauli in PAULI_MATRICES.items():
        reduced = sum(pauli[b, a] * blocks[a, :, b, :] for a in range(2) for b in range(2)) / 2
        for rest, coeff in _pauli_partial_trace(reduced, n - 1).items():
            out[letter + rest] = coeff
    return out


def pauli_decompose(matrix: np.ndarray, n: int, atol: float = 1e-12) -> dict[str, complex]:
    """c_P = Tr(P M) / 2^n for every Pauli string P with |c_P| > atol."""
    return _decompose("pauli", matrix, n, atol)


def pauli_decompose_partial_trace(
    matrix: np.ndarray, n: int, atol: float = 1e-12
) -> dict[str, complex]:
    """Same as pauli_decompose, computed qubit by qubit (used for n > 5)."""
    return {k: v for k, v in _pauli_partial_trace(matrix, n).items() if abs(v) > atol}


def majorana_decompose(
    matrix: np.ndarray, n: int, atol: float = 1e-12
) -> dict[tuple[int, ...], complex]:
    """Bare sorted-product coefficients c_S = Tr(m_S^dagger M) / 2^n with |c_S| > atol."""
    return _decompose("majorana", matrix, n, atol)


def real_coefficients(terms: Mapping, tol: float = 1e-10) -> dict:
    """The same dict with float values; raises if any imaginary part exceeds tol."""
    out = {}
    for key, value in terms.items():
        value = complex(value)
        if abs(value.imag) > tol:
            raise ValueError(f"coefficient of {key!r} is not real: {value}")
        out[key] = value.real
    return out


# ---------------------------------------------------------------------------------------
# Majorana phases and the structural (dense/wire) coefficient: the Hermitian form of a bare
# weight-w product m_S is i^{C(w,2)} m_S, and a structural entry (S, g) is the generator term
# c m_S with c = -g i^{C(w,2)}
# ---------------------------------------------------------------------------------------


def hermitian_phase(weight: int) -> complex:
    """i^{C(w,2)}: the phase making a bare weight-w product Hermitian."""
    return (1, 1j, -1, -1j)[(weight * (weight - 1) // 2) % 4]


def hermitian_basis_coefficients(
    terms: Mapping[Sequence[int], complex], tol: float = 1e-10
) -> dict[tuple[int, ...], float]:
    """h_S = c_S / i^{C(w,2)} (real for a Hermitian operator)."""
    return real_coefficients(
        {tuple(s): complex(c) / hermitian_phase(len(s)) for s, c in terms.items()}, tol
    )


def structural_to_bare(indices: Sequence[int], g: float) -> complex:
    """Bare Hermitian coefficient of a structural generator entry: c = -g i^{C(w,2)}."""
    return -g * hermitian_phase(len(indices))


def majorana_terms_anticommute(s1: Iterable[int], s2: Iterable[int]) -> bool:
    """Sorted products anticommute iff |S1||S2| - |S1 & S2| is odd."""
    a, b = set(s1), set(s2)
    return (len(a) * len(b) - len(a & b)) % 2 == 1


def pauli_strings_anticommute(p1: str, p2: str) -> bool:
    """Two Pauli strings anticommute iff they differ (both non-I) on an odd number of qubits."""
    clashes = sum(1 for a, b in zip(p1, p2, strict=True) if "I" not in (a, b) and a != b)
    return clashes % 2 == 1


# ---------------------------------------------------------------------------------------
# Finite differences and comparisons
# ---------------------------------------------------------------------------------------


def central_difference(
    f: Callable[[np.ndarray], float], x: Sequence[float], h: float = 1e-5
) -> np.ndarray:
    """Central finite-difference gradient (f(x + h e_k) - f(x - h e_k)) / 2h."""
    x = np.asarray(x, dtype=float)
    grad = np.empty_like(x)
    for k in range(x.size):
        step = np.zeros_like(x)
        step[k] = h
        grad[k] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


def max_coefficient_difference(actual: Mapping, expected: Mapping) -> tuple[float, object]:
    """Largest |actual - expected| over the union of keys (missing = 0), and its key."""
    worst, worst_key = 0.0, None
    for key in set(actual) | set(expected):
        diff = abs(complex(actual.get(key, 0)) - complex(expected.get(key, 0)))
        if diff > worst:
            worst, worst_key = diff, key
    return worst, worst_key


# ---------------------------------------------------------------------------------------
# Adapters: read objects that expose a ``.terms`` mapping into plain dicts.
# (Duck-typed on public attributes, so this module still imports nothing from monoprop.)
# ---------------------------------------------------------------------------------------


def pauli_terms_to_strings(terms: Mapping, n: int) -> dict[str, float]:
    """{Pauli-like key with .qubits/.string: c} -> {full-width string: c} (keys summed)."""
    out: dict[str, float] = {}
    for key, coeff in terms.items():
        label = widen_pauli(key.string, key.qubits, n)
        out[label] = out.get(label, 0.0) + coeff
    return out


def widen_pauli(string: str, qubits: Sequence[int], n: int) -> str:
    """Full-width Pauli string with ``string[k]`` on ``qubits[k]``."""
    letters = ["I"] * n
    for qubit, letter in zip(qubits, string, strict=True):
        letters[qubit] = letter
    return "".join(letters)


# ---------------------------------------------------------------------------------------
# Random circuits as plain data: reproducible from an integer seed, for the comparisons of
# the propagators against this reference
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RandomCase:
    """A random circuit problem in plain Python data.

    ``generators[i]`` is gate i's Hermitian generator (dict of full-width Pauli strings or
    sorted Majorana tuples -> coefficient, terms pairwise commuting); gate i uses angle
    ``parameters[mapping[i]]`` (``mapping`` None = one parameter per gate).
    """

    family: str
    n: int
    observable: dict
    occupied: tuple[int, ...]
    generators: tuple[dict, ...]
    parameters: tuple[float, ...]
    mapping: tuple[int, ...] | None

    def operator_matrix(self, terms: Mapping) -> np.ndarray:
        if self.family == "pauli":
            return pauli_operator_matrix(terms, self.n)
        return majorana_operator_matrix(terms, self.n)

    def decompose(self, matrix: np.ndarray) -> dict:
        if self.family == "pauli":
            return real_coefficients(pauli_decompose(matrix, self.n, atol=0.0))
        return majorana_decompose(matrix, self.n, atol=0.0)

    def unitary(self, parameters: Sequence[float] | None = None) -> np.ndarray:
        params = self.parameters if parameters is None else parameters
        mats = [self.operator_matrix(g) for g in self.generators]
        return circuit_unitary(mats, gate_angles(params, self.mapping))

    def expectation(self, parameters: Sequence[float] | None = None) -> float:
        return expectation(
            self.operator_matrix(self.observable), self.occupied, self.n, self.unitary(parameters)
        )

    def heisenberg_terms(self, parameters: Sequence[float] | None = None) -> dict:
        """Coefficients of U^dagger O U (all 4^n keys, zeros included)."""
        return self.decompose(
            heisenberg_operator(self.operator_matrix(self.observable), self.unitary(parameters))
        )

    def schrodinger_terms(self, parameters: Sequence[float] | None = None) -> dict:
        """Coefficients of 2^n rho(theta) = U R U^dagger (all 4^n keys, zeros included)."""
        return self.decompose(schrodinger_R(self.occupied, self.n, self.unitary(parameters)))

    def finite_difference_gradient(
        self, parameters: Sequence[float], h: float = 1e-5
    ) -> np.ndarray:
        return central_difference(self.expectation, parameters, h)

    def exact_gradient(self, parameters: Sequence[float]) -> np.ndarray:
        return circuit_gradient(
            self.operator_matrix(self.observable),
            self.occupied,
            self.n,
            [self.operator_matrix(g) for g in self.generators],
            parameters,
            self.mapping,
        )


def _random_coefficient(rng: np.random.Generator, low: float = 0.2, high: float = 1.0) -> float:
    return float(rng.choice([-1.0, 1.0]) * rng.uniform(low, high))


def _random_pauli_term(rng: np.random.Generator, n: int, weight: int) -> str:
    letters = ["I"] * n
    for q in rng.choice(n, size=weight, replace=False):
        letters[int(q)] = "XYZ"[int(rng.integers(3))]
    return "".join(letters)


def _random_majorana_term(rng: np.random.Generator, n: int, weight: int) -> tuple[int, ...]:
    return tuple(sorted(int(k) for k in rng.choice(2 * n, size=weight, replace=False)))


def _random_term(rng, family: str, n: int, weight: int):
    if family == "pauli":
        return _random_pauli_term(rng, n, weight)
    return _random_majorana_term(rng, n, weight)


def _hermitian_coefficient(family: str, term, h: float) -> complex | float:
    return h if family == "pauli" else h * hermitian_phase(len(term))


def _terms_anticommute(family: str, a, b) -> bool:
    if family == "pauli":
        return pauli_strings_anticommute(a, b)
    return majorana_terms_anticommute(a, b)


def random_case(
    seed: int,
    family: str,
    n: int,
    *,
    num_gates: int = 6,
    max_generator_terms: int = 2,
    max_generator_weight: int = 4,
    observable_terms: tuple[int, int] = (3, 5),
    shared_parameters: bool = False,
) -> RandomCase:
    """A reproducible random circuit: gates of 1..max_generator_terms commuting terms of
    weight 1..max_generator_weight, a random reference state and a multi-term observable."""
    rng = np.random.default_rng(seed)
    max_weight = n if family == "pauli" else 2 * n
    gen_weight = min(max_generator_weight, max_weight)

    generators = []
    for _ in range(num_gates):
        wanted = int(rng.integers(1, max_generator_terms + 1))
        terms: list = []
        for _attempt in range(50):
            if len(terms) == wanted:
                break
            term = _random_term(rng, family, n, int(rng.integers(1, gen_weight + 1)))
            if term in terms or any(_terms_anticommute(family, term, t) for t in terms):
                continue
            terms.append(term)
        generators.append(
            {t: _hermitian_coefficient(family, t, _random_coefficient(rng)) for t in terms}
        )

    observable: dict = {}
    for _ in range(int(rng.integers(observable_terms[0], observable_terms[1] + 1))):
        term = _random_term(rng, family, n, int(rng.integers(1, max_weight + 1)))
        observable[term] = _hermitian_coefficient(family, term, _random_coefficient(rng))
    if rng.random() < 0.5:
        identity = "I" * n if family == "pauli" else ()
        observable[identity] = _random_coefficient(rng)

    occupied = tuple(q for q in range(n) if rng.random() < 0.5)

    if shared_parameters:
        k = int(rng.integers(2, num_gates + 1))
        mapping_list = list(range(k)) + [int(x) for x in rng.integers(0, k, size=num_gates - k)]
        rng.shuffle(mapping_list)
        mapping: tuple[int, ...] | None = tuple(int(x) for x in mapping_list)
        num_params = k
    else:
        mapping = None
        num_params = num_gates
    parameters = tuple(float(x) for x in rng.uniform(-1.5, 1.5, size=num_params))
    return RandomCase(family, n, observable, occupied, tuple(generators), parameters, mapping)
