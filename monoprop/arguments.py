"""Argument conversion shared by the propagators."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .validation import check_finite, check_finite_array, check_int

ParameterValues = Any  # None | Sequence[float] | numpy.ndarray | Circuit

# How to fix a parameter vector with a NaN or infinite entry.
PARAMETER_FIX = "pass a finite angle for every parameter"


def parameter_list(parameters: ParameterValues, name: str = "parameters") -> list[float]:
    """``None`` → ``[]``; a Circuit → its ``parameters``; else each value through ``float``.

    A NaN or infinite value is refused (``ValueError`` naming ``name``, the first bad index and
    its value).
    """
    values = parameter_vector(parameters)
    check_finite_array(values, name, fix=PARAMETER_FIX)
    return values.tolist()


def parameter_vector(parameters: ParameterValues) -> np.ndarray:
    """One parameter point as a float64 vector for the core's evaluation, which checks its
    length and that every angle is finite: a C-contiguous float64 vector is passed on as it is
    (no copy); ``None`` → an empty vector; a Circuit → its ``parameters``; any other sequence
    through ``float``, value by value.
    """
    if parameters is None:
        return np.empty(0, dtype=np.float64)
    if hasattr(parameters, "parameters") and hasattr(parameters, "resolved_mapping"):
        parameters = parameters.parameters
    if isinstance(parameters, np.ndarray):
        if parameters.ndim != 1:
            raise ValueError(
                f"parameters must be a 1-D array; got shape {parameters.shape}. Pass a flat vector."
            )
        return np.ascontiguousarray(parameters, dtype=np.float64)
    return np.array([float(x) for x in parameters], dtype=np.float64)


def cutoff_value(value: Any, name: str = "cutoff") -> int:
    """A non-negative int (bool accepted, as for any int); else TypeError."""
    return check_int(
        value,
        name,
        minimum=0,
        types=numbers.Integral,
        allow_bool=True,
        message="{name} must be a non-negative int; got {value!r} ({type}).",
        range_message="{name} must be a non-negative int; got {value!r}.",
        range_error=TypeError,
    )


def optional_atol(value: Any, name: str) -> float | None:
    """``None`` or a finite real number; else TypeError (not a real) or ValueError (NaN, inf)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float or None; got {value!r} ({type(value).__name__}).")
    return check_finite(float(value), name, fix="pass a finite float (or None)")


def occupied_modes(state: Any, n: int, what: str = "mode") -> list[int]:
    """Validate a reference state: distinct integers in ``0..n-1``."""
    if isinstance(state, (str, bytes)) or not hasattr(state, "__iter__"):
        raise ValueError(f"initial_state must be a list of occupied {what}s; got {state!r}.")
    seen: set[int] = set()
    out = []
    for entry in state:
        index = check_int(
            entry,
            "initial_state entry",
            minimum=0,
            maximum=n - 1,
            types=numbers.Integral,
            message="{name} {value!r} is not an integer " + what + " index.",
            range_message="{name} {value} is outside 0..{maximum}.",
            type_error=ValueError,
        )
        if index in seen:
            raise ValueError(f"initial_state entry {index} is repeated; list each {what} once.")
        seen.add(index)
        out.append(index)
    return out
