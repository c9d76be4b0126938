"""The checks for numbers entering monoprop: integers (:func:`check_int`) and finite floats
(:func:`check_finite`, :func:`check_finite_array`).

Integer checks: each caller keeps its own error types and message text, which users and tests
see; the check itself is written once. Messages are ``str.format`` templates, filled only when
the check fails, with the fields ``name``, ``value``, ``type`` (the value's type name),
``minimum`` and ``maximum``.

Finite checks: NaN and infinities (in the real or imaginary part) are refused with one
``ValueError`` text, ``"{name}={value!r} is not a finite number; {fix}."``, where each caller
names the argument and says how to fix it.
"""

from __future__ import annotations

import cmath
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["check_finite", "check_finite_array", "check_int", "check_system_size"]

# Python ints and numpy integer scalars; bool subclasses int and is rejected separately.
INTEGER_TYPES = (int, np.integer)


def check_int(
    value: Any,
    name: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    types: type | tuple[type, ...] = INTEGER_TYPES,
    allow_bool: bool = False,
    message: str = "{name} must be an integer; got {value!r}.",
    range_message: str | None = None,
    type_error: type[Exception] = TypeError,
    range_error: type[Exception] = ValueError,
) -> int:
    """Return ``value`` as a plain ``int`` if it is one of ``types`` in ``[minimum, maximum]``.

    ``bool`` is rejected unless ``allow_bool``: ``n=True`` is almost always a mistake. A value
    of the wrong type raises ``type_error(message)``; one out of bounds raises
    ``range_error(range_message)``, with ``message`` when ``range_message`` is None.

    >>> check_int(3, "layers", minimum=1)
    3
    >>> check_int(True, "layers")
    Traceback (most recent call last):
    ...
    TypeError: layers must be an integer; got True.
    >>> check_int(0, "layers", minimum=1, range_message="{name} must be >= {minimum}; got {value}.")
    Traceback (most recent call last):
    ...
    ValueError: layers must be >= 1; got 0.
    """
    if (isinstance(value, bool) and not allow_bool) or not isinstance(value, types):
        raise type_error(_fill(message, value, name, minimum, maximum))
    number: Any = value  # one of `types`: an integer
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        template = message if range_message is None else range_message
        raise range_error(_fill(template, value, name, minimum, maximum))
    return int(number)


def _fill(template: str, value: Any, name: str, minimum: Any, maximum: Any) -> str:
    kind = type(value).__name__
    return template.format(name=name, value=value, type=kind, minimum=minimum, maximum=maximum)


def check_system_size(size: object, *, argument_name: str) -> int:
    """Check a number of qubits/modes and return it as a plain ``int``.

    The one check of ``num_qubits``, ``num_modes`` and ``system_size`` everywhere in monoprop,
    and the contract's ``monoprop.utils._validate_system_size``. A Python ``int`` or a numpy
    integer; a ``bool`` (``num_qubits=True`` is a mistake) or any other type raises
    ``TypeError("{name} must be an integer (not {type}). ...")`` and a negative number
    ``ValueError("{name} must be non-negative; got {value}. ...")``, each followed by how to
    fix it. Zero is allowed: an empty system is a valid container.

    >>> check_system_size(3, argument_name="num_qubits")
    3
    >>> check_system_size(-1, argument_name="num_qubits")
    Traceback (most recent call last):
    ...
    ValueError: num_qubits must be non-negative; got -1. Pass the number of qubits ...
    """
    return check_int(
        size,
        argument_name,
        minimum=0,
        message=(
            "{name} must be an integer (not {type}). Got {value!r}; pass a Python int such as "
            "{name}=4."
        ),
        range_message=(
            "{name} must be non-negative; got {value}. Pass the number of "
            + _unit(argument_name)
            + " in the system (0 or more)."
        ),
    )


def _unit(argument_name: str) -> str:
    if "qubit" in argument_name:
        return "qubits"
    if "mode" in argument_name:
        return "modes"
    return "qubits or modes"


def check_finite(value: Any, name: str, *, fix: str = "pass a finite float") -> Any:
    """Return ``value`` unchanged unless it is a number that is NaN or infinite.

    A real or complex number (Python or numpy) with a NaN or infinite part raises
    ``ValueError("{name}={value!r} is not a finite number; {fix}.")``. Anything that is not a
    number passes: its type is checked where it is used.

    >>> check_finite(0.5, "lower_atol")
    0.5
    >>> check_finite(float("nan"), "lower_atol", fix="pass a finite float (or None)")
    Traceback (most recent call last):
    ...
    ValueError: lower_atol=nan is not a finite number; pass a finite float (or None).
    """
    if not _is_finite(value):
        raise ValueError(_not_finite(name, value, fix))
    return value


def check_finite_array(
    values: Any,
    name: str,
    *,
    fix: str = "pass only finite values",
    labels: Sequence[Any] | None = None,
) -> None:
    """Raise ``ValueError`` naming the first non-finite entry of an array-like of numbers.

    One ``numpy.isfinite`` over the array; the message names the entry as ``name[i]`` (``name[i,
    j]`` for more dimensions), or ``name[labels[i]]`` for a 1-D array with ``labels`` (e.g. an
    operator's terms), and its value as given (a list entry as it is in the list, not as
    converted to the array's dtype). Integer arrays are finite; entries that are not numbers
    are left to the caller's other checks.

    >>> check_finite_array([0.1, float("inf")], "parameters")
    Traceback (most recent call last):
    ...
    ValueError: parameters[1]=inf is not a finite number; pass only finite values.
    """
    array = np.asarray(values)
    if array.dtype.kind in "fc":
        finite = np.isfinite(array)
    elif array.dtype.kind == "O":
        finite = np.array([_is_finite(v) for v in array.ravel()], dtype=bool).reshape(array.shape)
    else:  # integers and bools are finite; strings and the like are not numbers
        return
    if finite.all():
        return
    index = tuple(int(i) for i in np.argwhere(~finite)[0])
    if array.ndim == 0:
        where = name
    elif labels is not None and array.ndim == 1:
        where = f"{name}[{labels[index[0]]!r}]"
    else:
        where = f"{name}[{', '.join(map(str, index))}]"
    given = values[index[0]] if array.ndim == 1 and isinstance(values, Sequence) else array[index]
    raise ValueError(_not_finite(where, given, fix))


def _is_finite(value: Any) -> bool:
    """False only for a number with a NaN or infinite (real or imaginary) part."""
    return not isinstance(value, numbers.Number) or cmath.isfinite(value)  # type: ignore[arg-type]


def _not_finite(name: str, value: Any, fix: str) -> str:
    plain = value.item() if isinstance(value, np.generic) else value  # nan, not np.float64(nan)
    return f"{name}={plain!r} is not a finite number; {fix}."
