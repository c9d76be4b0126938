"""Many parameter points in one call: a 2-D array of points gives each row's value (and
gradient) bitwise as a single call at that row, for a fixed thread count.

The batched replay runs the points side by side in lanes, splits them over the threads,
replays the layers all points turn alike once (values) and takes a lane's numbers from its
neighbour's where their parameter agrees; each of those must leave every result bitwise
unchanged, so every test compares with single calls by ``==``. The single calls themselves
are checked against dense references elsewhere (test_random_circuits.py, test_noise.py).
"""

from __future__ import annotations

import dense_reference as dr
import numpy as np
import pytest
from test_random_circuits import circuit, operator

from monoprop import (
    Circuit,
    CliffordGate,
    ExpGate,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
    noise,
)

ENV = "monoprop_NUM_THREADS"


def assert_rows_match(prop, points, *, pare_threshold=None) -> None:
    """Batched values and gradients equal single calls at every row, bitwise, through the
    methods and the functionals."""
    values = prop.expectation_value(points)
    batch_values, batch_gradients = prop.expectation_value_and_gradient(points)
    value_fn = prop.expectation_value_functional(pare_threshold)
    gradient_fn = prop.expectation_value_and_gradient_functional(pare_threshold)
    fn_values = value_fn(points)
    fn_values_g, fn_gradients = gradient_fn(points)
    assert values.shape == (len(points),) and values.dtype == np.float64
    assert batch_gradients.shape == (len(points), prop.n_parameters)
    for i, row in enumerate(points):
        value, gradient = prop.expectation_value_and_gradient(row)
        assert values[i] == prop.expectation_value(row), i
        assert batch_values[i] == value, i
        assert np.array_equal(batch_gradients[i], gradient), i
        assert fn_values[i] == value_fn(row), i
        single_value, single_gradient = gradient_fn(row)
        assert fn_values_g[i] == single_value, i
        assert np.array_equal(fn_gradients[i], single_gradient), i


def random_points(rng, center, count, scale=0.4) -> np.ndarray:
    return np.asarray(center) + rng.normal(scale=scale, size=(count, len(center)))


def scan_points(center, axis_parameters, values) -> np.ndarray:
    """A landscape's rows: ``center`` with the given parameters set to each combination."""
    grid = np.array(np.meshgrid(*[values] * len(axis_parameters), indexing="ij"))
    grid = grid.reshape(len(axis_parameters), -1).T
    points = np.repeat(np.asarray(center, dtype=float)[None, :], len(grid), axis=0)
    points[:, axis_parameters] = grid
    return points


def build(family, seed, picture, mode, threads, monkeypatch):
    monkeypatch.setenv(ENV, str(threads))
    case = dr.random_case(31_000 + seed, family, 4 + seed % 2, num_gates=10)
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    n = case.n
    config: dict = {"cutoff": 2 * n}
    if mode == "truncating":  # cos entries (quiet terms) and halves (only_rotate_len_k)
        config = {"cutoff": 3 if family == "pauli" else n, "lower_atol": 1e-2}
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = 2 * n if mode == "exact" else n + 1
    prop = cls(operator(case, case.observable), list(case.occupied), **config)
    extra = {"only_rotate_len_k": n + 1} if mode == "truncating" and family == "pauli" else {}
    prop.build_graph(circuit(case, bound=False), seed_parameters=np.array(case.parameters), **extra)
    return case, prop


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("mode", ["exact", "truncating"])
@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_batches_equal_single_calls(family, picture, mode, threads, monkeypatch):
    for seed in range(2):
        case, prop = build(family, seed, picture, mode, threads, monkeypatch)
        rng = np.random.default_rng(seed)
        # 37 random points: sweeps of 16 and 8 lanes and a padded last one, over the threads.
        assert_rows_match(prop, random_points(rng, case.parameters, 37))
        # Landscapes: over the first or the last parameter (the layers before it, in the
        # graph's order, replay once for all points; Heisenberg graphs run from the circuit's
        # end) and over both (neighbouring points share their turns).
        first, last = 0, prop.n_parameters - 1
        for scanned in ([first], [last], [first, last]):
            assert_rows_match(prop, scan_points(case.parameters, scanned, [-0.7, 0.1, 1.3]))


def test_clifford_gates_and_noise_rates_in_a_batch(monkeypatch):
    """Clifford quarter turns fold into the frame; channel rates are parameters whose layers
    scale and transfer: a batch varies both."""
    n = 3

    def pauli(label):
        return PauliOperator({label: 1.0}, n)

    gates = [
        ExpGate(pauli("XYI")),
        CliffordGate(pauli("ZZI"), 1),
        ExpGate(pauli("IZX")),
        noise.depolarizing(qubits=[0, 1], index=2),
        ExpGate(pauli("YIY")),
        CliffordGate(pauli("IXI"), 3),
        noise.amplitude_damping(qubit=2, index=4),
        ExpGate(pauli("XXZ")),
    ]
    for threads in (1, 2, 3):
        monkeypatch.setenv(ENV, str(threads))
        for picture in ("heisenberg", "schrodinger"):
            config = {"cutoff": 2 * n}
            if picture == "schrodinger":
                config["schrodinger_cutoff"] = 2 * n
            prop = PauliPropagator(PauliOperator({"ZII": 1.0, "IXZ": 0.5}, n), [0], **config)
            prop.build_graph(Circuit(gates, n))
            rng = np.random.default_rng(threads)
            points = rng.uniform(0.0, 0.3, size=(21, prop.n_parameters))  # rates in [0, 0.3]
            assert_rows_match(prop, points)


def test_pared_batches_go_point_by_point(monkeypatch):
    monkeypatch.setenv(ENV, "2")
    case, prop = build("pauli", 0, "heisenberg", "exact", 2, monkeypatch)
    points = random_points(np.random.default_rng(5), case.parameters, 9)
    assert_rows_match(prop, points, pare_threshold=1e-3)


def test_error_bars_of_a_batch(monkeypatch):
    case, prop = build("majorana", 1, "heisenberg", "truncating", 2, monkeypatch)
    points = random_points(np.random.default_rng(3), case.parameters, 5)
    errors = prop.truncation_error(points)
    assert errors.bound.shape == (5,) and errors.estimate.shape == (5,)
    values, gradients, errors_g = prop.expectation_value_and_gradient_functional(with_error=True)(
        points
    )
    value_fn = prop.expectation_value_functional(with_error=True)
    batch_values, errors_v = value_fn(points)
    for i, row in enumerate(points):
        single = prop.truncation_error(row)
        assert (errors.bound[i], errors.estimate[i]) == (single.bound, single.estimate)
        value, error = value_fn(row)
        assert (batch_values[i], errors_v.bound[i]) == (value, error.bound)
        assert errors_g.bound[i] == error.bound
        assert values[i] == value
    assert gradients.shape == (5, prop.n_parameters)


def small_propagator() -> PauliPropagator:
    prop = PauliPropagator(PauliOperator({"ZI": 1.0}, 2), [], cutoff=2)
    prop.build_graph(
        Circuit([ExpGate(PauliOperator({"XI": 1.0}, 2)), ExpGate(PauliOperator({"YX": 1.0}, 2))], 2)
    )
    return prop


def test_exact_values_of_a_batch():
    """<Z_0> after exp(i a X_0) then exp(i b Y_0 X_1): cos(2a) cos(2b)."""
    prop = small_propagator()
    a, b = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(0, 2, 7), indexing="ij")
    points = np.stack([a.ravel(), b.ravel()], axis=1)
    values, gradients = prop.expectation_value_and_gradient(points)
    exact = np.cos(2 * points[:, 0]) * np.cos(2 * points[:, 1])
    np.testing.assert_allclose(values, exact, rtol=0, atol=1e-14)
    np.testing.assert_allclose(
        gradients[:, 0], -2 * np.sin(2 * points[:, 0]) * np.cos(2 * points[:, 1]), atol=1e-14
    )


def test_shapes_and_types():
    prop = small_propagator()
    single = prop.expectation_value([0.1, 0.2])
    assert isinstance(single, float)
    value, gradient = prop.expectation_value_and_gradient(np.array([0.1, 0.2]))
    assert isinstance(value, float) and gradient.shape == (2,)
    # Lists of rows, integer arrays and float32 arrays are batches too.
    from_list = prop.expectation_value([[0.1, 0.2], [0, 1]])
    assert from_list.shape == (2,) and from_list[1] == prop.expectation_value([0.0, 1.0])
    ints = prop.expectation_value(np.array([[0, 1], [1, 0]]))
    assert ints[0] == prop.expectation_value([0.0, 1.0])
    f32 = np.array([[0.1, 0.2]], dtype=np.float32)
    assert prop.expectation_value(f32)[0] == prop.expectation_value(f32[0].astype(np.float64))
    # A strided view is read as its rows.
    wide = np.arange(12, dtype=float).reshape(3, 4) / 10
    assert np.array_equal(
        prop.expectation_value(wide[:, ::2]), prop.expectation_value(wide[:, ::2].copy())
    )
    # An empty batch: empty results of the right shapes.
    values, gradients = prop.expectation_value_and_gradient(np.zeros((0, 2)))
    assert values.shape == (0,) and gradients.shape == (0, 2)
    assert prop.gradient(np.zeros((3, 2))).shape == (3, 2)


@pytest.mark.parametrize(
    "points, error, match",
    [
        # A row of the wrong length: what a single call of that length raises.
        (np.zeros((2, 3)), RuntimeError, "Parameter length 3 does not match"),
        (np.zeros((0, 3)), RuntimeError, "Parameter length 3 does not match"),
        (np.zeros((2, 2, 2)), ValueError, r"shape \(2, 2, 2\)"),
        ([[0.1, 0.2], [0.3]], ValueError, "different lengths"),
        (np.array([[0.1, np.nan]]), ValueError, r"parameters\[0, 1\]=nan"),
        (np.array([["a", "b"]]), TypeError, "dtype"),
    ],
)
def test_bad_batches_are_refused(points, error, match):
    prop = small_propagator()
    for call in (prop.expectation_value, prop.expectation_value_and_gradient, prop.gradient):
        with pytest.raises(error, match=match):
            call(points)
    assert prop.expectation_value([0.1, 0.2]) == small_propagator().expectation_value([0.1, 0.2])


@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_batches_of_a_laid_out_graph(family, threads, monkeypatch):
    """With the graph laid out over the threads' blocks, a batch replays the blocks."""
    case, prop = build(family, 1, "heisenberg", "truncating", threads, monkeypatch)
    prop._engine._set_replay_layout("always")
    # Single calls on the whole team (handing entries over between blocks): still bitwise.
    prop._engine._set_small_work(0 if threads % 2 else 2**62)
    prop.expectation_value(case.parameters)  # makes the layout
    assert prop._engine._replay_blocks() == threads
    rng = np.random.default_rng(threads)
    assert_rows_match(prop, random_points(rng, case.parameters, 19))
    assert_rows_match(prop, scan_points(case.parameters, [1], [0.2, -0.4, 0.9, 1.1]))


@pytest.mark.parametrize("lanes", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("family", ["pauli", "majorana"])
def test_every_lane_width(family, lanes, monkeypatch):
    """Each sweep width, forced (the engine would choose by the batch and the cache)."""
    case, prop = build(family, 0, "schrodinger", "truncating", 2, monkeypatch)
    prop._engine._set_point_lanes(lanes)
    assert_rows_match(prop, random_points(np.random.default_rng(lanes), case.parameters, 23))
