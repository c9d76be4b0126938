"""Pauli (qubit) front-end of the propagation engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .circuit import Circuit
from .encoding import pauli_slots, slots_to_pauli
from .monomial_propagator import MonomialPropagator
from .pauli import Pauli, PauliOperator

__all__ = ["PauliPropagator"]


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
    * ``lower_atol`` (default ``None``; a coefficient magnitude, in the observable's units):
      under a gate rotating by ``phi = 2θh`` (``h`` the gate term's coefficient), a term with
      coefficient ``c`` that anticommutes with the gate is *active* only when
      ``|sin(phi) * c| > lower_atol``. Only an active term asks for its partner (the product
      with the gate term): it makes it when missing and rotates with it when held; a term no
      one asks for is only scaled by ``cos(phi)``, and no held term is ever dropped. ``None``
      makes every anticommuting term active. It needs coefficients, so it applies in
      ``propagate`` and in a ``build_graph`` with parameter values (``seed_parameters``, or the
      circuit's bound parameters on the first build); a structural build ignores it and
      warns (:class:`~monoprop.ToleranceWarning`). A negative value is the same as ``None``
      (it warns). Typical: ``1e-4`` to ``1e-6``.
    * ``upper_atol`` (default ``None``; same unit; ``>= lower_atol``): an active term with
      ``|sin(phi) * c| > upper_atol`` asks for its partner even when the partner's weight exceeds
      ``cutoff``, so that large contributions are not cut. ``None`` applies ``cutoff`` to every
      term. Like ``lower_atol`` it needs coefficients. A negative value lets every active term
      ask, even one the rotation does not move (it warns; ``0`` asks for every term that
      moves). Typical: 100 to 1000 times ``lower_atol``, e.g. ``1e-2``.
    * ``schrodinger_cutoff`` (default ``None``; a number of qubits): ``None`` is the
      Heisenberg picture, which evolves the observable. A number switches to the Schrödinger
      picture, which evolves ``2^n ρ`` of the reference state, ``prod_j (1 ± Z_j)``, expanded
      into its Z-strings of weight at most ``schrodinger_cutoff``; the evolution itself is
      truncated by ``cutoff``. ``schrodinger_cutoff = n`` is the exact state; e.g. use the
      same value as ``cutoff``.
    * ``comm`` (default ``None``): an mpi4py communicator to distribute the terms over its
      ranks (see :class:`MonomialPropagator`).
    * ``memory_limit`` (default ``None``; bytes, an int > 0): the memory budget. An operation
      that would take the process past it stops with a :class:`MemoryError` before it grows,
      and leaves the propagator as it was. ``None`` reads ``monoprop_MEMORY_LIMIT`` (bytes),
      else sets the budget when each operation starts to what the process holds plus 80% of
      the memory then available (``MemAvailable``, or the room under a container's limit), at
      most 90% of the physical memory. A budget belongs to the machine: copies keep it,
      :meth:`save` does not record it (a loaded propagator has ``None``).
    * ``on_memory_limit`` (default ``"raise"``): what a layer that would pass the memory budget
      does. ``"raise"`` stops the operation with the :class:`MemoryError`. ``"truncate"`` keeps
      the layer's largest new terms that fit: it raises ``lower_atol`` for that layer and the
      rest of the call just enough (:attr:`memory_truncations`, :attr:`effective_lower_atol`),
      and the branches it drops are ordinary inactive (cos-only) entries. It needs
      coefficients (``propagate``, or a build with parameter values); it never drops held
      terms, so a build's layer whose graph entries cannot fit without any new term still
      raises (a propagate records nothing: at worst a layer keeps none of its new terms). One
      MPI rank only.

    ``pare_threshold`` of :meth:`expectation_value_functional` and
    :meth:`expectation_value_and_gradient_functional`: see the former.

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
