"""Clifford gates against the dense reference and the plain truncating propagator.

* Every named qubit Clifford equals its textbook matrix up to a global phase, and the
  propagators apply it to every 1- and 2-qubit Pauli string as ``U^dagger P U``.
* The braid and the fermionic swap act on every Majorana monomial of two modes (lengths 1 to
  4) as their dense unitaries do; the fermionic swap exchanges the modes' ladder operators.
* Random circuits that mix Clifford gates and rotations, both families, both pictures,
  T = 1..4: values and evolved operators after ``propagate``, values and gradients (against
  central finite differences) of the graph.
* With truncation, Clifford gates follow the rule of a plain propagator that relabels every
  term exactly (tests/truncating_reference.py).
"""

from __future__ import annotations

import itertools

import dense_reference as dr
import numpy as np
import pytest
import truncating_reference as tr
from scipy.linalg import expm

from monoprop import (
    Circuit,
    CliffordGate,
    ExpGate,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
)

VALUE_ATOL = 1e-10
GRADIENT_ATOL = 1e-6


# -- dense unitaries of monoprop gates ------------------------------------------------------


def generator_matrix(operator, n: int) -> np.ndarray:
    if isinstance(operator, PauliOperator):
        return dr.pauli_operator_matrix(dr.pauli_terms_to_strings(operator.terms, n), n)
    return dr.majorana_operator_matrix(dict(operator.terms), n)


def gate_matrix(gate, n: int, theta: float = 0.0) -> np.ndarray:
    if isinstance(gate, ExpGate):
        return expm(1j * theta * generator_matrix(gate.generator, n))
    u = np.eye(2**n, dtype=complex)
    for operator, k in gate.factors:
        u = expm(1j * k * np.pi / 4 * generator_matrix(operator, n)) @ u
    return u


def circuit_matrix(circuit: Circuit, parameters) -> np.ndarray:
    n = circuit.system_size
    slots = iter(circuit.resolved_mapping)
    u = np.eye(2**n, dtype=complex)
    for gate in circuit:
        theta = parameters[next(slots)] if isinstance(gate, ExpGate) else 0.0
        u = gate_matrix(gate, n, theta) @ u
    return u


def equal_up_to_phase(a: np.ndarray, b: np.ndarray) -> bool:
    k = np.unravel_index(np.argmax(np.abs(b)), b.shape)
    return np.allclose(a * (b[k] / a[k]), b, atol=1e-12)


# -- named qubit gates ------------------------------------------------------------------------

I2 = np.eye(2)
X = np.array([[0, 1], [1, 0]], dtype=complex)
Y = np.array([[0, -1j], [1j, 0]])
Z = np.diag([1.0 + 0j, -1.0])
P0, P1 = np.diag([1.0 + 0j, 0]), np.diag([0j, 1.0])
SX = np.array([[1 + 1j, 1 - 1j], [1 - 1j, 1 + 1j]]) / 2
S = np.diag([1, 1j])
H = np.array([[1, 1], [1, -1]], dtype=complex) / np.sqrt(2)


def controlled(u: np.ndarray) -> np.ndarray:
    return np.kron(P0, I2) + np.kron(P1, u)  # qubit 0 (the control) is the left factor


# (constructor, qubit arguments, matrix on qubits 0 and 1, qubit 0 the left kron factor)
NAMED = [
    ("x", (0,), np.kron(X, I2)),
    ("y", (1,), np.kron(I2, Y)),
    ("z", (0,), np.kron(Z, I2)),
    ("h", (1,), np.kron(I2, H)),
    ("s", (0,), np.kron(S, I2)),
    ("sdg", (1,), np.kron(I2, S.conj().T)),
    ("sx", (0,), np.kron(SX, I2)),
    ("sxdg", (1,), np.kron(I2, SX.conj().T)),
    ("cx", (0, 1), controlled(X)),
    ("cy", (0, 1), controlled(Y)),
    ("cz", (0, 1), controlled(Z)),
    ("swap", (0, 1), np.eye(4)[[0, 2, 1, 3]].astype(complex)),
    ("iswap", (0, 1), np.array([[1, 0, 0, 0], [0, 0, 1j, 0], [0, 1j, 0, 0], [0, 0, 0, 1]])),
    # Qiskit's ECR on (a, b) = (1/sqrt 2)(X_a - Y_a X_b) with a the first qubit argument.
    ("ecr", (0, 1), (np.kron(X, I2) - np.kron(Y, X)) / np.sqrt(2)),
]


@pytest.mark.parametrize("name, qubits, matrix", NAMED, ids=[n for n, _, _ in NAMED])
def test_named_qubit_clifford_is_its_matrix(name, qubits, matrix):
    gate = getattr(CliffordGate, name)(*qubits, 2)
    assert equal_up_to_phase(gate_matrix(gate, 2), matrix)


@pytest.mark.parametrize("name, qubits, matrix", NAMED, ids=[n for n, _, _ in NAMED])
@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
def test_named_qubit_clifford_on_every_pauli(name, qubits, matrix, picture):
    """Every 2-qubit Pauli string (the 1-qubit ones included) as the observable, the state
    |01>, in both pictures: the value and (Heisenberg) the whole evolved operator."""
    gate = getattr(CliffordGate, name)(*qubits, 2)
    state = [1]
    psi = dr.basis_state(state, 2)
    u = gate_matrix(gate, 2)
    for label in dr.pauli_labels(2)[1:]:
        config = {"cutoff": 2} | ({"schrodinger_cutoff": 4} if picture == "schrodinger" else {})
        prop = PauliPropagator(PauliOperator({label: 1.0}, 2), state, **config)
        prop.propagate(Circuit([gate], 2))
        observable = dr.pauli_string_matrix(label)
        expected = np.vdot(u @ psi, observable @ u @ psi).real
        assert prop.expectation_value() == pytest.approx(expected, abs=VALUE_ATOL), label
        if picture == "heisenberg":
            evolved = dr.pauli_terms_to_strings(prop.evolved_operator().terms, 2)
            assert evolved == pytest.approx(
                dr.real_coefficients(dr.pauli_decompose(u.conj().T @ observable @ u, 2))
            ), label


# -- Majorana gates ---------------------------------------------------------------------------


def majorana_monomials(n: int):
    return [s for w in range(1, 2 * n + 1) for s in itertools.combinations(range(2 * n), w)]


@pytest.mark.parametrize(
    "gate",
    [
        CliffordGate.braid(0, 1, 2),
        CliffordGate.braid(2, 1, 2),
        CliffordGate.braid(0, 3, 2),
        CliffordGate.fswap(0, 1, 2),
        CliffordGate(MajoranaOperator({(0, 1, 2, 3): 1.0}, 2), 1),
        CliffordGate(MajoranaOperator({(1, 2): 1j, (0, 3): -1j}, 2), 3),
    ],
    ids=["braid01", "braid21", "braid03", "fswap", "quartic", "two-terms"],
)
def test_majorana_clifford_on_every_monomial(gate):
    """Every monomial of two modes (lengths 1 to 4) as the observable, state |10>."""
    n, state = 2, [0]
    u = gate_matrix(gate, n)
    psi = dr.basis_state(state, n)
    for key in majorana_monomials(n):
        coeff = dr.hermitian_phase(len(key))  # the Hermitian form of the product
        prop = MajoranaPropagator(MajoranaOperator({key: coeff}, n), state, cutoff=4)
        prop.propagate(Circuit([gate], n))
        observable = coeff * dr.majorana_product_matrix(key, n)
        expected = np.vdot(u @ psi, observable @ u @ psi).real
        assert prop.expectation_value() == pytest.approx(expected, abs=VALUE_ATOL), key
        evolved = prop.evolved_operator()
        assert np.allclose(generator_matrix(evolved, n), u.conj().T @ observable @ u, atol=1e-12), (
            key
        )


def test_braid_and_fermionic_swap_act_as_named():
    n = 2
    m = dr.majorana_matrices(n)
    b = gate_matrix(CliffordGate.braid(0, 3, n), n)
    assert np.allclose(b.conj().T @ m[0] @ b, m[3]) or np.allclose(b @ m[0] @ b.conj().T, m[3])
    f = gate_matrix(CliffordGate.fswap(0, 1, n), n)
    a0, a1 = dr.annihilation_matrix(0, n), dr.annihilation_matrix(1, n)
    assert np.allclose(f.conj().T @ a0 @ f, a1)
    assert np.allclose(f.conj().T @ a1 @ f, a0)


# -- random circuits mixing Cliffords and rotations -----------------------------------------


def random_clifford(rng, family: str, n: int):
    if family == "pauli":
        choice = rng.integers(0, 4)
        q = [int(x) for x in rng.permutation(n)[:2]]
        if choice == 0:
            return getattr(CliffordGate, str(rng.choice(["h", "s", "sx", "sdg", "x"])))(q[0], n)
        if choice == 1:
            return getattr(CliffordGate, str(rng.choice(["cx", "cz", "swap", "iswap", "ecr"])))(
                q[0], q[1], n
            )
        label = "".join("IXYZ"[i] for i in rng.integers(0, 4, size=n))
        label = label if label.strip("I") else "X" + label[1:]
        return CliffordGate(PauliOperator({label: 1.0}, n), int(rng.integers(1, 4)))
    if rng.random() < 0.5:
        i, j = (int(x) for x in rng.permutation(2 * n)[:2])
        return CliffordGate.braid(i, j, n)
    w = int(rng.integers(1, 5))
    key = tuple(sorted(int(x) for x in rng.permutation(2 * n)[:w]))
    return CliffordGate(MajoranaOperator({key: dr.hermitian_phase(w)}, n), int(rng.integers(1, 4)))


def mixed_case(seed: int, family: str):
    n = 3 if family == "pauli" else 3
    case = dr.random_case(seed, family, n, shared_parameters=seed % 2 == 1)
    rng = np.random.default_rng(seed)
    op = PauliOperator if family == "pauli" else MajoranaOperator
    gates: list = [
        ExpGate(op(dict(g), n), None if case.mapping is None else case.mapping[i])
        for i, g in enumerate(case.generators)
    ]
    for _ in range(4):
        gates.insert(int(rng.integers(0, len(gates) + 1)), random_clifford(rng, family, n))
    return case, Circuit(gates, n, parameters=list(case.parameters))


def propagator(case, family: str, picture: str):
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    op = PauliOperator if family == "pauli" else MajoranaOperator
    config = {"cutoff": 2 * case.n}
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = 2 * case.n
    return cls(op(dict(case.observable), case.n), list(case.occupied), **config)


def dense_value(case, circuit: Circuit, parameters) -> float:
    return dr.expectation(
        case.operator_matrix(case.observable),
        case.occupied,
        case.n,
        circuit_matrix(circuit, parameters),
    )


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize("seed", range(4))
def test_mixed_circuit_propagate(seed, family, picture, threads, monkeypatch):
    monkeypatch.setenv("monoprop_NUM_THREADS", str(threads))
    case, circuit = mixed_case(seed, family)
    prop = propagator(case, family, picture)
    prop.propagate(circuit)
    expected = dense_value(case, circuit, circuit.parameters)
    assert prop.expectation_value() == pytest.approx(expected, abs=VALUE_ATOL)
    if picture == "heisenberg":
        u = circuit_matrix(circuit, circuit.parameters)
        dense = u.conj().T @ case.operator_matrix(case.observable) @ u
        assert np.allclose(generator_matrix(prop.evolved_operator(), case.n), dense, atol=1e-9)


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize("seed", range(4))
def test_mixed_circuit_graph_value_and_gradient(seed, family, picture, threads, monkeypatch):
    monkeypatch.setenv("monoprop_NUM_THREADS", str(threads))
    case, circuit = mixed_case(seed, family)
    prop = propagator(case, family, picture)
    prop.build_graph(circuit)
    rng = np.random.default_rng(100 + seed)
    theta = rng.uniform(-np.pi, np.pi, size=circuit.n_parameters)
    value, gradient = prop.expectation_value_and_gradient(theta)
    assert value == pytest.approx(dense_value(case, circuit, theta), abs=VALUE_ATOL)
    h = 1e-5
    for p in range(len(theta)):
        step = np.eye(len(theta))[p] * h
        fd = dense_value(case, circuit, theta + step) - dense_value(case, circuit, theta - step)
        assert gradient[p] == pytest.approx(fd / (2 * h), abs=GRADIENT_ATOL), p


@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
def test_graph_extended_across_cliffords(picture):
    """Two builds, each with Cliffords: the graph of the concatenation, either picture."""
    case, first = mixed_case(7, "pauli")
    _, second = mixed_case(8, "pauli")
    second = Circuit(list(second), case.n, parameters=second.parameters)
    prop = propagator(case, "pauli", picture)
    prop.build_graph(first)
    prop.build_graph(second)
    joined = second + first if picture == "heisenberg" else first + second
    theta = np.linspace(-1, 1, joined.n_parameters)
    assert prop.expectation_value(theta) == pytest.approx(
        dense_value(case, joined, theta), abs=VALUE_ATOL
    )


def test_update_initial_operator_after_clifford_propagation():
    """The operand at the graph's start is the propagated one; its terms are set as they are
    (not as the frame holds them)."""
    case, circuit = mixed_case(3, "pauli")
    n = case.n
    cliffords = Circuit([CliffordGate.cx(0, 1, n), CliffordGate.h(2, n)], n)
    rotations = Circuit(list(circuit.rotations), n, parameters=circuit.parameters)
    prop = propagator(case, "pauli", "heisenberg")
    prop.propagate(cliffords)
    start = prop.evolved_operator(atol=0.0)
    prop.build_graph(rotations)
    scaled = PauliOperator({p: 2.5 * c for p, c in start.terms.items()}, n)
    prop.update_initial_operator(scaled)
    u = circuit_matrix(rotations, rotations.parameters)
    dense = dr.expectation(generator_matrix(scaled, n), case.occupied, n, u)
    assert prop.expectation_value(list(rotations.parameters)) == pytest.approx(dense, abs=1e-10)
    # evolved_operator_coefficients asks by the terms as users write them
    evolved = prop.evolved_operator(list(rotations.parameters), atol=0.0)
    keys = list(evolved.terms)
    coefficients = prop.evolved_operator_coefficients(keys, list(rotations.parameters))
    assert np.allclose(coefficients, [evolved.terms[k] for k in keys], atol=1e-12)


def test_contract_keeps_the_frame():
    case, circuit = mixed_case(2, "majorana")
    prop = propagator(case, "majorana", "heisenberg")
    prop.build_graph(circuit)
    theta = list(circuit.parameters)
    before = generator_matrix(prop.evolved_operator(theta), case.n)
    prop.contract_partially(theta)
    assert np.allclose(generator_matrix(prop.evolved_operator(), case.n), before, atol=1e-12)
    assert prop.expectation_value() == pytest.approx(dense_value(case, circuit, theta), abs=1e-10)


def test_raw_layout_refused_in_a_clifford_frame(monkeypatch):
    monkeypatch.setenv("monoprop_NUM_THREADS", "1")
    prop = PauliPropagator(PauliOperator({"ZI": 1.0}, 2), [], cutoff=2)
    prop.propagate(Circuit([CliffordGate.h(0, 2)], 2))
    with pytest.raises(RuntimeError, match="evolved_operator"):
        prop.mp_op()


# -- truncation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("route", ["propagate", "build_graph"])
@pytest.mark.parametrize("seed", range(20))
def test_clifford_gates_follow_the_truncation_rule(seed, route, threads, monkeypatch):
    """A term relabelled by a Clifford gate is measured as the term it became."""
    monkeypatch.setenv("monoprop_NUM_THREADS", str(threads))
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 6))

    observable = {
        tr.random_string(rng, n): float(c) for c in rng.normal(size=int(rng.integers(2, 6)))
    }
    gates = []
    for _ in range(int(rng.integers(8, 16))):
        if rng.random() < 0.4:
            gates.append(("clifford", tr.random_string(rng, n), int(rng.integers(1, 4))))
        else:
            gates.append(("rotation", tr.random_string(rng, n), float(rng.normal())))
    lower = float(10 ** rng.uniform(-3, -0.5))
    cutoff = int(rng.integers(1, n + 1))
    expected = tr.propagate_mixed(observable, gates, cutoff, lower)

    prop = PauliPropagator(PauliOperator(observable, n), [], cutoff=cutoff, lower_atol=lower)
    circuit = Circuit(
        [
            (CliffordGate if kind == "clifford" else ExpGate)(
                PauliOperator({g: 1.0}, n), *((value,) if kind == "clifford" else ())
            )
            for kind, g, value in gates
        ],
        n,
        parameters=[v for kind, _, v in gates if kind == "rotation"],
    )
    if route == "propagate":
        prop.propagate(circuit)
        evolved = prop.evolved_operator(atol=0.0)
    else:
        prop.build_graph(circuit)
        evolved = prop.evolved_operator(list(circuit.parameters), atol=0.0)
    terms = dr.pauli_terms_to_strings(evolved.terms, n)
    terms.pop("I" * n, None)
    expected.pop("I" * n, None)
    assert set(terms) == set(expected), f"seed {seed}"
    for label, c in expected.items():
        assert terms[label] == pytest.approx(c, abs=1e-12), (seed, label)


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: CliffordGate(PauliOperator({"Z": 0.3}, 1)), ValueError, "whole number"),
        (lambda: CliffordGate(PauliOperator({"X": 1.0, "Z": 1.0}, 1)), ValueError, "commuting"),
        (lambda: CliffordGate(PauliOperator({"Z": 1.0}, 1), 1.5), TypeError, "quarter_turns"),
        (lambda: CliffordGate("Z"), TypeError, "must be an operator"),
        (lambda: CliffordGate(MajoranaOperator({(0, 1): 1.0}, 1)), ValueError, "not Hermitian"),
        (lambda: CliffordGate.cx(1, 1, 2), ValueError, "two different"),
        (lambda: CliffordGate.h(2, 2), ValueError, "qubit=2 is out of range 0..1"),
        (lambda: CliffordGate.braid(0, 4, 2), ValueError, "j=4 is out of range 0..3"),
        (
            lambda: CliffordGate.sequence([CliffordGate.h(0, 1), CliffordGate.h(0, 2)]),
            ValueError,
            "one family and width",
        ),
        (lambda: Circuit([CliffordGate.h(0, 1)], 2), ValueError, "does not match"),
    ],
)
def test_bad_clifford_gates_are_refused(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_layer_arrays_check_quarter_turns():
    from monoprop.core_arrays import LayerArrays, TermArrays

    terms = TermArrays([0, 1], [0, 1, 2], [0.0, 0.5])
    LayerArrays(terms, [-1, 0], [-1, 0], 1, 1, quarter_turns=[1, 0])  # well formed
    with pytest.raises(ValueError, match=r"quarter_turns\[0\] = 4"):
        LayerArrays(terms, [-1, 0], [-1, 0], 1, 1, quarter_turns=[4, 0])
    with pytest.raises(ValueError, match=r"parameters\[0\] = 0.*Clifford"):
        LayerArrays(terms, [0, 0], [-1, 0], 1, 1, quarter_turns=[1, 0])
