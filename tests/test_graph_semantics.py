"""Graph replay semantics: replay vs fresh propagation, functionals (stale, mapping,
orphaned), failures (invalid propagators), pare_threshold, progress, copies and overlap.

The failure rule: an argument error is raised before anything changes and leaves the
propagator usable; a failure part way through an operation (build, propagate, evaluate,
contract, update) leaves it invalid, and every later call on it, on its functionals or
copies raises InvalidPropagatorError telling the user to construct a new propagator, while a
copy made before the failure is untouched. Calls on one propagator must not overlap: a
reentrant call from a progress callback or a concurrent call from another thread is refused.
"""

from __future__ import annotations

import copy
import gc

import dense_reference as dr
import numpy as np
import pytest

from monoprop import (
    Circuit,
    ExpGate,
    InvalidPropagatorError,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
    StaleFunctionalError,
)


def build(family: str, seed: int, *, picture: str = "heisenberg", shared: bool = True):
    """A random case, its bound circuit and a propagator with the graph built structurally."""
    n = 3
    case = dr.random_case(seed, family, n, num_gates=8, shared_parameters=shared)
    make = PauliOperator if family == "pauli" else MajoranaOperator
    gates = [
        ExpGate(make(dict(g), n), None if case.mapping is None else case.mapping[i])
        for i, g in enumerate(case.generators)
    ]
    circuit = Circuit(gates, n, parameters=list(case.parameters))
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    config = {"cutoff": 2 * n}
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = 2 * n
    prop = cls(make(dict(case.observable), n), list(case.occupied), **config)
    return case, circuit, prop, cls, make, config


def fresh(case, circuit, cls, make, config):
    prop = cls(make(dict(case.observable), case.n), list(case.occupied), **config)
    prop.propagate(circuit)
    return prop


@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize("seed", range(8))
def test_replay_equals_fresh_propagation(family, seed, picture):
    case, circuit, prop, cls, make, config = build(family, seed, picture=picture)
    unbound = Circuit(list(circuit), case.n)
    prop.build_graph(unbound)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        theta = rng.uniform(-2, 2, size=prop.n_parameters)
        bound = Circuit(list(circuit), case.n, parameters=list(theta))
        reference = fresh(case, bound, cls, make, config)
        value = prop.expectation_value(theta)
        assert abs(value - reference.expectation_value()) < 1e-12, f"seed={seed}"
        assert abs(value - case.expectation(theta)) < 1e-9, f"seed={seed}"
        got = prop.evolved_operator(theta, atol=0.0)
        want = reference.evolved_operator(atol=0.0)
        assert got.isclose(want, rtol=0, atol=1e-12), f"seed={seed}"


@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_gradient_of_shared_parameters_matches_finite_differences(family):
    case, circuit, prop, *_ = build(family, 3)
    prop.build_graph(Circuit(list(circuit), case.n))
    theta = np.array(case.parameters)
    value, grad = prop.expectation_value_and_gradient(theta)
    assert abs(value - case.expectation(theta)) < 1e-9
    np.testing.assert_allclose(grad, case.finite_difference_gradient(theta), atol=1e-6)
    assert len(set(case.mapping)) < len(case.mapping)  # parameters really are shared


def small_propagator():
    prop = PauliPropagator(PauliOperator({"ZZ": 1.0, "XI": 0.5}, 2), [1], cutoff=4)
    gates = [ExpGate(PauliOperator({"XI": 1.0}, 2)), ExpGate(PauliOperator({"YZ": 0.7}, 2))]
    prop.build_graph(Circuit(gates, 2))
    return prop


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p.build_graph(Circuit([ExpGate(PauliOperator({"IX": 1.0}, 2))], 2)),
        lambda p: p.contract_partially([0.1, 0.2]),
        lambda p: p.update_initial_operator(PauliOperator({"ZZ": 2.0}, 2)),
    ],
    ids=["build_graph", "contract_inplace", "update_initial_operator"],
)
def test_functionals_refuse_after_the_graph_or_operator_changed(change):
    prop = small_propagator()
    value_fn = prop.expectation_value_functional()
    grad_fn = prop.expectation_value_and_gradient_functional()
    before = value_fn([0.1, 0.2])
    change(prop)
    for fn in (value_fn, grad_fn):
        with pytest.raises(StaleFunctionalError, match="MP object has been modified"):
            fn([0.1, 0.2])
    # A new functional works and agrees with the propagator itself.
    fresh_fn = prop.expectation_value_functional()
    args = [] if prop.n_parameters == 0 else [0.0] * prop.n_parameters
    assert fresh_fn(args) == prop.expectation_value(args)
    assert isinstance(before, float)


def test_functionals_survive_settings_and_keep_their_mapping():
    prop = small_propagator()
    fn = prop.expectation_value_and_gradient_functional()
    value, grad = fn([0.3, -0.4])
    prop.cutoff = 1
    prop.lower_atol = 1e-3
    prop.contract_partially([0.3, -0.4], inplace=False)
    prop.parameter_mapping = [0, 0]  # one shared angle now
    assert prop.n_parameters == 1
    again, grad_again = fn([0.3, -0.4])  # still the two-parameter view
    assert again == value and np.array_equal(grad, grad_again)
    shared_value, shared_grad = prop.expectation_value_and_gradient([0.3])
    v_same = fn([0.3, 0.3])
    assert abs(shared_value - v_same[0]) < 1e-14
    assert abs(shared_grad[0] - v_same[1].sum()) < 1e-14


def test_functional_raises_once_its_propagator_is_gone():
    prop = small_propagator()
    fn = prop.expectation_value_functional()
    assert isinstance(fn([0.1, 0.1]), float)
    del prop
    gc.collect()
    with pytest.raises(RuntimeError, match="garbage-collected"):
        fn([0.1, 0.1])


def test_pare_threshold_is_close_to_exact_and_leaves_the_graph_alone():
    case, circuit, prop, *_ = build("majorana", 5)
    prop.build_graph(Circuit(list(circuit), case.n))
    theta = np.array(case.parameters)
    exact = prop.expectation_value_and_gradient(theta)
    for threshold in (1e-10, 1e-12):
        value, grad = prop.expectation_value_and_gradient_functional(threshold)(theta)
        assert abs(value - exact[0]) < 1e-9
        np.testing.assert_allclose(grad, exact[1], atol=1e-9)
    coarse = prop.expectation_value_functional(0.5)(theta)
    assert coarse != exact[0]  # a large threshold really skips edges
    assert prop.expectation_value(theta) == exact[0]


FAULTS = ["propagate", "build_graph", "evaluate", "contract", "update_initial_operator"]


def run(prop, where):
    if where == "propagate":
        prop.propagate(Circuit([ExpGate(PauliOperator({"XI": 1.0}, 2))], 2, parameters=[0.3]))
    elif where == "build_graph":
        prop.build_graph(Circuit([ExpGate(PauliOperator({"XI": 1.0}, 2))], 2))
    elif where == "evaluate":
        prop.expectation_value([0.3] * prop.n_parameters)
    elif where == "contract":
        prop.contract_partially([0.3] * prop.n_parameters)
    else:
        prop.update_initial_operator(PauliOperator({"ZZ": 3.0}, 2))


@pytest.mark.parametrize("where", FAULTS)
def test_a_failure_part_way_makes_the_propagator_unusable(where):
    if where == "propagate":
        prop = PauliPropagator(PauliOperator({"ZZ": 1.0, "XI": 0.5}, 2), [1], cutoff=4)
    else:
        prop = small_propagator()
    n = prop.n_parameters
    fn = prop.expectation_value_functional()
    saved = copy.deepcopy(prop)
    expected = saved.expectation_value([0.3] * n)

    prop._engine._inject_fault(where)
    with pytest.raises(RuntimeError, match="injected fault"):
        run(prop, where)

    remedy = "Construct a new propagator"
    for call in (
        lambda: prop.expectation_value([0.3] * n),
        lambda: prop.size(),
        lambda: prop.evolved_operator([0.3] * n),
        lambda: prop.contract_partially([0.3] * n, inplace=False),
        lambda: prop.build_graph(Circuit([ExpGate(PauliOperator({"IX": 1.0}, 2))], 2)),
        lambda: prop.update_initial_operator(PauliOperator({"ZZ": 1.0}, 2)),
        lambda: copy.deepcopy(prop),
        lambda: copy.copy(prop),
        lambda: fn([0.3] * n),
        lambda: prop.expectation_value_functional(),
    ):
        with pytest.raises(InvalidPropagatorError, match=remedy):
            call()
    # The copy made before the failure is untouched.
    assert saved.expectation_value([0.3] * n) == expected


def test_argument_errors_leave_the_propagator_usable():
    prop = small_propagator()
    value = prop.expectation_value([0.1, 0.2])
    with pytest.raises(RuntimeError, match="Parameter length"):
        prop.expectation_value([0.1])
    with pytest.raises(RuntimeError, match="non-empty graph"):
        prop.propagate(Circuit([ExpGate(PauliOperator({"XI": 1.0}, 2))], 2, parameters=[0.3]))
    with pytest.raises(RuntimeError, match="length of parameters"):
        prop.build_graph(
            Circuit([ExpGate(PauliOperator({"IX": 1.0}, 2))], 2), seed_parameters=[1.0]
        )
    with pytest.raises(RuntimeError, match="Operator term X0 X1 not found in the operator"):
        prop.update_initial_operator(PauliOperator({"XX": 1.0}, 2))
    assert prop.expectation_value([0.1, 0.2]) == value
    assert prop.n_parameters == 2 and prop.graph_layers == 2


def test_progress_is_reported_only_when_asked(capfd):
    prop = PauliPropagator(PauliOperator({"ZZZ": 1.0}, 3), [], cutoff=3)
    circuit = Circuit(
        [ExpGate(PauliOperator({"XII": 1.0}, 3)), ExpGate(PauliOperator({"IYI": 1.0}, 3))], 3
    )
    prop.build_graph(circuit)
    assert capfd.readouterr().err == ""
    prop.build_graph(circuit, progress=True)
    err = capfd.readouterr().err
    # One tqdm bar: its last state shows both layers done and the terms held (4: ZZZ, YZZ
    # and their images under the second layer).
    final = err.rstrip("\n").split("\r")[-1]
    assert final.startswith("build_graph: 100%") and "2/2" in final and "terms=4" in final
    assert err.count("\n") == 1
    fresh = PauliPropagator(PauliOperator({"ZZZ": 1.0}, 3), [], cutoff=3)
    fresh.propagate(Circuit(list(circuit), 3, parameters=[0.1, 0.2]), progress=True)
    final = capfd.readouterr().err.rstrip("\n").split("\r")[-1]
    assert final.startswith("propagate: 100%") and "2/2" in final and "terms=4" in final


def test_deepcopy_is_independent_and_copy_shares():
    prop = small_propagator()
    deep, shallow = copy.deepcopy(prop), copy.copy(prop)
    extra = Circuit([ExpGate(PauliOperator({"IX": 1.0}, 2))], 2)
    prop.build_graph(extra)
    assert prop.graph_layers == 3 and shallow.graph_layers == 3
    assert deep.graph_layers == 2 and deep.n_parameters == 2
    # The deep copy still evaluates the two-gate circuit: compare with a fresh one.
    assert deep.expectation_value([0.2, 0.5]) == small_propagator().expectation_value([0.2, 0.5])
    deep.build_graph(extra)
    assert deep.expectation_value([0.1, 0.2, 0.5]) == prop.expectation_value([0.1, 0.2, 0.5])


def test_functionals_take_lists_arrays_and_circuits():
    prop = small_propagator()
    value_fn = prop.expectation_value_functional()
    grad_fn = prop.expectation_value_and_gradient_functional()
    gates = [ExpGate(PauliOperator({"XI": 1.0}, 2)), ExpGate(PauliOperator({"YZ": 0.7}, 2))]
    bound = Circuit(gates, 2, parameters=[0.4, -1.1])
    expected = prop.expectation_value([0.4, -1.1])
    for argument in ([0.4, -1.1], (0.4, -1.1), np.array([0.4, -1.1]), bound):
        assert value_fn(argument) == expected
        value, grad = grad_fn(argument)
        assert value == expected and grad.dtype == np.float64 and grad.shape == (2,)


def test_an_invalid_propagator_refuses_settings_and_introspection():
    prop = small_propagator()
    prop._engine._inject_fault("evaluate")
    with pytest.raises(RuntimeError, match="injected fault"):
        prop.expectation_value([0.1, 0.2])
    for call in (
        lambda: prop.graph_layers,
        lambda: prop.n_parameters,
        lambda: prop.n_gates,
        lambda: prop.cutoff,
        lambda: prop.lower_atol,
        lambda: prop.num_modes,
        lambda: prop.schrodinger,
        lambda: prop.parameter_mapping,
    ):
        with pytest.raises(InvalidPropagatorError):
            call()
    with pytest.raises(InvalidPropagatorError):
        prop.cutoff = 2
    with pytest.raises(InvalidPropagatorError):
        prop.parameter_mapping = [0, 0]


def test_huge_bounds_saturate_and_out_of_range_slots_are_refused():
    observable = PauliOperator({"ZZ": 1.0}, 2)
    prop = PauliPropagator(observable, [], cutoff=2**40, schrodinger_cutoff=2**40)
    prop.cutoff = 10**30
    assert prop.cutoff >= 2**62 and prop.expectation_value() == 1.0
    assert MajoranaPropagator(MajoranaOperator({(0, 1): 1j}, 1), [], cutoff=2**31).size() == 1
    # A key past the engine's width must raise, not wrap around to slot 0.
    from monoprop.pauli import Pauli

    bad = PauliOperator({Pauli("Z", 2**31, skip_validation=True): 1.0}, 1, skip_validation=True)
    with pytest.raises(ValueError, match="out of range"):
        PauliPropagator(bad, [], cutoff=2)
    bad = MajoranaOperator({(2**32,): 1.0}, 1, skip_validation=True)
    with pytest.raises(ValueError, match="out of range"):
        MajoranaPropagator(bad, [], cutoff=2)


def _long_build():
    n = 6
    prop = PauliPropagator(PauliOperator({"ZIIIII": 1.0}, n), [], cutoff=n)
    gates = [ExpGate(PauliOperator({"XYIIII"[-q:] + "XYIIII"[:-q]: 1.0}, n)) for q in range(n)] * 3
    return prop, Circuit(gates, n)


def test_a_reentrant_call_from_a_callback_is_refused_and_harmless():
    prop, circuit = _long_build()
    refused = []

    def callback(done, total, terms, bound):
        if done == 2:
            with pytest.raises(RuntimeError, match="must not overlap"):
                prop.expectation_value([])
            refused.append(done)

    prop._engine.set_progress(callback)
    prop.build_graph(circuit)
    prop._engine.set_progress(None)
    fresh, _ = _long_build()
    fresh.build_graph(circuit)
    theta = np.linspace(-1, 1, prop.n_parameters)
    assert refused == [2]
    assert prop.expectation_value(theta) == fresh.expectation_value(theta)


def test_a_concurrent_call_from_another_thread_is_refused():
    import threading

    prop, circuit = _long_build()
    inside, release = threading.Event(), threading.Event()

    def callback(done, total, terms, bound):
        if done == 1:
            inside.set()
            release.wait(timeout=30)

    prop._engine.set_progress(callback)
    worker = threading.Thread(target=prop.build_graph, args=(circuit,))
    worker.start()
    assert inside.wait(timeout=30)
    try:
        with pytest.raises(RuntimeError, match="must not overlap"):
            prop.expectation_value([])
    finally:
        release.set()
        worker.join(timeout=60)
    assert prop.graph_layers == len(circuit)
