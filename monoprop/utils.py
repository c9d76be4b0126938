"""Helpers kept at the import path ``monoprop.utils`` that scripts use.

* :func:`jordan_wigner_basis_change`, which lives in :mod:`monoprop.encoding` with the slot
  encoding it is written in (``monoprop`` exports it too);
* :func:`validate_basis_change`, the length check of a basis change (one slot list per
  Majorana);
* ``_validate_system_size(size, *, argument_name)``, the check every ``num_qubits``,
  ``num_modes`` and ``system_size`` goes through (it is
  :func:`monoprop.validation.check_system_size`): a ``bool`` or a non-integer raises
  ``TypeError``, a negative number ``ValueError``, and an integer (numpy's too) comes back as a
  plain ``int``.

>>> from monoprop.utils import _validate_system_size, jordan_wigner_basis_change
>>> jordan_wigner_basis_change(1)
[[0], [1]]
>>> _validate_system_size(True, argument_name="num_qubits")
Traceback (most recent call last):
...
TypeError: num_qubits must be an integer (not bool). Got True; pass a Python int such as ...
"""

from __future__ import annotations

from collections.abc import Sequence

from monoprop.encoding import jordan_wigner_basis_change
from monoprop.validation import check_system_size

__all__ = ["jordan_wigner_basis_change", "validate_basis_change"]

# Private by name but part of the contract (the other engine's tests import it): one function,
# the same object as monoprop.validation.check_system_size, which every size check calls.
_validate_system_size = check_system_size


def validate_basis_change(basis_change: Sequence[object] | None, num_modes: int) -> None:
    """Check that a basis change has one entry per Majorana slot (``2 * num_modes``).

    ``None`` means "no basis change" and is always valid. Another length raises
    ``ValueError("Basis change must have length 6, but got 4. ...")`` (for ``num_modes=3``);
    something without a length, ``TypeError``.

    >>> validate_basis_change(jordan_wigner_basis_change(3), 3)
    >>> validate_basis_change(None, 3)
    >>> validate_basis_change([[0], [1]], 2)
    Traceback (most recent call last):
    ...
    ValueError: Basis change must have length 4, but got 2. Give one slot list per Majorana ...
    """
    n = check_system_size(num_modes, argument_name="num_modes")
    if basis_change is None:
        return
    if not isinstance(basis_change, Sequence) or isinstance(basis_change, str):
        raise TypeError(
            "basis_change must be None or a list of slot lists (one per Majorana); got "
            f"{type(basis_change).__name__} {basis_change!r}."
        )
    expected = 2 * n
    if len(basis_change) != expected:
        raise ValueError(
            f"Basis change must have length {expected}, but got {len(basis_change)}. "
            f"Give one slot list per Majorana (2 * num_modes with num_modes={n})."
        )
