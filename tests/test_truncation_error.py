"""truncation_error: the rigorous bound on |exact - value| and its estimate.

Every case is checked against the dense reference (``dense_reference``, ``dense_noise``): the
untruncated value of the same circuit, computed from matrices, must lie within ``bound`` of
what the truncated propagator returns, after ``propagate`` and from a graph at several
parameter vectors, in both pictures, with noise channels and Clifford gates, at T = 1..4.
"""

from __future__ import annotations

import dataclasses
import math

import dense_noise as dn
import dense_reference as dr
import numpy as np
import pytest
from test_noise import make_operator, propagator_class, to_channel

from monoprop import (
    Circuit,
    CliffordGate,
    ExpGate,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
    TruncationError,
)

ENV = "monoprop_NUM_THREADS"
SLACK = 1e-12  # rounding of the value and of the dense reference
PICTURES = ["heisenberg", "schrodinger"]


def set_threads(monkeypatch, threads: int) -> None:
    monkeypatch.setenv(ENV, str(threads))


def whole_team(prop, threads: int) -> None:
    """The thread count came from the environment; replays use every thread (the per-shard
    path) however small the graph. T = 1 replays the spelled-out graph."""
    assert prop.num_threads == threads
    if threads > 1:
        prop._engine._set_small_work(0)


def with_cliffords(case: dn.NoisyCase, seed: int, count: int) -> dn.NoisyCase:
    """The case with ``count`` random quarter turns of single monomials inserted."""
    rng = np.random.default_rng(7_000 + seed)
    items = list(case.items)
    for _ in range(count):
        weight = int(rng.integers(1, (case.n if case.family == "pauli" else 2 * case.n) + 1))
        term = dr._random_term(rng, case.family, case.n, weight)
        generator = {term: dr._hermitian_coefficient(case.family, term, 1.0)}
        items.insert(int(rng.integers(0, len(items) + 1)), dn.FixedGateSpec(generator, math.pi / 4))
    return dataclasses.replace(case, items=tuple(items))


def to_circuit(case: dn.NoisyCase, parameters) -> Circuit:
    gates = []
    for item in case.items:
        if isinstance(item, dn.GateSpec):
            gates.append(ExpGate(make_operator(case.family, item.generator, case.n), item.slot))
        elif isinstance(item, dn.FixedGateSpec):
            gates.append(CliffordGate(make_operator(case.family, item.generator, case.n)))
        else:
            gates.append(to_channel(item))
    return Circuit(gates, case.n, parameters=list(parameters))


def random_case(seed: int, family: str, *, channels: int, cliffords: int) -> dn.NoisyCase:
    n = 3 if family == "pauli" else 2 + seed % 2
    case = dn.random_noisy_case(seed, family, n, num_gates=7, num_channels=channels)
    # Each gate reads its own slot: the circuit's parameters are the angles in gate order.
    items, slot = [], 0
    for item in case.items:
        if isinstance(item, dn.GateSpec):
            item = dataclasses.replace(item, slot=slot, explicit=True)
            slot += 1
        items.append(item)
    case = dataclasses.replace(case, items=tuple(items))
    return with_cliffords(case, seed, cliffords) if cliffords else case


def truncation(case: dn.NoisyCase, picture: str, seed: int) -> dict:
    """A truncating configuration: a cutoff below the width and a lower_atol."""
    n = case.n
    config = {
        "cutoff": 1 + seed % 3,
        "lower_atol": [0.02, 0.1, 0.3][seed % 3],
    }
    if picture == "schrodinger":
        # Every other seed also drops terms of the initial state.
        config["schrodinger_cutoff"] = 2 * n if seed % 2 else 2
    return config


def make(case: dn.NoisyCase, config: dict):
    cls = propagator_class(case.family)
    return cls(make_operator(case.family, case.observable, case.n), list(case.occupied), **config)


def angles(case: dn.NoisyCase, rng) -> list[float]:
    return [float(x) for x in rng.uniform(-1.5, 1.5, size=len(case.parameters))]


def check(value: float, error: TruncationError, exact: float, context: str) -> None:
    assert isinstance(error, TruncationError)
    assert error.bound >= 0.0 and error.estimate >= 0.0, context
    assert error.estimate <= error.bound * (1 + 1e-12) + 1e-300, context  # l2 <= l1
    assert abs(value - exact) <= error.bound + SLACK, (
        f"{context}: |value - exact| = {abs(value - exact)!r} > bound {error.bound!r}"
    )


CASES = [
    (family, channels, cliffords)
    for family in ("pauli", "majorana")
    for channels, cliffords in ((0, 0), (3, 0), (0, 3), (3, 3))
]


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed={s}")
@pytest.mark.parametrize(("family", "channels", "cliffords"), CASES, ids=str)
def test_bound_holds_after_propagate(family, channels, cliffords, seed, picture, monkeypatch):
    threads = 1 + seed % 4
    set_threads(monkeypatch, threads)
    case = random_case(seed, family, channels=channels, cliffords=cliffords)
    config = truncation(case, picture, seed)
    context = f"{family} seed={seed} {picture} T={threads} {config} items={case.items}"
    prop = make(case, config)
    assert prop.num_threads == threads
    prop.propagate(to_circuit(case, case.parameters))
    error = prop.truncation_error()
    check(prop.expectation_value(), error, case.expectation(), context)
    # The same again, bitwise: a fixed T sums in a fixed order.
    again = make(case, config)
    again.propagate(to_circuit(case, case.parameters))
    assert again.truncation_error() == error, context


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed={s}")
@pytest.mark.parametrize(("family", "channels", "cliffords"), CASES, ids=str)
def test_bound_holds_from_a_graph(family, channels, cliffords, seed, picture, monkeypatch):
    threads = 1 + (seed + 1) % 4
    set_threads(monkeypatch, threads)
    case = random_case(seed, family, channels=channels, cliffords=cliffords)
    config = truncation(case, picture, seed)
    context = f"{family} seed={seed} {picture} T={threads} {config}"
    prop = make(case, config)
    whole_team(prop, threads)
    # Seeded (lower_atol steers the build) on even seeds, structural on odd ones.
    seeded = seed % 2 == 0
    if not seeded:
        config.pop("lower_atol")
        prop = make(case, config)
        whole_team(prop, threads)
    prop.build_graph(to_circuit(case, case.parameters if seeded else []))
    fn = prop.expectation_value_functional(with_error=True)
    pared = prop.expectation_value_functional(1e-2, with_error=True)
    rng = np.random.default_rng(seed)
    for point in [list(case.parameters)] + [angles(case, rng) for _ in range(3)]:
        exact = case.expectation(point)
        value, error = fn(point)
        assert value == prop.expectation_value(point), context
        assert prop.truncation_error(point) == error, context
        check(value, error, exact, f"{context} at {point}")
        check(*pared(point), exact, f"{context} pared at {point}")
        # The gradient's forward sweep counts the same, with the same value.
        with_gradient = prop.expectation_value_and_gradient_functional(with_error=True)(point)
        assert with_gradient[0] == pytest.approx(value, abs=1e-12), context
        np.testing.assert_allclose(with_gradient[1], prop.gradient(point), rtol=0, atol=1e-12)
        assert with_gradient[2].bound == pytest.approx(error.bound, rel=1e-12, abs=1e-15)
        assert with_gradient[2].estimate == pytest.approx(error.estimate, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_graph_bound_is_reproducible_for_a_fixed_thread_count(family, threads, monkeypatch):
    set_threads(monkeypatch, threads)
    case = random_case(3, family, channels=3, cliffords=2)
    config = truncation(case, "heisenberg", 2)
    errors = []
    for _ in range(2):
        prop = make(case, config)
        whole_team(prop, threads)
        prop.build_graph(to_circuit(case, case.parameters))
        point = [0.3 * (k + 1) for k in range(len(case.parameters))]
        errors.append((prop.expectation_value(point), prop.truncation_error(point)))
        assert errors[-1][1].bound > 0.0
    assert errors[0] == errors[1]


# ---------------------------------------------------------------------------------------
# Exact cases
# ---------------------------------------------------------------------------------------

X1 = PauliOperator({"X": 1.0}, 1)


def one_drop_circuit(t: float, parameters=True) -> Circuit:
    """Z under exp(+i pi/4 X) exp(+i t X) (the latter acts first on Z in the Heisenberg
    picture): at lower_atol 0.5 the branch sin(2t) Y is dropped, and the quarter turn would
    have turned it into -Z, whose expectation in |0> is -1: the error is exactly the bound."""
    return Circuit([ExpGate(X1), ExpGate(X1)], 1, parameters=[math.pi / 4, t] if parameters else [])


@pytest.mark.parametrize("t", [0.05, -0.1, 0.2])
def test_one_dropped_branch_gives_the_error_exactly(t):
    exact = math.cos(2 * (math.pi / 4 + t))
    assert abs(exact + math.sin(2 * t)) < 1e-15  # the dense sum below says the same
    dense = dr.circuit_expectation(
        dr.pauli_operator_matrix({"Z": 1.0}, 1),
        [],
        1,
        [dr.pauli_operator_matrix({"X": 1.0}, 1)] * 2,
        [math.pi / 4, t],
    )
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1, lower_atol=0.5)
    prop.propagate(one_drop_circuit(t))
    error = prop.truncation_error()
    assert error.bound == pytest.approx(abs(dense - prop.expectation_value()), rel=1e-14)
    assert error.bound == abs(math.sin(2 * t))
    # The estimate weighs the branch by its reach where it drops: Y leaves one mode of the
    # qubit unpaired (weight 0.2), times the estimate's scale 0.7.
    assert error.estimate == pytest.approx(0.7 * 0.2 * error.bound, rel=1e-12)
    graph = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1, lower_atol=0.5)
    graph.build_graph(one_drop_circuit(t))
    from_graph = graph.truncation_error([math.pi / 4, t])
    assert from_graph.bound == error.bound
    assert from_graph.estimate == pytest.approx(
        error.estimate, rel=1e-4
    )  # the layer's weight, to 16 bits


def test_schrodinger_one_dropped_branch():
    """The same circuit on the state: the quarter turn comes last there, and the first gate
    drops sin(2t) Y of the state 2^n rho = I + Z at lower_atol 0.5; observable 0.5 Z."""
    t = 0.05
    prop = PauliPropagator(
        PauliOperator({"Z": 0.5}, 1), [], cutoff=1, lower_atol=0.5, schrodinger_cutoff=2
    )
    prop.propagate(Circuit([ExpGate(X1), ExpGate(X1)], 1, parameters=[t, math.pi / 4]))
    exact = 0.5 * math.cos(2 * (math.pi / 4 + t))
    error = prop.truncation_error()
    assert error.bound == pytest.approx(0.5 * abs(math.sin(2 * t)), rel=1e-15)
    assert error.bound == pytest.approx(abs(exact - prop.expectation_value()), rel=1e-14)


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_no_truncation_gives_exactly_zero(family, picture, monkeypatch):
    set_threads(monkeypatch, 2)
    case = random_case(4, family, channels=3, cliffords=2)
    config = {"cutoff": 2 * case.n}
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = 2 * case.n
    prop = make(case, config)
    prop.propagate(to_circuit(case, case.parameters))
    assert prop.truncation_error() == TruncationError(0.0, 0.0)
    graph = make(case, config)
    graph.build_graph(to_circuit(case, []))
    point = list(case.parameters)
    assert graph.truncation_error(point) == (0.0, 0.0)
    assert abs(graph.expectation_value(point) - case.expectation(point)) < 1e-10


def test_majorana_one_dropped_branch():
    """Majorana: i m0 m1 (= -Z0 under Jordan-Wigner) under two rotations about m0 m2 ..."""
    n = 2
    obs = {(0, 1): 1j}
    gen = {(1, 2): 1j}
    t = 0.07
    prop = MajoranaPropagator(MajoranaOperator(obs, n), [], cutoff=4, lower_atol=0.5)
    g = MajoranaOperator(gen, n)
    prop.propagate(Circuit([ExpGate(g), ExpGate(g)], n, parameters=[math.pi / 4, t]))
    dense = dr.circuit_expectation(
        dr.majorana_operator_matrix(obs, n),
        [],
        n,
        [dr.majorana_operator_matrix(gen, n)] * 2,
        [math.pi / 4, t],
    )
    error = prop.truncation_error()
    assert error.bound > 0.0
    assert error.bound == pytest.approx(abs(dense - prop.expectation_value()), rel=1e-13)


# ---------------------------------------------------------------------------------------
# Bookkeeping and refusals
# ---------------------------------------------------------------------------------------


def test_propagate_counts_add_up_and_a_new_operator_starts_afresh():
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1, lower_atol=0.5)
    prop.propagate(Circuit([ExpGate(X1)], 1, parameters=[0.05]))
    # The branch sin(0.1) Y dropped last: <0|Y|0> = 0 and no gate follows, so it costs nothing.
    assert prop.truncation_error() == (0.0, 0.0)
    assert prop.expectation_value() == math.cos(0.1)  # and indeed the value is exact
    prop.propagate(Circuit([ExpGate(X1)], 1, parameters=[0.1]))
    # Now a gate follows it: the branch counts in full, with the one this call dropped
    # (Y again, dark once more).
    assert prop.truncation_error().bound == abs(math.sin(0.1))
    prop.update_initial_operator(PauliOperator({"Z": 1.0}, 1))
    assert prop.truncation_error() == (0.0, 0.0)


def test_contraction_keeps_what_the_graph_dropped():
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1, lower_atol=0.5)
    prop.build_graph(one_drop_circuit(0.05))
    before = prop.truncation_error([math.pi / 4, 0.05])
    prop.contract_partially([math.pi / 4, 0.05])
    assert prop.truncation_error() == before


def test_bad_parameters_are_refused_as_by_expectation_value():
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1, lower_atol=0.5)
    prop.build_graph(one_drop_circuit(0.05))
    with pytest.raises(ValueError, match="parameters"):
        prop.truncation_error([0.1, math.nan])
    with pytest.raises(RuntimeError, match="Parameter length"):
        prop.truncation_error([0.1])
    with pytest.raises(RuntimeError, match="Parameter length"):
        prop.truncation_error()
    with pytest.raises(TypeError, match="with_error"):
        prop.expectation_value_functional(with_error=1)
    with pytest.raises(TypeError, match="with_error"):
        prop.expectation_value_and_gradient_functional(with_error="yes")
    with pytest.raises(ValueError, match="parameters"):
        prop.expectation_value_and_gradient_functional(with_error=True)([math.inf, 0.1])


def test_only_rotate_len_k_is_refused():
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
    prop.propagate(Circuit([ExpGate(X1)], 1, parameters=[0.05]), only_rotate_len_k=1)
    with pytest.raises(RuntimeError, match="only_rotate_len_k"):
        prop.truncation_error()


def test_saved_propagator_keeps_its_count(tmp_path):
    import monoprop

    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1, lower_atol=0.5)
    prop.propagate(Circuit([ExpGate(X1)], 1, parameters=[0.05]))
    prop.save(tmp_path / "p")
    assert monoprop.load(tmp_path / "p").truncation_error() == prop.truncation_error()


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed={s}")
@pytest.mark.parametrize(("family", "channels", "cliffords"), CASES, ids=str)
def test_graph_at_its_seed_drops_what_propagate_drops(
    family, channels, cliffords, seed, picture, monkeypatch
):
    """A seeded build makes propagate's truncation decisions, so its replay at the seed drops
    the same branches: the two counts (made by different code) agree to rounding."""
    threads = 1 + seed % 4
    set_threads(monkeypatch, threads)
    case = random_case(seed, family, channels=channels, cliffords=cliffords)
    config = truncation(case, picture, seed)
    prop = make(case, config)
    prop.propagate(to_circuit(case, case.parameters))
    graph = make(case, config)
    whole_team(graph, threads)
    graph.build_graph(to_circuit(case, case.parameters))
    expected = prop.truncation_error()
    actual = graph.truncation_error(list(case.parameters))
    assert actual.bound == pytest.approx(expected.bound, rel=1e-12, abs=1e-14)
    # The graph weighs each layer's drops by their mean reach, to 16 bits.
    assert actual.estimate == pytest.approx(expected.estimate, rel=1e-4, abs=1e-14)


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed={s}")
@pytest.mark.parametrize(("family", "channels", "cliffords"), CASES, ids=str)
def test_progress_reports_the_bound_so_far(family, channels, cliffords, seed, monkeypatch):
    """The progress callback's bound grows layer by layer to what the call dropped: in a
    seeded build, the graph's bound at its seed; in propagate, propagate's."""
    threads = 1 + seed % 4
    set_threads(monkeypatch, threads)
    case = random_case(seed, family, channels=channels, cliffords=cliffords)
    config = truncation(case, "heisenberg", seed)
    circuit = to_circuit(case, case.parameters)
    for build in (True, False):
        prop = make(case, config)
        whole_team(prop, threads)
        reports = []
        prop._engine.set_progress(lambda *report: reports.append(report))  # noqa: B023
        if build:
            prop.build_graph(circuit)
            expected = prop.truncation_error(list(case.parameters)).bound
        else:
            prop.propagate(circuit)
            expected = prop.truncation_error().bound
        bounds = [bound for *_, bound in reports]
        assert bounds == sorted(bounds) and [r[0] for r in reports] == list(
            range(1, len(reports) + 1)
        )
        # The final bound is capped at ||O - h_I|| + |value - h_I| (h_I: the observable's
        # identity coefficient), which the bar cannot know before the value.
        identity = {"pauli": "I" * case.n, "majorana": ()}[case.family]
        h_identity = case.observable.get(identity, 0.0).real
        norm = sum(abs(c) for term, c in case.observable.items() if term != identity)
        value = prop.expectation_value(list(case.parameters)) if build else prop.expectation_value()
        cap = norm + abs(value - h_identity)
        assert expected == pytest.approx(min(bounds[-1], cap), rel=1e-12, abs=1e-14)


def test_the_progress_bar_shows_the_bound(capsys):
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1, lower_atol=0.5)
    prop.propagate(one_drop_circuit(0.05), progress=True)
    shown = capsys.readouterr().err
    assert f"bound={prop.truncation_error().bound:.2e}" in shown, shown
