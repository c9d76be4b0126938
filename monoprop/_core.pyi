"""
monoprop's compiled propagation core.
"""
from __future__ import annotations
import collections.abc
import monoprop.core_arrays
import numpy
import numpy.typing
import typing
__all__: list[str] = ['Engine', 'MAX_NUM_MODES', 'antihermitian_generator_correction', 'has_mpi', 'is_antihermitian', 'mpi_library_version', 'restore_engine', 'thread_budget_from_environment']
class Engine:
    """
    One propagator's compiled state (internal).
    """
    cutoff_type: str
    rigorous: bool
    def __init__(self, *, family: str, num_modes: typing.SupportsInt | typing.SupportsIndex, initial_operator: monoprop.core_arrays.TermArrays, occupied: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], schrodinger_slots: typing.SupportsInt | typing.SupportsIndex | None, cutoff: typing.SupportsInt | typing.SupportsIndex, cutoff_type: str, lower_atol: typing.SupportsFloat | typing.SupportsIndex | None, upper_atol: typing.SupportsFloat | typing.SupportsIndex | None, basis_change: collections.abc.Sequence[collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]] | None = None, comm_handle: typing.SupportsInt | typing.SupportsIndex | None = None, memory_limit: typing.SupportsInt | typing.SupportsIndex | None = None, truncate_to_fit: bool = False) -> None:
        """
        A propagator of ``initial_operator`` on ``num_modes`` modes (or qubits, for
        ``family="pauli"``) from the product state with ``occupied`` modes set.
        
        ``schrodinger_slots`` (None: Heisenberg picture) bounds the Schrodinger state's terms in
        slots; ``cutoff`` and ``cutoff_type`` ("length" or "support") bound new terms, and
        ``lower_atol`` and ``upper_atol`` steer truncation by coefficient. ``comm_handle`` is the
        address of an mpi4py communicator's MPI_Comm. ``memory_limit`` (bytes; None: monoprop_MEMORY_LIMIT,
        else the default from the available memory) is the memory budget; ``truncate_to_fit`` thins a layer
        that would pass it instead of refusing.
        """
    def _inject_fault(self, where: str) -> None:
        ...
    def _replay_blocks(self) -> int:
        ...
    def _set_point_lanes(self, lanes: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def _set_replay_layout(self, use: str) -> None:
        ...
    def _set_small_work(self, entries: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def build_graph(self, layers: monoprop.core_arrays.LayerArrays, seed_parameters: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] | None = None, only_rotate_len_k: typing.SupportsInt | typing.SupportsIndex | None = None, following: monoprop.core_arrays.LayerArrays | None = None) -> None:
        """
        Append ``layers`` to the graph; with ``seed_parameters`` (the full parameter vector after the call) truncation is coefficient-informed, else structural. ``following``: the layers later pieces of a build in pieces apply, which the reach of dropped branches is planned through.
        """
    def check_valid(self) -> None:
        """
        Raise InvalidPropagatorError once invalid.
        """
    def clone(self) -> Engine:
        """
        An independent deep copy of the compiled state.
        """
    def coefficients_of(self, terms: monoprop.core_arrays.TermArrays, parameters: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]) -> numpy.typing.NDArray[numpy.float64]:
        """
        The evolved coefficients of ``terms`` (their own coefficients are ignored), 0 where absent.
        """
    def continue_graph(self, layers: monoprop.core_arrays.LayerArrays, seed_parameters: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] | None = None, only_rotate_len_k: typing.SupportsInt | typing.SupportsIndex | None = None, following: monoprop.core_arrays.LayerArrays | None = None) -> None:
        """
        Append more layers of the circuit the last ``build_graph`` began (its parameters and gates are on the axes already); ``seed_parameters`` is the full parameter vector.
        """
    def contract(self, parameters: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], inplace: bool) -> numpy.typing.NDArray[numpy.float64]:
        """
        Fold the graph at ``parameters`` into the operand; returns the coefficients in store order.
        """
    def evaluate(self, points: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], gradient: bool = False, with_error: bool = False, pare: typing.SupportsFloat | typing.SupportsIndex = 0.0, mapping: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None) -> tuple[numpy.typing.NDArray[numpy.float64], typing.Any, typing.Any, typing.Any]:
        """
        Replay the graph at one parameter vector (1-D) or at the rows of a (K, n) array of points, taking no copy of a C-contiguous float64 array: ``(values, gradients, bounds, estimates)``, arrays of K values (a single vector: K = 1), the gradients (n, or K x n) with ``gradient``, the truncation error's bound and estimate with ``with_error`` (else None). ``pare``: skip entries whose contribution is below it; ``mapping``: per-layer parameter indices in place of the graph's. Each point's results are bitwise those of the point alone.
        """
    def evolved_terms(self, parameters: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], atol: typing.SupportsFloat | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.uint32], numpy.typing.NDArray[numpy.uint64], numpy.typing.NDArray[numpy.float64]]:
        """
        ``(slots, offsets, coefficients)`` of the evolved terms above ``atol``, in the layout of monoprop.core_arrays.TermArrays.
        """
    def graph(self) -> list:
        ...
    def graph_data(self) -> dict:
        ...
    def graph_size(self) -> tuple[int, int]:
        ...
    def indexing(self) -> dict:
        ...
    def layer_gates(self) -> list[int]:
        ...
    def memory(self) -> dict:
        ...
    def mp_op(self) -> dict:
        ...
    def parameter_mapping(self) -> list[int]:
        ...
    def propagate(self, layers: monoprop.core_arrays.LayerArrays, parameters: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], only_rotate_len_k: typing.SupportsInt | typing.SupportsIndex | None = None) -> None:
        """
        Evolve the operand through ``layers`` at the circuit's ``parameters``; records no graph.
        """
    def save_state(self) -> dict:
        """
        The whole propagator as named numpy arrays, for restore_engine.
        """
    def set_parameter_mapping(self, mapping: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    def set_progress(self, callback: typing.Any) -> None:
        """
        Call ``callback(layers_done, layers_total, terms_held, bound)`` during long operations (``bound``: the truncation bound this call has dropped so far where coefficients are evolved, else 0); None stops it. An exception of the callback stops the operation, which leaves the propagator as it was, and is raised again.
        """
    def size(self) -> int:
        """
        Terms held by this rank.
        """
    def update_initial_operator(self, terms: monoprop.core_arrays.TermArrays) -> int:
        """
        Replace the initial operator's coefficients; returns this rank's share of the update: how many of the terms its shards hold.
        """
    @property
    def basis_change(self) -> list[list[int]]:
        ...
    @property
    def budget_thresholds(self) -> list[tuple[int, float]]:
        """
        (layer, threshold) of each layer the last propagate or build thinned for max_error.
        """
    @property
    def comm_rank(self) -> int:
        ...
    @property
    def comm_size(self) -> int:
        ...
    @property
    def cutoff(self) -> int:
        ...
    @cutoff.setter
    def cutoff(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def exchanged_bytes(self) -> int:
        ...
    @property
    def generation(self) -> int:
        ...
    @property
    def graph_layers(self) -> int:
        ...
    @property
    def lower_atol(self) -> float | None:
        ...
    @lower_atol.setter
    def lower_atol(self, value: typing.SupportsFloat | typing.SupportsIndex | None) -> None:
        ...
    @property
    def max_error(self) -> float | None:
        ...
    @max_error.setter
    def max_error(self, value: typing.SupportsFloat | typing.SupportsIndex | None) -> None:
        ...
    @property
    def memory_budget(self) -> int:
        """
        The memory budget's limit in bytes, as construction or the last operation set it.
        """
    @property
    def memory_limit(self) -> int | None:
        """
        The memory budget in bytes given at construction, or None.
        """
    @property
    def memory_truncations(self) -> list[tuple[int, float]]:
        """
        (layer, lower_atol) of each layer the last propagate or build thinned to fit.
        """
    @property
    def n_gates(self) -> int:
        ...
    @property
    def n_parameters(self) -> int:
        ...
    @property
    def num_modes(self) -> int:
        ...
    @property
    def num_threads(self) -> int:
        ...
    @property
    def schrodinger(self) -> bool:
        ...
    @property
    def truncate_to_fit(self) -> bool:
        """
        Whether a layer that would pass the memory budget is thinned instead of refused.
        """
    @property
    def upper_atol(self) -> float | None:
        ...
    @upper_atol.setter
    def upper_atol(self, value: typing.SupportsFloat | typing.SupportsIndex | None) -> None:
        ...
    @property
    def valid(self) -> bool:
        ...
def antihermitian_generator_correction(indices: collections.abc.Sequence[typing.Any]) -> complex:
    """
    ``i ** (C(w, 2) + 1)`` for ``w = len(indices)``.
    
    >>> from monoprop import antihermitian_generator_correction
    >>> antihermitian_generator_correction([0, 1])
    (-1+0j)
    """
def is_antihermitian(indices: collections.abc.Sequence[typing.Any]) -> bool:
    """
    True iff the bare product of ``len(indices)`` Majoranas is anti-Hermitian (w mod 4 in {2, 3}).
    
    >>> from monoprop import is_antihermitian
    >>> is_antihermitian([0, 1]), is_antihermitian([0, 1, 2, 3])
    (True, False)
    """
def mpi_library_version() -> str:
    """
    The MPI library this build links (empty without MPI), to compare with mpi4py's.
    """
def restore_engine(arrays: dict, *, comm_handle: typing.SupportsInt | typing.SupportsIndex | None = None, threads: typing.SupportsInt | typing.SupportsIndex | None = None, memory_limit: typing.SupportsInt | typing.SupportsIndex | None = None, truncate_to_fit: bool = False) -> Engine:
    """
    The engine that Engine.save_state() described, with ``threads`` shards, else this process's thread count, and the memory budget ``memory_limit`` (None: the environment's or the default) and ``truncate_to_fit``.
    """
def thread_budget_from_environment() -> int:
    """
    The thread budget a propagator constructed now would take: monoprop_NUM_THREADS, parsed strictly, else the OpenMP default.
    """
MAX_NUM_MODES: int = 1024
__build_type__: str = 'Release'
has_mpi: bool = False
