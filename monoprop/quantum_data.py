"""The protocol of every operator that can feed a Majorana propagator: :class:`IQuantumOperator`.

``PauliOperator`` (through Jordan-Wigner), ``FermiOperator`` (its ladder operators expanded)
and ``MajoranaOperator`` (itself) implement it structurally, with no base class: anything with
a ``get_majorana_operator()`` method is accepted where a Majorana operator is.

>>> from monoprop import FermiOperator, MajoranaOperator, PauliOperator
>>> isinstance(FermiOperator([[(0, "+")]], [1.0], 1), IQuantumOperator)
True
>>> isinstance(PauliOperator({"X": 1.0}, 1), IQuantumOperator)
True
>>> isinstance({(0,): 1.0}, IQuantumOperator)
False
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol, runtime_checkable

from monoprop.majorana import MajoranaOperator

__all__ = ["IQuantumOperator"]


@runtime_checkable
class IQuantumOperator(Protocol):
    """Anything convertible to a :class:`~monoprop.majorana.MajoranaOperator`.

    One abstract method, :meth:`get_majorana_operator`; ``isinstance`` checks for it.
    """

    @abstractmethod
    def get_majorana_operator(self) -> MajoranaOperator:
        """Return the operator as a sum of bare sorted Majorana products."""
        ...
