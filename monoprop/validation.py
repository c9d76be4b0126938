"""The one check for integer arguments: an int (not a bool), within bounds.

Each caller keeps its own error types and message text, which users and tests see; the check
itself is written once. Messages are ``str.format`` templates, filled only when the check fails,
with the fields ``name``, ``value``, ``type`` (the value's type name), ``minimum`` and
``maximum``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_int", "check_system_size"]

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

    A Python ``int`` only (not a bool, not a numpy integer). Zero is allowed: an empty system
    is a valid container.

    >>> check_system_size(3, argument_name="num_qubits")
    3
    """
    return check_int(
        size,
        argument_name,
        minimum=0,
        types=int,
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
