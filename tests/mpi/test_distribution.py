"""MPI distribution against the single-process propagator.

Each rank keeps the terms routed to it. ``monoprop_ROUTING=linear`` (the default) picks the
rank with a GF(2)-linear hash of the monomial and needs a power-of-two rank count;
``splitmix`` works for any count; ``monoprop_ROUTING_SEED`` seeds the routing basis, which
changes where terms live but not the results. Both variables must match on every rank, or
construction raises on every rank.

Run under mpiexec with pytest-mpi, for example
``mpiexec -n 4 pytest --with-mpi tests/mpi``. Every rank builds the same problem
twice: distributed over ``MPI.COMM_WORLD`` (or a ``Split`` of it) and alone (``comm=None``),
the single-process reference. Energies and gradients are global and must agree with the
reference to 1e-12; the terms each rank holds must add up to the reference's terms (each
term on exactly one rank, the identity once), and so must sizes and graph sizes.
"""

from __future__ import annotations

import contextlib
import copy
import os
from pathlib import Path

import numpy as np
import pytest

mpi4py = pytest.importorskip("mpi4py")
from mpi4py import MPI  # noqa: E402

import monoprop  # noqa: E402
from monoprop import (  # noqa: E402
    Circuit,
    CliffordGate,
    ExpGate,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
    noise,
)

WORLD = MPI.COMM_WORLD
TOL = 1e-12

pytestmark = pytest.mark.skipif(not monoprop.has_mpi, reason="monoprop was built without MPI")


# ---------------------------------------------------------------------------------------
# Problems: random circuits with a fixed seed, identical on every rank
# ---------------------------------------------------------------------------------------


def random_problem(
    family: str, n: int, gates: int, seed: int, cliffords: int = 0, channels: int = 0
):
    """(observable, circuit, parameters, occupied) for a random circuit of `gates` gates,
    with `cliffords` quarter turns of random monomials and `channels` noise channels among
    them (half of which read their rates from the parameter vector, after the angles)."""
    rng = np.random.default_rng(seed)

    def term(weight: int):
        if family == "pauli":
            letters = ["I"] * n
            for q in rng.choice(n, weight, replace=False):
                letters[q] = "XYZ"[rng.integers(3)]
            return "".join(letters)
        return tuple(sorted(int(i) for i in rng.choice(2 * n, weight, replace=False)))

    def operator(terms: list, coefficients: list):
        if family == "pauli":
            return PauliOperator(dict(zip(terms, coefficients, strict=True)), n)
        # A Majorana product of w factors is Hermitian with the phase i^(w(w-1)/2).
        return MajoranaOperator(
            {
                t: h * 1j ** (len(t) * (len(t) - 1) // 2)
                for t, h in zip(terms, coefficients, strict=True)
            },
            n,
        )

    step = 1 if family == "pauli" else 2
    identity = "I" * n if family == "pauli" else ()
    observable = operator([term(2), term(step), term(4), identity], [0.7, -0.3, 0.2, 0.5])
    ansatz = [
        ExpGate(operator([term(int(rng.integers(1, 4)) * step)], [0.8])) for _ in range(gates)
    ]
    for _ in range(cliffords):
        turn = CliffordGate(operator([term(int(rng.integers(1, 4)) * step)], [1.0]), 1)
        ansatz.insert(int(rng.integers(0, len(ansatz) + 1)), turn)
    parameters = rng.uniform(-1.0, 1.0, gates)
    rates = []
    for k in range(channels):
        channel = random_channel(family, k % 4, int(rng.integers(n)), n, gates + len(rates))
        if channel.slots:
            rates.append(rng.uniform(0.05, 0.3))
        ansatz.insert(int(rng.integers(0, len(ansatz) + 1)), channel)
    parameters = np.concatenate([parameters, rates])
    occupied = sorted(int(q) for q in rng.choice(n, n // 2, replace=False))
    return observable, Circuit(ansatz, n), parameters, occupied


def random_channel(family: str, kind: int, q: int, n: int, slot: int):
    """Channel `kind` (0..3) on qubit or mode q; kinds 0 and 1 read their rate from `slot`."""
    if family == "pauli":
        if kind == 0:
            return noise.depolarizing(qubits=[q, (q + 1) % n], index=slot)
        if kind == 1:
            return noise.amplitude_damping(qubit=q, index=slot)
        if kind == 2:
            return noise.bit_flip(0.1, q)
        return noise.pauli_lindblad([("XZ", [q, (q + 1) % n])], [0.05])
    if kind == 0:
        return noise.particle_loss(mode=q, index=slot)
    if kind == 1:
        return noise.dephasing(mode=q, index=slot)
    return noise.particle_loss(0.1, q) if kind == 2 else noise.dephasing(0.2, q)


def make(family: str, observable, occupied, comm, **config):
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    return cls(observable, occupied, comm=comm, **config)


# (family, picture/truncation settings, build options)
CASES = {
    "pauli-exact": ("pauli", {"cutoff": 12}, {}),
    "pauli-schrodinger": ("pauli", {"cutoff": 12, "schrodinger_cutoff": 6}, {}),
    "pauli-cutoff": ("pauli", {"cutoff": 3}, {}),
    "pauli-informed": ("pauli", {"cutoff": 2, "lower_atol": 1e-3, "upper_atol": 0.3}, {"seed": 1}),
    "pauli-len-k": ("pauli", {"cutoff": 12}, {"only_rotate_len_k": 2}),
    "majorana-exact": ("majorana", {"cutoff": 12}, {}),
    "majorana-schrodinger": ("majorana", {"cutoff": 12, "schrodinger_cutoff": 6}, {}),
    "majorana-support": ("majorana", {"cutoff": 3, "cutoff_type": "support"}, {}),
    "majorana-len-k": ("majorana", {"cutoff": 12}, {"only_rotate_len_k": 4}),
    # Clifford gates: a frame on every rank; truncation measures the terms in it.
    "pauli-clifford": ("pauli", {"cutoff": 3, "lower_atol": 1e-3}, {"seed": 1, "cliffords": 12}),
    "majorana-clifford": ("majorana", {"cutoff": 12, "schrodinger_cutoff": 6}, {"cliffords": 12}),
    # Noise channels: scalings, and amplitude damping's transfers between ranks.
    "pauli-noise": ("pauli", {"cutoff": 12}, {"channels": 12}),
    "pauli-noise-schrodinger": (
        "pauli",
        {"cutoff": 12, "schrodinger_cutoff": 6},
        {"channels": 12},
    ),
    "pauli-noise-informed": (
        "pauli",
        {"cutoff": 3, "lower_atol": 1e-3},
        {"seed": 1, "channels": 12},
    ),
    "majorana-noise": ("majorana", {"cutoff": 12}, {"channels": 12}),
    "majorana-noise-schrodinger": (
        "majorana",
        {"cutoff": 12, "schrodinger_cutoff": 6},
        {"channels": 12},
    ),
}


def union_of_terms(comm, op) -> dict:
    """The terms of every rank's `op`, each of which must sit on exactly one rank."""
    union: dict = {}
    for terms in comm.allgather(dict(op.terms)):
        for key, value in terms.items():
            assert key not in union, f"term {key!r} is held by two ranks"
            union[key] = value
    return union


def assert_same_terms(actual: dict, expected: dict, context: str) -> None:
    assert set(actual) == set(expected), (
        f"{context}: {len(set(actual) ^ set(expected))} terms differ, e.g. "
        f"{sorted(set(actual) ^ set(expected), key=str)[:3]}"
    )
    worst = max((abs(actual[k] - expected[k]) for k in expected), default=0.0)
    assert worst <= TOL, f"{context}: coefficients differ by {worst:.3g}"


def assert_same_results(comm, dist, alone, theta, context: str) -> None:
    """Value and gradient equal the single process's; the ranks' terms add up to its terms."""
    value, grad = dist.expectation_value_and_gradient(theta)
    ref_value, ref_grad = alone.expectation_value_and_gradient(theta)
    assert abs(value - ref_value) <= TOL, context
    np.testing.assert_allclose(grad, ref_grad, rtol=0, atol=TOL, err_msg=context)
    union = union_of_terms(comm, dist.evolved_operator(theta, atol=0))
    assert_same_terms(union, dict(alone.evolved_operator(theta, atol=0).terms), context)


@contextlib.contextmanager
def sub_world(size: int):
    """The first `size` ranks of WORLD as a communicator (None on the others, which wait)."""
    comm = WORLD.Split(0 if WORLD.rank < size else MPI.UNDEFINED, WORLD.rank)
    try:
        yield None if comm == MPI.COMM_NULL else comm
    finally:
        if comm != MPI.COMM_NULL:
            comm.Free()
        WORLD.Barrier()


def built_pair(comm, name: str, n: int = 6, gates: int = 30, seed: int = 11):
    """The same build, distributed over `comm` and alone; with the circuit's parameters."""
    family, config, options = CASES[name]
    observable, circuit, theta, occupied = random_problem(
        family, n, gates, seed, options.get("cliffords", 0), options.get("channels", 0)
    )
    build = {k: v for k, v in options.items() if k not in ("seed", "cliffords", "channels")}
    if options.get("seed"):
        build["seed_parameters"] = theta
    props = []
    for c in (comm, None):
        prop = make(family, observable, occupied, c, **config)
        prop.build_graph(circuit, **build)
        props.append(prop)
    return props[0], props[1], theta, circuit


# ---------------------------------------------------------------------------------------
# Equivalence with the single-process propagator
# ---------------------------------------------------------------------------------------


@pytest.mark.mpi
@pytest.mark.parametrize("layout", ["paying", "always"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_matches_single_process(name, layout):
    """Replays on the shards' own graph, or (`always`) on a rank layout, which moves every
    entry to the ranks its terms' chosen bits name, whether or not that pays."""
    dist, alone, theta, _ = built_pair(WORLD, name)
    dist._engine._set_replay_layout(layout)
    context = f"{name} on {WORLD.size} ranks, T={dist.num_threads}, layout {layout}"
    assert_same_results(WORLD, dist, alone, theta, context)
    ref_value = alone.expectation_value(theta)
    assert abs(dist.expectation_value(theta) - ref_value) <= TOL, context
    # Paring is decided per entry from both coefficients, the same on either side.
    pared = dist.expectation_value_and_gradient_functional(pare_threshold=1e-3)(theta)
    ref_pared = alone.expectation_value_and_gradient_functional(pare_threshold=1e-3)(theta)
    assert abs(pared[0] - ref_pared[0]) <= TOL, context
    np.testing.assert_allclose(pared[1], ref_pared[1], rtol=0, atol=TOL, err_msg=context)
    # Sizes are rank-local and add up; so does the graph (a rotation between two ranks
    # counts once).
    assert WORLD.allreduce(dist.size()) == alone.size(), context
    sizes = np.array(WORLD.allgather(dist.graph_size())).sum(axis=0)
    assert tuple(sizes) == alone.graph_size(), context
    # Coefficients of chosen terms are global.
    keys = list(alone.evolved_operator(theta).terms)[:20]
    np.testing.assert_allclose(
        dist.evolved_operator_coefficients(keys, theta),
        alone.evolved_operator_coefficients(keys, theta),
        rtol=0,
        atol=TOL,
        err_msg=context,
    )


@pytest.mark.mpi
@pytest.mark.parametrize("name", sorted(CASES))
def test_batches_match_single_process(name):
    """A 2-D array of points on several ranks: each row as a single call there (bitwise) and
    as the single process (to rounding), values and gradients."""
    dist, alone, theta, _ = built_pair(WORLD, name)
    rng = np.random.default_rng(5)  # the same points on every rank
    # Each parameter scaled down: channel rates stay in their ranges.
    points = np.asarray(theta) * rng.uniform(0.5, 1.0, size=(6, len(theta)))
    context = f"{name} on {WORLD.size} ranks, T={dist.num_threads}"
    values, gradients = dist.expectation_value_and_gradient(points)
    assert np.array_equal(dist.expectation_value(points), values), context
    ref_values, ref_gradients = alone.expectation_value_and_gradient(points)
    np.testing.assert_allclose(values, ref_values, rtol=0, atol=TOL, err_msg=context)
    np.testing.assert_allclose(gradients, ref_gradients, rtol=0, atol=TOL, err_msg=context)
    for i, row in enumerate(points):
        value, gradient = dist.expectation_value_and_gradient(row)
        assert value == values[i] and np.array_equal(gradient, gradients[i]), context


@pytest.mark.mpi
@pytest.mark.parametrize("name", ["pauli-cutoff", "majorana-support"])
def test_wide_keys_match_single_process(name):
    # 40 qubits or modes: 80 slots, two words per key, so the routing hash spans words.
    dist, alone, theta, _ = built_pair(WORLD, name, n=40, gates=400, seed=23)
    assert_same_results(WORLD, dist, alone, theta, name)
    assert alone.size() > 100  # enough terms to spread over the ranks


@pytest.mark.mpi
@pytest.mark.parametrize(
    "name",
    ["pauli-cutoff", "majorana-exact", "pauli-schrodinger", "pauli-noise", "majorana-noise"],
)
def test_propagate_matches_single_process(name):
    family, config, options = CASES[name]
    observable, circuit, theta, occupied = random_problem(
        family, 6, 30, seed=5, channels=options.get("channels", 0)
    )
    dist = make(family, observable, occupied, WORLD, **config)
    alone = make(family, observable, occupied, None, **config)
    for prop in (dist, alone):
        prop.propagate(Circuit(circuit.gates, circuit.system_size, parameters=theta))
    assert abs(dist.expectation_value() - alone.expectation_value()) <= TOL
    union = union_of_terms(WORLD, dist.evolved_operator(atol=0))
    assert_same_terms(union, dict(alone.evolved_operator(atol=0).terms), name)


@pytest.mark.mpi
@pytest.mark.parametrize(
    "name",
    [
        "pauli-cutoff",
        "pauli-informed",
        "pauli-clifford",
        "pauli-noise-informed",
        "pauli-noise-schrodinger",
        "majorana-support",
        "majorana-schrodinger",
        "majorana-noise",
    ],
)
@pytest.mark.parametrize("layout", ["never", "always"])
def test_truncation_error_matches_single_process(name, layout):
    """Each rank counts what its terms drop; the reduction over the ranks gives the single
    process's count (summed in another order: equal to rounding), the same on every rank."""
    dist, alone, theta, circuit = built_pair(WORLD, name)
    dist._engine._set_replay_layout(layout)
    context = f"{name} on {WORLD.size} ranks, T={dist.num_threads}, layout {layout}"
    errors = [(dist.truncation_error(theta), alone.truncation_error(theta))]
    errors.append(  # the gradient's forward sweep counts the same
        tuple(
            p.expectation_value_and_gradient_functional(with_error=True)(theta)[2]
            for p in (dist, alone)
        )
    )
    family, config, options = CASES[name]
    observable, _, _, occupied = random_problem(
        family, 6, 30, 11, options.get("cliffords", 0), options.get("channels", 0)
    )
    bound = Circuit(circuit.gates, circuit.system_size, parameters=theta)
    propagated = []
    for comm in (WORLD, None):
        prop = make(family, observable, occupied, comm, **config)
        prop.propagate(bound)
        propagated.append(prop.truncation_error())
    errors.append(tuple(propagated))
    for mine, single in errors:
        assert mine.bound == pytest.approx(single.bound, rel=1e-12, abs=1e-14), context
        assert mine.estimate == pytest.approx(single.estimate, rel=1e-12, abs=1e-14), context
        assert all(other == mine for other in WORLD.allgather(mine)), context
    if WORLD.size > 1:  # refused on every rank alike
        with pytest.raises(RuntimeError, match="pare_threshold"):
            dist.expectation_value_functional(1e-3, with_error=True)(theta)


def hopping_chain(n: int, steps: int):
    """(observable, circuit, parameters, occupied): Trotter steps of a spinless fermion chain
    with nearest-neighbour hopping and density interactions, which conserve the particle
    number, so a parity of the modes' bits splits the terms with no gate crossing it."""
    gates = []
    for _ in range(steps):
        for start in (0, 1):
            for i in range(start, n - 1, 2):
                a, b = 2 * i, 2 * (i + 1)
                for pair in ((a, b + 1), (a + 1, b)):  # i gamma gamma': Hermitian hopping parts
                    gates.append(ExpGate(MajoranaOperator({pair: 0.5j}, n)))
        for i in range(n - 1):
            gates.append(
                ExpGate(MajoranaOperator({(2 * i, 2 * i + 1, 2 * i + 2, 2 * i + 3): -0.25}, n))
            )
    rng = np.random.default_rng(3)
    theta = rng.uniform(0.2, 0.6, len(gates))
    observable = MajoranaOperator({(): 0.5, (0, 1): 0.5j}, n)
    return observable, Circuit(gates, n), theta, list(range(0, n, 2))


@pytest.mark.mpi
def test_rank_layout_is_made_where_it_pays():
    """On a circuit that conserves a parity of the terms' bits, several ranks lay the graph
    out again by it (the shards' own graph shares about half its entries between ranks), and
    the replay equals the shards' own graph's and the single process's to rounding."""
    observable, circuit, theta, occupied = hopping_chain(12, 4)  # 7,240 terms, 21,535 entries
    props = {}
    for name, comm in (("laid out", WORLD), ("never", WORLD), ("alone", None)):
        prop = MajoranaPropagator(observable, occupied, comm=comm, cutoff=8)
        prop.build_graph(circuit)
        if name == "never":
            prop._engine._set_replay_layout("never")
        props[name] = prop
    context = f"{WORLD.size} ranks, T={props['alone'].num_threads}"
    if WORLD.size > 1:
        assert props["laid out"]._engine._replay_blocks() == WORLD.size, context
    reference = props["alone"].expectation_value_and_gradient(theta)
    for name in ("laid out", "never"):
        value, grad = props[name].expectation_value_and_gradient(theta)
        assert value == pytest.approx(reference[0], rel=TOL, abs=TOL), (name, context)
        np.testing.assert_allclose(
            grad, reference[1], rtol=0, atol=TOL, err_msg=f"{name}, {context}"
        )
        assert props[name].expectation_value(theta) == pytest.approx(value, rel=TOL, abs=TOL)
    # The values the shards read back (evolved operator) come from their own graph.
    union = union_of_terms(WORLD, props["laid out"].evolved_operator(theta, atol=0))
    assert_same_terms(union, dict(props["alone"].evolved_operator(theta, atol=0).terms), context)


@pytest.mark.mpi
def test_extend_contract_and_update_match_single_process():
    dist, alone, theta, circuit = built_pair(WORLD, "pauli-exact", gates=12)
    # A seeded extension: the new circuit's parameters come first (Heisenberg).
    more = Circuit(circuit.gates[:6], circuit.system_size)
    seed = np.concatenate([theta[:6], theta])
    for prop in (dist, alone):
        prop.build_graph(more, seed_parameters=seed)
    assert abs(dist.expectation_value(seed) - alone.expectation_value(seed)) <= TOL

    # contract_partially folds each rank's blocks; the result is rank-local, the value global.
    blocks = WORLD.allgather(dist.contract_partially(seed))
    assert sum(len(b) for b in blocks) == len(alone.contract_partially(seed))
    assert abs(dist.expectation_value() - alone.expectation_value()) <= TOL

    # A Heisenberg update resets the observable's coefficients on the ranks that hold them.
    _, _, _, occupied = random_problem("pauli", 6, 12, 11)
    observable = random_problem("pauli", 6, 12, 11)[0]
    scaled = 2.0 * observable
    fresh_dist = make("pauli", observable, occupied, WORLD, cutoff=12)
    fresh_alone = make("pauli", observable, occupied, None, cutoff=12)
    for prop in (fresh_dist, fresh_alone):
        prop.build_graph(circuit)
        prop.update_initial_operator(scaled)
    value, grad = fresh_dist.expectation_value_and_gradient(theta)
    ref_value, ref_grad = fresh_alone.expectation_value_and_gradient(theta)
    assert abs(value - ref_value) <= TOL
    np.testing.assert_allclose(grad, ref_grad, rtol=0, atol=TOL)


@pytest.mark.mpi
def test_unknown_update_term_raises_on_every_rank():
    dist, _, theta, _ = built_pair(WORLD, "pauli-exact", gates=4)
    before = dist.expectation_value(theta)
    with pytest.raises(RuntimeError, match="not found in the operator"):
        dist.update_initial_operator(PauliOperator({"XXXXXX": 1.0}, 6))
    assert dist.expectation_value(theta) == before  # nothing changed, no rank hangs


@pytest.mark.mpi
def test_copies_run_on_the_same_communicator():
    import copy

    dist, alone, theta, _ = built_pair(WORLD, "majorana-exact", gates=10)
    twin = copy.deepcopy(dist)
    assert abs(twin.expectation_value(theta) - alone.expectation_value(theta)) <= TOL


# ---------------------------------------------------------------------------------------
# Rank counts and routing settings
# ---------------------------------------------------------------------------------------


def with_routing(value: str | None, body):
    """Runs body() with monoprop_ROUTING set to `value` (unset for None) on this rank."""
    saved = os.environ.pop("monoprop_ROUTING", None)
    if value is not None:
        os.environ["monoprop_ROUTING"] = value
    try:
        return body()
    finally:
        os.environ.pop("monoprop_ROUTING", None)
        if saved is not None:
            os.environ["monoprop_ROUTING"] = saved


@pytest.mark.mpi(min_size=4)
def test_three_ranks_need_splitmix_routing():
    with sub_world(3) as three:
        if three is None:  # the fourth rank sits this one out
            return
        with pytest.raises(RuntimeError, match="monoprop_ROUTING=splitmix"):
            built_pair(three, "pauli-exact", gates=8)
        dist, alone, theta, _ = with_routing(
            "splitmix", lambda: built_pair(three, "pauli-exact", gates=20)
        )
        assert_same_results(three, dist, alone, theta, "splitmix on 3 ranks")


@pytest.mark.mpi(min_size=2)
def test_splitmix_matches_on_power_of_two_ranks():
    dist, alone, theta, _ = with_routing(
        "splitmix", lambda: built_pair(WORLD, "majorana-len-k", gates=20)
    )
    assert_same_results(WORLD, dist, alone, theta, "splitmix")


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize(
    "variable, mine, others",
    [
        ("monoprop_ROUTING", "splitmix", "linear"),
        ("monoprop_ROUTING_SEED", "7", "8"),
        ("monoprop_ROUTING", "bogus", "linear"),
    ],
)
def test_mismatched_routing_raises_on_every_rank(variable, mine, others):
    saved = os.environ.pop(variable, None)
    os.environ[variable] = mine if WORLD.rank == 0 else others
    try:
        with pytest.raises(RuntimeError, match=variable):
            PauliPropagator(PauliOperator({"ZZ": 1.0}, 2), [], cutoff=4, comm=WORLD)
    finally:
        os.environ.pop(variable, None)
        if saved is not None:
            os.environ[variable] = saved
    # Every rank raised and none is stuck: the communicator still works.
    assert WORLD.allreduce(1) == WORLD.size


@pytest.mark.mpi(min_size=2)
def test_seed_changes_placement_not_results():
    results = []
    for seed in ("0", "12345"):
        os.environ["monoprop_ROUTING_SEED"] = seed
        try:
            dist, alone, theta, _ = built_pair(WORLD, "pauli-exact", gates=12)
        finally:
            os.environ.pop("monoprop_ROUTING_SEED")
        results.append((dist.size(), dist.expectation_value(theta)))
        assert abs(results[-1][1] - alone.expectation_value(theta)) <= TOL
    sizes = WORLD.allgather((results[0][0], results[1][0]))
    assert any(a != b for a, b in sizes), "a different seed should place terms differently"


@pytest.mark.mpi(min_size=4)
def test_commroute_when_shifts_span_fewer_bits(capfd):
    # One gate has one shift: it spans at most 1 of the d = 2 bits of 4 ranks, so the terms
    # of a single-term observable reach only 2 ranks.
    with sub_world(4) as four:
        if four is None:
            return
        capfd.readouterr()
        prop = PauliPropagator(PauliOperator({"ZZZZ": 1.0}, 4), [], cutoff=8, comm=four)
        circuit = Circuit([ExpGate(PauliOperator({"XIII": 1.0}, 4))], 4)
        prop.build_graph(circuit)
        four.Barrier()
        err = capfd.readouterr().err
        if four.rank == 0:
            assert err.count("COMMROUTE") == 1, err
        else:
            assert "COMMROUTE" not in err
        assert sorted(four.allgather(prop.size())).count(0) == 2
        # Many random gates span both bits: no message.
        observable, ansatz, _, _ = random_problem("pauli", 4, 20, seed=3)
        prop = PauliPropagator(observable, [], cutoff=8, comm=four)
        prop.build_graph(ansatz)
        four.Barrier()
        assert "COMMROUTE" not in capfd.readouterr().err


@pytest.mark.mpi
def test_wrong_comm_type_is_a_type_error():
    with pytest.raises(TypeError, match="mpi4py communicator"):
        PauliPropagator(PauliOperator({"ZZ": 1.0}, 2), [], cutoff=4, comm="COMM_WORLD")


def shared_folder(comm, tmp_path):
    """A directory every rank of `comm` sees: its first rank's tmp_path."""
    return Path(comm.bcast(str(tmp_path), root=0))


def same_replay(a, b, theta) -> None:
    value, gradient = a.expectation_value_and_gradient(theta)
    other_value, other_gradient = b.expectation_value_and_gradient(theta)
    assert other_value == value and other_gradient.tobytes() == gradient.tobytes()
    assert (b.size(), b.graph_size(), b.n_parameters) == (a.size(), a.graph_size(), a.n_parameters)


@pytest.mark.mpi
@pytest.mark.parametrize("name", ["pauli-noise", "majorana-clifford"])
def test_a_distributed_save_loads_bitwise_on_as_many_ranks(name, tmp_path):
    """Every rank writes its part and reads it back: values, gradients and what an extension
    adds are bitwise the saved propagator's; on one rank the save is an ordinary one."""
    import monoprop

    folder = shared_folder(WORLD, tmp_path)
    dist, _, theta, circuit = built_pair(WORLD, name, gates=12)
    shared = WORLD.allreduce(dist._engine.save_state()["remote.codes"].size)
    assert (shared > 0) == (WORLD.Get_size() > 1)  # the save holds entries between ranks
    dist.save(folder / "p")
    ranks = WORLD.Get_size()
    expected = {f"rank-{r}-of-{ranks}" for r in range(ranks)} if ranks > 1 else set()
    assert set(monoprop.archive.parts(folder / "p")) == expected
    loaded = monoprop.load(folder / "p", comm=WORLD)
    same_replay(dist, loaded, theta)
    twice = np.concatenate([theta, theta])
    for p in (dist, loaded):
        p.build_graph(circuit)
    same_replay(dist, loaded, twice)
    copied = copy.deepcopy(loaded)  # collective, through the same arrays
    same_replay(loaded, copied, twice)


@pytest.mark.mpi
def test_a_save_loads_only_on_the_rank_count_it_was_made_on(tmp_path):
    """Saved on 2 ranks (a half of the world when it has 4), it loads on 2 and is refused on
    every rank of any other count; a one-process save is refused on several ranks."""
    import monoprop

    folder = shared_folder(WORLD, tmp_path)
    ranks, rank = WORLD.Get_size(), WORLD.Get_rank()
    pairs = WORLD.Split(rank // 2)
    if pairs.Get_size() == 2:
        dist, _, theta, _ = built_pair(pairs, "pauli-noise", gates=12)
        path = folder / f"pair{rank // 2}"
        dist.save(path)
        same_replay(dist, monoprop.load(path, comm=pairs), theta)
        with pytest.raises(ValueError, match=r"saved over 2 rank\(s\); this load has 1"):
            monoprop.load(path)
    WORLD.Barrier()
    if ranks == 4:
        with pytest.raises(ValueError, match=r"saved over 2 rank\(s\); this load has 4"):
            monoprop.load(folder / "pair0", comm=WORLD)
    alone, _, theta, _ = built_pair(MPI.COMM_SELF, "pauli-noise", gates=12)
    single = folder / "single"
    if rank == 0:
        alone.save(single)
    WORLD.Barrier()
    if ranks > 1:
        with pytest.raises(ValueError, match=rf"saved over 1 rank\(s\); this load has {ranks}"):
            monoprop.load(single, comm=WORLD)
    else:
        same_replay(alone, monoprop.load(single, comm=WORLD), theta)


@pytest.mark.mpi
def test_a_missing_or_foreign_part_is_refused_on_every_rank(tmp_path):
    import shutil

    import monoprop

    ranks = WORLD.Get_size()
    folder = shared_folder(WORLD, tmp_path)
    dist, _, theta, circuit = built_pair(WORLD, "pauli-noise", gates=12)
    (folder / "mine").mkdir(exist_ok=True)
    WORLD.Barrier()
    with pytest.raises(FileExistsError, match="not a monoprop save"):
        dist.save(folder / "mine")
    same_replay(dist, dist, theta)  # still usable
    if ranks == 1:
        return  # a one-rank save has no parts
    dist.save(folder / "a")
    dist.build_graph(circuit)  # b is another propagator's save
    dist.save(folder / "b")
    first, last = f"rank-0-of-{ranks}", f"rank-{ranks - 1}-of-{ranks}"
    if WORLD.Get_rank() == 0:
        shutil.rmtree(folder / "a" / last)
        shutil.rmtree(folder / "b" / first)
        shutil.copytree(folder / "a" / first, folder / "b" / first)
    WORLD.Barrier()
    with pytest.raises(ValueError, match=f"part '{last}' is missing"):
        monoprop.load(folder / "a", comm=WORLD)
    with pytest.raises(ValueError, match="parts are of different saves"):
        monoprop.load(folder / "b", comm=WORLD)


@pytest.mark.mpi
def test_a_checkpointed_build_resumes_across_ranks(tmp_path, monkeypatch):
    """Stopped on every rank after its third checkpoint, loaded on the same ranks and resumed,
    the build ends bitwise as an uninterrupted one."""
    import monoprop
    from monoprop import _saved_state

    folder = shared_folder(WORLD, tmp_path)
    family, config, _ = CASES["pauli-noise"]
    observable, circuit, theta, occupied = random_problem(family, 6, 12, 11, 0, 2)
    whole = make(family, observable, occupied, WORLD, **config)
    whole.build_graph(circuit, seed_parameters=theta)
    stopped = make(family, observable, occupied, WORLD, **config)
    real_save = _saved_state.save

    def stop_after_three(prop, path):
        real_save(prop, path)
        if prop._build.done == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(_saved_state, "save", stop_after_three)
    with pytest.raises(KeyboardInterrupt):
        stopped.build_graph(
            circuit, seed_parameters=theta, checkpoint=folder / "ck", checkpoint_every=0
        )
    monkeypatch.setattr(_saved_state, "save", real_save)
    resumed = monoprop.load(folder / "ck", comm=WORLD)
    resumed.build_graph(circuit, seed_parameters=theta, resume=True)
    same_replay(whole, resumed, theta)


@pytest.mark.mpi
def test_a_distributed_save_loads_at_another_thread_count(tmp_path, monkeypatch):
    """Each rank deals its terms to its new shards, and the entries it shares with its peers
    follow them: the same values and gradients up to rounding."""
    import monoprop

    folder = shared_folder(WORLD, tmp_path)
    dist, _, theta, _ = built_pair(WORLD, "pauli-informed", gates=20)
    shared = WORLD.allreduce(dist._engine.save_state()["remote.codes"].size)
    assert (shared > 0) == (WORLD.Get_size() > 1)  # entries between ranks move too
    dist.save(folder / "p")
    monkeypatch.setenv("monoprop_NUM_THREADS", str(dist.num_threads + 1))
    loaded = monoprop.load(folder / "p", comm=WORLD)
    assert loaded.num_threads == dist.num_threads + 1
    value, gradient = dist.expectation_value_and_gradient(theta)
    other_value, other_gradient = loaded.expectation_value_and_gradient(theta)
    assert abs(other_value - value) <= TOL
    np.testing.assert_allclose(other_gradient, gradient, rtol=0, atol=TOL)
    assert (loaded.size(), loaded.graph_size()) == (dist.size(), dist.graph_size())
