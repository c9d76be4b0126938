"""The protocol every operator that can feed a Majorana propagator implements."""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from monoprop.majorana import MajoranaOperator


@runtime_checkable
class IQuantumOperator(Protocol):
    """Anything convertible to a :class:`~monoprop.majorana.MajoranaOperator`.

    ``PauliOperator`` (Jordan-Wigner), ``FermiOperator`` (ladder expansion) and
    ``MajoranaOperator`` itself (returns ``self``) implement it structurally, so
    propagators and gates accept any of them.

    >>> from monoprop.fermi import FermiOperator
    >>> isinstance(FermiOperator([[(0, "+")]], [1.0], 1), IQuantumOperator)
    True
    """

    @abstractmethod
    def get_majorana_operator(self) -> MajoranaOperator:
        """Return the operator as a sum of bare sorted Majorana products."""
        ...
