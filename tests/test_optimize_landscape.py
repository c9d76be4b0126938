"""monoprop.optimize.landscape: grids of 1, 2 and 3 axes against pointwise calls (bitwise) and
an exact formula, evaluated in bounded batches, and its errors raised before any replay."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_optimize_objective import Problem

from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
from monoprop.optimize import landscape


def one_qubit_propagator() -> PauliPropagator:
    """<Z_0> after exp(i a X_0) exp(i b Y_0): cos(2a) cos(2b)."""
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 2), [], cutoff=2)
    rx, ry = ExpGate(PauliOperator({"X": 1.0}, 2)), ExpGate(PauliOperator({"Y": 1.0}, 2))
    prop.build_graph(Circuit([rx, ry], 2))
    return prop


def pointwise(prop, axes, slots, base) -> np.ndarray:
    """The grid from one single-point call per point, in ij order."""
    values = []
    for point in itertools.product(*axes):
        x = np.array(base, dtype=np.float64)
        x[slots] = point
        values.append(prop.expectation_value(x))
    return np.array(values).reshape([len(a) for a in axes])


def count_calls(prop) -> list[tuple[int, ...]]:
    """The argument shape of every call of the value functionals handed out from now on."""
    shapes: list[tuple[int, ...]] = []
    make = prop.expectation_value_functional

    def make_spy(*args, **kwargs):
        functional = make(*args, **kwargs)

        def call(parameters):
            shapes.append(np.shape(parameters))
            return functional(parameters)

        return call

    prop.expectation_value_functional = make_spy
    return shapes


def test_the_grid_matches_the_exact_value():
    prop = one_qubit_propagator()
    a, b = np.linspace(-1.5, 1.5, 13), np.linspace(0.0, 3.0, 7)
    out = landscape(prop, [a, b])
    assert out.shape == (13, 7) and out.dtype == np.float64
    np.testing.assert_allclose(out, np.cos(2 * a)[:, None] * np.cos(2 * b)[None, :], atol=1e-14)
    # The axes in the other order: out[i, j] at b = b[i], a = a[j].
    swapped = landscape(prop, [b, a], parameters=[1, 0])
    np.testing.assert_array_equal(swapped, out.T)
    # One axis, the other parameter from base.
    line = landscape(prop, [b], parameters=[1], base=[0.3, 123.0])
    np.testing.assert_allclose(line, np.cos(0.6) * np.cos(2 * b), atol=1e-14)


@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize(
    ("lengths", "slots"), [((9,), [2]), ((4, 5), [0, 2]), ((3, 4, 2), [2, 0, 1])]
)
def test_one_two_and_three_axes_match_pointwise_calls_bitwise(family, lengths, slots):
    problem = Problem(family, 1)
    prop = problem.propagator()
    assert prop.n_parameters > max(slots)
    rng = np.random.default_rng(len(lengths))
    axes = [np.sort(rng.uniform(-2, 2, k)) for k in lengths]
    base = rng.uniform(-2, 2, prop.n_parameters)
    out = landscape(prop, axes, parameters=slots, base=base)
    assert out.shape == lengths
    np.testing.assert_array_equal(out, pointwise(prop, axes, slots, base))


def test_default_parameters_and_base():
    problem = Problem("pauli", 0)
    prop = problem.propagator()
    axes = [np.linspace(-1, 1, 3), np.array([0.5, -0.25])]
    np.testing.assert_array_equal(
        landscape(prop, axes), pointwise(prop, axes, [0, 1], np.zeros(prop.n_parameters))
    )
    # Lists and integer axes are axes too.
    np.testing.assert_array_equal(
        landscape(prop, [[-1, 0, 1], [0.5, -0.25]]), landscape(prop, [[-1.0, 0.0, 1.0], axes[1]])
    )


def test_the_grid_is_replayed_in_batches_of_at_most_chunk_size_points(capsys):
    prop = one_qubit_propagator()
    shapes = count_calls(prop)
    a, b = np.linspace(0, 1, 10), np.linspace(0, 1, 7)
    out = landscape(prop, [a, b], chunk_size=32, progress=True)
    assert shapes == [(32, 2), (32, 2), (6, 2)]
    assert "landscape" in capsys.readouterr().err
    shapes.clear()
    np.testing.assert_array_equal(landscape(prop, [a, b]), out)  # 70 points: one batch
    assert shapes == [(70, 2)]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"axes": np.linspace(0, 1, 3)}, ValueError, r"axes\[0\] has shape \(\); .*\[values\]"),
        ({"axes": [[[0.0, 1.0]]]}, ValueError, r"axes\[0\] has shape \(1, 2\)"),
        ({"axes": [[0.0], []]}, ValueError, r"axes\[1\] is empty"),
        ({"axes": []}, ValueError, "axes is empty"),
        ({"axes": [[0.0, np.nan]]}, ValueError, r"axes\[0\] holds nan"),
        ({"axes": [[0.0, np.inf]]}, ValueError, r"axes\[0\] holds inf"),
        ({"axes": [["a"]]}, TypeError, r"axes\[0\] has dtype <U1"),
        ({"axes": 3.0}, TypeError, "sequence of 1-D arrays, .*; got float"),
        ({"axes": [[0.0]] * 3}, ValueError, "3 axes but the graph has 2 parameters"),
        ({"parameters": [2]}, ValueError, r"parameters\[0\] is 2, out of range: .* 0..1"),
        ({"parameters": [-1]}, ValueError, r"parameters\[0\] is -1, out of range"),
        ({"parameters": [0.5]}, TypeError, r"parameters\[0\] must be an integer .*; got 0.5"),
        ({"axes": [[0.0], [1.0]], "parameters": [1, 1]}, ValueError, "scans parameter 1 on more"),
        ({"parameters": [0, 1]}, ValueError, r"names 2 indices for 1 axes"),
        ({"base": [0.0]}, ValueError, r"base has shape \(1,\) but the graph has 2 parameters"),
        ({"base": [[0.0, 0.0]]}, ValueError, r"base has shape \(1, 2\)"),
        ({"base": [0.0, np.nan]}, ValueError, "base holds nan"),
        ({"chunk_size": 0}, ValueError, "chunk_size must be a positive integer"),
        ({"chunk_size": 2.5}, TypeError, "chunk_size must be a positive integer"),
    ],
)
def test_bad_arguments_are_refused_before_any_replay(kwargs, error, message):
    prop = one_qubit_propagator()
    shapes = count_calls(prop)
    arguments = {"axes": [[0.0, 1.0]], **kwargs}
    with pytest.raises(error, match=message):
        landscape(prop, **arguments)
    assert shapes == []


def test_a_propagator_is_required():
    with pytest.raises(TypeError, match="PauliPropagator or MajoranaPropagator .* got list"):
        landscape([1.0], [[0.0]])
