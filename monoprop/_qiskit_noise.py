"""``qiskit_aer`` noise as :mod:`monoprop.noise` channels, for ``from_qiskit_circuit``.

Where noise goes, as ``AerSimulator`` puts it on the circuit it is given (no transpiling):
after each instruction, on the instruction's qubits (error qubit ``j`` on the instruction's
``j``-th qubit), the noise model's error for the instruction's *key*: its ``label`` when it
has one, else its ``name``. An error added for those exact qubits (``add_quantum_error``)
replaces the all-qubit one (``add_all_qubit_quantum_error``); errors added twice for one key
are already composed inside the model. ``barrier`` takes no noise; ``id`` and ``delay`` take
theirs though they are no gate (and ``pauli`` takes its error, which qiskit-aer 0.18 alone
among the standard gates does not apply). The model's custom passes (the delay relaxation of
``NoiseModel.from_backend``) run on the circuit first, and ``quantum_channel`` instructions (a
``QuantumError`` appended to a circuit) are converted like the model's errors.

How an error becomes channels. A ``PauliLindbladError`` is :func:`~monoprop.noise.pauli_lindblad`
with its generators and rates. Any other error is read through its Pauli transfer matrix
``R_PQ = Tr(P E(Q)) / 2^k`` (from its superoperator, or the probabilities of a ``PauliError``),
which must be ``R = T D``: ``D`` diagonal (the Pauli fidelities) and ``T`` a decay
``I → I + t_j Z_j`` per qubit (what amplitude damping and thermal relaxation do besides
scaling). Then, with no decay, 1 or 2 qubits: ``depolarizing`` (equal fidelities), a flip
(one Pauli) or ``pauli_channel``; 3 or more: ``pauli_lindblad`` (positive fidelities). A
one-qubit decay to ``|0>``: ``amplitude_damping`` and a ``phase_flip`` for the rest of the
dephasing (thermal relaxation at zero temperature; ``phase_damping_error`` is a phase flip).
Other decays (an excited population, reset errors, a two-qubit depolarizing error composed
with relaxation): one ``"relaxation"`` channel with the fidelities and decays. Anything else
(coherent unitary errors, Kraus maps that mix Paulis) is refused with ``ValueError``.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from itertools import product
from typing import Any

import numpy as np

from . import noise
from .noise import Channel

# A Pauli transfer matrix entry this small is round-off (entries are at most 1 in size).
TRANSFER_ATOL = 1e-10
# Probabilities, fidelity gaps and decays this small are round-off: taken as zero.
ROUND_OFF = 1e-13
# A QuantumError on more qubits needs a 4^k x 4^k transfer matrix; it is refused.
MAX_DENSE_QUBITS = 4

Place = Callable[[Sequence[int]], list[Channel]]


def error_instruction(operation: Any) -> Any:
    """The ``qiskit_aer`` error inside a ``quantum_channel`` instruction, or None."""
    if operation.name != "quantum_channel":
        return None
    return getattr(operation, "_quantum_error", None)


def instruction_key(operation: Any) -> str:
    """What a noise model's errors are looked up by: the label, else the name."""
    label = getattr(operation, "label", None)
    return str(label) if label else str(operation.name)


class NoiseModelReader:
    """The errors of a ``qiskit_aer.noise.NoiseModel``, converted on first use."""

    def __init__(self, noise_model: Any) -> None:
        if not isinstance(noise_model, _aer_noise().NoiseModel):
            raise TypeError(
                "noise_model must be a qiskit_aer.noise.NoiseModel (or None); got "
                f"{type(noise_model).__name__}. For noise of your own, convert without it and "
                "add channels with monoprop.noise.after_gates."
            )
        try:
            default = dict(noise_model._default_quantum_errors)
            local = {k: dict(v) for k, v in noise_model._local_quantum_errors.items()}
            readout = noise_model._default_readout_error, dict(noise_model._local_readout_errors)
            self._passes = list(noise_model._custom_noise_passes)
        except AttributeError as exc:  # pragma: no cover - another qiskit-aer layout
            raise TypeError(
                f"this NoiseModel does not keep its errors where qiskit-aer 0.18 does ({exc}); "
                "use a qiskit-aer whose NoiseModel has the same layout (0.18 is tested)."
            ) from exc
        if readout[0] is not None or readout[1]:
            where = "all qubits" if readout[0] is not None else f"qubits {sorted(readout[1])}"
            raise ValueError(
                f"noise_model has readout errors (on {where}). A readout error acts on "
                "measured bits, and a propagated expectation value has none; build the model "
                "without them (NoiseModel.from_backend(backend, readout_error=False), or no "
                "add_readout_error), and correct measured data with readout mitigation."
            )
        self._model = noise_model
        self._default = default
        self._local = local
        self._places: dict[int, tuple[Any, Place]] = {}
        self.applied = 0  # instructions that received an error

    def prepared(self, circuit: Any) -> Any:
        """The circuit after the model's custom noise passes, as the simulator runs them."""
        if not self._passes:
            return circuit
        return self._model._pass_manager().run(circuit)

    def channels(self, operation: Any, qubits: Sequence[int], where: str) -> list[Channel]:
        """The channels after one instruction (none for an instruction without an error)."""
        if operation.name == "barrier":
            return []
        key = instruction_key(operation)
        qubits = tuple(qubits)
        error = self._local.get(key, {}).get(qubits)
        scope = "local error"
        if error is None:
            error = self._default.get(key)
            scope = "all-qubit error"
        if error is None:
            return []
        self.applied += 1
        context = f"{where} on qubits {list(qubits)}: the noise model's {scope} for {key!r}"
        return error_channels(error, qubits, context, self._places)

    def unused_warning(self, names: set[str]) -> str | None:
        """A message when the model has errors and none reached the circuit."""
        if self.applied or not (self._default or self._local):
            return None
        keys = sorted(set(self._default) | set(self._local))
        return (
            f"noise_model has errors for {keys} but the circuit's instructions {sorted(names)} "
            "match none of them, so the converted circuit is noiseless. qiskit-aer applies an "
            "error to the instructions named (or labelled) as the model says, as they stand "
            "in the circuit; transpile it first, e.g. transpile(qc, "
            "basis_gates=noise_model.basis_gates)."
        )


def error_channels(
    error: Any, qubits: Sequence[int], context: str, cache: dict[int, tuple[Any, Place]]
) -> list[Channel]:
    """The channels of one ``qiskit_aer`` error placed on ``qubits``."""
    k = getattr(error, "num_qubits", None)
    if k != len(qubits):
        raise ValueError(
            f"{context} acts on {k} qubits but the instruction on {len(qubits)}; give the "
            "instruction an error of its own size."
        )
    entry = cache.get(id(error))
    if entry is None:
        entry = (error, _classify(error, context))  # the error is kept so that its id stays
        cache[id(error)] = entry
    try:
        return entry[1](qubits)
    except ValueError as exc:
        raise ValueError(f"{context} ({type(error).__name__}) cannot be converted: {exc}") from exc


def _aer_noise() -> Any:
    """``qiskit_aer.noise``, imported on first use (an optional dependency)."""
    try:
        return importlib.import_module("qiskit_aer.noise")
    except ImportError as exc:
        raise ImportError(
            "noise_model= needs qiskit-aer; install it with `pip install qiskit-aer`."
        ) from exc


def _classify(error: Any, context: str) -> Place:
    """How the error's channels are placed on qubits; refuses what has no channel form."""
    aer = _aer_noise()
    kind = type(error).__name__
    if isinstance(error, aer.PauliLindbladError):
        generators = [_local_label(p) for p in error.generators]
        rates = [float(r) for r in error.rates]
        return lambda qubits: [
            noise.pauli_lindblad(
                [(label, [qubits[j] for j in on]) for label, on in generators], rates
            )
        ]
    k = int(error.num_qubits)
    if isinstance(error, aer.PauliError):
        fidelities = _pauli_error_fidelities(error, k)
        decays: dict[int, float] = {}
    elif isinstance(error, aer.QuantumError):
        if k > MAX_DENSE_QUBITS:
            raise ValueError(
                f"{context} is a QuantumError on {k} qubits; reading it needs its 4^{k} x 4^{k} "
                f"Pauli transfer matrix, and monoprop reads errors on up to {MAX_DENSE_QUBITS}. "
                "Give a Pauli error of this size as a PauliError or PauliLindbladError."
            )
        fidelities, decays = _split(_transfer_matrix(error, k), k, f"{context} ({kind})")
    else:
        raise ValueError(
            f"{context} is a {kind}, which monoprop cannot read; give a QuantumError, "
            "PauliError or PauliLindbladError."
        )
    return _placement(fidelities, decays, k, f"{context} ({kind})")


def _labels(k: int) -> list[str]:
    """Pauli labels on ``k`` qubits, character ``j`` on qubit ``j``, identity first."""
    return ["".join(t) for t in product("IXYZ", repeat=k)]


def _local_label(pauli: Any) -> tuple[str, list[int]]:
    """A qiskit ``Pauli`` (phase ignored: ``P ρ P†`` does not see it) as ``(letters, qubits)``
    over its non-identity qubits, qubit ``j`` being the error's ``j``-th."""
    letters = {(1, 0): "X", (1, 1): "Y", (0, 1): "Z"}
    on = [
        (j, letters[int(x), int(z)])
        for j, (x, z) in enumerate(zip(pauli.x, pauli.z, strict=True))
        if x or z
    ]
    return "".join(letter for _, letter in on), [j for j, _ in on]


def _anticommute(a: str, b: str) -> bool:
    return sum(x != "I" and y != "I" and x != y for x, y in zip(a, b, strict=True)) % 2 == 1


def _pauli_error_fidelities(error: Any, k: int) -> dict[str, float]:
    """``f_P = Σ_j p_j χ(P, Q_j)`` for the error's Paulis ``Q_j`` and probabilities ``p_j``."""
    terms: dict[str, float] = {}
    for pauli, p in zip(error.paulis, error.probabilities, strict=True):
        label, on = _local_label(pauli)
        full = ["I"] * k
        for j, letter in zip(on, label, strict=True):
            full[j] = letter
        key = "".join(full)
        terms[key] = terms.get(key, 0.0) + float(p)
    total = sum(terms.values())
    return {
        label: total - 2.0 * sum(p for q, p in terms.items() if _anticommute(label, q))
        for label in _labels(k)
    }


def _transfer_matrix(error: Any, k: int) -> np.ndarray:
    """``R[a, b] = Tr(P_a E(P_b)) / 2^k`` over :func:`_labels` (Schrödinger picture).

    The error's superoperator ``S`` acts on column-stacked matrices, ``vec(E(ρ)) = S vec(ρ)``,
    and ``Tr(A B) = vec(A^T) · vec(B)`` with ``A^T = conj(A)`` for a Pauli string ``A``.
    """
    from qiskit.quantum_info import Pauli as QiskitPauli
    from qiskit.quantum_info import SuperOp

    superop = SuperOp(error.to_quantumchannel()).data
    # Qiskit labels put qubit 0 last; column stacking is the row-major ravel of the transpose.
    vectors = np.array([QiskitPauli(label[::-1]).to_matrix().T.ravel() for label in _labels(k)])
    return np.real(vectors.conj() @ superop @ vectors.T) / 2**k


def _split(r: np.ndarray, k: int, context: str) -> tuple[dict[str, float], dict[int, float]]:
    """``R = T D``: the fidelities (diagonal of ``D``) and the decays ``t_j`` of ``T``, or
    ``ValueError`` naming the largest entry that has no such form."""
    labels = _labels(k)
    index = {label: i for i, label in enumerate(labels)}
    decays = {}
    for j in range(k):
        z = "I" * j + "Z" + "I" * (k - j - 1)
        decays[j] = float(r[index[z], 0])
    # T is the Kronecker product of 1 + t_j |Z><I| per qubit; its inverse has -t_j.
    inverse: np.ndarray = np.ones((1, 1))
    for j in range(k):
        factor = np.eye(4)
        factor[3, 0] = -decays[j]
        inverse = np.kron(inverse, factor)
    d = inverse @ r
    off = np.abs(d - np.diag(np.diag(d)))
    a, b = np.unravel_index(int(np.argmax(off)), off.shape)
    if off[a, b] > TRANSFER_ATOL:
        raise ValueError(
            f"{context} is not a Pauli channel, a Pauli-Lindblad map or a decay towards Z "
            f"(amplitude damping, thermal relaxation): it takes {labels[b]} to {labels[a]} "
            f"(Pauli transfer entry {r[a, b]:.3g}), as coherent unitary errors and general "
            "Kraus maps do, which monoprop.noise channels cannot express. Remove it from the "
            "noise model, or replace it by its Pauli twirl (a PauliError with the same "
            "diagonal)."
        )
    if abs(d[0, 0] - 1.0) > TRANSFER_ATOL:
        raise ValueError(f"{context} does not preserve the trace (R[I, I] = {d[0, 0]:.6g}).")
    fidelities = {label: float(d[i, i]) for i, label in enumerate(labels)}
    return fidelities, {j: t for j, t in decays.items() if abs(t) > ROUND_OFF}


def _placement(
    fidelities: dict[str, float], decays: dict[int, float], k: int, context: str
) -> Place:
    """The named channels for the fidelities and decays where one fits, else a relaxation."""
    labels = _labels(k)
    rest = {label: fidelities[label] for label in labels[1:]}
    if abs(fidelities[labels[0]] - 1.0) > TRANSFER_ATOL:
        raise ValueError(
            f"{context} does not preserve the trace (its probabilities sum to "
            f"{fidelities[labels[0]]:.6g}); give probabilities that sum to 1."
        )
    if not decays:
        if all(abs(f - 1.0) <= ROUND_OFF for f in rest.values()):
            return lambda qubits: []
        if k > 2:
            try:
                rates = noise._lindblad_rates(rest)
            except ValueError as exc:
                raise ValueError(
                    f"{context} is a Pauli channel on {k} qubits, which monoprop expresses as a "
                    f"Pauli-Lindblad map; but {exc} Give it as 1- and 2-qubit errors instead."
                ) from exc
            kept = {q: r for q, r in rates.items() if abs(r) > ROUND_OFF}
            return lambda qubits: [_pauli_lindblad(kept, qubits)]
        values = list(rest.values())
        if max(values) - min(values) <= ROUND_OFF:
            p = 1.0 - sum(values) / len(values)
            return lambda qubits: [noise.depolarizing(p, list(qubits))]
        probabilities = _probabilities(fidelities, k)
        if k == 1 and len(probabilities) == 1:
            ((letter, p),) = probabilities.items()
            flip = {"X": noise.bit_flip, "Y": noise.bit_phase_flip, "Z": noise.phase_flip}[letter]
            return lambda qubits: [flip(p, qubits[0])]
        return lambda qubits: [noise.pauli_channel(probabilities, list(qubits))]
    damping = _amplitude_damping(rest, decays) if k == 1 else None
    if damping is not None:
        gamma, p = damping
        return lambda qubits: (
            [noise.amplitude_damping(gamma, qubits[0])]
            + ([noise.phase_flip(p, qubits[0])] if p > ROUND_OFF else [])
        )
    return lambda qubits: [noise._relaxation(qubits, rest, decays)]


def _pauli_lindblad(rates: dict[str, float], qubits: Sequence[int]) -> Channel:
    """``pauli_lindblad`` with full-width generator labels (character ``j`` on
    ``qubits[j]``)."""
    generators = []
    for label in rates:
        on = [(q, c) for q, c in zip(qubits, label, strict=True) if c != "I"]
        generators.append(("".join(c for _, c in on), [q for q, _ in on]))
    return noise.pauli_lindblad(generators, list(rates.values()))


def _probabilities(fidelities: dict[str, float], k: int) -> dict[str, float]:
    """The Pauli probabilities ``p_Q = 4^−k Σ_P χ(P, Q) f_P`` (identity left out; round-off
    dropped)."""
    out = {}
    for q in _labels(k)[1:]:
        p = sum(-f if _anticommute(label, q) else f for label, f in fidelities.items()) / 4**k
        if abs(p) > ROUND_OFF:
            out[q] = p
    return out


def _amplitude_damping(
    rest: dict[str, float], decays: dict[int, float]
) -> tuple[float, float] | None:
    """``(γ, p)`` when one qubit's map is amplitude damping ``γ`` then a phase flip ``p``: a
    decay ``t = γ = 1 − f_Z`` to ``|0>`` and ``f_X = f_Y = √(1 − γ) (1 − 2p)``; else None."""
    gamma = decays[0]
    fx, fy = rest["X"], rest["Y"]
    if abs(1.0 - rest["Z"] - gamma) > ROUND_OFF or abs(fx - fy) > ROUND_OFF:
        return None
    if not 0 < gamma <= 1 + ROUND_OFF:
        return None
    if gamma >= 1.0 - ROUND_OFF:
        return (1.0, 0.0) if abs(fx) <= ROUND_OFF else None
    p = (1.0 - fx / math.sqrt(1.0 - gamma)) / 2.0
    if not -ROUND_OFF <= p <= 1.0 + ROUND_OFF:
        return None
    return gamma, min(max(p, 0.0), 1.0)
