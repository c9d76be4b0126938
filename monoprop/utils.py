"""Small validated helpers shared by the operator, circuit and propagator layers."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["jordan_wigner_basis_change", "validate_basis_change"]


def _validate_system_size(size: object, *, argument_name: str) -> int:
    """Check a number of qubits/modes and return it as a plain ``int``.

    ``bool`` is rejected although it subclasses ``int``: ``num_qubits=True`` is
    always a mistake. Zero is allowed (an empty system is a valid container).

    >>> _validate_system_size(3, argument_name="num_qubits")
    3
    """
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(
            f"{argument_name} must be an integer (not {type(size).__name__}). "
            f"Got {size!r}; pass a Python int such as {argument_name}=4."
        )
    if size < 0:
        raise ValueError(
            f"{argument_name} must be non-negative; got {size}. "
            f"Pass the number of {_unit(argument_name)} in the system (0 or more)."
        )
    return int(size)


def _unit(argument_name: str) -> str:
    if "qubit" in argument_name:
        return "qubits"
    if "mode" in argument_name:
        return "modes"
    return "qubits or modes"


def jordan_wigner_basis_change(n_qubits: int) -> list[list[int]]:
    """Slot supports of the Jordan-Wigner images of the ``2n`` Majoranas.

    ``m_{2i} = Z_0 ... Z_{i-1} X_i`` touches slots ``0 .. 2i-1`` (the Z string,
    two slots per qubit) plus ``2i``; ``m_{2i+1}`` ends in ``2i+1`` instead.

    >>> jordan_wigner_basis_change(2)
    [[0], [1], [0, 1, 2], [0, 1, 3]]
    """
    n = _validate_system_size(n_qubits, argument_name="n_qubits")
    basis: list[list[int]] = []
    for i in range(n):
        z_string = list(range(2 * i))
        basis.append([*z_string, 2 * i])
        basis.append([*z_string, 2 * i + 1])
    return basis


def validate_basis_change(basis_change: Sequence[object] | None, num_modes: int) -> None:
    """Check that a basis change has one entry per Majorana slot (``2*num_modes``).

    ``None`` means "no basis change" and is always valid.

    >>> validate_basis_change(jordan_wigner_basis_change(3), 3)
    >>> validate_basis_change(None, 3)
    """
    if basis_change is None:
        return
    expected = 2 * num_modes
    if len(basis_change) != expected:
        raise ValueError(
            f"Basis change must have length {expected}, but got {len(basis_change)}. "
            f"Give one slot list per Majorana (2*num_modes with num_modes={num_modes})."
        )
