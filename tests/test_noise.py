"""Noise channels (monoprop.noise) against the dense density-matrix reference (dense_noise.py).

1. The reference itself: trace preservation, Kraus forms, Heisenberg = Schrödinger, the
   depolarizing operator sum against a direct partial trace, Lindblad operator sums against the
   exponential of the Lindbladian, the gradient routine against the exact noiseless gradient.
2. Every channel on every Pauli string of 1-3 qubits (every Majorana monomial of 2-3 modes),
   Heisenberg and Schrödinger, fixed rate through ``propagate`` and indexed rate through
   ``build_graph`` + functionals; the evolved operator/state and the value against the dense
   reference, the gradient (angles and the channel's rate) against the reference and against
   central differences.
3. Random noisy circuits in both families and pictures, ``propagate`` and ``build_graph``, with
   T = 1..4 threads (the seed is in the test id and every message).
4. Qiskit ``PauliLindbladMap`` conversion against the map's own Pauli fidelities and against
   the dense map built from its generators.
5. Truncation with ``lower_atol``; 6. refused arguments and recovery after a refused call.

Rerun one case with e.g. ``pytest tests/test_noise.py -k "random and majorana and seed=3"``.
"""

from __future__ import annotations

import dataclasses
import math

import dense_noise as dn
import dense_reference as dr
import numpy as np
import pytest

from monoprop import (
    Circuit,
    CliffordGate,
    ExpGate,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
    noise,
)

ENV = "monoprop_NUM_THREADS"
PICTURES = ["heisenberg", "schrodinger"]
VALUE_ATOL = 1e-10
TERM_ATOL = 1e-9  # evolved_operator rounds to 12 decimals
GRADIENT_ATOL = 1e-7  # against the dense Richardson gradient
FD_ATOL = 1e-6  # against central differences of the value functional
FD_STEP = 1e-5


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    """Every test runs with T = 1 unless it sets another count."""
    monkeypatch.setenv(ENV, "1")


# ---------------------------------------------------------------------------------------
# Plain data -> monoprop objects
# ---------------------------------------------------------------------------------------

SITE_KEYWORD = {
    "depolarizing": "qubits",
    "bit_flip": "qubit",
    "phase_flip": "qubit",
    "bit_phase_flip": "qubit",
    "amplitude_damping": "qubit",
    "dephasing": "mode",
    "particle_loss": "mode",
}


def to_channel(spec: dn.ChannelSpec):
    if spec.name == "pauli_channel":
        qubits = spec.sites[0] if len(spec.sites) == 1 else list(spec.sites)
        return noise.pauli_channel(dict(spec.probabilities), qubits)
    if spec.name == "pauli_lindblad":
        generators = [(label, list(qubits)) for label, qubits in spec.generators]
        if spec.indices is not None:
            return noise.pauli_lindblad(generators, index=list(spec.indices))
        return noise.pauli_lindblad(generators, list(spec.rates))
    make = getattr(noise, spec.name)
    sites = spec.sites[0] if len(spec.sites) == 1 else list(spec.sites)
    if spec.index is not None:
        return make(index=spec.index, **{SITE_KEYWORD[spec.name]: sites})
    return make(spec.rate, sites)


def make_operator(family: str, terms, n: int):
    if family == "pauli":
        return PauliOperator(dict(terms), n)
    return MajoranaOperator(dict(terms), n)


def to_circuit(case: dn.NoisyCase, *, bound: bool = True, with_state: bool = False) -> Circuit:
    gates = []
    for item in case.items:
        if isinstance(item, dn.GateSpec):
            op = make_operator(case.family, item.generator, case.n)
            gates.append(ExpGate(op, item.slot if item.explicit else None))
        else:
            gates.append(to_channel(item))
    return Circuit(
        gates,
        case.n,
        parameters=list(case.parameters) if bound else [],
        initial_state=list(case.occupied) if with_state else None,
    )


def propagator_class(family: str):
    return PauliPropagator if family == "pauli" else MajoranaPropagator


def picture_config(n: int, picture: str, **extra) -> dict:
    config = {"cutoff": 2 * n, **extra}
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = 2 * n
    return config


def make_propagator(case: dn.NoisyCase, picture: str, observable=None, **extra):
    obs = case.observable if observable is None else observable
    cls = propagator_class(case.family)
    return cls(
        make_operator(case.family, obs, case.n),
        list(case.occupied),
        **picture_config(case.n, picture, **extra),
    )


def plain_terms(family: str, op, n: int) -> dict:
    if family == "pauli":
        assert isinstance(op, PauliOperator) and op.num_qubits == n
        return dr.pauli_terms_to_strings(op.terms, n)
    assert isinstance(op, MajoranaOperator) and op.num_modes == n
    return dict(op.terms)


def check_terms(actual: dict, expected: dict, context: str, atol: float = TERM_ATOL) -> None:
    worst, key = dr.max_coefficient_difference(actual, expected)
    assert worst <= atol, (
        f"{context}: term {key!r} got {actual.get(key, 0)!r}, dense {expected.get(key, 0)!r} "
        f"(differs by {worst:.3e})"
    )


def check_value(actual: float, expected: float, context: str, atol: float = VALUE_ATOL) -> None:
    assert abs(actual - expected) <= atol, f"{context}: value {actual!r}, dense {expected!r}"


def hermitian_coefficient(family: str, key, h: float) -> complex | float:
    return h if family == "pauli" else h * dr.hermitian_phase(len(key))


def all_labels(family: str, n: int) -> list:
    return dr.pauli_labels(n) if family == "pauli" else dr.majorana_labels(n)


def central_difference(fn, x: np.ndarray, h: float = FD_STEP) -> np.ndarray:
    return dr.central_difference(fn, x, h)


# ---------------------------------------------------------------------------------------
# 1. The reference itself
# ---------------------------------------------------------------------------------------

S = dn.ChannelSpec

REFERENCE_CHANNELS = [
    S("depolarizing", (1,), rate=0.3),
    S("depolarizing", (2, 0), rate=0.7),
    S("depolarizing", (1,), rate=4 / 3),
    S("depolarizing", (0, 2), rate=16 / 15),
    S("pauli_channel", (2,), probabilities=(("X", 0.1), ("Y", 0.2), ("Z", 0.05))),
    S("pauli_channel", (2, 1), probabilities=(("XZ", 0.1), ("IY", 0.2), ("II", 0.7))),
    S("bit_flip", (0,), rate=0.2),
    S("phase_flip", (1,), rate=0.6),
    S("bit_phase_flip", (2,), rate=1.0),
    S("amplitude_damping", (1,), rate=0.35),
    S("amplitude_damping", (0,), rate=1.0),
    S("pauli_lindblad", generators=(("XY", (0, 2)), ("Z", (1,))), rates=(0.1, 0.25)),
    S("dephasing", (1,), rate=0.3),
    S("particle_loss", (2,), rate=0.45),
    S("particle_loss", (0,), rate=1.0),
]


def random_density_matrix(rng, n: int) -> np.ndarray:
    a = rng.normal(size=(2**n, 2**n)) + 1j * rng.normal(size=(2**n, 2**n))
    rho = a @ a.conj().T
    return rho / np.trace(rho)


@pytest.mark.parametrize("spec", REFERENCE_CHANNELS, ids=repr)
def test_reference_channels_are_trace_preserving_and_completely_positive(spec):
    n = 3
    terms = spec.terms(n)
    assert dn.trace_preservation_defect(terms) < 1e-12
    kraus = dn.kraus_operators(terms)  # raises on a negative weight
    total = sum(k.conj().T @ k for k in kraus)
    np.testing.assert_allclose(total, np.eye(2**n), atol=1e-12)
    rng = np.random.default_rng(5)
    rho = random_density_matrix(rng, n)
    out = dn.apply_channel(terms, rho)
    assert abs(np.trace(out) - 1) < 1e-12
    assert np.allclose(out, out.conj().T, atol=1e-12)
    assert np.min(np.linalg.eigvalsh(out)) > -1e-12
    # Heisenberg and Schrödinger agree: Tr(O E(rho)) = Tr(E^dag(O) rho).
    o = rng.normal(size=(2**n, 2**n)) + 1j * rng.normal(size=(2**n, 2**n))
    o = o + o.conj().T
    assert abs(np.trace(o @ out) - np.trace(dn.apply_adjoint(terms, o) @ rho)) < 1e-12
    # Unital channels (every one here but the damping ones) fix the identity.
    if spec.name not in ("amplitude_damping", "particle_loss"):
        np.testing.assert_allclose(dn.apply_channel(terms, np.eye(2**n)), np.eye(2**n), atol=1e-12)


def test_reference_kraus_matrices_are_the_documented_ones():
    g = 0.36
    k0, k1 = dn.kraus_operators(dn.amplitude_damping_terms(g, 0, 1))
    np.testing.assert_allclose(k0, [[1, 0], [0, 0.8]], atol=1e-15)
    np.testing.assert_allclose(k1, [[0, 0.6], [0, 0]], atol=1e-15)
    # On mode 1 of 2, a_1 = Z_0 (x) |0><1| and the parity Z_0 Z_1 cancels the JW string.
    k0, k1 = dn.kraus_operators(dn.particle_loss_terms(g, 1, 2))
    lower = np.array([[0, 1], [0, 0]], dtype=complex)
    np.testing.assert_allclose(k1, 0.6 * np.kron(dr.I2, lower), atol=1e-15)
    np.testing.assert_allclose(k0, np.kron(dr.I2, np.diag([1, 0.8])), atol=1e-15)
    k0, k1 = dn.kraus_operators(dn.dephasing_terms(g, 0, 2))
    np.testing.assert_allclose(k0, 0.8 * np.eye(4), atol=1e-15)
    np.testing.assert_allclose(k1, 0.6 * np.kron(dr.PAULI_Z, dr.I2), atol=1e-15)


@pytest.mark.parametrize(
    ("p", "qubits"), [(0.3, (1,)), (1.0, (0, 2)), (4 / 3, (2,)), (16 / 15, (2, 1))]
)
def test_reference_depolarizing_matches_its_definition(p, qubits):
    n = 3
    rho = random_density_matrix(np.random.default_rng(2), n)
    direct = (1 - p) * rho + p * dn.replace_by_maximally_mixed(rho, qubits, n)
    np.testing.assert_allclose(
        dn.apply_channel(dn.depolarizing_terms(p, qubits, n), rho), direct, atol=1e-12
    )


def test_reference_full_depolarizing_gives_the_maximally_mixed_state():
    rng = np.random.default_rng(3)
    rho = random_density_matrix(rng, 2)
    out = dn.apply_channel(dn.depolarizing_terms(1.0, (0, 1), 2), rho)
    np.testing.assert_allclose(out, np.eye(4) / 4, atol=1e-12)
    out = dn.apply_channel(dn.depolarizing_terms(1.0, (0,), 1), random_density_matrix(rng, 1))
    np.testing.assert_allclose(out, np.eye(2) / 2, atol=1e-12)


def test_reference_damping_at_one_empties_the_mode():
    rng = np.random.default_rng(4)
    rho = random_density_matrix(rng, 2)
    out = dn.apply_channel(dn.particle_loss_terms(1.0, 1, 2), rho)
    assert abs(np.trace(dr.number_matrix(1, 2) @ out)) < 1e-12
    out = dn.apply_channel(dn.amplitude_damping_terms(1.0, 0, 1), random_density_matrix(rng, 1))
    np.testing.assert_allclose(out, [[1, 0], [0, 0]], atol=1e-12)
    # Dephasing at p = 1/2 removes the coherences between occupation numbers of the mode.
    out = dn.apply_channel(dn.dephasing_terms(0.5, 0, 1), random_density_matrix(rng, 1))
    assert abs(out[0, 1]) < 1e-12


@pytest.mark.parametrize("rates", [(0.1, 0.25, 0.05), (-0.08, 0.2, -0.03)])
def test_reference_lindblad_operator_sum_is_the_exponential(rates):
    n = 3
    generators = (("XY", (0, 2)), ("Z", (1,)), ("YZX", (2, 1, 0)))
    terms = dn.pauli_lindblad_terms(generators, rates, n)
    np.testing.assert_allclose(
        dn.superoperator(terms), dn.lindblad_superoperator(generators, rates, n), atol=1e-12
    )
    # Each Pauli string P is scaled by prod exp(-2 lambda_k) over the Q_k anticommuting with P.
    for label in dr.pauli_labels(n):
        p = dr.pauli_string_matrix(label)
        factor = math.prod(
            math.exp(-2 * r)
            for (g, q), r in zip(generators, rates, strict=True)
            if dr.pauli_strings_anticommute(label, dr.widen_pauli(g, q, n))
        )
        np.testing.assert_allclose(dn.apply_adjoint(terms, p), factor * p, atol=1e-12)
    # The map with negated rates is the inverse.
    inverse = dn.pauli_lindblad_terms(generators, [-r for r in rates], n)
    np.testing.assert_allclose(
        dn.superoperator(inverse) @ dn.superoperator(terms), np.eye(4**n), atol=1e-12
    )


@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize("seed", range(3))
def test_reference_noisy_case_pictures_agree(family, seed):
    case = dn.random_noisy_case(seed, family, 3, num_channels=5)
    rho = case.density_matrix()
    assert abs(np.trace(rho) - 1) < 1e-12
    value = case.expectation()
    assert abs(value - case.heisenberg_expectation()) < 1e-12
    # Expectation from the decompositions: Tr(O rho) = sum_P c_P(O) c_P(2^n rho).
    terms = case.heisenberg_terms()
    if family == "pauli":
        state = case.schrodinger_terms()
        obs = dr.pauli_decompose(case.operator_matrix(case.observable), case.n, atol=0.0)
        via_state = sum(obs[k] * state.get(k, 0) for k in obs)
        assert abs(via_state - value) < 1e-12
        assert set(terms) <= set(dr.pauli_labels(case.n))
        ref = dr.pauli_decompose(dr.reference_R(case.occupied, case.n), case.n, atol=0.0)
        via_operator = sum(terms[k] * ref.get(k, 0) for k in terms)
        assert abs(via_operator - value) < 1e-12


def test_reference_gradient_matches_exact_noiseless_gradient():
    base = dr.random_case(7, "pauli", 3, shared_parameters=True)
    items = tuple(dn.GateSpec(g, base.mapping[i], True) for i, g in enumerate(base.generators))
    case = dn.NoisyCase("pauli", 3, base.observable, base.occupied, items, base.parameters)
    np.testing.assert_allclose(case.gradient(), base.exact_gradient(base.parameters), atol=1e-10)


# ---------------------------------------------------------------------------------------
# 2. Every channel on every observable of 1-3 qubits / 2-3 modes
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Entry:
    n: int
    spec: dn.ChannelSpec
    boundary: bool = False  # a rate at the edge of its range: no finite differences
    zero_scale: bool = False  # the rate scales some term by exactly 0: gradient refused

    def __repr__(self) -> str:
        s = self.spec
        what = (
            s.rate
            if s.name not in ("pauli_channel", "pauli_lindblad")
            else (s.probabilities or tuple(zip(s.generators, s.rates, strict=True)))
        )
        return f"n={self.n}-{s.name}-{s.sites}-{what}"


PAULI_TABLE = [
    Entry(1, S("depolarizing", (0,), rate=0.3)),
    Entry(1, S("amplitude_damping", (0,), rate=0.4)),
    Entry(1, S("pauli_lindblad", generators=(("Y", (0,)),), rates=(0.15,))),
    Entry(2, S("depolarizing", (0,), rate=0.3)),
    Entry(2, S("depolarizing", (1,), rate=0.45)),
    Entry(2, S("depolarizing", (0, 1), rate=0.25)),
    Entry(2, S("depolarizing", (1, 0), rate=0.6)),
    Entry(2, S("depolarizing", (1,), rate=1.0), zero_scale=True),
    Entry(2, S("depolarizing", (0, 1), rate=1.0), zero_scale=True),
    Entry(2, S("depolarizing", (0,), rate=4 / 3), boundary=True),
    Entry(2, S("depolarizing", (1, 0), rate=16 / 15), boundary=True),
    Entry(2, S("pauli_channel", (1,), probabilities=(("X", 0.1), ("Y", 0.2), ("Z", 0.05)))),
    Entry(
        2,
        S(
            "pauli_channel",
            (0, 1),
            probabilities=(("XZ", 0.1), ("IY", 0.15), ("ZI", 0.05), ("YY", 0.12)),
        ),
    ),
    # YZ anticommutes with all four: scale 1 - 2 * 0.5 = 0 (fixed rate, gradient refused)
    Entry(
        2,
        S(
            "pauli_channel",
            (0, 1),
            probabilities=(("XZ", 0.1), ("IY", 0.15), ("ZI", 0.05), ("YY", 0.2)),
        ),
        zero_scale=True,
    ),
    Entry(2, S("pauli_channel", (1, 0), probabilities=(("XZ", 0.1), ("IY", 0.15), ("II", 0.75)))),
    Entry(2, S("pauli_channel", (1,), probabilities=(("I", 0.5), ("Z", 0.5))), zero_scale=True),
    Entry(2, S("bit_flip", (0,), rate=0.2)),
    Entry(2, S("bit_flip", (1,), rate=0.5), zero_scale=True),
    Entry(2, S("phase_flip", (1,), rate=0.3)),
    Entry(2, S("phase_flip", (0,), rate=0.85)),
    Entry(2, S("bit_phase_flip", (0,), rate=0.15)),
    Entry(2, S("bit_phase_flip", (1,), rate=1.0), boundary=True),
    Entry(2, S("amplitude_damping", (0,), rate=0.3)),
    Entry(2, S("amplitude_damping", (1,), rate=0.6)),
    Entry(2, S("amplitude_damping", (1,), rate=0.0), boundary=True),
    Entry(2, S("amplitude_damping", (0,), rate=1.0), zero_scale=True),
    Entry(2, S("pauli_lindblad", generators=(("XY", (0, 1)), ("Z", (1,))), rates=(0.1, 0.2))),
    Entry(2, S("pauli_lindblad", generators=(("YX", (1, 0)), ("X", (0,))), rates=(-0.05, 0.3))),
    Entry(
        2,
        S(
            "pauli_lindblad",
            generators=(("ZZ", (0, 1)), ("XX", (1, 0)), ("Y", (0,))),
            rates=(0.07, 0.02, -0.04),
        ),
    ),
    Entry(3, S("depolarizing", (2, 0), rate=0.35)),
    Entry(3, S("pauli_channel", (2, 0), probabilities=(("XY", 0.12), ("ZI", 0.08), ("IX", 0.1)))),
    Entry(3, S("amplitude_damping", (2,), rate=0.45)),
    Entry(3, S("bit_phase_flip", (1,), rate=0.35)),
    Entry(
        3, S("pauli_lindblad", generators=(("XZY", (2, 0, 1)), ("YY", (0, 2))), rates=(0.12, -0.06))
    ),
]

MAJORANA_TABLE = [
    Entry(1, S("dephasing", (0,), rate=0.3)),
    Entry(1, S("particle_loss", (0,), rate=0.4)),
    Entry(2, S("dephasing", (0,), rate=0.3)),
    Entry(2, S("dephasing", (1,), rate=0.2)),
    Entry(2, S("dephasing", (1,), rate=0.5), zero_scale=True),
    Entry(2, S("dephasing", (0,), rate=1.0), boundary=True),
    Entry(2, S("particle_loss", (0,), rate=0.35)),
    Entry(2, S("particle_loss", (1,), rate=0.5)),
    Entry(2, S("particle_loss", (1,), rate=0.0), boundary=True),
    Entry(2, S("particle_loss", (1,), rate=1.0), zero_scale=True),
    Entry(3, S("particle_loss", (2,), rate=0.4)),
    Entry(3, S("particle_loss", (1,), rate=0.25)),
    Entry(3, S("dephasing", (1,), rate=0.25)),
]


def prep_gates(family: str, n: int, parity: str) -> list[tuple[dict, float]]:
    """Fixed rotations making a generic state (Schrödinger) / mixing the observable after the
    channel (Heisenberg). ``parity="even"``: Majorana generators of even weight only."""
    out: list[tuple[dict, float]] = []
    if family == "pauli":
        for q in range(n):
            out.append(({dr.widen_pauli("Y", [q], n): 1.0}, 0.4 + 0.15 * q))
            out.append(({dr.widen_pauli("X", [q], n): 1.0}, 0.3 - 0.2 * q))
        for q in range(n - 1):
            out.append(({dr.widen_pauli("XY", [q, q + 1], n): 1.0}, 0.35))
            out.append(({dr.widen_pauli("ZX", [q, q + 1], n): 1.0}, -0.45))
        return out
    m = 2 * n
    if parity == "all":
        out += [({(k,): 1.0}, 0.2 + 0.1 * k) for k in range(m)]
    out += [({(k, k + 1): 1j}, 0.35 - 0.1 * k) for k in range(m - 1)]
    out += [({(0, m - 1): 1j}, 0.55)]
    if m >= 4:
        out += [({(0, 1, 2, 3): -1.0}, 0.25), ({(0, 2): 1j}, -0.4)]
    if parity == "all" and m >= 3:
        out += [({(0, 1, m - 1): -1j}, 0.3)]
    return out


def is_even(key) -> bool:
    return len(key) % 2 == 0


def table_case(family: str, entry: Entry, prep: str, route: str, occupied) -> dn.NoisyCase:
    """``prep`` gates (slots 0..R-1), then the channel; its rate fixed (``propagate``) or in
    slot(s) R.. (``graph``)."""
    n = entry.n
    gates = [] if prep == "none" else prep_gates(family, n, prep)
    items: list = [dn.GateSpec(g, k) for k, (g, _) in enumerate(gates)]
    parameters = [theta for _, theta in gates]
    spec = entry.spec
    if route == "graph":
        spec, values = dn.indexed(spec, len(parameters))
        parameters += values
    items.append(spec)
    return dn.NoisyCase(family, n, {}, tuple(occupied), tuple(items), tuple(parameters))


def run_table(family: str, entry: Entry, prep: str, picture: str, route: str) -> None:
    n = entry.n
    occupied = [q for q in range(n) if q % 2 == 1] or [0]
    case = table_case(family, entry, prep, route, occupied)
    context = f"{family} {entry!r} prep={prep} {picture} {route} state={occupied}"
    circuit = to_circuit(case, bound=route == "propagate")
    x = np.array(case.parameters)
    if route == "graph":
        assert circuit.n_parameters == len(x), context
    labels = all_labels(family, n)
    if prep == "even":
        labels = [label for label in labels if is_even(label)]
    state_terms = case.schrodinger_terms() if picture == "schrodinger" else None
    for label in labels:
        observable = {label: hermitian_coefficient(family, label, 0.7)}
        where = f"{context} observable {label!r}"
        prop = make_propagator(case, picture, observable)
        if route == "propagate":
            prop.propagate(circuit)
            value = prop.expectation_value()
            evolved = prop.evolved_operator(atol=0.0)
        else:
            prop.build_graph(circuit)
            value = prop.expectation_value_functional()(x)
            evolved = prop.evolved_operator(x, atol=0.0)
        check_value(value, case.expectation(observable=observable), where)
        expected = (
            case.heisenberg_terms(observable=observable) if state_terms is None else state_terms
        )
        check_terms(plain_terms(family, evolved, n), expected, where)
    if route == "graph":
        check_table_gradient(family, entry, case, picture, labels, context)


def check_table_gradient(family, entry: Entry, case: dn.NoisyCase, picture, labels, context):
    """Value and gradient of a many-term observable: dense, central differences, and the
    refusal when the rate scales a term by 0."""
    rng = np.random.default_rng(len(labels) + case.n)
    observable = {
        label: hermitian_coefficient(family, label, float(rng.uniform(-1, 1))) for label in labels
    }
    prop = make_propagator(case, picture, observable)
    prop.build_graph(to_circuit(case, bound=False))
    x = np.array(case.parameters)
    value_fn = prop.expectation_value_functional()
    both_fn = prop.expectation_value_and_gradient_functional()
    expected = case.expectation(observable=observable)
    check_value(value_fn(x), expected, f"{context} many-term observable")
    if not case.parameters:
        return
    if entry.zero_scale:
        with pytest.raises(ValueError, match="gradient"):
            both_fn(x)
        check_value(value_fn(x), expected, f"{context} after the refused gradient")
        return
    value, gradient = both_fn(x)
    check_value(value, expected, f"{context} value_and_gradient")
    if entry.boundary:
        return
    dense_case = dataclasses.replace(case, observable=observable)
    dense_gradient = dense_case.gradient()
    assert np.max(np.abs(gradient - dense_gradient)) <= GRADIENT_ATOL, (
        f"{context}: gradient {gradient}, dense {dense_gradient}"
    )
    fd = central_difference(value_fn, x)
    assert np.max(np.abs(gradient - fd)) <= FD_ATOL, f"{context}: gradient {gradient}, FD {fd}"


@pytest.mark.parametrize("route", ["propagate", "graph"])
@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("prep", ["none", "prep"])
@pytest.mark.parametrize("entry", PAULI_TABLE, ids=repr)
def test_pauli_channel_on_every_observable(entry, prep, picture, route):
    run_table("pauli", entry, prep, picture, route)


@pytest.mark.parametrize("route", ["propagate", "graph"])
@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("prep", ["none", "even", "all"])
@pytest.mark.parametrize("entry", MAJORANA_TABLE, ids=repr)
def test_majorana_channel_on_every_monomial(entry, prep, picture, route):
    """``prep="even"``: even generators and even monomials only (parity-superselected);
    ``"all"``: odd generators too, and every monomial."""
    run_table("majorana", entry, prep, picture, route)


def test_depolarizing_scales_every_non_identity_string_by_one_minus_p():
    """The documented scale factors, derived from the Kraus form: E^dag(P) = (1 - p) P for
    every P acting on the channel's qubits, P itself otherwise."""
    n = 2
    for label in dr.pauli_labels(n):
        prop = PauliPropagator(PauliOperator({label: 1.0}, n), [], cutoff=n)
        prop.propagate(Circuit([noise.depolarizing(0.3, 1)], n))
        expected = 1.0 if label[1] == "I" else 0.7
        check_terms(
            plain_terms("pauli", prop.evolved_operator(atol=0.0), n), {label: expected}, label
        )


# ---------------------------------------------------------------------------------------
# 3. Random noisy circuits, T = 1..4 threads
# ---------------------------------------------------------------------------------------

RANDOM_SEEDS = range(12)


def random_size(family: str, seed: int) -> int:
    return (3 + seed % 2) if family == "pauli" else (2 + seed % 2)


def even_case(case: dn.NoisyCase) -> dn.NoisyCase:
    """The same circuit with every odd Majorana term made even (one index added or removed),
    for parity-superselected circuits."""

    def evenize(key):
        if len(key) % 2 == 0:
            return key
        free = [k for k in range(2 * case.n) if k not in key]
        return tuple(sorted(key + (free[0],))) if free else key[:-1]

    def terms(mapping):
        out: dict = {}
        for key, c in mapping.items():
            new = evenize(key)
            h = c / dr.hermitian_phase(len(key))
            out[new] = out.get(new, 0) + h * dr.hermitian_phase(len(new))
        return out

    items = tuple(
        dataclasses.replace(item, generator=terms(item.generator))
        if isinstance(item, dn.GateSpec)
        else item
        for item in case.items
    )
    return dataclasses.replace(case, observable=terms(case.observable), items=items)


def random_noisy(seed: int, family: str, parity: str, **kwargs) -> dn.NoisyCase:
    n = random_size(family, seed)
    if family == "majorana" and parity == "even":
        # One term per gate, so that evening the terms keeps each gate's terms commuting.
        case = dn.random_noisy_case(seed, family, n, max_generator_terms=1, **kwargs)
        return even_case(case)
    return dn.random_noisy_case(seed, family, n, **kwargs)


def set_threads(monkeypatch, threads: int) -> None:
    monkeypatch.setenv(ENV, str(threads))


def check_threads(prop, threads: int, *, whole_team: bool = True) -> None:
    """The thread count came from the environment; ``whole_team``: replays use every thread
    however small the graph (slow on 2 cores with T = 2, so only where few replays run)."""
    assert prop.num_threads == threads
    if threads > 1 and whole_team:
        prop._engine._set_small_work(0)


def describe(case: dn.NoisyCase, seed: int, picture: str, threads: int) -> str:
    channels = [i.name for i in case.items if isinstance(i, dn.ChannelSpec)]
    return (
        f"{case.family} seed={seed} n={case.n} {picture} T={threads} state={case.occupied} "
        f"channels={channels}"
    )


FAMILY_PARITY = [("pauli", "all"), ("majorana", "even"), ("majorana", "all")]


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("seed", RANDOM_SEEDS, ids=lambda s: f"seed={s}")
@pytest.mark.parametrize(("family", "parity"), FAMILY_PARITY, ids=lambda v: v)
def test_random_noisy_propagate_matches_dense(family, parity, seed, picture, monkeypatch):
    threads = 1 + seed % 4
    set_threads(monkeypatch, threads)
    case = random_noisy(seed, family, parity, num_channels=4)
    context = describe(case, seed, picture, threads)
    print(context)
    expected_value = case.expectation()
    expected_terms = case.terms(picture)
    cls = propagator_class(family)
    observable = make_operator(family, case.observable, case.n)
    config = picture_config(case.n, picture)
    from_circuit = cls.from_circuit(to_circuit(case, with_state=True), observable, **config)
    propagated = make_propagator(case, picture)
    check_threads(propagated, threads)
    propagated.propagate(to_circuit(case))
    for route, prop in (("from_circuit", from_circuit), ("propagate", propagated)):
        assert prop.num_threads == threads
        check_value(prop.expectation_value(), expected_value, f"{context} {route}")
        evolved = plain_terms(family, prop.evolved_operator(atol=0.0), case.n)
        check_terms(evolved, expected_terms, f"{context} {route}")


def fresh_point(case: dn.NoisyCase, rng) -> np.ndarray:
    """New angles; each channel rate moved a little inside its range."""
    x = np.array(case.parameters, dtype=float)
    rate_slots = {s for item in case.items if isinstance(item, dn.ChannelSpec) for s in item.slots}
    lindblad = {
        s
        for item in case.items
        if isinstance(item, dn.ChannelSpec) and item.name == "pauli_lindblad"
        for s in item.slots
    }
    for k in range(x.size):
        if k in lindblad:
            x[k] += rng.uniform(-0.05, 0.05)
        elif k in rate_slots:
            x[k] = min(max(x[k] * rng.uniform(0.7, 1.3), 0.02), 0.45)
        else:
            x[k] = rng.uniform(-1.5, 1.5)
    return x


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("seed", RANDOM_SEEDS, ids=lambda s: f"seed={s}")
@pytest.mark.parametrize(("family", "parity"), FAMILY_PARITY, ids=lambda v: v)
def test_random_noisy_graph_value_gradient_operator(family, parity, seed, picture, monkeypatch):
    threads = 1 + (seed + 1) % 4
    set_threads(monkeypatch, threads)
    case = random_noisy(
        100 + seed,
        family,
        parity,
        num_channels=4,
        indexed_channels=True,
        shared_parameters=seed % 3 == 1,
    )
    context = describe(case, seed, picture, threads) + f" parameters={case.parameters}"
    print(context)
    prop = make_propagator(case, picture)
    check_threads(prop, threads, whole_team=False)
    # Even seeds seed the build with the circuit's parameters, odd seeds build structurally.
    prop.build_graph(to_circuit(case, bound=seed % 2 == 0))
    assert prop.n_parameters == len(case.parameters), context
    value_fn = prop.expectation_value_functional()
    both_fn = prop.expectation_value_and_gradient_functional()
    rng = np.random.default_rng(seed)
    for label, x in (
        ("build point", np.array(case.parameters)),
        ("fresh point", fresh_point(case, rng)),
    ):
        where = f"{context} at {label} {x.tolist()}"
        expected = case.expectation(x)
        check_value(value_fn(x), expected, where)
        value, gradient = both_fn(x)
        check_value(value, expected, f"{where} value_and_gradient")
        dense_gradient = case.gradient(x)
        assert np.max(np.abs(gradient - dense_gradient)) <= GRADIENT_ATOL, (
            f"{where}: gradient {gradient}, dense {dense_gradient}"
        )
        fd = central_difference(value_fn, x)
        assert np.max(np.abs(gradient - fd)) <= FD_ATOL, f"{where}: gradient {gradient}, FD {fd}"
        method_value, method_gradient = prop.expectation_value_and_gradient(x)
        assert abs(method_value - value) <= 1e-12 and np.allclose(
            method_gradient, gradient, atol=1e-12
        )
        expected_terms = case.terms(picture, x)
        check_terms(
            plain_terms(family, prop.evolved_operator(x, atol=0.0), case.n), expected_terms, where
        )
    # contract_partially folds the graph at the last point into the operand: afterwards the
    # propagator holds the evolved operator/state with no parameters left.
    prop.contract_partially(x)
    assert prop.n_parameters == 0, context
    check_value(
        prop.expectation_value(), case.expectation(x), f"{context} after contract_partially"
    )
    check_terms(
        plain_terms(family, prop.evolved_operator(atol=0.0), case.n),
        case.terms(picture, x),
        f"{context} after contract_partially",
    )


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_thread_counts_agree_on_noisy_graphs(family, picture, monkeypatch):
    case = random_noisy(7, family, "even", num_channels=6, num_gates=8, indexed_channels=True)
    x = fresh_point(case, np.random.default_rng(1))
    results = {}
    for threads in (1, 2, 3, 4):
        set_threads(monkeypatch, threads)
        prop = make_propagator(case, picture)
        check_threads(prop, threads)
        prop.build_graph(to_circuit(case, bound=False))
        value, gradient = prop.expectation_value_and_gradient_functional()(x)
        evolved = plain_terms(family, prop.evolved_operator(x, atol=0.0), case.n)
        results[threads] = (value, gradient, evolved, prop.size())
    check_value(results[1][0], case.expectation(x), f"{family} {picture} T=1")
    for threads in (2, 3, 4):
        value, gradient, evolved, size = results[threads]
        context = f"{family} {picture} T={threads} vs T=1"
        assert size == results[1][3], context
        assert abs(value - results[1][0]) <= 1e-12, context
        assert np.max(np.abs(gradient - results[1][1])) <= 1e-12, context
        check_terms(evolved, results[1][2], context, atol=2e-12)


def test_shared_rate_slot_gradient_sums_over_channels():
    """Depolarizing on every qubit after every layer, all reading one slot (the last): the rate's
    derivative is the sum over the channels, as the dense reference has it."""
    n = 3
    items: list = []
    slot = 0
    for _ in range(2):
        for q in range(n - 1):
            items.append(dn.GateSpec({dr.widen_pauli("ZZ", [q, q + 1], n): 1.0}, slot))
            slot += 1
        for q in range(n):
            items.append(dn.GateSpec({dr.widen_pauli("X", [q], n): 1.0}, slot))
            slot += 1
        items += [S("depolarizing", (q,), index=10) for q in range(n)]
    rng = np.random.default_rng(11)
    params = tuple(rng.uniform(-1, 1, size=10)) + (0.07,)
    observable = {dr.widen_pauli("ZZ", [q, q + 1], n): -1.0 for q in range(n - 1)}
    observable.update({dr.widen_pauli("X", [q], n): -0.8 for q in range(n)})
    case = dn.NoisyCase("pauli", n, observable, (1,), tuple(items), params)
    for picture in PICTURES:
        prop = make_propagator(case, picture)
        prop.build_graph(to_circuit(case, bound=False))
        assert prop.n_parameters == 11
        value, gradient = prop.expectation_value_and_gradient_functional()(params)
        check_value(value, case.expectation(), picture)
        np.testing.assert_allclose(
            gradient, case.gradient(), rtol=0, atol=GRADIENT_ATOL, err_msg=picture
        )


def test_documented_parameter_count_example():
    circuit = Circuit(
        [ExpGate(PauliOperator({"XI": 1.0}, 2)), noise.depolarizing(qubits=[0, 1], index=1)], 2
    )
    assert circuit.n_parameters == 2
    with pytest.raises(ValueError, match="contiguous"):
        Circuit([ExpGate(PauliOperator({"XI": 1.0}, 2)), noise.depolarizing(qubits=0, index=2)], 2)


# ---------------------------------------------------------------------------------------
# 4. Qiskit PauliLindbladMap
# ---------------------------------------------------------------------------------------

PLM_CASES = [
    [("XX", 0.1), ("IZ", 0.2)],
    [("XYZ", 0.05), ("IZI", 0.1), ("ZIX", 0.03), ("YII", 0.08)],
    [("XI", -0.04), ("ZY", 0.12)],
]


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("terms", PLM_CASES, ids=lambda t: "+".join(f"{a}:{b}" for a, b in t))
def test_pauli_lindblad_map_conversion(terms, picture):
    qi = pytest.importorskip("qiskit.quantum_info")
    plm = qi.PauliLindbladMap.from_list(terms)
    n = plm.num_qubits
    channel = noise.from_pauli_lindblad_map(plm)
    # The dense map from the generators as written: Qiskit labels are little-endian, so the
    # reversed label is monoprop's full-width string (character k on qubit k).
    generators = []
    for label, _ in terms:
        full = label[::-1]
        qubits = tuple(q for q, ch in enumerate(full) if ch != "I")
        generators.append(("".join(full[q] for q in qubits), qubits))
    spec = S("pauli_lindblad", generators=tuple(generators), rates=tuple(r for _, r in terms))
    # Heisenberg on the channel alone: every Pauli string P goes to f(P) P, f = Qiskit's own
    # pauli_fidelity of the map.
    for label in dr.pauli_labels(n):
        prop = PauliPropagator(
            PauliOperator({label: 1.0}, n), [], **picture_config(n, "heisenberg")
        )
        prop.propagate(Circuit([channel], n))
        fidelity = plm.pauli_fidelity(qi.QubitSparsePauli.from_label(label[::-1]))
        got = plain_terms("pauli", prop.evolved_operator(atol=0.0), n)
        check_terms(got, {label: fidelity}, f"{terms} {label}")
    # With preparation rotations, both pictures, against the dense map.
    gates = prep_gates("pauli", n, "all")
    items = [dn.GateSpec(g, k) for k, (g, _) in enumerate(gates)] + [spec]
    rng = np.random.default_rng(n)
    observable = {label: float(rng.uniform(-1, 1)) for label in dr.pauli_labels(n)}
    case = dn.NoisyCase("pauli", n, observable, (0,), tuple(items), tuple(t for _, t in gates))
    circuit = Circuit(
        [ExpGate(PauliOperator(g, n)) for g, _ in gates] + [channel],
        n,
        parameters=list(case.parameters),
    )
    prop = make_propagator(case, picture)
    prop.propagate(circuit)
    check_value(prop.expectation_value(), case.expectation(), f"{terms} {picture}")
    check_terms(
        plain_terms("pauli", prop.evolved_operator(atol=0.0), n),
        case.terms(picture),
        f"{terms} {picture}",
    )


def test_pauli_lindblad_map_inverse_undoes_the_map():
    qi = pytest.importorskip("qiskit.quantum_info")
    plm = qi.PauliLindbladMap.from_list([("XX", 0.1), ("IZ", 0.2), ("YI", 0.05)])
    n = 2
    circuit = Circuit(
        [noise.from_pauli_lindblad_map(plm), noise.from_pauli_lindblad_map(plm.inverse())], n
    )
    for label in dr.pauli_labels(n):
        prop = PauliPropagator(PauliOperator({label: 0.5}, n), [], cutoff=n)
        prop.propagate(circuit)
        check_terms(plain_terms("pauli", prop.evolved_operator(atol=0.0), n), {label: 0.5}, label)


# ---------------------------------------------------------------------------------------
# 5. Truncation: decayed terms fall under lower_atol
# ---------------------------------------------------------------------------------------


def test_strongly_decayed_observable_stops_branching():
    """Heisenberg Z0 meets depolarizing p = 0.999 first (last in the circuit): its coefficient
    1e-3 is below lower_atol = 1e-2 for every earlier rotation, so it is only scaled by cos and
    never branches; noiseless, the same rotations make Y0 and X0 terms."""
    n = 1
    gates = [
        ExpGate(PauliOperator({"X": 1.0}, n)),
        ExpGate(PauliOperator({"Y": 1.0}, n)),
        ExpGate(PauliOperator({"X": 1.0}, n)),
    ]
    angles = [0.4, -0.7, 0.3]
    observable = PauliOperator({"Z": 1.0}, n)
    noisy = PauliPropagator(observable, [], cutoff=n, lower_atol=1e-2)
    noisy.propagate(Circuit(gates + [noise.depolarizing(0.999, 0)], n, parameters=angles))
    clean = PauliPropagator(observable, [], cutoff=n, lower_atol=1e-2)
    clean.propagate(Circuit(gates, n, parameters=angles))
    assert noisy.size() <= 2 < clean.size()  # Z (and maybe a zero identity) vs Z, Y, X
    assert set(plain_terms("pauli", noisy.evolved_operator(atol=0.0), n)) <= {"Z", "I"}
    items = [dn.GateSpec({g: 1.0}, k) for k, g in enumerate("XYX")] + [
        S("depolarizing", (0,), rate=0.999)
    ]
    case = dn.NoisyCase("pauli", n, {"Z": 1.0}, (), tuple(items), tuple(angles))
    # The dropped branches are each below the tolerance: |error| <= 3 lower_atol.
    # Only the 1e-3 left after the channel is mis-rotated: |error| <= 2e-3.
    assert abs(noisy.expectation_value() - case.expectation()) <= 2e-3


@pytest.mark.parametrize("picture", PICTURES)
def test_noise_keeps_fewer_terms_under_lower_atol(picture):
    """A 5-qubit brickwork of rotations with depolarizing after every layer: at the same
    lower_atol the noisy run keeps no more terms than the noiseless one, and its value stays
    within a few lower_atol of the dense noisy value."""
    n, lower = 5, 1e-3
    rng = np.random.default_rng(21)
    items: list = []
    slot = 0
    for layer in range(4):
        for q in range(layer % 2, n - 1, 2):
            items.append(dn.GateSpec({dr.widen_pauli("ZZ", [q, q + 1], n): 1.0}, slot))
            slot += 1
        for q in range(n):
            items.append(dn.GateSpec({dr.widen_pauli("XY"[q % 2], [q], n): 1.0}, slot))
            slot += 1
        items += [S("depolarizing", (q,), rate=0.2) for q in range(n)]
    angles = tuple(rng.uniform(-1.2, 1.2, size=slot))
    observable = {dr.widen_pauli("ZZ", [q, q + 1], n): 1.0 for q in range(n - 1)}
    observable[dr.widen_pauli("X", [2], n)] = 0.5
    noisy_case = dn.NoisyCase("pauli", n, observable, (1, 3), tuple(items), angles)
    clean_items = tuple(i for i in items if isinstance(i, dn.GateSpec))
    clean_case = dataclasses.replace(noisy_case, items=clean_items)
    sizes, errors = {}, {}
    for name, case in (("noisy", noisy_case), ("clean", clean_case)):
        prop = make_propagator(case, picture, lower_atol=lower)
        prop.propagate(to_circuit(case))
        sizes[name] = prop.size()
        exact = make_propagator(case, picture)
        exact.propagate(to_circuit(case))
        check_value(exact.expectation_value(), case.expectation(), f"{name} untruncated")
        errors[name] = abs(prop.expectation_value() - case.expectation())
    print(picture, sizes, errors)
    assert sizes["noisy"] <= sizes["clean"], sizes
    assert errors["noisy"] <= 20 * lower, errors


# ---------------------------------------------------------------------------------------
# 6. Refused arguments, and the propagator after a refused call
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "shown"),
    [
        (lambda: noise.depolarizing(1.5, 0), "1.5"),
        (lambda: noise.depolarizing(-0.1, [0, 1]), "-0.1"),
        (lambda: noise.depolarizing(1.1, [0, 1]), "1.1"),  # above 16/15
        (lambda: noise.bit_flip(1.2, 0), "1.2"),
        (lambda: noise.phase_flip(-0.3, 0), "-0.3"),
        (lambda: noise.bit_phase_flip(2.0, 0), "2.0"),
        (lambda: noise.amplitude_damping(1.01, 0), "1.01"),
        (lambda: noise.dephasing(-0.2, 0), "-0.2"),
        (lambda: noise.particle_loss(1.5, 0), "1.5"),
        (lambda: noise.pauli_channel({"X": 1.3}, 0), "1.3"),
        (lambda: noise.pauli_channel({"X": -0.1}, 0), "-0.1"),
    ],
)
def test_probability_outside_its_range(make, shown):
    with pytest.raises(ValueError) as info:
        make()
    assert shown in str(info.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: noise.depolarizing(math.nan, 0),
        lambda: noise.bit_flip(math.nan, 1),
        lambda: noise.amplitude_damping(math.nan, 0),
        lambda: noise.dephasing(math.nan, 0),
        lambda: noise.particle_loss(math.nan, 0),
        lambda: noise.pauli_channel({"Z": math.nan}, 0),
        lambda: noise.pauli_lindblad([("X", [0])], [math.nan]),
        lambda: noise.pauli_lindblad([("X", [0])], [math.inf]),
    ],
)
def test_nan_rate(make):
    with pytest.raises(ValueError) as info:
        make()
    assert "nan" in str(info.value).lower() or "inf" in str(info.value).lower()


def test_pauli_channel_probabilities_summing_above_one():
    with pytest.raises(ValueError) as info:
        noise.pauli_channel({"X": 0.6, "Z": 0.6}, 0)
    assert "1.2" in str(info.value)
    with pytest.raises(ValueError) as info:
        noise.pauli_channel({"XX": 0.5, "ZI": 0.3, "IY": 0.25}, [0, 1])
    assert "1.05" in str(info.value)
    with pytest.raises(ValueError) as info:  # identity given: must sum to 1
        noise.pauli_channel({"I": 0.5, "Z": 0.3}, 0)
    assert "0.8" in str(info.value)
    noise.pauli_channel({"I": 0.5, "Z": 0.5}, 0)  # exactly 1 is fine


@pytest.mark.parametrize(
    ("gate", "n", "shown"),
    [
        (lambda: noise.bit_flip(0.1, 3), 2, "3"),
        (lambda: noise.depolarizing(0.1, [0, 2]), 2, "2"),
        (lambda: noise.pauli_channel({"XZ": 0.1}, [1, 4]), 3, "4"),
        (lambda: noise.amplitude_damping(0.1, 2), 2, "2"),
        (lambda: noise.pauli_lindblad([("XX", [0, 5])], [0.1]), 3, "5"),
        (lambda: noise.dephasing(0.1, 2), 2, "2"),
        (lambda: noise.particle_loss(0.1, 7), 3, "7"),
    ],
)
def test_site_out_of_range_for_the_circuit(gate, n, shown):
    with pytest.raises(ValueError) as info:
        Circuit([gate()], n)
    assert shown in str(info.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: noise.depolarizing(0.1, 0, index=0),
        lambda: noise.depolarizing(qubits=0),
        lambda: noise.bit_flip(0.1, 0, index=1),
        lambda: noise.bit_flip(qubit=0),
        lambda: noise.amplitude_damping(0.1, 0, index=0),
        lambda: noise.amplitude_damping(qubit=0),
        lambda: noise.dephasing(0.1, 0, index=0),
        lambda: noise.particle_loss(mode=0),
        lambda: noise.pauli_lindblad([("X", [0])], [0.1], index=[0]),
        lambda: noise.pauli_lindblad([("X", [0])]),
    ],
)
def test_exactly_one_of_rate_and_index(make):
    with pytest.raises(ValueError):
        make()


def test_qubit_channel_in_majorana_circuit():
    n = 2
    with pytest.raises(TypeError):
        Circuit([ExpGate(MajoranaOperator({(0, 1): 1j}, n)), noise.bit_flip(0.1, 0)], n)
    prop = MajoranaPropagator(MajoranaOperator({(0, 1): 1j}, n), [1], cutoff=4)
    with pytest.raises(TypeError):
        prop.propagate(Circuit([noise.depolarizing(0.1, 0)], n))
    with pytest.raises(TypeError):
        PauliPropagator(PauliOperator({"ZZ": 1.0}, n), [], cutoff=n).propagate(
            Circuit([noise.dephasing(0.1, 0)], n)
        )
    # Still works: the refused circuit changed nothing.
    prop.propagate(Circuit([noise.particle_loss(0.3, 0)], n))
    case = dn.NoisyCase(
        "majorana", n, {(0, 1): 1j}, (1,), (S("particle_loss", (0,), rate=0.3),), ()
    )
    check_value(prop.expectation_value(), case.expectation(), "after refused propagate")


@pytest.mark.parametrize("picture", PICTURES)
def test_refused_rates_leave_the_propagator_working(picture):
    """Rates out of range, NaN, and a gradient through a zero scale are refused with a
    ValueError naming the value; later calls still give the dense values."""
    n = 2
    items = (
        dn.GateSpec({"YI": 1.0}, 0),
        dn.GateSpec({"XY": 1.0}, 1),
        S("depolarizing", (0, 1), index=2),
        S("amplitude_damping", (1,), index=3),
    )
    case = dn.NoisyCase("pauli", n, {"ZZ": 1.0, "XI": 0.5}, (0,), items, (0.3, -0.4, 0.2, 0.3))
    prop = make_propagator(case, picture)
    prop.build_graph(to_circuit(case, bound=False))
    value_fn = prop.expectation_value_functional()
    both_fn = prop.expectation_value_and_gradient_functional()
    good = np.array(case.parameters)
    for bad, shown in (
        ([0.3, -0.4, 1.5, 0.3], "1.5"),
        ([0.3, -0.4, 0.2, -0.25], "-0.25"),
        ([0.3, -0.4, 0.2, 1.75], "1.75"),
    ):
        for call in (value_fn, both_fn, prop.expectation_value):
            with pytest.raises(ValueError) as info:
                call(bad)
            assert shown in str(info.value), str(info.value)
    with pytest.raises(ValueError):
        value_fn([0.3, -0.4, math.nan, 0.3])
    # p = 1: the value is fine (dense), the gradient refused.
    at_one = np.array([0.3, -0.4, 1.0, 0.3])
    check_value(value_fn(at_one), case.expectation(at_one), "p=1 value")
    with pytest.raises(ValueError):
        both_fn(at_one)
    with pytest.raises(ValueError):
        prop.gradient(at_one)
    # Everything still works.
    check_value(value_fn(good), case.expectation(good), "after refusals")
    value, gradient = both_fn(good)
    check_value(value, case.expectation(good), "after refusals (value_and_gradient)")
    np.testing.assert_allclose(gradient, case.gradient(good), rtol=0, atol=GRADIENT_ATOL)
    check_terms(
        plain_terms("pauli", prop.evolved_operator(good, atol=0.0), n),
        case.terms(picture, good),
        "after refusals",
    )


def clifford_items(gate: CliffordGate, n: int) -> list:
    """A Clifford gate as fixed dense rotations exp(+i k pi/4 H), one per factor."""
    return [
        dn.FixedGateSpec(dr.pauli_terms_to_strings(op.terms, n), k * math.pi / 4)
        for op, k in gate.factors
    ]


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("order", ["channel_first", "clifford_first"])
def test_noise_next_to_clifford_gates(order, picture):
    """Channels before and after Clifford gates (which the engine absorbs into a frame) against
    the dense circuit with each Clifford gate written out as rotations by multiples of pi/4."""
    n = 2
    observable = {"ZZ": 1.0, "XI": 0.5, "IY": -0.3}
    rotation = dn.GateSpec({"YX": 1.0}, 0)
    channels = [S("amplitude_damping", (0,), rate=0.3), S("depolarizing", (1,), rate=0.2)]
    cliffords = [CliffordGate.s(0, n), CliffordGate.h(1, n)]
    mono_gates: list = [ExpGate(PauliOperator(rotation.generator, n))]
    items: list = [rotation]
    for channel, clifford in zip(channels, cliffords, strict=True):
        pair = [("channel", channel), ("clifford", clifford)]
        if order == "clifford_first":
            pair.reverse()
        for kind, obj in pair:
            if kind == "channel":
                mono_gates.append(to_channel(obj))
                items.append(obj)
            else:
                mono_gates.append(obj)
                items += clifford_items(obj, n)
    case = dn.NoisyCase("pauli", n, observable, (1,), tuple(items), (0.35,))
    prop = make_propagator(case, picture)
    prop.propagate(Circuit(mono_gates, n, parameters=[0.35]))
    check_value(prop.expectation_value(), case.expectation(), f"{order} {picture}")
    evolved = plain_terms("pauli", prop.evolved_operator(atol=0.0), n)
    check_terms(evolved, case.terms(picture), f"{order} {picture}")


def test_channel_argument_types():
    with pytest.raises(TypeError):
        noise.depolarizing("0.1", 0)
    with pytest.raises(TypeError):
        noise.bit_flip(0.1 + 0j, 0)
    with pytest.raises(ValueError):
        noise.depolarizing(0.1, [0, 1, 2])  # at most 2 qubits
    with pytest.raises(ValueError):
        noise.depolarizing(0.1, [1, 1])
    with pytest.raises(ValueError):
        noise.pauli_channel({"XQ": 0.1}, [0, 1])
    with pytest.raises(ValueError):
        noise.pauli_channel({"X": 0.1}, [0, 1])  # label length must match the qubits
    with pytest.raises(TypeError):
        noise.from_pauli_lindblad_map({"XX": 0.1})
