"""Majorana (fermionic) front-end of the propagation engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .circuit import Circuit
from .majorana import Majorana, MajoranaOperator
from .majorana_coefficients import bare_to_hermitian, hermitian_to_bare
from .monomial_propagator import MonomialPropagator
from .propagator_docs import PARE_THRESHOLD, RESOURCE_PARAMETERS, compose, tolerance_parameters

__all__ = ["MajoranaPropagator"]


@compose(
    tolerance_parameters=tolerance_parameters(
        units="the observable's units, on Hermitian products ``i**C(w, 2) m_S``",
        coefficient="Hermitian coefficient",
        partner="the partner",
    ),
    resource_parameters=RESOURCE_PARAMETERS,
    pare_threshold=PARE_THRESHOLD,
)
class MajoranaPropagator(MonomialPropagator[MajoranaOperator]):
    """Propagates a Majorana operator (or a fermionic/JW-mapped one) through Majorana circuits.

    Constructor parameters:

    * ``initial_operator``: the observable, a Hermitian :class:`MajoranaOperator` on ``n``
      modes (``1 <= n <= MAX_NUM_MODES``) or anything with ``get_majorana_operator()``
      (``FermiOperator``, ``PauliOperator``).
    * ``initial_state``: the occupied modes of the reference product state, e.g. ``[]`` for
      the vacuum or ``[0, 1]``.
    * ``cutoff`` (required): the largest size a new term may have, counted as set by
      ``cutoff_type``. A fully paired monomial (only complete pairs ``m_{2j} m_{2j+1}``, i.e. a
      product of ``Z_j``) is always kept, whatever its size. ``cutoff = 2n`` (length) keeps
      every term; typical values are 4 to 8.
    * ``cutoff_type`` (default ``"length"``): ``"length"`` counts Majorana factors,
      ``"support"`` counts the modes a term touches. Also a settable property.
    {tolerance_parameters}
    * ``schrodinger_cutoff`` (default ``None``; a number of Majorana factors): ``None`` is the
      Heisenberg picture, which evolves the observable. A number switches to the Schrödinger
      picture, which evolves ``2^n ρ`` of the reference state, ``prod_j (1 ± Z_j)`` with
      ``Z_j = -i m_{2j} m_{2j+1}``, expanded into its products of at most
      ``ceil(schrodinger_cutoff / 2)`` factors ``Z_j``; the evolution itself is truncated by
      ``cutoff``. ``schrodinger_cutoff = 2n`` is the exact state; e.g. use the same value as
      ``cutoff``.
    {resource_parameters}

    {pare_threshold}

    ``only_rotate_len_k`` of :meth:`build_graph` and :meth:`propagate` (default ``None``, all
    terms): only held terms of at most ``k`` Majorana factors are rotated by the gates; longer
    terms are left untouched. ``0 < k <= 2n``.

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
        # A structural layer (S, g) is the gate exp(-iθ g M_S) (monoprop.exp_gate); the engine
        # applies exp(+iθ h M_S), so h = -g.
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
