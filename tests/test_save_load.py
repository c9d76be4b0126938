"""Saving and loading propagators: a loaded propagator's values, gradients and terms are
bitwise the saved one's, and so is everything done with it afterwards; a damaged save is
refused with a ValueError naming the path, before anything is returned."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import monoprop
from monoprop import (
    Circuit,
    CliffordGate,
    ExpGate,
    MajoranaOperator,
    MajoranaPropagator,
    Pauli,
    PauliOperator,
    PauliPropagator,
    archive,
    noise,
)

N = 5


def pauli_case(with_noise: bool, with_clifford: bool):
    gates: list = []
    steps = 3
    angles = 0
    rate_slot = steps * (2 * N - 1)
    for step in range(steps):
        if with_clifford and step == 1:
            gates.append(CliffordGate.h(0, N))
        for q in range(N):
            gates.append(ExpGate(PauliOperator({Pauli("X", [q]): -0.5}, N)))
            angles += 1
        if with_noise:
            gates += [noise.depolarizing(0.02, q) for q in range(N)]
            gates.append(noise.amplitude_damping(qubit=step, index=rate_slot))
        for q in range(N - 1):
            gates.append(ExpGate(PauliOperator({Pauli("ZZ", [q, q + 1]): -0.5}, N)))
            angles += 1
    x = np.random.default_rng(5).uniform(-1, 1, angles)
    if with_noise:
        x = np.append(x, 0.1)
    observable = PauliOperator(
        {Pauli("Z", [2]): 1.0, Pauli("XX", [1, 2]): 0.5, Pauli("Y", [4]): -0.3}, N
    )
    return Circuit(gates, N, parameters=x), x, observable, [1, 3]


def majorana_case(with_noise: bool, with_clifford: bool):
    modes = 4
    gates: list = []
    hops = [(2 * p, 2 * p + 3) for p in range(modes - 1)] + [
        (2 * p + 1, 2 * p + 2) for p in range(modes - 1)
    ]
    angles = 2 * len(hops)
    for step in range(2):
        if with_clifford and step == 1:
            gates.append(CliffordGate.braid(0, 3, modes))
        gates += [ExpGate(MajoranaOperator({hop: 0.5j}, modes)) for hop in hops]
        if with_noise:
            gates += [noise.dephasing(0.05, q) for q in range(modes)]
            gates.append(noise.particle_loss(mode=step, index=angles))
    x = np.random.default_rng(6).uniform(-1, 1, angles)
    if with_noise:
        x = np.append(x, 0.2)
    observable = MajoranaOperator({(0, 1): 1j, (2, 3, 4, 5): -0.5, (1, 2): 0.25j}, modes)
    return Circuit(gates, modes, parameters=x), x, observable, [0, 2]


def build(family: str, picture: str, *, with_noise=True, with_clifford=True, graph=True, **config):
    circuit, x, observable, occupied = (pauli_case if family == "pauli" else majorana_case)(
        with_noise, with_clifford
    )
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    config.setdefault("cutoff", 4)
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = config["cutoff"]
    prop = cls(observable, occupied, **config)
    if graph:
        prop.build_graph(circuit, seed_parameters=x)
    else:
        prop.propagate(circuit)
    return prop, circuit, x


def assert_same(a, b, x) -> None:
    """Bitwise: values, gradients, the graph's shape and parameter axis, the held terms."""
    assert b.num_threads == a.num_threads
    assert (b.size(), b.graph_size(), b.graph_layers) == (a.size(), a.graph_size(), a.graph_layers)
    assert (b.n_parameters, b.n_gates, b.parameter_mapping) == (
        a.n_parameters,
        a.n_gates,
        a.parameter_mapping,
    )
    assert (b.cutoff, b.lower_atol, b.upper_atol, b.schrodinger) == (
        a.cutoff,
        a.lower_atol,
        a.upper_atol,
        a.schrodinger,
    )
    if a.graph_layers:
        value, gradient = a.expectation_value_and_gradient(x)
        loaded_value, loaded_gradient = b.expectation_value_and_gradient(x)
        assert loaded_value == value
        assert loaded_gradient.tobytes() == gradient.tobytes()
        assert (
            b.expectation_value_and_gradient_functional(pare_threshold=1e-3)(x)[0]
            == (a.expectation_value_and_gradient_functional(pare_threshold=1e-3)(x)[0])
        )
        assert b.evolved_operator(x, atol=0.0) == a.evolved_operator(x, atol=0.0)
    else:
        assert b.expectation_value() == a.expectation_value()
        assert b.evolved_operator(atol=0.0) == a.evolved_operator(atol=0.0)


@pytest.fixture(params=[1, 2], ids=["T1", "T2"])
def threads(request, monkeypatch):
    monkeypatch.setenv("monoprop_NUM_THREADS", str(request.param))
    return request.param


@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize("graph", [True, False], ids=["graph", "propagated"])
def test_round_trip_is_bitwise(family, picture, graph, threads, tmp_path):
    prop, _, x = build(family, picture, graph=graph, lower_atol=1e-5)
    prop.save(tmp_path / "p")
    loaded = monoprop.load(tmp_path / "p")
    assert type(loaded) is type(prop)
    assert_same(prop, loaded, x)


def plain(op) -> dict:
    return {repr(key): value for key, value in op.terms.items()}


@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize(("saved", "loaded"), [(2, 1), (1, 2), (2, 3), (3, 2)])
@pytest.mark.parametrize("graph", [True, False], ids=["graph", "propagated"])
def test_loading_at_another_thread_count_reshards(
    family, picture, saved, loaded, graph, tmp_path, monkeypatch
):
    """The same terms and graph entries, values and gradients equal to 1e-12; and the loaded
    propagator saved again and loaded at the first count is bitwise the original's shape."""
    monkeypatch.setenv("monoprop_NUM_THREADS", str(saved))
    prop, _, x = build(family, picture, graph=graph, lower_atol=1e-5)
    prop.save(tmp_path / "p")
    monkeypatch.setenv("monoprop_NUM_THREADS", str(loaded))
    other = monoprop.load(tmp_path / "p")
    assert other.num_threads == loaded
    assert (other.size(), other.graph_size(), other.graph_layers) == (
        prop.size(),
        prop.graph_size(),
        prop.graph_layers,
    )
    assert other.parameter_mapping == prop.parameter_mapping
    args = (x,) if graph else ()
    expected = plain(prop.evolved_operator(*args, atol=0.0))
    actual = plain(other.evolved_operator(*args, atol=0.0))
    assert actual.keys() == expected.keys()
    assert all(abs(actual[k] - expected[k]) <= 1e-12 for k in expected)
    if graph:
        value, gradient = prop.expectation_value_and_gradient(x)
        other_value, other_gradient = other.expectation_value_and_gradient(x)
        assert abs(other_value - value) <= 1e-12
        np.testing.assert_allclose(other_gradient, gradient, rtol=0, atol=1e-12)
    else:
        assert abs(other.expectation_value() - prop.expectation_value()) <= 1e-12


@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
def test_what_follows_a_load_is_what_follows_the_original(family, picture, threads, tmp_path):
    """Extending the graph, remapping parameters, updating the operator and contracting act on
    a loaded propagator exactly as on the original."""
    prop, circuit, x = build(family, picture)
    prop.save(tmp_path / "p")
    loaded = monoprop.load(tmp_path / "p")
    twice = np.concatenate([x, x[::-1]])
    for p in (prop, loaded):
        p.build_graph(circuit, seed_parameters=twice)
    assert_same(prop, loaded, twice)
    top = prop.n_parameters - 1
    mapping = [top - p if p >= 0 else p for p in prop.parameter_mapping]
    prop.parameter_mapping = loaded.parameter_mapping = mapping
    assert_same(prop, loaded, twice)
    _, _, observable, _ = (pauli_case if family == "pauli" else majorana_case)(True, True)
    scaled = 0.5 * observable
    prop.update_initial_operator(scaled)
    loaded.update_initial_operator(scaled)
    assert_same(prop, loaded, twice)
    contracted = prop.contract_partially(twice)
    assert loaded.contract_partially(twice).tobytes() == contracted.tobytes()
    assert_same(prop, loaded, twice)


@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_a_save_after_contraction_and_update_round_trips(family, threads, tmp_path):
    prop, _, x = build(family, "heisenberg")
    prop.contract_partially(x)
    prop.save(tmp_path / "p")
    assert_same(prop, monoprop.load(tmp_path / "p"), x)


@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_pickle_round_trips_bitwise(family, threads):
    prop, _, x = build(family, "heisenberg")
    loaded = pickle.loads(pickle.dumps(prop))
    assert_same(prop, loaded, x)
    assert_same(prop, copy.deepcopy(prop), x)


def damage(tmp_path, prop, change) -> str:
    """Saves prop with one array changed (and correctly signed, so only the engine's own
    checks can catch it)."""
    meta, arrays = archive.read(_saved(tmp_path, prop))
    arrays = {name: np.array(a) for name, a in arrays.items()}
    change(arrays)
    path = tmp_path / "damaged"
    archive.write(path, meta, arrays)
    return str(path)


def _saved(tmp_path, prop):
    path = tmp_path / "good"
    prop.save(path)
    return path


def flip_varint(arrays):
    """Turns the first entry byte of the first nonempty graph layer into a long varint."""
    data = arrays["shard0.graph_bytes"]
    cos = arrays["shard0.graph_cos"]
    layer = int(np.flatnonzero(cos[:, 0])[0])
    start = 0 if layer == 0 else int(arrays["shard0.graph_byte_ends"][layer - 1])
    data[start + int(cos[layer, 1])] = 0xFF


CASES = {
    "key-of-another-shard": (2, lambda a: a.update({"shard0.keys": a["shard1.keys"]})),
    "key-twice": (1, lambda a: a["shard0.keys"].__setitem__(1, a["shard0.keys"][0])),
    "key-past-last-slot": (1, lambda a: a["shard0.keys"].__setitem__((0, 0), 2**63)),
    "short-coefficients": (1, lambda a: a.update({"shard0.base": a["shard0.base"][:-1]})),
    "entry-that-does-not-decode": (1, flip_varint),
    "slot-past-the-shard": (1, lambda a: a["shard0.graph_cos"].__setitem__((0, 0), 10**6)),
    "part-of-a-missing-shard": (1, lambda a: a["shard0.graph_parts"].__setitem__((0, 0), 7)),
    "layer-count": (1, lambda a: a.update({"layer.gate": a["layer.gate"][:-1]})),
    "parameter-off-the-axis": (1, lambda a: a["layer.parameter"].__setitem__(0, 10**6)),
    "missing-array": (1, lambda a: a.pop("shard0.graph_parts")),
    "wrong-dtype": (1, lambda a: a.update({"shard0.base": a["shard0.base"].astype(np.float32)})),
    "frame-not-inverted": (
        1,
        lambda a: a["frame.backward_signs"].__setitem__(0, -a["frame.backward_signs"][0]),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_inconsistent_saves_are_refused(case, tmp_path, monkeypatch):
    shards, change = CASES[case]
    monkeypatch.setenv("monoprop_NUM_THREADS", str(shards))
    prop, _, _ = build("pauli", "heisenberg")
    path = damage(tmp_path, prop, change)
    with pytest.raises(ValueError, match=rf"{path}: .*(damaged|lacks|wrong type)"):
        monoprop.load(path)


def test_a_save_of_another_class_is_refused(tmp_path):
    prop, _, _ = build("pauli", "heisenberg")
    meta, arrays = archive.read(_saved(tmp_path, prop))
    for cls, expected in (
        ("MajoranaPropagator", "not a MajoranaPropagator's"),
        ("os.system", "not a monoprop"),
    ):
        archive.write(tmp_path / cls, dict(meta, **{"class": cls}), arrays)
        with pytest.raises(ValueError, match=expected):
            monoprop.load(tmp_path / cls)


def test_file_damage_reaches_the_user_as_a_value_error(tmp_path):
    prop, _, _ = build("majorana", "schrodinger")
    path = _saved(tmp_path, prop)
    file = path / "shard0.graph_bytes.npy"
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=rf"{path}.*graph_bytes.*truncated"):
        monoprop.load(path)
    with pytest.raises(FileNotFoundError):
        monoprop.load(tmp_path / "nothing")
