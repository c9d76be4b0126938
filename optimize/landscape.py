"""The expectation value of a recorded graph on a grid of parameter values."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from monoprop import MonomialPropagator
from monoprop.validation import check_int

__all__ = ["landscape"]

# Points per batched replay: big enough that a replay reads each graph entry for many points,
# small enough that the (chunk, n_parameters) points and the replay's per-point state stay a
# few MB on any grid.
CHUNK_POINTS = 4096


def landscape(
    propagator: MonomialPropagator,
    axes: Sequence[Any],
    *,
    base: Any = None,
    parameters: Sequence[int] | None = None,
    pare_threshold: float | None = None,
    chunk_size: int = CHUNK_POINTS,
    progress: bool = False,
) -> np.ndarray:
    """The expectation value ``<O>`` of the propagator's recorded graph on a grid of points.

    ``axes`` is a sequence of 1-D arrays of values, one per scanned parameter, as
    ``numpy.meshgrid`` takes them; ``parameters`` names the parameter index (slot of the
    graph's parameter vector) each axis scans, by default ``axes[k]`` scans parameter ``k``.
    The parameters no axis scans keep their values in ``base``, a full parameter vector
    (default: zeros; its entries at scanned indices are ignored).

    Returns a float64 array of shape ``tuple(len(a) for a in axes)`` in ``ij`` indexing (the
    first axis varies along the first dimension): ``out[i, j]`` is ``<O>`` at the point with
    parameter ``parameters[0]`` at ``axes[0][i]`` and ``parameters[1]`` at ``axes[1][j]``. Each
    value is bitwise that of ``propagator.expectation_value(point)``.

    The grid's points are evaluated as 2-D arrays of up to ``chunk_size`` points (rows), each
    in one batched replay of the graph (``expectation_value_functional(pare_threshold)``), so
    that memory stays bounded on huge grids. ``progress=True`` shows a tqdm bar of the points
    done on stderr.

    Raises ``TypeError`` for a ``propagator`` that is not one, non-real axes or a non-integer
    parameter index, and ``ValueError`` for an axis that is not 1-D, empty or not finite, for
    more axes than the graph has parameters, a parameter index out of range or repeated, a
    ``parameters`` whose length is not that of ``axes``, and a ``base`` that is not a finite
    vector of the graph's length, all before anything is replayed.

    >>> import numpy as np
    >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
    >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 2), [], cutoff=2)
    >>> rx, ry = ExpGate(PauliOperator({"X": 1.0}, 2)), ExpGate(PauliOperator({"Y": 1.0}, 2))
    >>> prop.build_graph(Circuit([rx, ry], 2))
    >>> a, b = np.array([0.0, np.pi / 8, np.pi / 4]), np.array([0.0, np.pi / 6])
    >>> out = landscape(prop, [a, b])             # <Z_0> = cos(2a) cos(2b)
    >>> out.shape
    (3, 2)
    >>> out.round(6)
    array([[1.      , 0.5     ],
           [0.707107, 0.353553],
           [0.      , 0.      ]])
    >>> landscape(prop, [b], parameters=[1], base=[np.pi / 8, 0.0]).round(6)  # a = π/8
    array([0.707107, 0.353553])
    """
    if not isinstance(propagator, MonomialPropagator):
        raise TypeError(
            "landscape() takes a PauliPropagator or MajoranaPropagator with a recorded graph; "
            f"got {type(propagator).__name__}. Build one and call build_graph(circuit) first."
        )
    functional = propagator.expectation_value_functional(pare_threshold)
    n_parameters = propagator.n_parameters
    if n_parameters == 0:
        raise ValueError(
            "the propagator's graph has no parameters to scan; build_graph(circuit) with a "
            "parametrised circuit first."
        )
    values = _axes(axes)
    slots = _slots(parameters, len(values), n_parameters)
    point = _base(base, n_parameters)
    chunk_size = check_int(
        chunk_size,
        "chunk_size",
        minimum=1,
        message="{name} must be a positive integer (points per batched replay); got {value!r}.",
        type_error=TypeError,
    )
    shape = tuple(len(axis) for axis in values)
    total = math.prod(shape)
    out = np.empty(total, dtype=np.float64)
    bar = _progress_bar(total) if progress else None
    try:
        for start in range(0, total, chunk_size):
            stop = min(start + chunk_size, total)
            # The points of flat (C-order) indices start..stop: base, with each scanned slot
            # set to its axis value at the point's index along that axis.
            indices = np.unravel_index(np.arange(start, stop), shape)
            points = np.tile(point, (stop - start, 1))
            for slot, axis, index in zip(slots, values, indices, strict=True):
                points[:, slot] = axis[index]
            out[start:stop] = functional(points)
            if bar is not None:
                bar.update(stop - start)
    finally:
        if bar is not None:
            bar.close()
    return out.reshape(shape)


def _axes(axes: Any) -> list[np.ndarray]:
    if isinstance(axes, (str, bytes)) or not isinstance(axes, (Sequence, np.ndarray)):
        raise TypeError(
            f"axes must be a sequence of 1-D arrays, one per scanned parameter; got "
            f"{type(axes).__name__}. For one axis, pass [values]."
        )
    if len(axes) == 0:
        raise ValueError("axes is empty; pass one 1-D array of values per scanned parameter.")
    values = []
    for k, axis in enumerate(axes):
        array = np.asarray(axis)
        if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
            raise TypeError(
                f"axes[{k}] has dtype {array.dtype}; each axis must hold real numbers (angles)."
            )
        if array.ndim != 1:
            raise ValueError(
                f"axes[{k}] has shape {array.shape}; each axis must be a 1-D array of values. "
                "For a single axis, pass [values], not values."
            )
        if array.size == 0:
            raise ValueError(f"axes[{k}] is empty; each axis needs at least one value.")
        if not np.all(np.isfinite(array)):
            bad = array[~np.isfinite(array)][0]
            raise ValueError(f"axes[{k}] holds {bad}; every value of an axis must be finite.")
        values.append(array.astype(np.float64))
    return values


def _slots(parameters: Sequence[int] | None, n_axes: int, n_parameters: int) -> list[int]:
    if parameters is None:
        if n_axes > n_parameters:
            raise ValueError(
                f"{n_axes} axes but the graph has {n_parameters} parameters; pass at most one "
                "axis per parameter."
            )
        return list(range(n_axes))
    if isinstance(parameters, (str, bytes)) or not isinstance(parameters, (Sequence, np.ndarray)):
        raise TypeError(
            f"parameters must be a sequence of parameter indices, one per axis; got {parameters!r}."
        )
    if len(parameters) != n_axes:
        raise ValueError(
            f"parameters={list(parameters)!r} names {len(parameters)} indices for {n_axes} axes; "
            "pass one parameter index per axis."
        )
    slots = [
        check_int(
            p,
            f"parameters[{k}]",
            minimum=0,
            maximum=n_parameters - 1,
            message="{name} must be an integer parameter index; got {value!r}.",
            range_message=(
                "{name} is {value}, out of range: the graph's parameters are 0.."
                f"{n_parameters - 1}."
            ),
        )
        for k, p in enumerate(parameters)
    ]
    repeated = sorted({slot for slot in slots if slots.count(slot) > 1})
    if repeated:
        raise ValueError(
            f"parameters={slots!r} scans parameter {repeated[0]} on more than one axis; give "
            "each axis its own parameter."
        )
    return slots


def _base(base: Any, n_parameters: int) -> np.ndarray:
    if base is None:
        return np.zeros(n_parameters)
    array = np.asarray(base)
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise TypeError(f"base has dtype {array.dtype}; it must hold real numbers (angles).")
    if array.shape != (n_parameters,):
        raise ValueError(
            f"base has shape {array.shape} but the graph has {n_parameters} parameters; pass a "
            f"full parameter vector of length {n_parameters}."
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"base holds {array[~np.isfinite(array)][0]}; it must be finite.")
    return array.astype(np.float64)


def _progress_bar(total: int):
    from tqdm import tqdm  # imported only when asked for

    return tqdm(total=total, desc="landscape", unit="point", file=sys.stderr, dynamic_ncols=True)
