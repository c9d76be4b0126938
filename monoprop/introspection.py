"""What a propagator holds, read back: its terms, shards and memory, and its recorded graph.

The read-only views of :class:`~monoprop.MonomialPropagator`: counts (terms, graph entries,
layers, gates, parameters), the raw layout of a single shard as NumPy snapshots, and the
graph's parameter axis, :attr:`~Introspection.parameter_mapping`, the one setting here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .circuit import validate_parameter_mapping
from .propagator_state import PropagatorState

__all__ = ["Introspection"]


class Introspection(PropagatorState):
    """The read-outs of :class:`~monoprop.MonomialPropagator`: sizes, memory, the shard's raw
    layout and the recorded graph's layers, gates and parameters."""

    def size(self) -> int:
        """Number of monomials held (Heisenberg: without the identity term)."""
        return self._engine.size()

    def graph_size(self) -> tuple[int, int]:
        """``(n_cos_only, n_cycles)`` of the recorded graph."""
        n_cos_only, n_cycles = self._engine.graph_size()
        return n_cos_only, n_cycles

    def memory(self) -> dict[str, int]:
        """Bytes held by this rank's shards, by kind: ``terms``, ``index``, ``graph``,
        ``buffers``."""
        return dict(self._engine.memory())

    @property
    def num_threads(self) -> int:
        """T: this propagator's shards, one per OpenMP thread of every operation.

        Read from ``monoprop_NUM_THREADS`` (else the OpenMP default) when the propagator was
        constructed; copies and functionals keep it.
        """
        return self._engine.num_threads

    # -- raw layout of the sole shard (T = 1): read-only snapshots -------------------------

    def mp_op(self) -> dict[str, np.ndarray]:
        """The shard's terms: ``keys`` (uint64, one row of 64-slot words per term),
        ``lengths`` (set slots per term) and ``coefficients`` (what a replay starts from).

        Raises :class:`MultiShardUnsupported` unless ``num_threads == 1``.
        """
        return self._engine.mp_op()

    def indexing(self) -> dict[str, np.ndarray]:
        """The shard's hash index: per entry the ``tag`` (high half of the key's hash) and
        the ``slot`` it points to (``0xFFFFFFFF``: empty)."""
        return self._engine.indexing()

    def graph(self) -> list[dict[str, np.ndarray]]:
        """The shard's graph, one dict per layer in application order: ``pairs`` (m, 2)
        with ``pair_signs``, ``halves`` (h, 2) with ``half_signs``, and ``cos_only``. Under
        MPI these are this rank's entries; those it shares with another rank are not in this
        layout."""
        return self._engine.graph()

    def graph_data(self) -> dict[str, np.ndarray]:
        """Per graph layer (application order): ``parameter``, ``gate`` and ``frequency``."""
        return self._engine.graph_data()

    @property
    def graph_layers(self) -> int:
        """Number of layers in the recorded graph (read-only).

        One layer per generator term of each rotation gate and one per layer of a noise
        channel; a Clifford gate adds none (it is applied exactly, as a change of frame).
        Grows with every ``build_graph`` and is 0 before the first one, after ``propagate``
        alone, and after an in-place ``contract_partially`` of the whole graph.
        """
        return self._engine.graph_layers

    @property
    def n_gates(self) -> int:
        """Number of gates the graph was built from (read-only; at most ``graph_layers``).

        A gate whose generator has several terms counts once, as does a noise channel whose
        rate is a parameter; a per-gate :attr:`parameter_mapping` has this many entries.
        """
        return self._engine.n_gates

    @property
    def n_parameters(self) -> int:
        """Length of the parameter vector that values, gradients and functionals take
        (read-only).

        ``max(parameter_mapping) + 1``: it grows with each ``build_graph`` (in the Heisenberg
        picture the new circuit's parameters come first, in the Schrödinger picture last), is
        reset by assigning :attr:`parameter_mapping`, and shrinks to what the remaining layers
        use after an in-place ``contract_partially``. 0 without a graph, when
        ``expectation_value()`` takes no parameters.
        """
        return self._engine.n_parameters

    @property
    def parameter_mapping(self) -> list[int]:
        """The parameter index that drives each graph layer, in circuit order (a list of int).

        A gate with several generator terms gives repeated entries; a noise channel of fixed
        rate gives -1. Assigning relabels the parameters without rebuilding: pass one entry
        per graph layer (``graph_layers`` of them) or one per gate (``n_gates``, expanded to
        each gate's layers; per layer wins when the two counts agree), covering ``0..k-1``
        without gaps (repeats share a parameter, whose gradient is the sum over its layers).
        It takes effect at once: :attr:`n_parameters` becomes ``k``, and later values and
        gradients read the new mapping, while functionals made before keep the old one.

        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> gates = [ExpGate(PauliOperator({"X": 0.5}, 1)), ExpGate(PauliOperator({"Y": 0.5}, 1))]
        >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
        >>> prop.build_graph(Circuit(gates, 1))
        >>> prop.parameter_mapping, prop.n_parameters
        ([0, 1], 2)
        >>> prop.parameter_mapping = [0, 0]  # one angle drives both gates
        >>> prop.n_parameters
        1
        """
        return list(self._engine.parameter_mapping())

    @parameter_mapping.setter
    def parameter_mapping(self, mapping: Sequence[int]) -> None:
        self._check_finished()
        mapping = [int(x) for x in mapping]
        layers, gates = self.graph_layers, self.n_gates
        if len(mapping) == layers:
            per_layer = mapping
        elif len(mapping) == gates:
            # A noise layer of fixed rate belongs to no gate and keeps -1.
            per_layer = [mapping[g] if g >= 0 else -1 for g in self._engine.layer_gates()]
        else:
            raise ValueError(
                f"parameter_mapping has {len(mapping)} entries; expected {layers} (per graph "
                f"layer) or {gates} (per gate)."
            )
        # Noise layers of fixed rate take -1, which the core checks; the others cover 0..max.
        taking = [p for p, g in zip(per_layer, self._engine.layer_gates(), strict=True) if g >= 0]
        validate_parameter_mapping(taking, len(taking), "graph layers that take a parameter")
        self._engine.set_parameter_mapping(per_layer)

    @property
    def num_modes(self) -> int:
        """Width of the system (read-only): modes for :class:`MajoranaPropagator`, qubits for
        :class:`PauliPropagator` (where it equals ``num_qubits``); fixed by the initial
        operator at construction. Circuits applied must have this ``system_size``."""
        return self._engine.num_modes

    @property
    def schrodinger(self) -> bool:
        """True in the Schrödinger picture (the propagator evolves the reference state, chosen
        by passing ``schrodinger_cutoff`` at construction), False in the Heisenberg picture
        (it evolves the observable). Read-only."""
        return self._engine.schrodinger
