"""Qiskit conversion, checked against dense matrices built here.

A Qiskit SparsePauliOp, SparseObservable or Pauli becomes a PauliOperator and a PauliOperator
a SparsePauliOp; a Qiskit circuit of Pauli rotations becomes a Pauli-family Circuit and a bound
Circuit a Qiskit circuit of PauliEvolutionGates. Two conventions are translated: every Pauli
label is reversed (monoprop's ``"XZ"`` is Qiskit's ``"ZX"``), and since monoprop gates are
``exp(+iθH)`` while Qiskit's rotations are ``exp(-i t P / 2)``, the generator is negated and
the angle kept (``rx(t)`` becomes ``ExpGate(-0.5·X)`` at angle ``t``).

The dense helpers know both qubit orders: monoprop's (qubit 0 = leftmost Kronecker factor)
and Qiskit's (qubit 0 = rightmost). Unitaries are compared with ``qiskit.quantum_info.Operator``
in Qiskit order; expectation values (order-free scalars) are compared between a monoprop-order
dense simulation and Qiskit's ``Statevector``, which pins down both the label reversal and the
sign convention ``exp(+iθH)`` vs ``exp(-itH)``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys

import numpy as np
import pytest
from scipy.linalg import expm

from monoprop.circuit import Circuit, ExpGate
from monoprop.majorana import MajoranaOperator
from monoprop.pauli import Pauli, PauliOperator

HAVE_QISKIT = importlib.util.find_spec("qiskit") is not None

# Qiskit builds a PauliEvolutionGate's matrix with scipy's sparse expm, which warns about its
# own internal format conversion; that warning is theirs, not a monoprop problem.
pytestmark = pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")
needs_qiskit = pytest.mark.skipif(not HAVE_QISKIT, reason="qiskit is not installed")

if HAVE_QISKIT:
    from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister
    from qiskit.circuit import Gate, Parameter
    from qiskit.circuit.library import PauliEvolutionGate, PauliProductRotationGate
    from qiskit.quantum_info import Operator, SparseObservable, SparsePauliOp, Statevector
    from qiskit.quantum_info import Pauli as QiskitPauli

    from monoprop.qiskit_conversion import (
        PAULI_EVOLUTION_EQUIVALENT,
        VALID_PAULI_GATES,
        from_qiskit_circuit,
        from_qiskit_operator,
        to_qiskit_circuit,
        to_qiskit_operator,
    )


# --------------------------------------------------------------------------- dense reference

_LETTER = {
    "I": np.eye(2, dtype=complex),
    "X": np.array([[0, 1], [1, 0]], dtype=complex),
    "Y": np.array([[0, -1j], [1j, 0]], dtype=complex),
    "Z": np.diag([1.0 + 0j, -1.0]),
}


def dense_term(letters_by_qubit: list[str], qiskit_order: bool) -> np.ndarray:
    letters = letters_by_qubit[::-1] if qiskit_order else letters_by_qubit
    return functools.reduce(np.kron, [_LETTER[x] for x in letters], np.eye(1, dtype=complex))


def dense(op: PauliOperator, n: int, *, qiskit_order: bool) -> np.ndarray:
    total = np.zeros((2**n, 2**n), dtype=complex)
    for pauli, coeff in op.terms.items():
        letters = ["I"] * n
        for qubit, letter in zip(pauli.qubits, pauli.string, strict=True):
            letters[qubit] = letter
        total += coeff * dense_term(letters, qiskit_order)
    return total


def dense_unitary(circuit: Circuit, *, qiskit_order: bool) -> np.ndarray:
    """``U_L … U_1`` with ``U_k = expm(+i θ_k H_k)``: monoprop's convention, written out."""
    n = circuit.system_size
    u = np.eye(2**n, dtype=complex)
    for gate, slot in zip(circuit, circuit.resolved_mapping, strict=True):
        theta = circuit.parameters[slot]
        u = expm(1j * theta * dense(gate.generator, n, qiskit_order=qiskit_order)) @ u
    return u


def dense_expectation(circuit: Circuit, observable: PauliOperator) -> float:
    """``<ref| U^† O U |ref>`` in monoprop order (occupied qubit = |1>, qubit 0 leftmost)."""
    n = circuit.system_size
    ref = np.zeros(2**n, dtype=complex)
    ref[sum(2 ** (n - 1 - q) for q in circuit.initial_state)] = 1.0
    psi = dense_unitary(circuit, qiskit_order=False) @ ref
    return float(np.real(psi.conj() @ dense(observable, n, qiskit_order=False) @ psi))


def qiskit_expectation(qc, observable, initial_state) -> float:
    ref = Statevector.from_int(sum(2**q for q in initial_state), 2**qc.num_qubits)
    return float(np.real(ref.evolve(qc).expectation_value(observable)))


def named_rotation(name: str, theta: float):
    """A gate called ``name`` (e.g. "rxy") meaning exp(-iθ/2 P), letter k on qarg k."""
    letters = name[1:].upper()
    definition = QuantumCircuit(len(letters))
    rotation = PauliEvolutionGate(QiskitPauli(letters[::-1]), time=theta / 2)
    definition.append(rotation, range(len(letters)))
    gate = Gate(name, len(letters), [theta])
    gate.definition = definition
    return gate


def random_pauli_operator(rng, n, num_terms):
    strings = ["".join(rng.choice(list("IXYZ"), n)) for _ in range(num_terms)]
    return PauliOperator({s: float(rng.normal()) for s in strings}, n)


def random_commuting_pair(rng, n):
    """Two distinct Pauli strings that commute (an even number of clashing letters)."""
    while True:
        a, b = ("".join(rng.choice(list("IXYZ"), n)) for _ in range(2))
        clashes = sum(x != "I" and y != "I" and x != y for x, y in zip(a, b, strict=True))
        if a != b and clashes % 2 == 0:
            return PauliOperator({a: float(rng.normal()), b: float(rng.normal())}, n)


# --------------------------------------------------------------------------- import / constants


class TestImport:
    def test_missing_qiskit_is_import_error(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "qiskit", None)  # makes `import qiskit` fail
        monkeypatch.delitem(sys.modules, "monoprop.qiskit_conversion", raising=False)
        with pytest.raises(ImportError, match="qiskit is required"):
            importlib.import_module("monoprop.qiskit_conversion")

    @needs_qiskit
    def test_constants(self):
        assert PAULI_EVOLUTION_EQUIVALENT == {
            "rx",
            "ry",
            "rz",
            "rxx",
            "ryy",
            "rzz",
            "rxy",
            "rxz",
            "ryz",
        }
        assert VALID_PAULI_GATES == PAULI_EVOLUTION_EQUIVALENT | {
            "PauliEvolution",
            "pauli_product_rotation",
        }


# --------------------------------------------------------------------------- operators


@needs_qiskit
class TestFromQiskitOperator:
    def test_label_order_reversed(self):
        op = from_qiskit_operator(SparsePauliOp(["XZ"], [2.0]))
        assert op == PauliOperator({"ZX": 2.0}, 2)
        assert op.terms == {Pauli("ZX"): 2.0}
        assert list(op.terms)[0] == Pauli("XZ", (1, 0))  # Z on qubit 0
        assert op.num_qubits == 2
        assert all(type(c) is float for c in op.terms.values())

    def test_identity_label(self):
        op = from_qiskit_operator(SparsePauliOp(["III", "ZII"], [1.5, 2.0]))
        assert op.terms == {Pauli(""): 1.5, Pauli("Z", 2): 2.0}
        assert op.num_qubits == 3

    def test_simplified_first(self):
        sparse = SparsePauliOp(["XI", "XI", "ZZ", "YY"], [0.5, 0.25, 1e-10, 1.0])
        assert from_qiskit_operator(sparse).terms == {Pauli("X", 1): 0.75, Pauli("YY"): 1.0}
        assert from_qiskit_operator(sparse, atol=0.9).terms == {Pauli("YY"): 1.0}

    def test_sparse_observable(self):
        obs = SparseObservable.from_list([("XZ", 1.0), ("ZI", -0.5), ("+I", 2.0)])
        op = from_qiskit_operator(obs)
        assert op.num_qubits == 2
        expected = SparsePauliOp.from_list([("XZ", 1.0), ("ZI", -0.5), ("II", 1.0), ("XI", 1.0)])
        np.testing.assert_allclose(dense(op, 2, qiskit_order=True), expected.to_matrix())

    def test_single_pauli_phase_folded(self):
        assert from_qiskit_operator(QiskitPauli("-XY")).terms == {Pauli("YX"): -1.0}
        assert from_qiskit_operator(QiskitPauli("ZI")).terms == {Pauli("Z", 1): 1.0}

    def test_single_pauli_not_simplified(self):
        # An identity Pauli stays a term (simplify would keep it too, but no atol applies).
        assert from_qiskit_operator(QiskitPauli("II"), atol=10.0).terms == {Pauli(""): 1.0}

    @pytest.mark.parametrize(
        "qiskit_op",
        [SparsePauliOp(["XY", "ZZ"], [1.0, 0.5j]), QiskitPauli("iXY")],
        ids=["SparsePauliOp", "Pauli"],
    )
    def test_complex_terms(self, qiskit_op):
        with pytest.raises(ValueError, match="complex terms"):
            from_qiskit_operator(qiskit_op)

    def test_skip_validation_keeps_real_parts(self):
        op = from_qiskit_operator(
            SparsePauliOp(["XY", "ZZ"], [1.0, 0.25 + 0.5j]), skip_validation=True
        )
        assert op.terms == {Pauli("YX"): 1.0, Pauli("ZZ"): 0.25}

    def test_other_type(self):
        with pytest.raises(TypeError, match="SparsePauliOp"):
            from_qiskit_operator(PauliOperator({"X": 1.0}, 1))

    @pytest.mark.parametrize("seed", range(5))
    def test_matrix_matches(self, seed):
        rng = np.random.default_rng(seed)
        labels = ["".join(rng.choice(list("IXYZ"), 3)) for _ in range(6)]
        sparse = SparsePauliOp(labels, rng.normal(size=6))
        op = from_qiskit_operator(sparse)
        np.testing.assert_allclose(dense(op, 3, qiskit_order=True), sparse.to_matrix(), atol=1e-12)


@needs_qiskit
class TestToQiskitOperator:
    def test_example(self):
        sparse = to_qiskit_operator(PauliOperator({"XZI": 1, "IIY": 0.5}, 3))
        assert sparse.paulis.to_labels() == ["IZX", "YII"]
        np.testing.assert_array_equal(sparse.coeffs, [1.0, 0.5])
        assert sparse.num_qubits == 3

    def test_widened(self):
        op = PauliOperator({Pauli("YX", (0, 2)): -0.5, "Z": 2.0}, 3)
        sparse = to_qiskit_operator(op, 5)
        assert sparse.paulis.to_labels() == ["IIXIY", "IIIIZ"]
        np.testing.assert_allclose(sparse.to_matrix(), dense(op, 5, qiskit_order=True))

    def test_term_outside_num_qubits(self):
        with pytest.raises(ValueError, match="qubit 2"):
            to_qiskit_operator(PauliOperator({"IIX": 1.0}, 3), 2)

    @pytest.mark.parametrize(
        ("n", "error", "fragment"),
        [
            (True, TypeError, r"num_qubits must be an integer \(not bool\)"),
            (-1, ValueError, "num_qubits must be non-negative; got -1"),
        ],
    )
    def test_num_qubits_rule(self, n, error, fragment):
        with pytest.raises(error, match=fragment):
            to_qiskit_operator(PauliOperator({"X": 1.0}, 1), n)

    def test_empty_operator_is_zero(self):
        sparse = to_qiskit_operator(PauliOperator({}, 2))
        assert sparse.num_qubits == 2
        np.testing.assert_array_equal(sparse.to_matrix(), np.zeros((4, 4)))

    def test_not_a_pauli_operator(self):
        with pytest.raises(TypeError, match="PauliOperator"):
            to_qiskit_operator(MajoranaOperator({(0,): 1.0}, 1))

    @pytest.mark.parametrize("seed", range(5))
    def test_round_trips(self, seed):
        rng = np.random.default_rng(seed)
        op = random_pauli_operator(rng, 4, 7)
        sparse = to_qiskit_operator(op)
        np.testing.assert_allclose(sparse.to_matrix(), dense(op, 4, qiskit_order=True))
        assert from_qiskit_operator(sparse) == op
        assert to_qiskit_operator(from_qiskit_operator(sparse)).equiv(sparse)


# --------------------------------------------------------------------------- circuits


@needs_qiskit
class TestFromQiskitCircuit:
    def test_example(self):
        qc = QuantumCircuit(2)
        qc.rx(0.5, 0)
        qc.rzz(0.3, 0, 1)
        c = from_qiskit_circuit(qc, None)
        assert [g.generator for g in c] == [
            PauliOperator({"XI": -0.5}, 2),
            PauliOperator({"ZZ": -0.5}, 2),
        ]
        assert c.parameters == (0.5, 0.3)
        assert c.system_size == 2 and c.family == "pauli"
        assert all(g.index is None for g in c)
        np.testing.assert_allclose(
            dense_unitary(c, qiskit_order=True), Operator(qc).data, atol=1e-12
        )

    @pytest.mark.parametrize("name", sorted(PAULI_EVOLUTION_EQUIVALENT) if HAVE_QISKIT else [])
    def test_each_rotation(self, name):
        letters = name[1:].upper()
        qubits = [2, 0][: len(letters)]
        qc = QuantumCircuit(3)
        if name in {"rx", "ry", "rz", "rxx", "ryy", "rzz"}:
            getattr(qc, name)(0.37, *qubits)  # Qiskit's own gate
        else:
            qc.append(named_rotation(name, 0.37), qubits)
        c = from_qiskit_circuit(qc, [1])
        assert c.gates[0].generator == PauliOperator({Pauli(letters, qubits): -0.5}, 3)
        assert c.parameters == (0.37,)
        np.testing.assert_allclose(
            dense_unitary(c, qiskit_order=True), Operator(qc).data, atol=1e-12
        )

    def test_named_rotation_helper_matches_qiskit(self):
        # The custom-gate helper used for rxy/rxz/ryz means what Qiskit's rzz/rx mean.
        for name, qubits in [("rzz", [1, 0]), ("rx", [1])]:
            ours, theirs = QuantumCircuit(2), QuantumCircuit(2)
            ours.append(named_rotation(name, 0.8), qubits)
            getattr(theirs, name)(0.8, *qubits)
            np.testing.assert_allclose(Operator(ours).data, Operator(theirs).data, atol=1e-12)

    def test_pauli_evolution_placement(self):
        qc = QuantumCircuit(3)
        qc.append(PauliEvolutionGate(SparsePauliOp(["XZ", "YY"], [0.7, -0.2]), time=0.4), [2, 0])
        c = from_qiskit_circuit(qc, None)
        # Local qubit 0 (the label's last letter) is circuit qubit 2.
        assert c.gates[0].generator == PauliOperator(
            {Pauli("XZ", (0, 2)): -0.7, Pauli("YY", (0, 2)): 0.2}, 3
        )
        assert c.parameters == (0.4,)
        np.testing.assert_allclose(
            dense_unitary(c, qiskit_order=True), Operator(qc).data, atol=1e-12
        )

    @pytest.mark.parametrize(
        "operator",
        [
            lambda: SparseObservable.from_list([("ZZ", 0.5), ("XX", 0.25)]),
            lambda: [SparsePauliOp("XX"), SparsePauliOp(["YY", "ZZ"], [0.5, -1.0])],
            lambda: QiskitPauli("-XY"),
        ],
        ids=["SparseObservable", "list", "Pauli"],
    )
    def test_pauli_evolution_operator_kinds(self, operator):
        qc = QuantumCircuit(2)
        qc.append(PauliEvolutionGate(operator(), time=0.9), [0, 1])
        c = from_qiskit_circuit(qc, None)
        np.testing.assert_allclose(
            dense_unitary(c, qiskit_order=True), Operator(qc).data, atol=1e-12
        )

    @pytest.mark.parametrize("label", ["XYZ", "-XYZ", "ZII"])
    def test_pauli_product_rotation(self, label):
        qc = QuantumCircuit(3)
        qc.append(PauliProductRotationGate(QiskitPauli(label), 0.6), [2, 0, 1])
        c = from_qiskit_circuit(qc, None)
        assert c.parameters == (qc.data[0].operation.params[0],)
        assert all(abs(v) == 0.5 for v in c.gates[0].generator.terms.values())
        np.testing.assert_allclose(
            dense_unitary(c, qiskit_order=True), Operator(qc).data, atol=1e-12
        )

    def test_barriers_skipped(self):
        qc = QuantumCircuit(2)
        qc.rx(0.1, 0)
        qc.barrier()
        qc.ry(0.2, 1)
        c = from_qiskit_circuit(qc, None)
        assert len(c) == 2 and c.parameters == (0.1, 0.2)

    def test_initial_state_passed_through(self):
        qc = QuantumCircuit(3)
        qc.rx(0.1, 0)
        assert from_qiskit_circuit(qc, [2, 0]).initial_state == (2, 0)
        assert from_qiskit_circuit(qc, [2, 0])._state_given
        assert not from_qiskit_circuit(qc, None)._state_given
        with pytest.raises(ValueError, match="initial_state entries must be in 0..2"):
            from_qiskit_circuit(qc, [3])

    def test_two_registers(self):
        qc = QuantumCircuit(QuantumRegister(1, "a"), QuantumRegister(2, "b"))
        with pytest.raises(
            ValueError,
            match=r"from_qiskit_circuit only supports a single quantum register; got 2\.",
        ):
            from_qiskit_circuit(qc, None)

    @pytest.mark.parametrize("gate", ["measure", "opaque"])
    def test_unsupported_instruction(self, gate):
        # h, cx, rzx and x used to be refused here; test_qiskit_gates.py now covers them.
        qc = QuantumCircuit(QuantumRegister(2), ClassicalRegister(2))
        if gate == "measure":
            qc.measure(0, 0)
        else:
            qc.append(Gate("opaque", 1, []), [1])
        with pytest.raises(ValueError, match=rf"Instruction 0 \({gate}\): .*(unitary|unsupported)"):
            from_qiskit_circuit(qc, None)

    def test_unbound_parameter(self):
        # A free Parameter is no longer an error: it takes its slot, circuit.parameters order.
        qc = QuantumCircuit(1)
        qc.rx(Parameter("t"), 0)
        c = from_qiskit_circuit(qc, None)
        assert c.parameters == () and c.n_parameters == 1
        assert c.gates[0] == ExpGate(PauliOperator({"X": -0.5}, 1), 0)

    def test_non_commuting_evolution(self):
        qc = QuantumCircuit(1)
        qc.append(PauliEvolutionGate(SparsePauliOp(["X", "Z"]), time=0.1), [0])
        with pytest.raises(ValueError, match="commuting terms"):
            from_qiskit_circuit(qc, None)

    @pytest.mark.parametrize("seed", range(4))
    def test_expectation_matches_statevector(self, seed):
        """rx/ry/rz/r<PP> signs and qubit order, checked on scalar expectation values."""
        rng = np.random.default_rng(seed)
        qc = QuantumCircuit(3)
        for _ in range(8):
            name = str(rng.choice(["rx", "ry", "rz", "rxx", "ryy", "rzz"]))
            qubits = [int(q) for q in rng.permutation(3)[: len(name) - 1]]
            getattr(qc, name)(float(rng.uniform(-2, 2)), *qubits)
        observable = random_pauli_operator(rng, 3, 5)
        state = [int(q) for q in np.flatnonzero(rng.integers(0, 2, 3))]
        c = from_qiskit_circuit(qc, state)
        expected = qiskit_expectation(qc, to_qiskit_operator(observable), state)
        assert dense_expectation(c, observable) == pytest.approx(expected, abs=1e-10)


@needs_qiskit
class TestToQiskitCircuit:
    def test_example(self):
        gate = ExpGate(PauliOperator({Pauli("ZXY", (3, 1, 2)): 1.5}, 5))
        qc = to_qiskit_circuit(Circuit([gate], 5, parameters=[0.7]), 5)
        assert qc.num_qubits == 5 and len(qc.data) == 1
        instruction = qc.data[0]
        assert isinstance(instruction.operation, PauliEvolutionGate)
        assert instruction.operation.operator == SparsePauliOp.from_list([("ZYX", -1.5)])
        assert instruction.operation.time == 0.7
        assert [qc.find_bit(q).index for q in instruction.qubits] == [1, 2, 3]

    def test_num_qubits_mismatch(self):
        c = Circuit([ExpGate(PauliOperator({"XZ": 1.0}, 2))], 2, [0.1])
        with pytest.raises(ValueError, match="num_qubits=3 does not match circuit.system_size=2"):
            to_qiskit_circuit(c, 3)

    @pytest.mark.parametrize(
        ("n", "error", "fragment"),
        [
            (2.0, TypeError, r"num_qubits must be an integer \(not float\)"),
            (-1, ValueError, "num_qubits must be non-negative; got -1"),
        ],
    )
    def test_num_qubits_rule(self, n, error, fragment):
        c = Circuit([], 2)
        with pytest.raises(error, match=fragment):
            to_qiskit_circuit(c, n)

    def test_unbound(self):
        c = Circuit([ExpGate(PauliOperator({"XZ": 1.0}, 2))], 2)
        with pytest.raises(ValueError, match="bound circuit"):
            to_qiskit_circuit(c, 2)

    def test_majorana_family(self):
        c = Circuit([ExpGate(MajoranaOperator({(0, 1): 1j}, 2))], 2, [0.1])
        with pytest.raises(TypeError, match="majorana-family gate"):
            to_qiskit_circuit(c, 2)

    def test_shared_indices_use_resolved_mapping(self):
        gates = [
            ExpGate(PauliOperator({"XI": 1.0}, 2), 1),
            ExpGate(PauliOperator({"IY": 1.0}, 2), 0),
            ExpGate(PauliOperator({"ZZ": 1.0}, 2), 1),
        ]
        c = Circuit(gates, 2, [0.25, -0.5])
        qc = to_qiskit_circuit(c, 2)
        assert [inst.operation.time for inst in qc.data] == [-0.5, 0.25, -0.5]
        np.testing.assert_allclose(
            Operator(qc).data, dense_unitary(c, qiskit_order=True), atol=1e-12
        )

    def test_identity_gates_become_global_phase(self):
        gates = [
            ExpGate(PauliOperator({"": 0.5}, 2), 0),
            ExpGate(PauliOperator({}, 2), 1),
            ExpGate(PauliOperator({"": 0.3, "XY": 1.0}, 2), 0),
        ]
        c = Circuit(gates, 2, [0.9, 0.4])
        qc = to_qiskit_circuit(c, 2)
        assert len(qc.data) == 1
        np.testing.assert_allclose(
            Operator(qc).data, dense_unitary(c, qiskit_order=True), atol=1e-12
        )

    @pytest.mark.parametrize("seed", range(5))
    def test_unitary_matches(self, seed):
        rng = np.random.default_rng(seed)
        gates = [ExpGate(random_commuting_pair(rng, 4)) for _ in range(5)]
        c = Circuit(gates, 4, rng.uniform(-1, 1, 5), [1])
        qc = to_qiskit_circuit(c, 4)
        np.testing.assert_allclose(
            Operator(qc).data, dense_unitary(c, qiskit_order=True), atol=1e-10
        )

    def test_round_trip_from_to_from(self):
        qc = QuantumCircuit(3)
        qc.rx(0.5, 0)
        qc.rzz(0.3, 2, 1)
        qc.append(named_rotation("rxy", -0.2), [1, 2])
        qc.append(PauliEvolutionGate(SparsePauliOp(["XX", "YY"], [0.5, 0.25]), time=1.1), [0, 2])
        qc.append(PauliProductRotationGate(QiskitPauli("XZY"), 0.6), [0, 1, 2])
        first = from_qiskit_circuit(qc, [1])
        again = from_qiskit_circuit(to_qiskit_circuit(first, 3), [1])
        assert again == first
        assert [g.generator for g in again] == [g.generator for g in first]
        np.testing.assert_allclose(
            Operator(to_qiskit_circuit(first, 3)).data, Operator(qc).data, atol=1e-12
        )

    def test_vector_1(self):
        c = Circuit([ExpGate(PauliOperator({"X": 1}, 2))], 2, parameters=[0.3])
        qc = to_qiskit_circuit(c, 2)
        zz = to_qiskit_operator(PauliOperator({"ZZ": 1}, 2))
        assert qiskit_expectation(qc, zz, []) == pytest.approx(0.8253356149096783, abs=1e-12)

    def test_vector_9_ordering(self):
        def gate(terms):
            return ExpGate(PauliOperator(terms, 3))

        a = Circuit([gate({"X": 1.0}), gate({"ZX": 0.7})], 3, [0.3, 0.5], [0])
        b = Circuit([gate({"YZX": 1.0}), gate({"IYY": 0.4})], 3, [0.9, -0.4], [0])
        obs = PauliOperator({"ZXI": 1.0, "XYZ": 0.5, "IZY": -0.3}, 3)
        for circuit, expected in [(a + b, 0.0230766978), (b + a, -0.3261424686)]:
            qc = to_qiskit_circuit(circuit, 3)
            value = qiskit_expectation(qc, to_qiskit_operator(obs), [0])
            assert value == pytest.approx(expected, abs=1e-9)
            assert dense_expectation(circuit, obs) == pytest.approx(expected, abs=1e-9)
