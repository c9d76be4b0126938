"""The propagator base class shared by the Majorana and Pauli front-ends.

A propagator holds an operand (Heisenberg: the observable; Schrödinger: the
state ``2^n ρ``) as real coefficients on Hermitian monomials, applies circuits
to it with truncation, and can record what it did as a graph that replays at
any parameter vector for values and exact gradients. The numerical work lives
in ``monoprop._core``; this module converts arguments and checks them before
anything changes.

This module holds construction, building (``build_graph``, ``propagate``), the operand's
read-out, copies and saves; the class takes its other members from one base per concern:
:mod:`monoprop.evaluation` (values, gradients, truncation errors, functionals),
:mod:`monoprop.truncation_settings` (cutoff, tolerances, memory and error budgets) and
:mod:`monoprop.introspection` (sizes, raw layout, the graph's parameter axis).
"""

from __future__ import annotations

import copy
import functools
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from . import _comm, _core, _saved_state, checkpointed_build
from .arguments import (
    ParameterValues,
    cutoff_value,
    occupied_modes,
    optional_atol,
    parameter_list,
)
from .circuit import Circuit
from .circuit_arrays import layer_arrays
from .core_arrays import LayerArrays, TermArrays
from .evaluation import GraphEvaluation
from .exceptions import NumberOfModesInvalidError
from .introspection import Introspection
from .progress import layer_progress, progress_bar
from .stacklevel import caller_stacklevel
from .truncation_budget import check_budget_applies, checked_budget, engine_budget
from .truncation_settings import (
    CUTOFF_MAX,
    TruncationSettings,
    checked_memory_limit,
    truncate_to_fit,
    warn_ignored_tolerances,
    warn_negative_tolerance,
)
from .validation import check_finite, check_finite_array, check_int

OperatorT = TypeVar("OperatorT")

# The core reads the thread count from this variable; the upper-case spelling is a common slip.
_THREADS_VARIABLE = "monoprop_NUM_THREADS"
_WRONG_CASE_THREADS_VARIABLE = "MONOPROP_NUM_THREADS"
_warned_wrong_case_threads = False  # the slip is reported once per process

__all__ = ["MonomialPropagator"]


class MonomialPropagator(
    GraphEvaluation, TruncationSettings, Introspection, ABC, Generic[OperatorT]
):
    """Abstract base of :class:`MajoranaPropagator` and :class:`PauliPropagator`.

    The operator is split into ``num_threads`` shards, one per OpenMP thread; every operation
    runs on one team of that many threads. The count is read from ``monoprop_NUM_THREADS``
    (else the OpenMP default) when the propagator is constructed, and there is no argument for
    it. Results agree across thread counts to rounding; a fixed count is bitwise reproducible.
    ``MONOPROP_NUM_THREADS`` (upper case) is not read; a construction while it is set and
    ``monoprop_NUM_THREADS`` is not warns (a ``UserWarning``, once per process).
    Calls on one propagator must not overlap: a concurrent or reentrant call raises.

    Numbers are refused with a ``ValueError`` naming the argument and the value, before
    anything changes, when they are NaN or infinite: operator coefficients, tolerances
    (``lower_atol``, ``upper_atol``, ``pare_threshold``, ``atol``), parameter vectors
    (including ``seed_parameters`` and a circuit's bound parameters).

    ``comm`` (an mpi4py communicator, in a build with MPI) distributes the operator over its
    ranks: every rank constructs with the same arguments and makes the same calls. Values and
    gradients are global; ``size()``, ``graph_size()``, ``memory()``, ``evolved_operator()``
    and ``contract_partially()`` describe this rank's terms. ``monoprop_ROUTING`` (``linear``,
    the default, for power-of-two rank counts, or ``splitmix``) and ``monoprop_ROUTING_SEED``
    choose where terms live and must match on every rank. With more than one rank, a failure
    during an operation prints the rank and the error and aborts the launch.

    Truncation. A gate ``exp(+i theta h G)`` rotates each held term ``a`` that anticommutes
    with ``G`` towards its partner ``b ~ a G`` by ``phi = 2 h theta``:
    ``a -> cos(phi) a + sin(phi) b``. With ``c_a`` the coefficient of ``a`` before the gate:

    * ``a`` is *active* when ``|sin(phi) * c_a| > lower_atol`` (strictly; every anticommuting
      term is active when ``lower_atol`` is None, and in a graph built without parameter
      values);
    * an active ``a`` *asks* for its partner when ``b`` passes the structural ``cutoff``
      (length or weight ``<= cutoff``; a fully paired Majorana monomial or a Pauli Z-string
      always passes), or when ``upper_atol`` is set and ``|sin(phi) * c_a| > upper_atol``;
    * a held pair ``{a, b}`` rotates both ways when at least one of the two asked; a term
      is born only from an asking term whose partner is not held;
    * every other anticommuting term is only scaled by ``cos(phi)`` and stays held.

    For example, Pauli ``Z0 = 1e-5`` and ``Y0 = 2e-5`` under ``exp(+i pi/4 X0)`` with
    ``lower_atol=1e-4`` are both inactive: each is scaled by ``cos(pi/2)``, and they do not
    swap. No held term is ever dropped, however small it becomes.

    The tolerances need coefficients: ``propagate`` and a seeded ``build_graph`` use them; a
    build without a seed ignores them and warns (:class:`~monoprop.ToleranceWarning`). Negative
    tolerances are accepted and warn with what they mean: a negative ``lower_atol`` is the
    same as ``None``; a negative ``upper_atol`` lets every active term keep its partner
    whatever the cutoff (``0`` does the same for every term that moves).

    Clifford gates (:class:`~monoprop.clifford.CliffordGate`) are applied exactly and are not
    truncated: a term that anticommutes with a quarter turn becomes the one other term it maps
    to. They cost no work on the terms and no graph entry: the propagator keeps the product of
    the Clifford gates applied so far as a change of frame, holds its terms in that frame, and
    turns each later rotation's generator into the frame instead. Truncation measures, and
    every read-out reports, the terms as they are (``evolved_operator``, the coefficients
    ``contract_partially`` returns, ``update_initial_operator``), so nothing of the frame shows,
    except that ``mp_op()`` (the raw keys) refuses once a Clifford gate has been applied.
    """

    _family: str  # "majorana" or "pauli": the circuit family this front-end runs
    _unit: str  # "mode" or "qubit", for messages

    def __init__(
        self,
        initial_operator: Any,
        initial_state: Sequence[int],
        *,
        cutoff: int,
        schrodinger_cutoff: int | None = None,
        cutoff_type: str = "length",
        lower_atol: float | None = None,
        upper_atol: float | None = None,
        comm: Any = None,
        memory_limit: int | None = None,
        on_memory_limit: str = "raise",
    ) -> None:
        _warn_wrong_case_threads()
        _check_coefficients(initial_operator, "initial_operator")
        keys, h, n = self._operator_terms(initial_operator)
        if n <= 0:
            raise NumberOfModesInvalidError(
                f"Number of Fermionic modes {n} invalid. num_modes must be > 0."
            )
        if n > _core.MAX_NUM_MODES:
            raise NumberOfModesInvalidError(
                f"Number of Fermionic modes {n} invalid. num_modes must be <= "
                f"{_core.MAX_NUM_MODES}. Split the problem or reduce the system size."
            )
        state = occupied_modes(initial_state, n, self._unit)
        cutoff = cutoff_value(cutoff)
        if schrodinger_cutoff is not None:
            schrodinger_cutoff = cutoff_value(schrodinger_cutoff, "schrodinger_cutoff")
        lower = optional_atol(lower_atol, "lower_atol")
        upper = optional_atol(upper_atol, "upper_atol")
        if lower is not None and upper is not None and upper < lower:
            raise RuntimeError(
                f"upper_atol ({upper!r}) must be greater than or equal to lower_atol ({lower!r})."
            )
        if not isinstance(cutoff_type, str):
            raise TypeError(f"cutoff_type must be a str; got {cutoff_type!r}.")
        comm_handle = _comm.comm_handle(comm)
        memory_limit = checked_memory_limit(memory_limit)
        truncates = truncate_to_fit(on_memory_limit, comm)
        warn_negative_tolerance("lower_atol", lower)
        warn_negative_tolerance("upper_atol", upper)
        initial_operator_arrays = TermArrays.from_keys(keys, h)
        self._initial_state = tuple(state)
        self._engine = _core.Engine(
            family=self._family,
            num_modes=n,
            initial_operator=initial_operator_arrays,
            occupied=state,
            # Both bounds saturate: no term is longer than 2n slots.
            schrodinger_slots=None
            if schrodinger_cutoff is None
            else self._schrodinger_slots(min(schrodinger_cutoff, 2 * n)),
            cutoff=min(cutoff, CUTOFF_MAX),
            cutoff_type=cutoff_type,
            lower_atol=lower,
            upper_atol=upper,
            comm_handle=comm_handle,
            memory_limit=memory_limit,
            truncate_to_fit=truncates,
        )
        self._comm = comm  # the engine uses its handle: keep the communicator alive
        self._build: checkpointed_build.BuildRecord | None = None  # a checkpointed build

    # -- front-end hooks --------------------------------------------------------------------

    @abstractmethod
    def _operator_terms(self, operator: Any) -> tuple[list[tuple[int, ...]], np.ndarray, int]:
        """``(slot keys, Hermitian coefficients, width)`` of a user operator."""

    @abstractmethod
    def _make_operator(self, keys: list[tuple[int, ...]], h: np.ndarray) -> OperatorT:
        """The user-facing operator for Hermitian-basis terms."""

    @abstractmethod
    def _term_keys(self, terms: Sequence[Any]) -> list[tuple[int, ...]]:
        """Slot keys of the terms a user asks for in ``evolved_operator_coefficients``."""

    @abstractmethod
    def _bare_coefficients(self, keys: list[tuple[int, ...]], h: np.ndarray) -> np.ndarray:
        """Complex user-convention coefficients of Hermitian-basis values."""

    @abstractmethod
    def _check_family(self, circuit: Circuit) -> None:
        """TypeError when the circuit's gates belong to the other front-end."""

    def _schrodinger_slots(self, schrodinger_cutoff: int) -> int:
        return schrodinger_cutoff

    # -- building ---------------------------------------------------------------------------

    def build_graph(
        self,
        circuit: Circuit,
        *,
        seed_parameters: ParameterValues = None,
        only_rotate_len_k: int | None = None,
        progress: bool = False,
        checkpoint: str | os.PathLike | None = None,
        checkpoint_every: float = 600.0,
        resume: bool = False,
        max_error: float | None = None,
        rigorous: bool = False,
    ) -> None:
        """Append ``circuit`` to the replayable graph.

        Heisenberg: the new gates act *before* the recorded ones on the state, and their
        parameters come first in the vector; Schrödinger: after, and last. With a seed
        (``seed_parameters``, the full post-call vector; or the circuit's own parameters on
        the first build) truncation is coefficient-informed, otherwise structural: only the
        cutoff truncates, and a ``lower_atol`` or ``upper_atol`` that is set is ignored, with a
        :class:`~monoprop.ToleranceWarning` (not repeated when the build resumes).
        ``progress=True`` shows a progress bar on stderr: layers done of the circuit's,
        and the terms held.

        ``checkpoint=path`` saves the propagator to the directory ``path`` (as :meth:`save`)
        every ``checkpoint_every`` seconds while it builds, and once more when the build
        finishes. After a crash, ``monoprop.load(path).build_graph(circuit, resume=True)``
        (with the same ``seed_parameters`` and ``only_rotate_len_k``) applies the layers still
        to come, and the graph ends bitwise as one uninterrupted build would have left it;
        another circuit, seed or truncation is refused with a :class:`ValueError`. A build
        stopped by Ctrl-C resumes the same way on the same propagator. Until the build
        finishes, the propagator refuses values and every other change.

        ``max_error=eps`` (with a seed) chooses the truncation layer by layer so that
        :meth:`truncation_error` at the seed estimates an error within ``eps`` (``rigorous=True``:
        bounds it within ``eps``); see :func:`monoprop.error_budget`. A build in pieces
        (``checkpoint``) spends one budget over its pieces; resume it with the same
        ``max_error``.

        >>> import tempfile
        >>> from pathlib import Path
        >>> import monoprop
        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> circuit = Circuit(
        ...     [ExpGate(PauliOperator({"XY": 0.5}, 2)), ExpGate(PauliOperator({"ZX": 0.5}, 2))], 2
        ... )
        >>> path = Path(tempfile.mkdtemp()) / "build"
        >>> prop = PauliPropagator(PauliOperator({"ZZ": 1.0}, 2), [0], cutoff=4)
        >>> prop.build_graph(circuit, checkpoint=path, checkpoint_every=0)
        >>> resumed = monoprop.load(path)
        >>> resumed.build_graph(circuit, resume=True)  # finished: nothing left to apply
        >>> resumed.expectation_value([0.3, 0.4]) == prop.expectation_value([0.3, 0.4])
        True
        """
        self._check_state_and_width(circuit)
        k = self._check_only_rotate(only_rotate_len_k)
        self._check_family(circuit)
        budget = checked_budget(max_error, rigorous)
        path, every = checkpointed_build.checked_arguments(checkpoint, checkpoint_every)
        if not isinstance(resume, bool):
            raise TypeError(f"resume must be True or False; got {resume!r}.")
        record = self._build
        if not resume:
            self._check_finished()
            layers_before = self._engine.graph_layers
        elif record is None:
            raise ValueError(
                "resume=True continues a build saved with build_graph(..., checkpoint=path); "
                "this propagator holds none. Load the checkpoint with monoprop.load(path)."
            )
        else:
            layers_before = record.layers_before
        layers = self._layer_arrays(circuit)
        if seed_parameters is not None:
            seed: list[float] | None = parameter_list(seed_parameters, "seed_parameters")
        elif layers_before == 0 and len(circuit.parameters) > 0:
            seed = parameter_list(circuit.parameters, "circuit.parameters")
        else:
            seed = None
        check_budget_applies(budget, k, seeded=seed is not None)
        if seed is None and not resume:  # a resumed build warned when it began
            warn_ignored_tolerances(self._engine, layers, first_build=layers_before == 0)
        with engine_budget(self._engine, *budget):
            self._build_layers(
                layers, seed, k, record, resume, layers_before, path, every, progress
            )

    def _build_layers(
        self,
        layers: LayerArrays,
        seed: list[float] | None,
        k: int | None,
        record: checkpointed_build.BuildRecord | None,
        resume: bool,
        layers_before: int,
        path: str | None,
        every: float,
        progress: bool,
    ) -> None:
        """build_graph's work once its arguments are checked: one build, or one in pieces."""
        if not resume and path is None:
            self._build = None
            with layer_progress(self._engine, "build_graph", progress):
                self._engine.build_graph(layers, seed, k)
            return
        fingerprint = checkpointed_build.fingerprint(layers, seed, k, self._settings())
        if not resume or record is None:
            steps = int(np.count_nonzero(layers.quarter_turns == 0))
            record = checkpointed_build.BuildRecord(
                fingerprint, 0, len(layers), 0, steps, layers_before
            )
        elif record.fingerprint != fingerprint:
            raise ValueError(
                "resume=True needs the build this propagator's checkpoint began: the same "
                "circuit, seed_parameters, only_rotate_len_k, max_error and truncation settings; "
                "these differ. Pass the arguments of the first call."
            )
        self._build = record

        def on_record(record: checkpointed_build.BuildRecord) -> None:
            self._build = record

        with progress_bar("build_graph", progress) as report:
            checkpointed_build.build_in_pieces(
                self._engine,
                layers,
                seed,
                k,
                record,
                on_record,
                None if path is None else functools.partial(_saved_state.save, self, path),
                every,
                report,
            )

    def propagate(
        self,
        circuit: Circuit,
        *,
        only_rotate_len_k: int | None = None,
        progress: bool = False,
        max_error: float | None = None,
        rigorous: bool = False,
    ) -> None:
        """Evolve the operand through ``circuit`` at its bound parameters; records no graph.

        ``progress=True`` shows a progress bar on stderr: layers done of the circuit's,
        and the terms held.

        ``max_error=eps`` chooses the truncation layer by layer so that
        :meth:`truncation_error` estimates an error within ``eps`` (``rigorous=True``: bounds
        it within ``eps``), dropping the new terms that matter least first; see
        :func:`monoprop.error_budget`. The thresholds it chose are :attr:`max_error_thresholds`.

        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> x = PauliOperator({"XI": 1.0}, 2)
        >>> zz = PauliOperator({"ZZ": 1.0}, 2)
        >>> circuit = Circuit([ExpGate(x), ExpGate(zz), ExpGate(x)], 2, parameters=[0.3, 0.2, 0.1])
        >>> prop = PauliPropagator(PauliOperator({"ZI": 1.0}, 2), [], cutoff=4)
        >>> prop.propagate(circuit, max_error=0.05)
        >>> prop.truncation_error().estimate <= 0.05
        True
        """
        k = self._check_only_rotate(only_rotate_len_k)
        self._check_state_and_width(circuit)
        self._check_family(circuit)
        budget = checked_budget(max_error, rigorous)
        check_budget_applies(budget, k, seeded=True)
        layers = self._layer_arrays(circuit)
        parameters = parameter_list(circuit.parameters, "circuit.parameters")
        engine = self._finished_engine()
        with engine_budget(engine, *budget), layer_progress(engine, "propagate", progress):
            engine.propagate(layers, parameters, k)

    @classmethod
    def from_circuit(cls, circuit: Circuit, initial_operator: Any, **config: Any):
        """Construct with ``circuit.initial_state`` and propagate ``circuit`` once.

        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> c = Circuit([ExpGate(PauliOperator({"X": 1}, 2))], 2, parameters=[0.3])
        >>> p = PauliPropagator.from_circuit(c, PauliOperator({"ZZ": 1}, 2), cutoff=4)
        >>> round(p.expectation_value(), 12)
        0.82533561491
        """
        propagator = cls(initial_operator, list(circuit.initial_state), **config)
        propagator.propagate(circuit)
        return propagator

    def _settings(self) -> tuple:
        """What decides truncation, for a checkpoint's fingerprint."""
        engine = self._engine
        return (
            engine.schrodinger,
            engine.cutoff,
            engine.cutoff_type,
            engine.lower_atol,
            engine.upper_atol,
            engine.max_error,
            engine.rigorous,
        )

    def _check_state_and_width(self, circuit: Circuit) -> None:
        if not isinstance(circuit, Circuit):
            raise TypeError(f"expected a monoprop Circuit; got {type(circuit).__name__}.")
        if circuit._state_given and set(circuit.initial_state) != set(self._initial_state):
            raise ValueError(
                f"Circuit initial_state {list(circuit.initial_state)} does not match the "
                f"propagator's initial state {list(self._initial_state)}; build the circuit "
                "without initial_state or with the same one."
            )
        if circuit.system_size != self.num_modes:
            raise ValueError(
                f"Circuit system_size {circuit.system_size} does not match propagator width "
                f"{self.num_modes}."
            )

    def _check_only_rotate(self, k: int | None) -> int | None:
        if k is None:
            return None
        return check_int(
            k,
            "only_rotate_len_k",
            minimum=1,
            maximum=2 * self.num_modes,
            type_error=ValueError,
            message="{name}={value} is out of range; must be 0 < k <= 2*num_qubits (= {maximum}).",
        )

    def _layer_arrays(self, circuit: Circuit) -> LayerArrays:
        """The circuit as the core takes it: one layer per generator term (and per quarter turn
        of a Clifford gate), in order."""
        return layer_arrays(circuit, self.num_modes, self._layer_coefficients)

    def _layer_coefficients(self, g: np.ndarray) -> np.ndarray:
        """The core's ``h`` in ``exp(+iθ h M)`` for a layer whose generator term has the
        structural coefficient ``g`` (see :func:`~monoprop.circuit.expand_monomials`).

        Pauli layers use the Pauli coefficient as it is: ``h = g``. The Majorana front-end
        overrides this.
        """
        return g

    # -- contraction and read-out -----------------------------------------------------------

    def contract_partially(
        self, parameters: ParameterValues = None, *, inplace: bool = True
    ) -> np.ndarray:
        """Fold the graph at ``parameters`` into the operand.

        Returns the resulting real coefficients in store order: for Majorana terms those of
        the Hermitian monomials ``M_S = i**C(w, 2) m_S`` (``w`` factors), for Pauli terms
        the Pauli coefficients.
        """
        return self._finished_engine().contract(parameter_list(parameters), bool(inplace))

    def evolved_operator(
        self, parameters: ParameterValues = None, *, atol: float = 1e-12
    ) -> OperatorT:
        """The evolved operator (Heisenberg) or state ``2^n ρ(θ)`` (Schrödinger)."""
        atol = check_finite(float(atol), "atol")
        terms = TermArrays(*self._finished_engine().evolved_terms(parameter_list(parameters), atol))
        return self._make_operator(terms.keys(), terms.coefficients)

    def evolved_operator_coefficients(
        self, terms: Sequence[Any], parameters: ParameterValues = None
    ) -> np.ndarray:
        """Coefficients of the requested terms (0 where absent), in request order."""
        keys = self._term_keys(terms)
        h = self._finished_engine().coefficients_of(
            TermArrays.from_keys(keys), parameter_list(parameters)
        )
        return self._bare_coefficients(keys, h)

    def update_initial_operator(self, new_operator: Any) -> None:
        """Heisenberg: reset the observable's coefficients; Schrödinger: replace the observable."""
        _check_coefficients(new_operator, "new_operator")
        keys, h, n = self._operator_terms(new_operator)
        if n != self.num_modes:
            raise ValueError(
                f"the new operator acts on {n} {self._unit}s but the propagator on "
                f"{self.num_modes}; build it with the propagator's width."
            )
        self._finished_engine().update_initial_operator(TermArrays.from_keys(keys, h))

    # -- copies and saves --------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> None:
        """Writes this propagator to the directory ``path``; :func:`monoprop.load` reads it back.

        Everything is saved: class, settings and truncation, the operator (or Schrödinger state)
        and reference state, the recorded graph with its parameter axis and mapping, Clifford
        frames and noise layers. The directory holds a JSON header (``monoprop.json``) and one
        ``.npy`` file an array, each with a CRC-32. It is written under a hidden temporary name
        and then renamed, so a crash mid-save never replaces an earlier save at ``path``; a
        directory at ``path`` that is not a monoprop save is never overwritten
        (:class:`FileExistsError`). Loaded with the same thread count, the values and gradients
        are bitwise this one's; with another, equal up to rounding. On several MPI ranks the save
        is collective: each rank writes its part (``path/rank-r-of-R``), and the save appears
        at ``path`` once every part is written; ``monoprop.load(path, comm=comm)`` loads it on
        as many ranks.
        """
        _saved_state.save(self, path)

    def __reduce__(self):
        """Pickles through the same arrays as :meth:`save` (no pickled code inside)."""
        return _saved_state.restore, (type(self), *_saved_state.state(self))

    def __copy__(self):
        self._engine.check_valid()
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)  # shares the engine
        return clone

    def __deepcopy__(self, memo: dict):
        """An independent copy through the arrays :meth:`save` writes: its values and gradients
        are bitwise this one's. It runs on the same communicator (collectively, on several
        ranks)."""
        arrays = self._engine.save_state()
        clone = object.__new__(type(self))
        for name, value in self.__dict__.items():
            if name == "_engine":
                value = _core.restore_engine(
                    arrays,
                    comm_handle=_comm.comm_handle(self._comm),
                    threads=self.num_threads,
                    memory_limit=self.memory_limit,
                    truncate_to_fit=self._engine.truncate_to_fit,
                )
            elif name != "_comm":
                value = copy.deepcopy(value, memo)
            clone.__dict__[name] = value
        return clone

    def __repr__(self) -> str:
        picture = "Schrodinger" if self.schrodinger else "Heisenberg"
        return (
            f"{type(self).__name__}({self.num_modes} {self._unit}s, {picture}, size={self.size()}, "
            f"graph_layers={self.graph_layers}, n_parameters={self.n_parameters})"
        )


def _warn_wrong_case_threads() -> None:
    """Warn, once per process, when only the upper-case spelling of the thread variable is set:
    the core reads ``monoprop_NUM_THREADS`` and would silently ignore the value."""
    global _warned_wrong_case_threads
    if _warned_wrong_case_threads:
        return
    if _WRONG_CASE_THREADS_VARIABLE in os.environ and _THREADS_VARIABLE not in os.environ:
        _warned_wrong_case_threads = True
        warnings.warn(
            f"{_WRONG_CASE_THREADS_VARIABLE} is set but monoprop reads {_THREADS_VARIABLE} "
            f"(lower-case prefix); the value is ignored. Set {_THREADS_VARIABLE} instead.",
            UserWarning,
            stacklevel=caller_stacklevel(),
        )


def _check_coefficients(operator: Any, argument: str) -> None:
    """ValueError naming the first NaN or infinite coefficient of the operator ``argument``.

    Operator constructors refuse such coefficients, but ``terms`` (Pauli and Majorana
    operators: a dict) and ``coefficients`` (FermiOperator: a list) can be edited afterwards.
    Checked before any conversion, so the message names the user's term.
    """
    fix = "give every term a finite coefficient"
    terms = getattr(operator, "terms", None)
    if isinstance(terms, Mapping):
        check_finite_array(list(terms.values()), f"{argument}.terms", fix=fix, labels=list(terms))
    coefficients = getattr(operator, "coefficients", None)
    if isinstance(coefficients, list):
        check_finite_array(coefficients, f"{argument}.coefficients", fix=fix)
