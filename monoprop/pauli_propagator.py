"""Pauli (qubit) front-end of the propagation engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .circuit import Circuit
from .encoding import pauli_slots, slots_to_pauli
from .monomial_propagator import MonomialPropagator
from .pauli import Pauli, PauliOperator
from .propagator_docs import PARE_THRESHOLD, RESOURCE_PARAMETERS, compose, tolerance_parameters

__all__ = ["PauliPropagator"]


@compose(
    tolerance_parameters=tolerance_parameters(
        units="the observable's units",
        coefficient="coefficient",
        partner="the partner's weight",
    ),
    resource_parameters=RESOURCE_PARAMETERS,
    pare_threshold=PARE_THRESHOLD,
)
class PauliPropagator(MonomialPropagator[PauliOperator]):
    """Propagates a Pauli observable through circuits of Pauli rotations ``exp(+iθ P)``.

    Constructor parameters:

    * ``initial_operator``: the observable, a :class:`PauliOperator` on ``n`` qubits
      (``1 <= n <= MAX_NUM_MODES``).
    * ``initial_state``: the qubits in ``|1>`` of the reference computational-basis product
      state, e.g. ``[]`` for ``|0...0>`` or ``[0, 2]``.
    * ``cutoff`` (required; a number of qubits): the largest Pauli weight (number of non-identity
      letters) a new term may have. A Z-string (only Z letters) is always kept, whatever its
      weight. ``cutoff = n`` keeps every term; typical values are 4 to 8.
    {tolerance_parameters}
    * ``schrodinger_cutoff`` (default ``None``; a number of qubits): ``None`` is the
      Heisenberg picture, which evolves the observable. A number switches to the Schrödinger
      picture, which evolves ``2^n ρ`` of the reference state, ``prod_j (1 ± Z_j)``, expanded
      into its Z-strings of weight at most ``schrodinger_cutoff``; the evolution itself is
      truncated by ``cutoff``. ``schrodinger_cutoff = n`` is the exact state; e.g. use the
      same value as ``cutoff``.
    {resource_parameters}

    {pare_threshold}

    ``only_rotate_len_k`` of :meth:`build_graph` and :meth:`propagate` (default ``None``, all
    terms): only held terms of at most ``k`` slots are rotated by the gates, where X and Y count
    one slot and Z two; longer terms are left untouched. ``0 < k <= 2n``.

    >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
    >>> prop = PauliPropagator(PauliOperator({"ZZ": 1}, 2), [], cutoff=4)
    >>> prop.build_graph(Circuit([ExpGate(PauliOperator({"X": 1}, 2))], 2))
    >>> value, grad = prop.expectation_value_and_gradient([0.3])
    >>> round(value, 12), round(float(grad[0]), 12)    # cos(0.6), -2 sin(0.6)
    (0.82533561491, -1.12928494679)
    """

    _family = "pauli"
    _unit = "qubit"

    def __init__(
        self,
        initial_operator: PauliOperator,
        initial_state: Sequence[int],
        *,
        cutoff: int,
        schrodinger_cutoff: int | None = None,
        lower_atol: float | None = None,
        upper_atol: float | None = None,
        comm: Any = None,
        memory_limit: int | None = None,
        on_memory_limit: str = "raise",
    ) -> None:
        super().__init__(
            initial_operator,
            initial_state,
            cutoff=cutoff,
            schrodinger_cutoff=schrodinger_cutoff,
            cutoff_type="support",
            lower_atol=lower_atol,
            upper_atol=upper_atol,
            comm=comm,
            memory_limit=memory_limit,
            on_memory_limit=on_memory_limit,
        )

    def _operator_terms(self, operator: Any):
        local = operator.get_local_operator()  # a MajoranaOperator has none: AttributeError
        keys = list(local.terms)
        h = np.real(np.asarray(list(local.terms.values()), dtype=np.complex128))
        return keys, np.ascontiguousarray(h, dtype=np.float64), operator.num_qubits

    def _make_operator(self, keys, h) -> PauliOperator:
        values = (np.round(np.asarray(h, dtype=np.float64), 12) + 0.0).tolist()
        terms = {
            Pauli(*slots_to_pauli(key), skip_validation=True): v
            for key, v in zip(keys, values, strict=True)
        }
        return PauliOperator(terms, self.num_modes)

    def _term_keys(self, terms: Sequence[Any]) -> list[tuple[int, ...]]:
        keys = []
        for term in terms:
            if not isinstance(term, Pauli):
                raise TypeError(
                    f"terms must be Pauli objects; got {term!r} ({type(term).__name__})."
                )
            outside = [qubit for qubit in term.qubits if qubit >= self.num_modes]
            if outside:
                raise RuntimeError(
                    f"Pauli index {outside[0]} is out of range; must be less than {self.num_modes}."
                )
            keys.append(pauli_slots(term.string, term.qubits))
        return keys

    def _bare_coefficients(self, keys, h) -> np.ndarray:
        return (np.round(np.asarray(h, dtype=np.float64), 12) + 0.0).astype(np.complex128)

    def _check_family(self, circuit: Circuit) -> None:
        if circuit.family == "majorana":
            raise TypeError(
                "PauliPropagator cannot apply a circuit of Majorana gates; use MajoranaPropagator "
                "(the observable can be given as a PauliOperator there, JW-mapped)."
            )

    def _schrodinger_slots(self, schrodinger_cutoff: int) -> int:
        return 2 * schrodinger_cutoff  # counted in qubits, two slots each

    @property
    def num_qubits(self) -> int:
        """Number of qubits (read-only): the width of the observable given at construction,
        equal to ``num_modes``. Circuits applied must have this ``system_size``."""
        return self.num_modes

    @property
    def cutoff_type(self) -> str:
        """Always ``"support"``: the Pauli weight in qubits (read-only)."""
        return "support"
