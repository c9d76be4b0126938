"""Dense density-matrix reference for monoprop's noise channels (tests/test_noise.py).

Everything is an explicit 2^n x 2^n matrix (numpy/scipy, up to ~8 qubits); nothing here imports
monoprop. Conventions are those of tests/dense_reference.py: qubit 0 is the leftmost Kronecker
factor, an occupied qubit/mode is ``|1>``, Jordan-Wigner ``m_{2j} = Z_0..Z_{j-1} X_j``,
``m_{2j+1} = Z_0..Z_{j-1} Y_j``, gates ``U = expm(+i theta H)`` applied in list order.

A channel is written as an *operator sum with real weights*, a list of ``(w, A)`` pairs:

    E(rho)   = sum_i w_i A_i rho A_i^dagger   (Schrödinger)
    E^dag(O) = sum_i w_i A_i^dagger O A_i     (Heisenberg: Tr(O E(rho)) = Tr(E^dag(O) rho))

For a physical channel every ``w_i >= 0`` and ``K_i = sqrt(w_i) A_i`` are its Kraus operators
(:func:`kraus_operators`); the weights only matter for the Pauli-Lindblad maps with negative
rates (the non-physical inverse maps of error mitigation), whose weights go negative.

Channels (qiskit_aer conventions; ``k`` = number of qubits the channel acts on):

* ``depolarizing(p, qubits)``: ``(1 - p) rho + p Tr_k(rho) (x) I/2^k``, written with
  ``(1/4^k) sum_P P rho P = Tr_k(rho) (x) I/2^k`` as weights ``1 - p (4^k - 1)/4^k`` on I and
  ``p/4^k`` on the other 4^k - 1 Paulis; ``p`` in ``[0, 4^k/(4^k - 1)]``;
* ``pauli_channel({label: p}, qubits)``: ``sum_P p_P P rho P``, character j of a label on
  ``qubits[j]``, ``p_I = 1 - sum`` of the rest unless the identity label is given;
* ``bit_flip`` / ``phase_flip`` / ``bit_phase_flip``: X / Z / Y with probability ``p``;
* ``amplitude_damping(gamma, q)``: ``K0 = [[1, 0], [0, sqrt(1 - gamma)]]``,
  ``K1 = [[0, sqrt(gamma)], [0, 0]]`` (``|1> -> |0>``);
* ``pauli_lindblad(generators, rates)``: ``prod_k exp(lambda_k (Q_k rho Q_k - rho))``; each factor
  is ``(1 - w) rho + w Q rho Q`` with ``w = (1 - exp(-2 lambda))/2`` (also computed independently
  as the exponential of the Lindbladian superoperator, :func:`lindblad_superoperator`);
* ``dephasing(p, j)`` (fermionic): ``K0 = sqrt(1 - p) I``, ``K1 = sqrt(p) (1 - 2 n_j)``;
* ``particle_loss(gamma, j)`` (fermionic): ``K0 = 1 - (1 - sqrt(1 - gamma)) n_j``,
  ``K1 = sqrt(gamma) a_j``, with ``a_j``, ``n_j`` the JW annihilator and number operator.

A noisy circuit (:class:`NoisyCase`) is a list of items in application order, each a
:class:`GateSpec` (rotation ``expm(+i theta H)``, ``theta = parameters[slot]``) or a
:class:`ChannelSpec` (rate fixed, or read from ``parameters[index]``), or a
:class:`FixedGateSpec` (a rotation at a fixed angle). Evaluation:
``<O> = Tr(O E(rho_ref))`` with ``rho_ref = |ref><ref|``; the Heisenberg operator
``E^dag(O)`` and the Schrödinger state ``2^n E(rho_ref)``, decomposed into Pauli strings or
sorted bare Majorana products; the gradient by a Richardson-extrapolated central difference of
the dense value (exact to ~1e-11, in angles and rates alike).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence

import dense_reference as dr
import numpy as np
from scipy.linalg import expm

Terms = list[tuple[float, np.ndarray]]

PAULI_CHANNELS = (
    "depolarizing",
    "pauli_channel",
    "bit_flip",
    "phase_flip",
    "bit_phase_flip",
    "amplitude_damping",
    "pauli_lindblad",
)
MAJORANA_CHANNELS = ("dephasing", "particle_loss")
FLIP_LETTER = {"bit_flip": "X", "phase_flip": "Z", "bit_phase_flip": "Y"}


# ---------------------------------------------------------------------------------------
# Embedding
# ---------------------------------------------------------------------------------------


def pauli_on(label: str, qubits: Sequence[int], n: int) -> np.ndarray:
    """The Pauli string with ``label[j]`` on ``qubits[j]`` and I elsewhere."""
    if len(label) != len(qubits) or len(set(qubits)) != len(qubits):
        raise ValueError(f"label {label!r} does not fit distinct qubits {list(qubits)}")
    return dr.pauli_string_matrix(dr.widen_pauli(label, list(qubits), n))


def single_qubit_operator(matrix: np.ndarray, qubit: int, n: int) -> np.ndarray:
    """``matrix`` on ``qubit`` (2 x 2), identity on the other qubits."""
    if not 0 <= qubit < n:
        raise ValueError(f"qubit {qubit} out of range for n={n}")
    return dr.kron_all(matrix if q == qubit else dr.I2 for q in range(n))


# ---------------------------------------------------------------------------------------
# Channels as weighted operator sums
# ---------------------------------------------------------------------------------------


def depolarizing_terms(p: float, qubits: Sequence[int], n: int) -> Terms:
    k = len(qubits)
    labels = ["".join(t) for t in itertools.product("IXYZ", repeat=k)]
    out = [(1.0 - p * (4**k - 1) / 4**k, np.eye(2**n, dtype=complex))]
    out += [(p / 4**k, pauli_on(label, qubits, n)) for label in labels if label != "I" * k]
    return out


def pauli_channel_terms(probabilities: Mapping[str, float], qubits: Sequence[int], n: int) -> Terms:
    k = len(qubits)
    table = dict(probabilities)
    identity = "I" * k
    if identity not in table:
        table[identity] = 1.0 - sum(table.values())
    return [(float(p), pauli_on(label, qubits, n)) for label, p in table.items()]


def flip_terms(letter: str, p: float, qubit: int, n: int) -> Terms:
    return [(1.0 - p, np.eye(2**n, dtype=complex)), (p, pauli_on(letter, [qubit], n))]


def amplitude_damping_terms(gamma: float, qubit: int, n: int) -> Terms:
    k0 = np.array([[1, 0], [0, math.sqrt(1 - gamma)]], dtype=complex)
    k1 = np.array([[0, math.sqrt(gamma)], [0, 0]], dtype=complex)
    return [(1.0, single_qubit_operator(k0, qubit, n)), (1.0, single_qubit_operator(k1, qubit, n))]


def lindblad_weight(rate: float) -> float:
    """``w`` with ``exp(lambda (Q . Q - .)) = (1 - w) . + w Q . Q``: ``(1 - exp(-2 lambda))/2``."""
    return (1.0 - math.exp(-2.0 * rate)) / 2.0


def compose_terms(first: Terms, second: Terms) -> Terms:
    """The operator sum of ``second`` after ``first``: weights multiply, ``A = A2 A1``."""
    return [(w1 * w2, a2 @ a1) for w1, a1 in first for w2, a2 in second]


def pauli_lindblad_terms(
    generators: Sequence[tuple[str, Sequence[int]]], rates: Sequence[float], n: int
) -> Terms:
    out: Terms = [(1.0, np.eye(2**n, dtype=complex))]
    for (label, qubits), rate in zip(generators, rates, strict=True):
        w = lindblad_weight(rate)
        q = pauli_on(label, qubits, n)
        out = compose_terms(out, [(1.0 - w, np.eye(2**n, dtype=complex)), (w, q)])
    return out


def dephasing_terms(p: float, mode: int, n: int) -> Terms:
    parity = np.eye(2**n, dtype=complex) - 2 * dr.number_matrix(mode, n)
    return [(1.0 - p, np.eye(2**n, dtype=complex)), (p, parity)]


def particle_loss_terms(gamma: float, mode: int, n: int) -> Terms:
    number = dr.number_matrix(mode, n)
    k0 = np.eye(2**n, dtype=complex) - (1.0 - math.sqrt(1.0 - gamma)) * number
    # P a_j, P = (-1)^N the parity: on parity-superselected states and even observables the
    # same channel as with a_j alone; on odd monomials it keeps the channel local to mode j.
    parity = np.diag([(-1.0) ** bin(b).count("1") for b in range(2**n)])
    k1 = math.sqrt(gamma) * parity @ dr.annihilation_matrix(mode, n)
    return [(1.0, k0), (1.0, k1)]


def kraus_operators(terms: Terms) -> list[np.ndarray]:
    """``sqrt(w) A`` per term (physical channels only: every weight >= 0)."""
    if any(w < -1e-15 for w, _ in terms):
        raise ValueError("negative weight: not a completely positive map")
    return [math.sqrt(max(w, 0.0)) * a for w, a in terms]


def apply_channel(terms: Terms, rho: np.ndarray) -> np.ndarray:
    """Schrödinger: ``sum w A rho A^dagger``."""
    return sum(w * (a @ rho @ a.conj().T) for w, a in terms)


def apply_adjoint(terms: Terms, observable: np.ndarray) -> np.ndarray:
    """Heisenberg: ``sum w A^dagger O A``."""
    return sum(w * (a.conj().T @ observable @ a) for w, a in terms)


def trace_preservation_defect(terms: Terms) -> float:
    """``max |sum w A^dagger A - I|`` (0 for a trace-preserving map)."""
    total = sum(w * (a.conj().T @ a) for w, a in terms)
    return float(np.max(np.abs(total - np.eye(total.shape[0]))))


def superoperator(terms: Terms) -> np.ndarray:
    """Matrix of ``rho -> E(rho)`` on row-major ``vec(rho)``: ``vec(A rho B) = (A (x) B^T) vec``."""
    return sum(w * np.kron(a, a.conj()) for w, a in terms)


def lindblad_superoperator(
    generators: Sequence[tuple[str, Sequence[int]]], rates: Sequence[float], n: int
) -> np.ndarray:
    """``expm(sum_k lambda_k (Q_k (x) Q_k^* - 1))``: the Lindblad map straight from its
    generator (small n only: the matrix is 4^n x 4^n)."""
    dim = 2**n
    generator = np.zeros((dim * dim, dim * dim), dtype=complex)
    for (label, qubits), rate in zip(generators, rates, strict=True):
        q = pauli_on(label, qubits, n)
        generator += rate * (np.kron(q, q.conj()) - np.eye(dim * dim))
    return expm(generator)


def apply_superoperator(matrix: np.ndarray, rho: np.ndarray) -> np.ndarray:
    return (matrix @ rho.ravel()).reshape(rho.shape)


def replace_by_maximally_mixed(rho: np.ndarray, qubits: Sequence[int], n: int) -> np.ndarray:
    """``Tr_qubits(rho) (x) I/2^k`` put back on ``qubits`` (a direct partial trace, for checking
    the depolarizing operator sum)."""
    k = len(qubits)
    rest = [q for q in range(n) if q not in qubits]
    tensor = rho.reshape([2] * (2 * n))
    # Trace out the chosen qubits.
    reduced = tensor
    remaining = list(range(n))
    for q in sorted(qubits, reverse=True):
        pos = remaining.index(q)
        m = len(remaining)
        reduced = np.trace(reduced, axis1=pos, axis2=m + pos)
        remaining.pop(pos)
    assert remaining == rest
    eye = np.eye(2**k).reshape([2] * (2 * k)) / 2**k
    full = np.multiply.outer(reduced, eye)  # axes: rest rows, rest cols, k rows, k cols
    m = len(rest)
    order = rest + list(qubits)  # row axes in this qubit order
    row_axes = list(range(m)) + list(range(2 * m, 2 * m + k))
    col_axes = list(range(m, 2 * m)) + list(range(2 * m + k, 2 * m + 2 * k))
    perm_rows = [row_axes[order.index(q)] for q in range(n)]
    perm_cols = [col_axes[order.index(q)] for q in range(n)]
    return full.transpose(perm_rows + perm_cols).reshape(2**n, 2**n)


# ---------------------------------------------------------------------------------------
# Circuit items as plain data
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GateSpec:
    """A rotation ``expm(+i theta H)``; ``generator`` maps full-width Pauli strings or sorted
    Majorana tuples to coefficients (Hermitian), ``theta = parameters[slot]``. ``explicit``:
    the monoprop gate is built with ``index=slot`` (else it takes the default slot)."""

    generator: Mapping
    slot: int
    explicit: bool = False


@dataclasses.dataclass(frozen=True)
class FixedGateSpec:
    """A rotation ``expm(+i angle H)`` at a fixed angle (e.g. a Clifford quarter turn)."""

    generator: Mapping
    angle: float


@dataclasses.dataclass(frozen=True)
class ChannelSpec:
    """A noise channel. Single-rate channels use ``rate`` (fixed) or ``index`` (a parameter
    slot); ``pauli_channel`` uses ``probabilities`` (label, p) pairs; ``pauli_lindblad`` uses
    ``generators`` ((label, qubits) pairs) with ``rates`` or ``indices``."""

    name: str
    sites: tuple[int, ...] = ()
    rate: float | None = None
    index: int | None = None
    probabilities: tuple[tuple[str, float], ...] = ()
    generators: tuple[tuple[str, tuple[int, ...]], ...] = ()
    rates: tuple[float, ...] | None = None
    indices: tuple[int, ...] | None = None

    @property
    def family(self) -> str:
        return "majorana" if self.name in MAJORANA_CHANNELS else "pauli"

    @property
    def slots(self) -> tuple[int, ...]:
        if self.name == "pauli_lindblad":
            return tuple(self.indices or ())
        return () if self.index is None else (self.index,)

    def rate_values(self, parameters: Sequence[float]) -> tuple[float, ...]:
        if self.name == "pauli_lindblad":
            if self.indices is not None:
                return tuple(float(parameters[i]) for i in self.indices)
            return tuple(self.rates)
        if self.index is not None:
            return (float(parameters[self.index]),)
        return (self.rate,)

    def terms(self, n: int, parameters: Sequence[float] = ()) -> Terms:
        return channel_terms(self, n, parameters)


def channel_terms(spec: ChannelSpec, n: int, parameters: Sequence[float] = ()) -> Terms:
    name = spec.name
    if name == "pauli_channel":
        return pauli_channel_terms(dict(spec.probabilities), spec.sites, n)
    rates = spec.rate_values(parameters)
    if name == "pauli_lindblad":
        return pauli_lindblad_terms(spec.generators, rates, n)
    (rate,) = rates
    if name == "depolarizing":
        return depolarizing_terms(rate, spec.sites, n)
    if name in FLIP_LETTER:
        return flip_terms(FLIP_LETTER[name], rate, spec.sites[0], n)
    if name == "amplitude_damping":
        return amplitude_damping_terms(rate, spec.sites[0], n)
    if name == "dephasing":
        return dephasing_terms(rate, spec.sites[0], n)
    if name == "particle_loss":
        return particle_loss_terms(rate, spec.sites[0], n)
    raise ValueError(f"unknown channel {name!r}")


# ---------------------------------------------------------------------------------------
# Noisy circuits
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NoisyCase:
    """A noisy circuit problem in plain data; ``items`` in application order."""

    family: str
    n: int
    observable: Mapping
    occupied: tuple[int, ...]
    items: tuple  # GateSpec | ChannelSpec
    parameters: tuple[float, ...]

    def operator_matrix(self, terms: Mapping) -> np.ndarray:
        if self.family == "pauli":
            return dr.pauli_operator_matrix(terms, self.n)
        return dr.majorana_operator_matrix(terms, self.n)

    def decompose(self, matrix: np.ndarray) -> dict:
        if self.family == "pauli":
            return dr.real_coefficients(dr.pauli_decompose(matrix, self.n, atol=0.0))
        return dr.majorana_decompose(matrix, self.n, atol=0.0)

    def _params(self, parameters) -> np.ndarray:
        return np.asarray(self.parameters if parameters is None else parameters, dtype=float)

    def maps(self, parameters=None) -> list[tuple[str, object]]:
        """Per item: ``("unitary", U)`` or ``("channel", terms)``."""
        x = self._params(parameters)
        out = []
        for item in self.items:
            if isinstance(item, GateSpec):
                out.append(
                    ("unitary", dr.gate_unitary(self.operator_matrix(item.generator), x[item.slot]))
                )
            elif isinstance(item, FixedGateSpec):
                out.append(
                    ("unitary", dr.gate_unitary(self.operator_matrix(item.generator), item.angle))
                )
            else:
                out.append(("channel", item.terms(self.n, x)))
        return out

    def density_matrix(self, parameters=None) -> np.ndarray:
        """``E(|ref><ref|)`` (trace 1)."""
        rho = dr.reference_R(self.occupied, self.n) / 2**self.n
        for kind, m in self.maps(parameters):
            rho = m @ rho @ m.conj().T if kind == "unitary" else apply_channel(m, rho)
        return rho

    def heisenberg_matrix(self, observable: Mapping | None = None, parameters=None) -> np.ndarray:
        """``E^dag(O)``: the items' adjoints, last item first."""
        op = self.operator_matrix(self.observable if observable is None else observable)
        for kind, m in reversed(self.maps(parameters)):
            op = m.conj().T @ op @ m if kind == "unitary" else apply_adjoint(m, op)
        return op

    def expectation(self, parameters=None, observable: Mapping | None = None) -> float:
        op = self.operator_matrix(self.observable if observable is None else observable)
        value = np.trace(op @ self.density_matrix(parameters))
        if abs(value.imag) > 1e-9:
            raise ValueError(f"expectation value is not real: {value}")
        return float(value.real)

    def heisenberg_expectation(self, parameters=None, observable: Mapping | None = None) -> float:
        psi = dr.basis_state(self.occupied, self.n)
        return float(np.vdot(psi, self.heisenberg_matrix(observable, parameters) @ psi).real)

    def heisenberg_terms(self, parameters=None, observable: Mapping | None = None) -> dict:
        return self.decompose(self.heisenberg_matrix(observable, parameters))

    def schrodinger_terms(self, parameters=None) -> dict:
        """Coefficients of ``2^n E(rho_ref)``."""
        return self.decompose(2**self.n * self.density_matrix(parameters))

    def terms(self, picture: str, parameters=None) -> dict:
        if picture == "heisenberg":
            return self.heisenberg_terms(parameters)
        return self.schrodinger_terms(parameters)

    def gradient(self, parameters=None, h: float = 1e-3) -> np.ndarray:
        """Richardson-extrapolated central difference: ``(4 D(h/2) - D(h)) / 3``."""
        x = self._params(parameters)
        coarse = dr.central_difference(self.expectation, x, h)
        fine = dr.central_difference(self.expectation, x, h / 2)
        return (4 * fine - coarse) / 3


# ---------------------------------------------------------------------------------------
# Random noisy circuits
# ---------------------------------------------------------------------------------------


def random_channel(rng: np.random.Generator, family: str, n: int) -> ChannelSpec:
    """A random channel with a fixed rate strictly inside its range."""
    if family == "majorana":
        name = str(rng.choice(MAJORANA_CHANNELS))
        mode = int(rng.integers(n))
        high = 0.45 if name == "dephasing" else 0.6
        return ChannelSpec(name, (mode,), rate=float(rng.uniform(0.05, high)))
    name = str(rng.choice(PAULI_CHANNELS))
    if name == "depolarizing":
        k = int(rng.integers(1, min(2, n) + 1))
        sites = tuple(int(q) for q in rng.choice(n, size=k, replace=False))
        return ChannelSpec(name, sites, rate=float(rng.uniform(0.05, 0.5)))
    if name == "pauli_channel":
        k = int(rng.integers(1, min(2, n) + 1))
        sites = tuple(int(q) for q in rng.choice(n, size=k, replace=False))
        labels = ["".join(t) for t in itertools.product("IXYZ", repeat=k) if "".join(t) != "I" * k]
        chosen = rng.choice(
            len(labels), size=int(rng.integers(1, min(4, len(labels)) + 1)), replace=False
        )
        raw = rng.uniform(0.0, 1.0, size=len(chosen))
        total = float(rng.uniform(0.1, 0.6))
        probabilities = tuple(
            (labels[int(c)], float(total * r / raw.sum())) for c, r in zip(chosen, raw, strict=True)
        )
        return ChannelSpec(name, sites, probabilities=probabilities)
    if name in FLIP_LETTER:
        return ChannelSpec(name, (int(rng.integers(n)),), rate=float(rng.uniform(0.05, 0.45)))
    if name == "amplitude_damping":
        return ChannelSpec(name, (int(rng.integers(n)),), rate=float(rng.uniform(0.05, 0.6)))
    # pauli_lindblad: 1-3 generators of weight 1..min(3, n), rates in [-0.1, 0.3]
    generators = []
    for _ in range(int(rng.integers(1, 4))):
        weight = int(rng.integers(1, min(3, n) + 1))
        qubits = tuple(int(q) for q in rng.choice(n, size=weight, replace=False))
        label = "".join(str(rng.choice(list("XYZ"))) for _ in qubits)
        generators.append((label, qubits))
    rates = tuple(float(r) for r in rng.uniform(-0.1, 0.3, size=len(generators)))
    return ChannelSpec(name, generators=tuple(generators), rates=rates)


def indexed(spec: ChannelSpec, first_slot: int) -> tuple[ChannelSpec, list[float]]:
    """The channel with its rate(s) moved into slots ``first_slot, ...``; the moved values."""
    if spec.name == "pauli_channel":
        return spec, []
    if spec.name == "pauli_lindblad":
        slots = tuple(range(first_slot, first_slot + len(spec.rates)))
        return dataclasses.replace(spec, rates=None, indices=slots), list(spec.rates)
    return dataclasses.replace(spec, rate=None, index=first_slot), [spec.rate]


def random_noisy_case(
    seed: int,
    family: str,
    n: int,
    *,
    num_gates: int = 6,
    max_generator_terms: int = 2,
    num_channels: int = 4,
    indexed_channels: bool = False,
    shared_parameters: bool = False,
) -> NoisyCase:
    """dense_reference.random_case's gates, observable and state, with ``num_channels`` random
    channels inserted at random positions. ``indexed_channels``: every channel that has rates
    reads them from new parameter slots after the angles (a repeated channel kind sometimes
    shares the slot of an earlier one)."""
    base = dr.random_case(
        seed,
        family,
        n,
        num_gates=num_gates,
        max_generator_terms=max_generator_terms,
        shared_parameters=shared_parameters,
    )
    rng = np.random.default_rng(1_000_000 + seed)
    mapping = base.mapping if base.mapping is not None else tuple(range(num_gates))
    explicit = base.mapping is not None
    items: list = [
        GateSpec(dict(g), int(mapping[i]), explicit) for i, g in enumerate(base.generators)
    ]
    parameters = list(base.parameters)
    last_slot_of_kind: dict[str, int] = {}
    for _ in range(num_channels):
        spec = random_channel(rng, family, n)
        if indexed_channels:
            kind = spec.name
            if kind in last_slot_of_kind and kind != "pauli_lindblad" and rng.random() < 0.4:
                spec = dataclasses.replace(spec, rate=None, index=last_slot_of_kind[kind])
            else:
                spec, values = indexed(spec, len(parameters))
                parameters += values
                if spec.index is not None:
                    last_slot_of_kind[kind] = spec.index
        items.insert(int(rng.integers(0, len(items) + 1)), spec)
    return NoisyCase(
        family, n, dict(base.observable), base.occupied, tuple(items), tuple(parameters)
    )
