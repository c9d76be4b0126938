"""Qiskit's standard gate library through ``from_qiskit_circuit`` and ``CliffordGate``s through
``to_qiskit_circuit``, checked against dense matrices (``tests/_dense_circuit.py``) and
``qiskit.quantum_info``.

The propagators cannot apply ``CliffordGate`` objects yet, so converted circuits are evaluated
densely; the one propagator test at the end skips until the core applies them.
"""

from __future__ import annotations

import itertools
import math
import zlib

import _dense_circuit as dc
import numpy as np
import pytest
from dense_reference import central_difference, pauli_string_matrix

pytest.importorskip("qiskit")

from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister, transpile  # noqa: E402
from qiskit.circuit import Gate, Parameter  # noqa: E402
from qiskit.circuit.library import (  # noqa: E402
    XXPlusYYGate,
    efficient_su2,
    get_standard_gate_name_mapping,
    qaoa_ansatz,
    real_amplitudes,
)
from qiskit.quantum_info import Operator, SparsePauliOp, Statevector  # noqa: E402

from monoprop import PauliPropagator  # noqa: E402
from monoprop.circuit import Circuit, ExpGate  # noqa: E402
from monoprop.clifford import CliffordGate  # noqa: E402
from monoprop.pauli import Pauli, PauliOperator  # noqa: E402
from monoprop.qiskit_conversion import (  # noqa: E402
    from_qiskit_circuit,
    from_qiskit_operator,
    parameter_slots,
    to_qiskit_circuit,
    to_qiskit_operator,
)

# Qiskit builds a PauliEvolutionGate's matrix with scipy's sparse expm, which warns about its
# own internal format conversion; that warning is theirs, not a monoprop problem.
pytestmark = pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")

SKIPPED = {"measure", "reset", "delay", "global_phase"}
STANDARD = sorted(
    name
    for name, gate in get_standard_gate_name_mapping().items()
    if name not in SKIPPED and gate.num_qubits <= 4
)
CLIFFORD = {"id", "x", "y", "z", "h", "s", "sdg", "sx", "sxdg"}
CLIFFORD |= {"cx", "cy", "cz", "swap", "iswap", "ecr", "dcx"}
# Gates whose own fixed angles are not quarter turns: rotations in a bound circuit, refused in
# an unbound one.
FIXED_ROTATIONS = {"t", "tdg", "ch", "cs", "csdg", "csx", "ccx", "ccz", "cswap", "c3sx"}
FIXED_ROTATIONS |= {"rccx", "rcccx"}


def seeded(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def random_observable(rng: np.random.Generator, n: int, num_terms: int = 6) -> SparsePauliOp:
    labels = ["".join(rng.choice(list("IXYZ"), n)) for _ in range(num_terms)]
    return SparsePauliOp(labels, rng.normal(size=num_terms))


def statevector_expectation(qc: QuantumCircuit, observable: SparsePauliOp) -> float:
    return float(Statevector(qc).expectation_value(observable).real)


def qiskit_unitary(qc: QuantumCircuit) -> np.ndarray:
    """Qiskit's unitary of ``qc`` in monoprop's qubit order."""
    return dc.to_qiskit_order(Operator(qc).data, qc.num_qubits)


def standard_gate(name: str, params) -> Gate:
    """A fresh instance of a standard gate with the given parameters."""
    gate = get_standard_gate_name_mapping()[name]
    return type(gate)(*params) if gate.params else gate


def kinds(circuit: Circuit) -> list[str]:
    return [type(g).__name__ for g in circuit]


# --------------------------------------------------------------------------- named CliffordGates

ONE_QUBIT_NAMED = ["x", "y", "z", "s", "sdg", "sx", "sxdg", "h"]
TWO_QUBIT_NAMED = ["cx", "cy", "cz", "swap", "iswap", "ecr"]
NAMED_CASES = [(name, (q,), n) for name in ONE_QUBIT_NAMED for q, n in [(0, 1), (1, 2)]]
NAMED_CASES += [
    (name, qargs, n)
    for name in TWO_QUBIT_NAMED
    for qargs, n in [((0, 1), 2), ((1, 0), 2), ((2, 0), 3)]
]


@pytest.mark.parametrize(("name", "qargs", "n"), NAMED_CASES)
def test_named_clifford_gate_matches_qiskit(name, qargs, n):
    """U P U† of the named constructor equals that of Qiskit's matrix, for every Pauli P."""
    ours = dc.circuit_unitary(Circuit([getattr(CliffordGate, name)(*qargs, n)], n))
    qc = QuantumCircuit(n)
    getattr(qc, name)(*qargs)
    theirs = qiskit_unitary(qc)
    for letters in itertools.product("IXYZ", repeat=n):
        p = pauli_string_matrix("".join(letters))
        np.testing.assert_allclose(
            ours @ p @ ours.conj().T, theirs @ p @ theirs.conj().T, atol=1e-12, err_msg=letters
        )


# --------------------------------------------------------------------------- each standard gate


@pytest.mark.parametrize("name", STANDARD)
def test_standard_gate_unitary(name):
    """One gate, alone, inverted, squared and controlled (ControlledGate and AnnotatedOperation,
    closed and open controls): the converted circuit's unitary is Qiskit's up to a global
    phase. The controlled forms check that each gate's decomposition is exact including its
    phase, which a control turns into a relative one."""
    rng = seeded("unitary", name)
    base = get_standard_gate_name_mapping()[name]
    gate = standard_gate(name, rng.uniform(-3, 3, len(base.params)))
    variants = [gate, gate.inverse(annotated=True), gate.power(2, annotated=True)]
    for controls, annotated in [(1, False), (2, False), (1, True), (2, True)]:
        if gate.num_qubits + controls <= 5:
            state = int(rng.integers(0, 2**controls))
            variants.append(gate.control(controls, ctrl_state=state, annotated=annotated))
    for variant in variants:
        n = variant.num_qubits + 1  # one idle qubit
        qc = QuantumCircuit(n)
        qc.append(variant, [int(q) for q in rng.permutation(n)[: variant.num_qubits]])
        converted = from_qiskit_circuit(qc, [])
        assert dc.equal_up_to_phase(dc.circuit_unitary(converted), qiskit_unitary(qc)), variant.name


@pytest.mark.parametrize("name", STANDARD)
def test_standard_gate_kind(name):
    """Clifford gates become CliffordGates only; every other gate holds a rotation."""
    base = get_standard_gate_name_mapping()[name]
    gate = standard_gate(name, [0.37 + 0.1 * k for k in range(len(base.params))])
    qc = QuantumCircuit(gate.num_qubits)
    qc.append(gate, range(gate.num_qubits))
    converted = from_qiskit_circuit(qc, [])
    if name in CLIFFORD:
        assert set(kinds(converted)) <= {"CliffordGate"}
        assert len(converted) == (0 if name == "id" else 1)
    else:
        assert "ExpGate" in kinds(converted)
    if name in FIXED_ROTATIONS:
        assert converted.n_parameters == len(converted.parameters) > 0


def test_single_commuting_exponentials():
    """cp, ccx and mcx are one ExpGate each: the projector expanded, identity term dropped."""
    qc = QuantumCircuit(5)
    qc.cp(0.7, 0, 1)
    qc.ccx(0, 1, 2)
    qc.mcx([0, 1, 2, 3], 4)
    c = from_qiskit_circuit(qc, [])
    assert kinds(c) == ["ExpGate"] * 3
    assert c.parameters == (0.7, math.pi, math.pi)
    assert c.gates[0].generator == PauliOperator(
        {Pauli("Z", 0): -0.25, Pauli("Z", 1): -0.25, Pauli("ZZ", (0, 1)): 0.25}, 5
    )
    ccx = {Pauli(""): 1.0}
    for factor in [Pauli("Z", 0), Pauli("Z", 1), Pauli("X", 2)]:
        ccx = {
            **{p: c / 2 for p, c in ccx.items()},
            **{
                Pauli(p.string + factor.string, p.qubits + factor.qubits): -c / 2
                for p, c in ccx.items()
            },
        }
    del ccx[Pauli("")]
    assert c.gates[1].generator == PauliOperator(ccx, 5)
    assert len(c.gates[2].generator) == 2**5 - 1
    assert all(abs(v) == 1 / 32 for v in c.gates[2].generator.terms.values())


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # MCXVChain and friends
def test_multi_controlled_gates():
    """mcx in its forms (ancilla qubits included, through the definition) and mcphase/mcu1."""
    from qiskit.circuit.library import (
        C3XGate,
        C4XGate,
        MCPhaseGate,
        MCU1Gate,
        MCXGate,
        MCXGrayCode,
        MCXRecursive,
        MCXVChain,
    )

    gates = [
        MCXGate(3, ctrl_state=5),
        C3XGate(),
        C4XGate(),
        MCXGrayCode(3),
        MCXRecursive(4),
        MCXVChain(3),
        MCXVChain(3, dirty_ancillas=True),
        MCPhaseGate(0.4, 3),
        MCU1Gate(-1.1, 2, ctrl_state=1),
    ]
    rng = seeded("multi-controlled")
    for gate in gates:
        n = gate.num_qubits
        qc = QuantumCircuit(n)
        qc.append(gate, [int(q) for q in rng.permutation(n)])
        converted = from_qiskit_circuit(qc, [])
        assert dc.equal_up_to_phase(dc.circuit_unitary(converted), qiskit_unitary(qc)), gate.name
    assert len(from_qiskit_circuit(qc, []).gates) == 1  # mcu1: one ExpGate


def test_u_is_three_rotations_lambda_first():
    qc = QuantumCircuit(1)
    qc.u(0.1, 0.2, 0.3, 0)
    c = from_qiskit_circuit(qc, [])
    assert [g.generator for g in c] == [
        PauliOperator({"Z": -0.5}, 1),
        PauliOperator({"Y": -0.5}, 1),
        PauliOperator({"Z": -0.5}, 1),
    ]
    assert c.parameters == (0.3, 0.1, 0.2)


# --------------------------------------------------------------------------- whole circuits


def standard_gate_circuit(n: int = 5, *, fixed_rotations: bool = True) -> QuantumCircuit:
    """A layer of ry, then every standard gate (with its own Parameters) on random qubits."""
    rng = seeded("standard circuit", n)
    qc = QuantumCircuit(n)
    for q in range(n):
        qc.ry(Parameter(f"a{q}"), q)
    count = 0
    for name in STANDARD:
        if name in FIXED_ROTATIONS and not fixed_rotations:
            continue
        base = get_standard_gate_name_mapping()[name]
        params = [Parameter(f"p{count + k:02d}") for k in range(len(base.params))]
        count += len(params)
        gate = standard_gate(name, params)
        qc.append(gate, [int(q) for q in rng.permutation(n)[: gate.num_qubits]])
    return qc


COST = SparsePauliOp(["ZZII", "IZZI", "IIZZ", "ZIIZ", "ZIZI"], [1.0, 0.5, -0.7, 1.2, 0.3])
LIBRARY = {
    "efficient_su2": lambda: efficient_su2(4, reps=2),
    "real_amplitudes": lambda: real_amplitudes(4, reps=2),
    "qaoa": lambda: qaoa_ansatz(COST, reps=2),
    "standard_gates": lambda: standard_gate_circuit(),
    "standard_gates_no_fixed_rotations": lambda: standard_gate_circuit(fixed_rotations=False),
}
FORMS = [None, ("rz_sx_cx", 0), ("rz_sx_cx", 1), ("u_cz", 0), ("u_cz", 1)]
BASES = {"rz_sx_cx": ["rz", "sx", "cx"], "u_cz": ["u", "cz"]}


def library_circuit(kind: str, form) -> QuantumCircuit:
    qc = LIBRARY[kind]()
    if form is None:
        return qc
    basis, level = form
    return transpile(qc, basis_gates=BASES[basis], optimization_level=level, seed_transpiler=11)


def form_id(form) -> str:
    return "as_built" if form is None else f"{form[0]}_O{form[1]}"


@pytest.mark.parametrize("form", FORMS, ids=form_id)
@pytest.mark.parametrize("kind", sorted(LIBRARY))
def test_bound_circuit_matches_statevector(kind, form):
    qc = library_circuit(kind, form)
    rng = seeded("bound", kind, form)
    bound = qc.assign_parameters(rng.uniform(-np.pi, np.pi, qc.num_parameters))
    observable = random_observable(rng, qc.num_qubits)
    converted = from_qiskit_circuit(bound, [])
    assert converted.n_parameters == len(converted.parameters) == len(converted.rotations)
    expected = statevector_expectation(bound, observable)
    assert dc.circuit_expectation(converted, observable) == pytest.approx(expected, abs=1e-10)
    n = qc.num_qubits
    propagator = PauliPropagator(from_qiskit_operator(observable), [], cutoff=2 * n)
    propagator.propagate(converted)
    assert propagator.expectation_value() == pytest.approx(expected, abs=1e-10)


UNBOUND_KINDS = sorted(set(LIBRARY) - {"standard_gates"})


@pytest.mark.parametrize("form", FORMS, ids=form_id)
@pytest.mark.parametrize("kind", UNBOUND_KINDS)
def test_unbound_circuit_matches_statevector(kind, form):
    """Converted unbound, evaluated at values given in ``circuit.parameters`` order."""
    qc = library_circuit(kind, form)
    rng = seeded("unbound", kind, form)
    values = rng.uniform(-np.pi, np.pi, qc.num_parameters)
    observable = random_observable(rng, qc.num_qubits)
    converted = from_qiskit_circuit(qc, [])
    assert converted.parameters == ()
    assert converted.n_parameters == qc.num_parameters
    assert all(g.index is not None for g in converted.rotations)
    expected = statevector_expectation(qc.assign_parameters(values), observable)
    value = dc.circuit_expectation(converted, observable, values)
    assert value == pytest.approx(expected, abs=1e-10)
    # The propagator's graph: the value, and the gradient the dense reference gives.
    n = qc.num_qubits
    propagator = PauliPropagator(from_qiskit_operator(observable), [], cutoff=2 * n)
    propagator.build_graph(converted)
    value, gradient = propagator.expectation_value_and_gradient(values)
    assert value == pytest.approx(expected, abs=1e-10)
    expected_gradient = dc.circuit_gradient(converted, observable, values)
    np.testing.assert_allclose(gradient, expected_gradient, atol=1e-9)


def test_unbound_fixed_rotation_is_refused():
    with pytest.raises(ValueError, match=r"Instruction \d+ \(\w+\).*assign_parameters"):
        from_qiskit_circuit(standard_gate_circuit(), [])


def test_initial_state_and_observable_order():
    """A non-zero initial basis state, against Statevector.from_label (label reversed)."""
    qc = efficient_su2(3, reps=1)
    rng = seeded("initial state")
    bound = qc.assign_parameters(rng.uniform(-np.pi, np.pi, qc.num_parameters))
    observable = random_observable(rng, 3)
    state = Statevector.from_label("110")  # qubits 1 and 2 in |1>
    expected = float(state.evolve(bound).expectation_value(observable).real)
    converted = from_qiskit_circuit(bound, [1, 2])
    assert dc.circuit_expectation(converted, observable) == pytest.approx(expected, abs=1e-10)


# --------------------------------------------------------------------------- parameters


def tied_circuit() -> QuantumCircuit:
    """Parameters shared between gates, scaled, offset by quarter turns, and summed."""
    a, b, c = Parameter("a"), Parameter("b"), Parameter("c")
    qc = QuantumCircuit(3)
    qc.h([0, 1, 2])
    qc.rz(2 * a + math.pi / 2, 0)
    qc.crx(-0.5 * a, 0, 1)
    qc.u(b, a, -b, 2)
    qc.rzz(c - 3 * math.pi, 1, 2)
    qc.cp(a + b, 2, 0)
    qc.append(XXPlusYYGate(c, b), [1, 0])
    qc.ry(-c / 3, 1)
    return qc


GRADIENT_CASES = {
    "efficient_su2": lambda: efficient_su2(3, reps=2),
    "qaoa": lambda: qaoa_ansatz(SparsePauliOp(["ZZI", "IZZ", "ZIZ"], [1.0, -0.6, 0.8]), reps=2),
    "qaoa_rz_sx_cx": lambda: transpile(
        qaoa_ansatz(SparsePauliOp(["ZZI", "IZZ"], [1.0, -0.6]), reps=2),
        basis_gates=["rz", "sx", "cx"],
        optimization_level=1,
        seed_transpiler=3,
    ),
    "tied": tied_circuit,
}


@pytest.mark.parametrize("kind", sorted(GRADIENT_CASES))
def test_gradient_matches_finite_differences(kind):
    """d<O>/d(slots) of the converted circuit against central differences of Statevector
    values through assign_parameters: checks that rotations are tied as Qiskit ties them."""
    qc = GRADIENT_CASES[kind]()
    rng = seeded("gradient", kind)
    values = rng.uniform(-np.pi, np.pi, qc.num_parameters)
    observable = random_observable(rng, qc.num_qubits)
    converted = from_qiskit_circuit(qc, [])
    assert converted.n_parameters == qc.num_parameters

    def f(x):
        return statevector_expectation(qc.assign_parameters(x), observable)

    grad = dc.circuit_gradient(converted, observable, values)
    np.testing.assert_allclose(grad, central_difference(f, values), atol=1e-6)
    value = dc.circuit_expectation(converted, observable, values)
    assert value == pytest.approx(f(values), abs=1e-10)


def test_slots_follow_qiskit_parameter_order():
    a, b = Parameter("a"), Parameter("b")
    qc = QuantumCircuit(2)
    qc.rx(b, 0)
    qc.rzz(3 * a + math.pi, 0, 1)
    qc.ry(-b, 1)
    c = from_qiskit_circuit(qc, None)
    assert parameter_slots(qc) == {a: 0, b: 1}
    assert [(g.generator, g.index) for g in c.rotations] == [
        (PauliOperator({"XI": -0.5}, 2), 1),
        (PauliOperator({"ZZ": -1.5}, 2), 0),
        (PauliOperator({"IY": 0.5}, 2), 1),
    ]
    # rzz's constant part π is a Clifford gate ahead of its rotation
    assert kinds(c) == ["ExpGate", "CliffordGate", "ExpGate", "ExpGate"]
    assert c.gates[1] == CliffordGate(PauliOperator({"ZZ": 2.0}, 2))


def test_angle_summing_parameters_is_one_rotation_per_parameter():
    a, b = Parameter("a"), Parameter("b")
    qc = QuantumCircuit(1)
    qc.rz(a - 2 * b, 0)
    c = from_qiskit_circuit(qc, None)
    assert [(g.generator, g.index) for g in c] == [
        (PauliOperator({"Z": -0.5}, 1), 0),
        (PauliOperator({"Z": 1.0}, 1), 1),
    ]


def test_parameter_without_rotation_keeps_its_slot():
    a, g = Parameter("a"), Parameter("g")
    qc = QuantumCircuit(1, global_phase=g)
    qc.rx(a, 0)
    c = from_qiskit_circuit(qc, [])
    assert c.n_parameters == 2 and c.resolved_mapping == (0, 1)
    assert len(c.gates[1].generator) == 0  # identity rotation holding g's slot


def test_numeric_rotation_in_unbound_circuit():
    qc = QuantumCircuit(2)
    qc.rx(Parameter("a"), 0)
    qc.rzz(math.pi / 2, 0, 1)  # a quarter turn: exact Clifford
    qc.rz(0.0, 1)  # the identity: no gate
    c = from_qiskit_circuit(qc, [])
    assert kinds(c) == ["ExpGate", "CliffordGate"]
    qc.rz(0.3, 1)
    with pytest.raises(
        ValueError, match=r"Instruction 3 \(rz\).*fixed angle 0.3.*assign_parameters"
    ):
        from_qiskit_circuit(qc, [])


# --------------------------------------------------------------------------- errors


def error_circuit(case: str) -> QuantumCircuit:
    qc = QuantumCircuit(QuantumRegister(2), ClassicalRegister(1))
    qc.h(0)
    p = Parameter("p")
    if case == "measure":
        qc.measure(0, 0)
    elif case == "reset":
        qc.reset(1)
    elif case == "if_else":
        with qc.if_test((qc.clbits[0], 1)):
            qc.x(0)
    elif case == "opaque":
        qc.append(Gate("mystery", 2, []), [0, 1])
    elif case == "opaque_in_definition":
        inner = QuantumCircuit(2)
        inner.append(Gate("mystery", 1, []), [1])
        outer = Gate("wrapper", 2, [])
        outer.definition = inner
        qc.append(outer, [0, 1])
    elif case == "nonlinear":
        qc.rx(p * p, 0)
    elif case == "sin":
        qc.ry(p.sin(), 1)
    elif case == "offset":
        qc.rz(p + 0.1, 0)
    elif case == "fixed_t":
        qc.t(1)
        qc.rx(p, 0)
    return qc


ERRORS = {
    "measure": r"Instruction 1 \(measure\): measure is not a unitary.*remove_final_measurements",
    "reset": r"Instruction 1 \(reset\): reset is not a unitary gate.*remove it",
    "if_else": r"Instruction 1 \(if_else\): 'if_else' is classically controlled",
    "opaque": r"Instruction 1 \(mystery\): unsupported gate 'mystery'.*transpile\(qc",
    "opaque_in_definition": (
        r"Instruction 1 \(wrapper\), definition instruction 0 \(mystery\): unsupported gate"
    ),
    "nonlinear": r"Instruction 1 \(rx\): the angle p\*p is not linear in p.*assign_parameters",
    "sin": r"Instruction 1 \(ry\): the angle sin\(p\) is not linear in p",
    "offset": r"Instruction 1 \(rz\): the angle .* constant part 0.1.*assign_parameters",
    "fixed_t": r"Instruction 1 \(t\): the fixed angle .*assign_parameters",
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_name_instruction_and_remedy(case):
    with pytest.raises(ValueError, match=ERRORS[case]):
        from_qiskit_circuit(error_circuit(case), [])


# --------------------------------------------------------------------------- clifford_angles


def kicked_ising(n: int = 4, steps: int = 3) -> QuantumCircuit:
    qc = QuantumCircuit(n)
    for _ in range(steps):
        for q in range(n):
            qc.rx(0.3, q)
        for q in range(n - 1):
            qc.rzz(-math.pi / 2, q, q + 1)
    return qc


def test_clifford_angles_kicked_ising():
    qc = kicked_ising()
    observable = random_observable(seeded("kicked ising"), 4)
    expected = statevector_expectation(qc, observable)
    plain = from_qiskit_circuit(qc, [])
    assert kinds(plain) == ["ExpGate"] * 21
    fast = from_qiskit_circuit(qc, [], clifford_angles=True)
    assert kinds(fast) == (["ExpGate"] * 4 + ["CliffordGate"] * 3) * 3
    assert fast.parameters == (0.3,) * 12
    assert fast.gates[4] == CliffordGate(PauliOperator({"ZZII": 1.0}, 4))  # exp(+iπ/4 ZZ)
    for circuit in (plain, fast):
        assert dc.circuit_expectation(circuit, observable) == pytest.approx(expected, abs=1e-10)


def test_clifford_angles_whole_one_qubit_gate():
    """u(π, φ, λ) is Clifford when φ - λ is a quarter turn, though φ and λ are not."""
    qc = QuantumCircuit(1)
    qc.u(math.pi, 0.3217, 0.3217 - math.pi / 2, 0)
    qc.rx(4 * math.pi, 0)  # whole turns: no gate
    qc.ry(0.2, 0)
    c = from_qiskit_circuit(qc, [], clifford_angles=True)
    assert kinds(c) == ["CliffordGate", "ExpGate"]
    assert dc.equal_up_to_phase(dc.circuit_unitary(c), qiskit_unitary(qc))


# --------------------------------------------------------------------------- to_qiskit_circuit

CLIFFORD_OUTPUT = {"x", "y", "z", "s", "sdg", "sx", "sxdg", "h", "cx"}


def random_clifford_gate(rng: np.random.Generator, n: int) -> CliffordGate:
    """A quarter turn of 1 to 3 commuting Pauli strings of weight 1 to 3, turns 1 to 3 each."""
    while True:
        strings = []
        for _ in range(int(rng.integers(1, 4))):
            letters = ["I"] * n
            for q in rng.permutation(n)[: int(rng.integers(1, 4))]:
                letters[q] = str(rng.choice(list("XYZ")))
            strings.append("".join(letters))
        op = PauliOperator({s: float(rng.integers(1, 4)) for s in strings}, n)
        if op.all_pairwise_commute():
            return CliffordGate(op)


@pytest.mark.parametrize("seed", range(6))
def test_to_qiskit_circuit_clifford_gates(seed):
    rng = np.random.default_rng(seed)
    n = 4
    named = [
        CliffordGate.h(int(rng.integers(n)), n),
        CliffordGate.ecr(*[int(q) for q in rng.permutation(n)[:2]], n),
        CliffordGate.sequence([CliffordGate.sx(0, n), CliffordGate.cy(3, 1, n)]),
    ]
    gates = [random_clifford_gate(rng, n) for _ in range(4)] + named
    gates.insert(2, ExpGate(PauliOperator({"XYZI": 0.7, "ZIXX": -0.2}, n), 1))
    gates.insert(5, ExpGate(PauliOperator({"IIYY": 1.3}, n), 0))
    gates.append(ExpGate(PauliOperator({"ZIII": 0.4}, n), 1))
    circuit = Circuit(gates, n, parameters=rng.uniform(-1, 1, 2))
    qc = to_qiskit_circuit(circuit, n)
    names = {i.operation.name for i in qc.data}
    assert names <= CLIFFORD_OUTPUT | {"PauliEvolution"}
    assert [i.operation.params[0] for i in qc.data if i.operation.name == "PauliEvolution"] == [
        circuit.parameters[1],
        circuit.parameters[0],
        circuit.parameters[1],
    ]
    assert dc.equal_up_to_phase(qiskit_unitary(qc), dc.circuit_unitary(circuit))
    again = from_qiskit_circuit(qc, [])
    assert len(again.rotations) == 3
    assert dc.equal_up_to_phase(dc.circuit_unitary(again), dc.circuit_unitary(circuit))


def test_to_qiskit_circuit_named_clifford_gates():
    n = 3
    gates = [getattr(CliffordGate, name)(2, n) for name in ["x", "y", "z", "s", "sdg", "h"]]
    gates += [getattr(CliffordGate, name)(1, n) for name in ["sx", "sxdg"]]
    gates += [
        getattr(CliffordGate, name)(2, 0, n) for name in ["cx", "cy", "cz", "swap", "iswap", "ecr"]
    ]
    for gate in gates:
        circuit = Circuit([gate], n)
        qc = to_qiskit_circuit(circuit, n)
        assert {i.operation.name for i in qc.data} <= CLIFFORD_OUTPUT
        assert dc.equal_up_to_phase(qiskit_unitary(qc), dc.circuit_unitary(circuit))
        assert set(kinds(from_qiskit_circuit(qc, []))) == {"CliffordGate"}


def test_round_trip_through_qiskit_keeps_expectation():
    qc = transpile(efficient_su2(3, reps=1), basis_gates=["rz", "sx", "cx"], seed_transpiler=1)
    rng = seeded("round trip")
    bound = qc.assign_parameters(rng.uniform(-np.pi, np.pi, qc.num_parameters))
    observable = random_observable(rng, 3)
    first = from_qiskit_circuit(bound, [])
    back = to_qiskit_circuit(first, 3)
    expected = statevector_expectation(bound, observable)
    assert statevector_expectation(back, observable) == pytest.approx(expected, abs=1e-10)


# --------------------------------------------------------------------------- propagator


def test_pauli_propagator_on_converted_rotations():
    """A converted circuit of rotations only (tied, scaled and summed Parameters) already runs
    through the propagator: bound via propagate, unbound via build_graph and a functional."""
    n = 3
    t = [Parameter(f"t{k}") for k in range(5)]
    qc = QuantumCircuit(n)
    for q in range(n):
        qc.ry(t[q], q)
    qc.rzz(t[3], 0, 1)
    qc.rxx(2 * t[4], 1, 2)
    qc.rx(t[4] - t[0], 2)
    qc.crz(-t[3], 2, 0)
    unbound = from_qiskit_circuit(qc, [])
    assert set(kinds(unbound)) == {"ExpGate"}
    check_through_propagator(qc, "propagator, rotations")


def test_pauli_propagator_on_converted_efficient_su2():
    check_through_propagator(efficient_su2(3, reps=2), "propagator")


def check_through_propagator(qc: QuantumCircuit, seed: str) -> None:
    """``qc`` bound through ``propagate``, and unbound through ``build_graph`` and a
    functional, against the statevector value and the dense gradient."""
    n = qc.num_qubits
    rng = seeded(seed)
    values = rng.uniform(-np.pi, np.pi, qc.num_parameters)
    observable = from_qiskit_operator(random_observable(rng, n))
    qiskit_observable = to_qiskit_operator(observable)
    expected = statevector_expectation(qc.assign_parameters(values), qiskit_observable)

    bound = from_qiskit_circuit(qc.assign_parameters(values), [])
    propagator = PauliPropagator(observable, initial_state=[], cutoff=2 * n)
    propagator.propagate(bound)
    assert propagator.expectation_value() == pytest.approx(expected, abs=1e-10)

    unbound = from_qiskit_circuit(qc, [])
    propagator = PauliPropagator(observable, initial_state=[], cutoff=2 * n)
    propagator.build_graph(unbound)
    value, grad = propagator.expectation_value_and_gradient_functional()(values)
    assert value == pytest.approx(expected, abs=1e-10)
    expected_grad = dc.circuit_gradient(unbound, qiskit_observable, values)
    np.testing.assert_allclose(grad, expected_grad, atol=1e-10)
