"""Majorana (fermionic) front-end of the propagation engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._terms import bare_to_hermitian, hermitian_to_bare
from .circuit import Circuit
from .majorana import Majorana, MajoranaOperator
from .monomial_propagator import MonomialPropagator

__all__ = ["MajoranaPropagator"]


class MajoranaPropagator(MonomialPropagator[MajoranaOperator]):
    """Propagates a Majorana operator (or a fermionic/JW-mapped one) through Majorana circuits.

    ``initial_operator`` is a :class:`MajoranaOperator` or anything with
    ``get_majorana_operator()`` (``FermiOperator``, ``PauliOperator``); ``initial_state`` lists
    the occupied modes of the reference product state. ``cutoff`` bounds the length (or, with
    ``cutoff_type="support"``, the number of modes) of new terms; see API §5.10.

    >>> from monoprop import Circuit, ExpGate, MajoranaOperator, MajoranaPropagator
    >>> prop = MajoranaPropagator(MajoranaOperator({(0, 1): 1j}, 2), [], cutoff=4)
    >>> prop.build_graph(Circuit([ExpGate(MajoranaOperator({(1, 2): 1j}, 2))], 2))
    >>> round(prop.expectation_value([0.3]), 12)    # -cos(0.6)
    -0.82533561491
    """

    _family = "majorana"
    _unit = "mode"

    def _operator_terms(self, operator: Any):
        if not isinstance(operator, MajoranaOperator):
            if not hasattr(operator, "get_majorana_operator"):
                raise TypeError(
                    f"expected a MajoranaOperator or an object with get_majorana_operator(); got "
                    f"{type(operator).__name__}."
                )
            operator = operator.get_majorana_operator()
        keys = list(operator.terms)
        return keys, bare_to_hermitian(keys, list(operator.terms.values())), operator.num_modes

    def _make_operator(self, keys, h) -> MajoranaOperator:
        return MajoranaOperator(
            dict(zip(keys, hermitian_to_bare(keys, h), strict=True)), self.num_modes
        )

    def _term_keys(self, terms: Sequence[Any]) -> list[tuple[int, ...]]:
        keys = []
        limit = 2 * self.num_modes
        for term in terms:
            if isinstance(term, Majorana):
                key = tuple(int(i) for i in term.indices)
            elif isinstance(term, (str, bytes)) or not hasattr(term, "__iter__"):
                raise TypeError(f"terms must be Majorana objects or index sequences; got {term!r}.")
            else:
                key = tuple(int(i) for i in term)
            if any(b <= a for a, b in zip(key, key[1:], strict=False)) or any(i < 0 for i in key):
                raise ValueError(f"Majorana indices must be distinct and sorted; got {key}.")
            for i in key:
                if i >= limit:
                    raise RuntimeError(
                        f"Majorana index {i} is out of range; must be less than {limit}."
                    )
            keys.append(key)
        return keys

    def _bare_coefficients(self, keys, h) -> np.ndarray:
        return np.asarray(hermitian_to_bare(keys, h), dtype=np.complex128)

    def _check_family(self, circuit: Circuit) -> None:
        if circuit.family == "pauli":
            raise TypeError(
                "MajoranaPropagator cannot apply a circuit of qubit (Pauli) gates; use "
                "PauliPropagator, or write the gates as MajoranaOperator/FermiOperator generators."
            )

    def _layer_coefficients(self, g: np.ndarray) -> np.ndarray:
        # Structural g = -h (API 2.5).
        return -g

    @property
    def cutoff_type(self) -> str:
        """``"length"`` (number of Majorana factors) or ``"support"`` (number of modes)."""
        return self._engine.cutoff_type

    @cutoff_type.setter
    def cutoff_type(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"cutoff_type must be 'length' or 'support'; got {value!r}.")
        self._engine.cutoff_type = value
