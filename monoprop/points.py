"""Many parameter points of one graph: the batched forms of the evaluation methods.

A 2-D array of shape ``(K, n_parameters)`` holds one point per row. The core replays a batch
with the coefficients of several points side by side per term, so that every entry of the
graph is read once for all of them (a replay is bound by memory traffic: a lone point uses one
value of each cache line it pulls). Each point's result is bitwise the one a single call at
that point gives, for a fixed thread count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["parameter_points"]


def parameter_points(parameters: Any) -> np.ndarray | None:
    """The rows of a batch of parameter points as a C-contiguous float64 ``(K, n)`` array, or
    ``None`` when ``parameters`` is a single point (``None``, a Circuit, a flat vector).

    A NumPy array of two dimensions, or a list or tuple of sequences, is a batch. An array of
    more dimensions, or a ragged list, is refused (``ValueError`` naming the shape).
    """
    if isinstance(parameters, np.ndarray):
        if parameters.ndim <= 1:
            return None
        points = parameters
    elif isinstance(parameters, (list, tuple)) and any(
        isinstance(row, (Sequence, np.ndarray)) and not isinstance(row, str) for row in parameters
    ):
        try:
            points = np.array(parameters, dtype=np.float64)
        except (ValueError, TypeError) as error:
            raise ValueError(
                "parameters must be one vector or a 2-D array of points, one row of "
                f"n_parameters angles per point; got rows of different lengths ({error})."
            ) from None
    else:
        return None
    if points.ndim != 2:
        raise ValueError(
            f"parameters must be a 1-D vector or a 2-D array of points (K, n_parameters); got "
            f"shape {points.shape}. Reshape to (-1, n_parameters) for a grid of points."
        )
    if not (np.issubdtype(points.dtype, np.floating) or np.issubdtype(points.dtype, np.integer)):
        raise TypeError(
            f"parameters must hold real numbers; got an array of dtype {points.dtype}. Pass "
            "float angles."
        )
    # The core's evaluation checks that every angle is finite.
    return np.ascontiguousarray(points, dtype=np.float64)
