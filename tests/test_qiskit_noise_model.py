"""``from_qiskit_circuit(..., noise_model=...)`` and ``noise.after_gates``, against ``qiskit_aer``.

The reference is qiskit-aer's density-matrix simulator run on the Qiskit circuit with the same
noise model (``AerSimulator(method="density_matrix")``, ``save_density_matrix``), and the
value ``Tr(O ρ)`` of a random observable ``O`` built in Qiskit. monoprop converts the circuit
with its noise and propagates ``O`` (Heisenberg; Schrödinger where the channel kind is new),
by ``propagate`` and by a recorded graph; the gradient is checked against central differences
of the simulator's values. Circuits are small random ones on 3 or 4 qubits (seed in the test
id). ``from_qiskit_circuit`` gives Pauli-family circuits only, so the Majorana propagator is
not involved; ``after_gates`` is also checked on a Majorana circuit against the dense noise
reference of tests/dense_noise.py.
"""

from __future__ import annotations

import math

import dense_noise as dn
import numpy as np
import pytest

pytest.importorskip("qiskit")
pytest.importorskip("qiskit_aer")  # a test extra; only users without it skip

from qiskit import QuantumCircuit  # noqa: E402
from qiskit.circuit import Parameter  # noqa: E402
from qiskit.circuit.library import XGate  # noqa: E402
from qiskit.quantum_info import Pauli as QiskitPauli  # noqa: E402
from qiskit.quantum_info import SparsePauliOp  # noqa: E402
from qiskit_aer import AerSimulator  # noqa: E402
from qiskit_aer.noise import (  # noqa: E402
    NoiseModel,
    PauliError,
    PauliLindbladError,
    QuantumError,
    ReadoutError,
    amplitude_damping_error,
    coherent_unitary_error,
    depolarizing_error,
    kraus_error,
    mixed_unitary_error,
    pauli_error,
    phase_amplitude_damping_error,
    phase_damping_error,
    reset_error,
    thermal_relaxation_error,
)

from monoprop import (  # noqa: E402
    Circuit,
    ExpGate,
    MajoranaOperator,
    MajoranaPropagator,
    PauliPropagator,
    noise,
)
from monoprop.qiskit_conversion import from_qiskit_circuit, from_qiskit_operator  # noqa: E402

VALUE_ATOL = 1e-10
GRADIENT_ATOL = 1e-7
FD_STEP = 1e-5
ONE_QUBIT_GATES = ["sx", "x", "h", "rz", "ry", "rx"]
TWO_QUBIT_GATES = ["cx", "cz", "rzz"]


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("monoprop_NUM_THREADS", "1")


# --------------------------------------------------------------------------- references


def aer_density_matrix(qc: QuantumCircuit, noise_model: NoiseModel | None) -> np.ndarray:
    qc = qc.copy()
    qc.save_density_matrix()
    sim = AerSimulator(method="density_matrix", noise_model=noise_model)
    return np.asarray(sim.run(qc).result().data()["density_matrix"])


def aer_value(qc: QuantumCircuit, noise_model: NoiseModel | None, observable) -> float:
    rho = aer_density_matrix(qc, noise_model)
    return float(np.real(np.trace(observable.to_matrix() @ rho)))


def random_observable(rng, n: int, terms: int = 5) -> SparsePauliOp:
    labels = ["".join(rng.choice(list("IXYZ"), n)) for _ in range(terms)]
    return SparsePauliOp(labels, rng.normal(size=terms)).simplify()


def random_circuit(rng, n: int, depth: int = 14, *, parameters: int = 0) -> QuantumCircuit:
    """Gates from ONE_QUBIT_GATES and TWO_QUBIT_GATES; rotations at random angles, or at free
    Parameters (each used once or twice) when ``parameters`` > 0."""
    qc = QuantumCircuit(n)
    thetas = [Parameter(f"t{k}") for k in range(parameters)]

    def angle(k):
        if thetas:
            return thetas[k % len(thetas)]
        return float(rng.uniform(-math.pi, math.pi))

    rotations = 0
    for _ in range(depth):
        name = str(rng.choice(ONE_QUBIT_GATES + TWO_QUBIT_GATES))
        if name in TWO_QUBIT_GATES:
            a, b = (int(q) for q in rng.choice(n, size=2, replace=False))
            if name == "rzz":
                qc.rzz(angle(rotations), a, b)
                rotations += 1
            else:
                getattr(qc, name)(a, b)
        elif name in ("rz", "ry", "rx"):
            getattr(qc, name)(angle(rotations), int(rng.integers(n)))
            rotations += 1
        else:
            getattr(qc, name)(int(rng.integers(n)))
    for theta in thetas[rotations:]:  # every Parameter reaches the circuit
        qc.ry(theta, int(rng.integers(n)))
    return qc


def monoprop_value(circuit: Circuit, observable: SparsePauliOp, *, picture="heisenberg") -> float:
    n = circuit.system_size
    config = {"cutoff": 2 * n}
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = 2 * n
    prop = PauliPropagator(from_qiskit_operator(observable), [], **config)
    prop.propagate(circuit)
    return prop.expectation_value()


def graph_propagator(circuit: Circuit, observable: SparsePauliOp) -> PauliPropagator:
    n = circuit.system_size
    prop = PauliPropagator(from_qiskit_operator(observable), [], cutoff=2 * n)
    prop.build_graph(circuit)
    return prop


def check(actual: float, expected: float, context: str, atol: float = VALUE_ATOL) -> None:
    assert abs(actual - expected) <= atol, f"{context}: monoprop {actual!r}, aer {expected!r}"


def compare_with_aer(
    seed: int, model: NoiseModel, n: int = 3, *, pictures=("heisenberg",), circuits: int = 2
) -> Circuit:
    """Random bound circuits under ``model``: propagate and graph values against aer."""
    rng = np.random.default_rng(seed)
    effect = 0.0
    for trial in range(circuits):
        qc = random_circuit(rng, n)
        observable = random_observable(rng, n)
        expected = aer_value(qc, model, observable)
        converted = from_qiskit_circuit(qc, [], noise_model=model)
        assert converted.channels, "the model put no noise on the circuit"
        for picture in pictures:
            check(monoprop_value(converted, observable, picture=picture), expected, picture)
        graph = graph_propagator(converted, observable)
        check(graph.expectation_value(list(converted.parameters)), expected, f"graph {trial}")
        effect = max(effect, abs(aer_value(qc, None, observable) - expected))
    assert effect > 1e-3, "the noise hardly changes these values: the test could not fail"
    return converted


# --------------------------------------------------------------------------- each error kind

ONE_QUBIT_ERRORS = {
    "depolarizing": lambda: depolarizing_error(0.08, 1),
    "pauli": lambda: pauli_error([("X", 0.05), ("Y", 0.02), ("Z", 0.1), ("I", 0.83)]),
    "bit_flip": lambda: pauli_error([("X", 0.07), ("I", 0.93)]),
    "amplitude_damping": lambda: amplitude_damping_error(0.15),
    "phase_damping": lambda: phase_damping_error(0.2),
    "thermal_relaxation_t2_below_t1": lambda: thermal_relaxation_error(50.0, 30.0, 8.0),
    "thermal_relaxation_t2_above_t1": lambda: thermal_relaxation_error(50.0, 90.0, 8.0),
    "thermal_relaxation_excited": lambda: thermal_relaxation_error(
        50.0, 40.0, 8.0, excited_state_population=0.3
    ),
    "phase_amplitude_damping": lambda: phase_amplitude_damping_error(
        0.1, 0.2, excited_state_population=0.15
    ),
    "reset": lambda: reset_error(0.06, 0.03),
    "pauli_lindblad": lambda: PauliLindbladError(
        [QiskitPauli("X"), QiskitPauli("Z")], [0.04, 0.02]
    ),
    "pauli_error_object": lambda: PauliError(
        [QiskitPauli("I"), QiskitPauli("Y"), QiskitPauli("Z")], [0.9, 0.06, 0.04]
    ),
}
EXPECTED_CHANNELS = {
    "depolarizing": {"depolarizing"},
    "pauli": {"pauli_channel"},
    "bit_flip": {"bit_flip"},
    "amplitude_damping": {"amplitude_damping"},
    "phase_damping": {"phase_flip"},
    "thermal_relaxation_t2_below_t1": {"amplitude_damping", "phase_flip"},
    "thermal_relaxation_t2_above_t1": {"amplitude_damping", "phase_flip"},
    "thermal_relaxation_excited": {"relaxation"},
    "phase_amplitude_damping": {"relaxation"},
    "reset": {"relaxation"},
    "pauli_lindblad": {"pauli_lindblad"},
    "pauli_error_object": {"pauli_channel"},
}

TWO_QUBIT_ERRORS = {
    "depolarizing": lambda: depolarizing_error(0.1, 2),
    "pauli": lambda: pauli_error([("XZ", 0.05), ("YY", 0.03), ("IZ", 0.04), ("II", 0.88)]),
    "pauli_lindblad": lambda: PauliLindbladError(
        [QiskitPauli("XX"), QiskitPauli("ZI"), QiskitPauli("YZ")], [0.03, 0.05, 0.02]
    ),
    # NoiseModel.from_backend's two-qubit gate error: depolarizing, then relaxation per qubit.
    "depolarizing_then_relaxation": lambda: depolarizing_error(0.05, 2).compose(
        thermal_relaxation_error(50.0, 40.0, 10.0).tensor(
            thermal_relaxation_error(30.0, 50.0, 10.0, excited_state_population=0.1)
        )
    ),
    "amplitude_damping_pair": lambda: amplitude_damping_error(0.1).tensor(phase_damping_error(0.2)),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind", sorted(ONE_QUBIT_ERRORS))
def test_all_qubit_one_qubit_errors(kind, seed):
    model = NoiseModel()
    model.add_all_qubit_quantum_error(ONE_QUBIT_ERRORS[kind](), ONE_QUBIT_GATES)
    converted = compare_with_aer(seed, model, pictures=("heisenberg", "schrodinger"))
    assert {c.name for c in converted.channels} == EXPECTED_CHANNELS[kind]


@pytest.mark.parametrize("seed", [2, 3])
@pytest.mark.parametrize("kind", sorted(TWO_QUBIT_ERRORS))
def test_all_qubit_two_qubit_errors(kind, seed):
    model = NoiseModel()
    model.add_all_qubit_quantum_error(TWO_QUBIT_ERRORS[kind](), TWO_QUBIT_GATES)
    compare_with_aer(seed, model, n=4, pictures=("heisenberg", "schrodinger"))


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_local_errors_replace_all_qubit_ones(seed):
    """Local errors on some qubits (and qubit pairs in one orientation) override the all-qubit
    error for that instruction there; elsewhere the all-qubit error stays."""
    model = NoiseModel()
    model.add_all_qubit_quantum_error(depolarizing_error(0.05, 1), ["sx", "x", "h"])
    model.add_quantum_error(amplitude_damping_error(0.3), ["sx", "x", "h"], [1], warnings=False)
    model.add_quantum_error(thermal_relaxation_error(20.0, 30.0, 6.0), ["rz", "ry"], [2])
    model.add_all_qubit_quantum_error(depolarizing_error(0.04, 2), ["cx"])
    model.add_quantum_error(pauli_error([("XY", 0.2), ("II", 0.8)]), ["cx"], [0, 2], warnings=False)
    model.add_quantum_error(
        PauliLindbladError([QiskitPauli("ZX")], [0.1]), ["cz"], [1, 0], warnings=False
    )
    compare_with_aer(seed, model, n=3, circuits=3)


def test_three_qubit_errors_become_pauli_lindblad_maps():
    """A 3-qubit depolarizing error on ccx (positive fidelities) is a Pauli-Lindblad map;
    a 3-qubit error with decays is a relaxation channel whose Pauli part is one too."""
    rng = np.random.default_rng(7)
    relaxed = depolarizing_error(0.1, 3).compose(
        thermal_relaxation_error(40.0, 30.0, 5.0).tensor(
            amplitude_damping_error(0.1).tensor(phase_damping_error(0.1))
        )
    )
    for error, name in [(depolarizing_error(0.2, 3), "pauli_lindblad"), (relaxed, "relaxation")]:
        model = NoiseModel()
        model.add_all_qubit_quantum_error(error, ["ccx"])
        qc = random_circuit(rng, 3, depth=6)
        qc.ccx(0, 2, 1)
        qc.ry(0.4, 1)
        qc.ccx(1, 0, 2)
        qc.rx(0.7, 0)
        observable = random_observable(rng, 3, terms=6)
        converted = from_qiskit_circuit(qc, [], noise_model=model)
        assert [c.name for c in converted.channels] == [name, name]
        expected = aer_value(qc, model, observable)
        for picture in ("heisenberg", "schrodinger"):
            check(monoprop_value(converted, observable, picture=picture), expected, picture)


def test_five_qubit_errors():
    """A Pauli-Lindblad error of any size converts directly; a dense QuantumError on more than
    4 qubits is refused (its transfer matrix would be 4^5 x 4^5). Both appended to the circuit,
    which aer simulates as they stand."""
    qc = QuantumCircuit(5)
    qc.h(range(4))
    qc.ry(0.6, 4)
    qc.cx(0, 4)
    generators = [QiskitPauli("XIIZY"), QiskitPauli("ZZIII"), QiskitPauli("IYXII")]
    qc.append(PauliLindbladError(generators, [0.1, 0.2, 0.05]), [3, 0, 4, 1, 2])
    qc.rx(0.4, 2)
    observable = SparsePauliOp(["XIIIZ", "ZZIII", "IIYZX", "XXXXI"], [1.0, 0.5, -0.7, 0.3])
    converted = from_qiskit_circuit(qc, [])
    assert [c.name for c in converted.channels] == ["pauli_lindblad"]
    expected = aer_value(qc, None, observable)
    check(monoprop_value(converted, observable), expected, "lindblad")
    noiseless = qc.copy_empty_like()
    for instruction in qc.data:
        if instruction.operation.name != "quantum_channel":
            noiseless.append(instruction)
    assert abs(aer_value(noiseless, None, observable) - expected) > 1e-3
    phase = np.diag(np.exp(0.1j * np.arange(32)))
    qc.append(coherent_unitary_error(phase), range(5))
    with pytest.raises(
        ValueError,
        match=r"Instruction 8 \(quantum_channel\) on qubits \[0, 1, 2, 3, 4\].*"
        r"QuantumError on 5 qubits",
    ):
        from_qiskit_circuit(qc, [])


def test_errors_follow_labels_id_and_delay_not_barrier():
    """As aer: a labelled gate takes the error of its label (not of its name); id and delay
    take theirs; a barrier none."""
    model = NoiseModel()
    model.add_all_qubit_quantum_error(amplitude_damping_error(0.5), ["x"])
    model.add_all_qubit_quantum_error(amplitude_damping_error(0.2), ["slow_x", "id", "delay"])
    model.add_all_qubit_quantum_error(depolarizing_error(0.9, 1), ["barrier"])
    qc = QuantumCircuit(3)
    qc.x(0)
    qc.append(XGate(label="slow_x"), [1])
    qc.x(2)
    qc.id(2)
    qc.barrier()
    qc.delay(10, 1)
    qc.h(0)
    observable = SparsePauliOp(["IIZ", "IZI", "ZII", "IIX"], [0.5, -1.0, 0.7, 0.3])
    converted = from_qiskit_circuit(qc, [], noise_model=model)
    rates = [(c.sites, round(c.rate, 12)) for c in converted.channels]
    assert rates == [((0,), 0.5), ((1,), 0.2), ((2,), 0.5), ((2,), 0.2), ((1,), 0.2)]
    check(monoprop_value(converted, observable), aer_value(qc, model, observable), "labels")
    # A pauli instruction takes its error here (qiskit-aer 0.18 gives it none).
    model.add_all_qubit_quantum_error(phase_damping_error(0.36), ["pauli"])
    qc.pauli("Y", [2])
    last = from_qiskit_circuit(qc, [], noise_model=model).gates[-1]
    # phase damping λ scales X and Y by sqrt(1 - λ) = 0.8 = 1 - 2p: a phase flip p = 0.1
    assert (last.name, last.sites, round(last.rate, 12)) == ("phase_flip", (2,), 0.1)
    qc.pauli("XY", [2, 0])  # a two-qubit instruction with a one-qubit error
    with pytest.raises(ValueError, match=r"Instruction 8 \(pauli\) .*acts on 1 qubits but the"):
        from_qiskit_circuit(qc, [], noise_model=model)


def test_quantum_errors_inside_the_circuit_and_custom_passes():
    """A QuantumError appended to a circuit is converted in place; NoiseModel.from_backend's
    relaxation pass on delays runs as the simulator runs it."""
    from qiskit import transpile
    from qiskit.providers.fake_provider import GenericBackendV2

    backend = GenericBackendV2(3, seed=11)
    model = NoiseModel.from_backend(backend, readout_error=False)
    rng = np.random.default_rng(8)
    compiled = transpile(
        random_circuit(rng, 3, depth=10), basis_gates=model.basis_gates, optimization_level=0
    )
    compiled.delay(4000, 1, unit="dt")
    compiled.append(thermal_relaxation_error(30.0, 20.0, 4.0), [2])
    compiled.append(depolarizing_error(0.1, 2), [1, 0])
    compiled.sx(1)
    observable = SparsePauliOp(["IXI", "IYZ", "ZZI", "XIX"], [1.0, -0.6, 0.8, 0.5])
    expected = aer_value(compiled, model, observable)
    converted = from_qiskit_circuit(compiled, [], noise_model=model)
    check(monoprop_value(converted, observable), expected, "from_backend")
    # The delay's relaxation matters: the model without its pass gives another value.
    no_pass = NoiseModel.from_backend(backend, readout_error=False)
    no_pass._custom_noise_passes.clear()
    assert abs(aer_value(compiled, no_pass, observable) - expected) > 1e-4
    # The appended errors alone, without any model.
    check(
        monoprop_value(from_qiskit_circuit(compiled, []), observable),
        aer_value(compiled, None, observable),
        "appended errors",
    )
    assert {"relaxation", "depolarizing"} <= {c.name for c in converted.channels}


# --------------------------------------------------------------------------- graphs, gradients


def test_graph_values_and_gradient_of_a_parameterised_circuit():
    """An unbound circuit with noise: graph values at fresh points against aer, the gradient
    against central differences of aer's values."""
    rng = np.random.default_rng(9)
    qc = random_circuit(rng, 3, depth=12, parameters=4)
    model = NoiseModel()
    model.add_all_qubit_quantum_error(thermal_relaxation_error(40.0, 25.0, 6.0), ["rx", "ry"])
    model.add_all_qubit_quantum_error(depolarizing_error(0.06, 2), ["cx", "cz", "rzz"])
    model.add_all_qubit_quantum_error(
        thermal_relaxation_error(40.0, 60.0, 3.0, excited_state_population=0.2), ["h", "sx"]
    )
    observable = random_observable(rng, 3)
    converted = from_qiskit_circuit(qc, [], noise_model=model)
    assert converted.parameters == () and converted.n_parameters == len(qc.parameters)
    prop = graph_propagator(converted, observable)
    fn = prop.expectation_value_and_gradient_functional()

    def reference(x):
        return aer_value(qc.assign_parameters(list(x)), model, observable)

    for _ in range(2):
        x = rng.uniform(-math.pi, math.pi, size=len(qc.parameters))
        value, gradient = fn(x)
        check(value, reference(x), "graph value")
        fd = np.array(
            [
                (reference(x + FD_STEP * e) - reference(x - FD_STEP * e)) / (2 * FD_STEP)
                for e in np.eye(len(x))
            ]
        )
        assert np.allclose(gradient, fd, atol=GRADIENT_ATOL, rtol=0), (gradient, fd)


# --------------------------------------------------------------------------- refusals


HADAMARD = np.array([[1, 1], [1, -1]]) / math.sqrt(2)


def refused_model(error: QuantumError, gates) -> NoiseModel:
    model = NoiseModel()
    model.add_all_qubit_quantum_error(depolarizing_error(0.01, 1), ["h"])
    model.add_all_qubit_quantum_error(error, gates)
    return model


@pytest.mark.parametrize(
    ("error", "gates", "moved"),
    [
        (coherent_unitary_error(np.diag([1.0, np.exp(0.1j)])), ["ry"], "takes Y to X"),
        (mixed_unitary_error([(np.eye(2), 0.9), (HADAMARD, 0.1)]), ["ry"], "takes Z to X"),
        (
            kraus_error(  # amplitude damping towards |+>: a decay along X, not Z
                [
                    HADAMARD @ np.array([[1, 0], [0, math.sqrt(0.8)]]) @ HADAMARD,
                    HADAMARD @ np.array([[0, math.sqrt(0.2)], [0, 0]]) @ HADAMARD,
                ]
            ),
            ["ry"],
            "takes I to X",
        ),
        (coherent_unitary_error(np.diag([1, 1, 1, np.exp(0.2j)])), ["cx"], "takes "),
    ],
    ids=["coherent_phase", "mixed_hadamard", "kraus", "coherent_two_qubit"],
)
def test_unsupported_errors_name_the_error_and_position(error, gates, moved):
    qc = QuantumCircuit(2)
    qc.h(0)
    qc.ry(0.3, 1)
    qc.cx(1, 0)
    before = qc.copy()
    model = refused_model(error, gates)
    observable = SparsePauliOp(["ZZ"], [1.0])
    prop = graph_propagator(from_qiskit_circuit(qc, []), observable)
    value = prop.expectation_value([0.3])
    position = "Instruction 1 (ry) on qubits [1]" if gates == ["ry"] else "Instruction 2 (cx)"
    with pytest.raises(ValueError, match=r"\(QuantumError\) is not a Pauli channel") as info:
        from_qiskit_circuit(qc, [], noise_model=model)
    message = str(info.value)
    assert position in message and f"all-qubit error for {gates[0]!r}" in message, message
    assert moved in message, message
    assert qc == before
    assert prop.expectation_value([0.3]) == value


def test_unused_unsupported_error_is_not_refused():
    """An error the circuit never reaches is never applied by aer either."""
    qc = QuantumCircuit(2)
    qc.h(0)
    qc.cx(0, 1)
    model = refused_model(coherent_unitary_error(np.diag([1.0, 1j])), ["ry"])
    converted = from_qiskit_circuit(qc, [], noise_model=model)
    assert [c.name for c in converted.channels] == ["depolarizing"]


def test_three_qubit_pauli_channel_with_a_zero_fidelity_is_refused():
    qc = QuantumCircuit(3)
    qc.ccx(0, 1, 2)
    model = NoiseModel()
    model.add_all_qubit_quantum_error(pauli_error([("XXX", 0.5), ("III", 0.5)]), ["ccx"])
    with pytest.raises(
        ValueError,
        match=r"Instruction 0 \(ccx\) on qubits \[0, 1, 2\].*Pauli channel on 3 qubits.*"
        r"fidelity of 'IIY' is 0\.0",
    ):
        from_qiskit_circuit(qc, [], noise_model=model)


def test_readout_errors_are_refused():
    qc = QuantumCircuit(2)
    qc.h(0)
    for add in (
        lambda m: m.add_all_qubit_readout_error(ReadoutError([[0.9, 0.1], [0.2, 0.8]])),
        lambda m: m.add_readout_error(ReadoutError([[0.95, 0.05], [0.1, 0.9]]), [1]),
    ):
        model = NoiseModel()
        model.add_all_qubit_quantum_error(depolarizing_error(0.01, 1), ["h"])
        add(model)
        with pytest.raises(ValueError, match=r"readout errors .*readout_error=False"):
            from_qiskit_circuit(qc, [], noise_model=model)


def test_non_physical_pauli_error_and_wrong_arguments():
    qc = QuantumCircuit(1)
    qc.h(0)
    model = NoiseModel()
    model.add_all_qubit_quantum_error(
        PauliError([QiskitPauli("I"), QiskitPauli("X")], [0.9, 0.2]), ["h"]
    )
    with pytest.raises(ValueError, match=r"Instruction 0 \(h\).*PauliError.*sum to 1\.1"):
        from_qiskit_circuit(qc, [], noise_model=model)
    with pytest.raises(TypeError, match=r"qiskit_aer\.noise\.NoiseModel .*got dict"):
        from_qiskit_circuit(qc, [], noise_model={"h": 0.1})


def test_a_model_that_matches_no_instruction_warns():
    qc = QuantumCircuit(2)
    qc.h(0)
    qc.cz(0, 1)
    model = NoiseModel()
    model.add_all_qubit_quantum_error(depolarizing_error(0.01, 2), ["ecr"])
    with pytest.warns(UserWarning, match=r"\['ecr'\].*match none.*transpile"):
        converted = from_qiskit_circuit(qc, [], noise_model=model)
    assert converted.channels == ()


# --------------------------------------------------------------------------- after_gates


def depolarize_two_qubit_gates(p):
    def channel_for_gate(gate, qubits):
        return noise.depolarizing(p, qubits) if len(qubits) == 2 else None

    return channel_for_gate


@pytest.mark.parametrize("seed", [10, 11])
def test_after_gates_two_qubit_depolarizing_matches_aer(seed):
    """after_gates with 'depolarizing after every two-qubit gate' on the converted circuit is
    aer's all-qubit depolarizing error on cx, cz and rzz."""
    rng = np.random.default_rng(seed)
    qc = random_circuit(rng, 4, depth=16)
    observable = random_observable(rng, 4)
    noisy = noise.after_gates(from_qiskit_circuit(qc, []), depolarize_two_qubit_gates(0.07))
    model = NoiseModel()
    model.add_all_qubit_quantum_error(depolarizing_error(0.07, 2), TWO_QUBIT_GATES)
    expected = aer_value(qc, model, observable)
    check(monoprop_value(noisy, observable), expected, "propagate")
    check(monoprop_value(noisy, observable, picture="schrodinger"), expected, "schrodinger")


def test_after_gates_with_a_rate_slot_and_several_channels():
    """Channels returned as a list, one of them reading its rate from a new parameter slot:
    the graph value and the rate's gradient against aer."""
    rng = np.random.default_rng(12)
    qc = random_circuit(rng, 3, depth=12, parameters=3)
    rate_slot = len(qc.parameters)
    observable = random_observable(rng, 3)

    def channel_for_gate(gate, qubits):
        if len(qubits) != 2:
            return None
        return [
            noise.depolarizing(qubits=qubits, index=rate_slot),
            noise.amplitude_damping(0.25, qubits[1]),  # qubits are sorted: the higher one
        ]

    noisy = noise.after_gates(from_qiskit_circuit(qc, []), channel_for_gate)
    assert noisy.n_parameters == rate_slot + 1
    assert [c.name for c in noisy.channels[:2]] == ["depolarizing", "amplitude_damping"]

    def reference(angles, p):
        model = NoiseModel()
        for a in range(3):
            for b in range(3):
                if a != b:  # aer's error qubit j is the instruction's j-th qubit
                    error = depolarizing_error(p, 2).compose(
                        amplitude_damping_error(0.25), qargs=[0 if a > b else 1]
                    )
                    model.add_quantum_error(error, TWO_QUBIT_GATES, [a, b], warnings=False)
        return aer_value(qc.assign_parameters(list(angles)), model, observable)

    prop = graph_propagator(noisy, observable)
    fn = prop.expectation_value_and_gradient_functional()
    angles = rng.uniform(-math.pi, math.pi, size=rate_slot)
    p = 0.08
    value, gradient = fn(np.append(angles, p))
    check(value, reference(angles, p), "graph value")
    fd = (reference(angles, p + FD_STEP) - reference(angles, p - FD_STEP)) / (2 * FD_STEP)
    assert abs(gradient[rate_slot] - fd) <= GRADIENT_ATOL, (gradient[rate_slot], fd)


def test_after_gates_on_a_majorana_circuit_matches_the_dense_reference():
    """Dephasing after every gate of a Majorana circuit, particle loss after the two-mode ones:
    the sites passed are modes; value against tests/dense_noise.py."""
    n = 3
    generators = [{(0, 3): 0.7}, {(1, 2): -0.4, (4, 5): 0.3}, {(2, 5): 0.9}, {(0, 1): 0.5}]
    angles = [0.3, -0.8, 1.1, 0.6]
    gates = [ExpGate(MajoranaOperator({k: 1j * v for k, v in g.items()}, n)) for g in generators]
    circuit = Circuit(gates, n, angles, initial_state=[0, 2])
    seen = []

    def channel_for_gate(gate, modes):
        seen.append(modes)
        out = [noise.dephasing(0.1, m) for m in modes]
        if len(modes) == 2:
            out.append(noise.particle_loss(0.2, modes[0]))
        return out

    noisy = noise.after_gates(circuit, channel_for_gate)
    assert seen == [(0, 1), (0, 1, 2), (1, 2), (0,)]
    assert noisy.initial_state == (0, 2) and noisy.parameters == tuple(angles)
    items: list = []
    for slot, (generator, modes) in enumerate(zip(generators, seen, strict=True)):
        items.append(dn.GateSpec({k: 1j * v for k, v in generator.items()}, slot))
        items += [dn.ChannelSpec("dephasing", (m,), rate=0.1) for m in modes]
        if len(modes) == 2:
            items.append(dn.ChannelSpec("particle_loss", (modes[0],), rate=0.2))
    observable = {(0, 1): 0.8j, (2, 5): -0.6j, (1, 2, 3, 4): 0.4}  # Hermitian products
    case = dn.NoisyCase("majorana", n, observable, (0, 2), tuple(items), tuple(angles))
    prop = MajoranaPropagator(MajoranaOperator(observable, n), [0, 2], cutoff=2 * n)
    prop.propagate(noisy)
    check(prop.expectation_value(), case.expectation(), "majorana")


def test_after_gates_refuses_what_is_not_a_channel():
    circuit = Circuit([ExpGate(from_qiskit_operator(SparsePauliOp(["XX"], [1.0])))], 2, [0.2])
    with pytest.raises(TypeError, match=r"returned 0\.1 for gate 0; return a monoprop\.noise"):
        noise.after_gates(circuit, lambda gate, qubits: 0.1)
    with pytest.raises(TypeError, match=r"takes a monoprop Circuit; got QuantumCircuit"):
        noise.after_gates(QuantumCircuit(2), depolarize_two_qubit_gates(0.1))
    with pytest.raises(TypeError, match=r"channel_for_gate must be a function"):
        noise.after_gates(circuit, "depolarizing")
    unchanged = noise.after_gates(circuit, lambda gate, qubits: None)
    assert unchanged == circuit and unchanged is not circuit
