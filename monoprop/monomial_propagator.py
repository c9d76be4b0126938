"""The propagator base class shared by the Majorana and Pauli front-ends.

A propagator holds an operand (Heisenberg: the observable; Schrödinger: the
state ``2^n ρ``) as real coefficients on Hermitian monomials, applies circuits
to it with truncation, and can record what it did as a graph that replays at
any parameter vector for values and exact gradients. The numerical work lives
in ``monoprop._core``; this module converts arguments and checks them before
anything changes.
"""

from __future__ import annotations

import copy
import functools
import os
import sys
import warnings
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any, Generic, Literal, TypeVar, overload

import numpy as np

from . import _comm, _core, _saved_state, checkpointed_build
from .arguments import (
    ParameterValues,
    cutoff_value,
    occupied_modes,
    optional_atol,
    parameter_list,
)
from .circuit import Circuit, circuit_layers, validate_parameter_mapping
from .core_arrays import LayerArrays, NoiseArrays, TermArrays
from .exceptions import NumberOfModesInvalidError, StaleFunctionalError, ToleranceWarning
from .points import parameter_points
from .truncation_budget import check_budget_applies, checked_budget, engine_budget
from .truncation_error import TruncationError
from .validation import check_finite, check_finite_array, check_int

OperatorT = TypeVar("OperatorT")

# Cutoffs beyond this are all equivalent (a term has at most 2048 slots); the
# core stores the bound as a 64-bit integer.
_CUTOFF_MAX = 2**62

# The core reads the thread count from this variable; the upper-case spelling is a common slip.
_THREADS_VARIABLE = "monoprop_NUM_THREADS"
_WRONG_CASE_THREADS_VARIABLE = "MONOPROP_NUM_THREADS"
_warned_wrong_case_threads = False  # the slip is reported once per process

__all__ = ["MonomialPropagator"]


class MonomialPropagator(ABC, Generic[OperatorT]):
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
        memory_limit = _memory_limit(memory_limit)
        truncate_to_fit = _truncate_to_fit(on_memory_limit, comm)
        _warn_negative_tolerance("lower_atol", lower)
        _warn_negative_tolerance("upper_atol", upper)
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
            cutoff=min(cutoff, _CUTOFF_MAX),
            cutoff_type=cutoff_type,
            lower_atol=lower,
            upper_atol=upper,
            comm_handle=comm_handle,
            memory_limit=memory_limit,
            truncate_to_fit=truncate_to_fit,
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
            _warn_ignored_tolerances(self._engine, layers, first_build=layers_before == 0)
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
            with _layer_progress(self._engine, "build_graph", progress):
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

        with _progress_bar("build_graph", progress) as report:
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
        with engine_budget(engine, *budget), _layer_progress(engine, "propagate", progress):
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

    def _check_finished(self) -> None:
        """Refuses while a checkpointed build is unfinished (its graph lacks layers)."""
        if self._build is not None and not self._build.finished:
            raise RuntimeError(
                f"this propagator holds a build stopped after {self._build.steps_done} of its "
                f"{self._build.steps} layers (a checkpoint); finish it with "
                "build_graph(circuit, resume=True) before anything else."
            )

    def _finished_engine(self) -> Any:
        self._check_finished()
        return self._engine

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
        keys, g, mapping, gate_indices, turns, noise = circuit_layers(circuit, self.num_modes)
        h = self._layer_coefficients(np.asarray(g, dtype=np.float64))
        return LayerArrays(
            terms=TermArrays.from_keys(keys, h),
            parameters=np.asarray(mapping, dtype=np.int32),
            gates=np.asarray(gate_indices, dtype=np.int32),
            n_parameters=circuit.n_parameters,
            n_gates=circuit.n_gates,
            quarter_turns=np.asarray(turns, dtype=np.int8),
            noise=_noise_arrays(noise) if any(noise) else None,
        )

    def _layer_coefficients(self, g: np.ndarray) -> np.ndarray:
        """The core's ``h`` in ``exp(+iθ h M)`` for a layer whose generator term has the
        structural coefficient ``g`` (see :func:`~monoprop.circuit.expand_monomials`).

        Pauli layers use the Pauli coefficient as it is: ``h = g``. The Majorana front-end
        overrides this.
        """
        return g

    # -- evaluation -------------------------------------------------------------------------

    def expectation_value(self, parameters: ParameterValues = None) -> Any:
        """Expectation value at ``parameters`` (the graph's parameter vector).

        A 2-D array of points, shape ``(K, n_parameters)``, gives the ``(K,)`` values, from one
        replay of the graph for all of them (each bitwise the value of a call at that point).

        >>> import numpy as np
        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
        >>> prop.build_graph(Circuit([ExpGate(PauliOperator({"X": 1.0}, 1))], 1))
        >>> prop.expectation_value(np.array([[0.0], [np.pi / 4]])).round(12)  # cos(2θ)
        array([1., 0.])
        """
        points = parameter_points(parameters)
        if points is not None:
            return self._finished_engine().evaluate_points(points, False)
        return self._finished_engine().expectation_value(parameter_list(parameters))

    def expectation_value_and_gradient(
        self, parameters: ParameterValues = None
    ) -> tuple[Any, np.ndarray]:
        """Value and full gradient from one forward and one reverse sweep of the graph.

        A 2-D array of points, shape ``(K, n_parameters)``, gives ``(K,)`` values and
        ``(K, n_parameters)`` gradients, from one forward and one reverse sweep for all of them.
        """
        points = parameter_points(parameters)
        if points is not None:
            return self._finished_engine().evaluate_points(points, True)
        return self._finished_engine().expectation_value_and_gradient(parameter_list(parameters))

    def gradient(self, parameters: ParameterValues = None) -> np.ndarray:
        """Gradient with respect to the graph's parameter vector."""
        return self.expectation_value_and_gradient(parameters)[1]

    def truncation_error(self, parameters: ParameterValues = None) -> TruncationError:
        """How far ``expectation_value(parameters)`` can be from the untruncated value.

        Returns a :class:`~monoprop.TruncationError` ``(bound, estimate)``: ``bound`` is
        rigorous, ``|exact - expectation_value(parameters)| <= bound`` whatever the state,
        and ``estimate`` a typical error under a model (see :class:`~monoprop.TruncationError`).
        It counts every sine branch the propagator dropped: those ``propagate`` (and an in-place
        ``contract_partially``) dropped from the operand, and those a replay of the graph at
        ``parameters`` drops (terms the graph only scales, because at its seed they moved less
        than ``lower_atol`` or their partner was past the cutoff). ``parameters`` is what
        ``expectation_value`` takes: ``None`` (no graph, or a graph without parameters) bounds
        what ``propagate`` dropped. ``update_initial_operator`` starts the count afresh in the
        Heisenberg picture (a new operand); the Schrödinger state keeps its count.

        The cost is one forward replay of the graph, as ``expectation_value``. Refused
        (``RuntimeError``) after ``only_rotate_len_k``, which leaves terms unrotated without
        recording them.

        >>> import math
        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> x = PauliOperator({"X": 1.0}, 1)
        >>> circuit = Circuit([ExpGate(x), ExpGate(x)], 1, parameters=[math.pi / 4, 0.05])
        >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1, lower_atol=0.5)
        >>> prop.propagate(circuit)  # drops sin(0.1) Y: it moves less than lower_atol
        >>> exact = math.cos(2 * (math.pi / 4 + 0.05))
        >>> error = prop.truncation_error()
        >>> round(error.bound, 12), round(abs(exact - prop.expectation_value()), 12)
        (0.099833416647, 0.099833416647)
        """
        engine = self._finished_engine()
        points = parameter_points(parameters)
        if points is not None:
            _, error = _points_with_error(engine, points, False, 0.0, None)
            return error
        _, bound, estimate = engine.expectation_value_with_error(parameter_list(parameters))
        return TruncationError(bound, estimate)

    expval = expectation_value
    expval_and_grad = expectation_value_and_gradient
    grad = gradient

    @overload
    def expectation_value_functional(
        self, pare_threshold: float | None = None, *, with_error: Literal[False] = False
    ) -> Callable[[ParameterValues], float]: ...

    @overload
    def expectation_value_functional(
        self, pare_threshold: float | None = None, *, with_error: Literal[True]
    ) -> Callable[[ParameterValues], tuple[float, TruncationError]]: ...

    def expectation_value_functional(
        self, pare_threshold: float | None = None, *, with_error: bool = False
    ) -> Callable[[ParameterValues], Any]:
        """A callable ``fn(parameters) -> float`` bound to the current graph and operator.

        It keeps the parameter mapping it was made with, raises
        :class:`~monoprop.exceptions.StaleFunctionalError` once the graph or operator changes,
        and borrows the propagator: keep the propagator alive while you use it.
        ``fn.check()`` raises the error a call would raise, without replaying: a cache of
        earlier results uses it to tell whether they still hold.

        ``pare_threshold`` (default ``None``, which replays the graph exactly; a coefficient
        magnitude, ``>= 0``): in each replay, a recorded rotation of a pair whose larger
        coefficient ``c`` has ``|sin(phi) * c| < pare_threshold`` is applied as its
        ``cos(phi)`` scaling only, dropping rotated parts smaller than the threshold. The graph
        itself is unchanged. Typical: ``1e-10`` to ``1e-12``. What paring drops counts in the
        truncation error.

        ``with_error=True``: ``fn(parameters) -> (value, TruncationError)``, the value with its
        :meth:`truncation_error`, from the same replay (it costs a few percent more than the
        value alone).

        >>> import math
        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1, lower_atol=0.5)
        >>> x = PauliOperator({"X": 1.0}, 1)
        >>> prop.build_graph(Circuit([ExpGate(x), ExpGate(x)], 1, parameters=[math.pi / 4, 0.05]))
        >>> fn = prop.expectation_value_functional(with_error=True)
        >>> value, error = fn([math.pi / 4, 0.05])
        >>> round(value, 12), round(error.bound, 12)  # the exact value is -sin(0.1)
        (0.0, 0.099833416647)
        """
        if not isinstance(with_error, bool):
            raise TypeError(f"with_error must be True or False; got {with_error!r}.")
        engine, mapping = self._functional_state()
        pare = _pare(pare_threshold)

        if with_error:

            def value_with_error(parameters: ParameterValues = None):
                points = parameter_points(parameters)
                if points is not None:
                    return _points_with_error(engine(), points, False, pare, mapping)
                value, bound, estimate = engine().expectation_value_with_error(
                    parameter_list(parameters), pare, mapping
                )
                return value, TruncationError(bound, estimate)

            return _with_check(value_with_error, engine)

        def expectation_value(parameters: ParameterValues = None) -> Any:
            points = parameter_points(parameters)
            if points is not None:
                return engine().evaluate_points(points, False, pare, mapping)
            return engine().expectation_value(parameter_list(parameters), pare, mapping)

        return _with_check(expectation_value, engine)

    @overload
    def expectation_value_and_gradient_functional(
        self, pare_threshold: float | None = None, *, with_error: Literal[False] = False
    ) -> Callable[[ParameterValues], tuple[float, np.ndarray]]: ...

    @overload
    def expectation_value_and_gradient_functional(
        self, pare_threshold: float | None = None, *, with_error: Literal[True]
    ) -> Callable[[ParameterValues], tuple[float, np.ndarray, TruncationError]]: ...

    def expectation_value_and_gradient_functional(
        self, pare_threshold: float | None = None, *, with_error: bool = False
    ) -> Callable[[ParameterValues], Any]:
        """A callable ``fn(parameters) -> (value, gradient)``.

        See :meth:`expectation_value_functional` for what it keeps and when it refuses.
        ``with_error=True``: ``fn(parameters) -> (value, gradient, TruncationError)``, the
        :meth:`truncation_error` counted in the gradient's forward sweep.

        >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
        >>> prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
        >>> prop.build_graph(Circuit([ExpGate(PauliOperator({"X": 1.0}, 1))], 1))
        >>> fn = prop.expectation_value_and_gradient_functional()
        >>> value, grad = fn([0.25])     # cos(0.5), -2 sin(0.5)
        >>> round(value, 6), grad.round(6).tolist()
        (0.877583, [-0.958851])
        """
        if not isinstance(with_error, bool):
            raise TypeError(f"with_error must be True or False; got {with_error!r}.")
        engine, mapping = self._functional_state()
        pare = _pare(pare_threshold)

        if with_error:

            def with_truncation_error(parameters: ParameterValues = None):
                points = parameter_points(parameters)
                if points is not None:
                    return _points_with_error(engine(), points, True, pare, mapping)
                value, gradient, bound, estimate = (
                    engine().expectation_value_and_gradient_with_error(
                        parameter_list(parameters), pare, mapping
                    )
                )
                return value, gradient, TruncationError(bound, estimate)

            return _with_check(with_truncation_error, engine)

        def expectation_value_and_gradient(parameters: ParameterValues = None):
            points = parameter_points(parameters)
            if points is not None:
                return engine().evaluate_points(points, True, pare, mapping)
            return engine().expectation_value_and_gradient(
                parameter_list(parameters), pare, mapping
            )

        return _with_check(expectation_value_and_gradient, engine)

    expval_functional = expectation_value_functional
    expval_and_grad_functional = expectation_value_and_gradient_functional

    def _functional_state(self) -> tuple[Callable[[], Any], list[int] | None]:
        """A checked accessor to the engine, and the mapping to replay with."""
        self._finished_engine().check_valid()
        owner = weakref.ref(self)
        engine = self._engine
        generation, layers = engine.generation, engine.graph_layers
        mapping = list(engine.parameter_mapping()) if layers else None

        def checked_engine():
            if owner() is None:
                raise RuntimeError(
                    "the propagator this functional was made from has been garbage-collected; "
                    "keep the propagator alive while you use its functionals."
                )
            engine.check_valid()
            if engine.generation != generation:
                raise StaleFunctionalError(
                    "MP object has been modified since the functional was created. Previous "
                    f"number of graph layers was {layers} and now is {engine.graph_layers}. "
                    "Create a new functional."
                )
            return engine

        return checked_engine, mapping

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

    # -- introspection ----------------------------------------------------------------------

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

    @property
    def memory_limit(self) -> int | None:
        """The memory budget in bytes given at construction, or None (read-only).

        None means ``monoprop_MEMORY_LIMIT`` (bytes) as read at construction, else the default
        set when each operation starts: what the process holds plus 80% of the memory then
        available, at most 90% of the physical memory. Copies keep the value; a save does not
        record it, since a budget belongs to the machine (a loaded propagator has None).

        >>> from monoprop import PauliOperator, PauliPropagator
        >>> prop = PauliPropagator(PauliOperator({"Z": 1}, 1), [], cutoff=1, memory_limit=2**32)
        >>> prop.memory_limit
        4294967296
        """
        return self._engine.memory_limit

    @property
    def on_memory_limit(self) -> str:
        """``"raise"`` or ``"truncate"``, as given at construction (read-only): what a layer that
        would pass the memory budget does. Copies keep it; a save does not record it."""
        return "truncate" if self._engine.truncate_to_fit else "raise"

    @property
    def max_error_thresholds(self) -> list[tuple[int, float]]:
        """``(layer, threshold)`` for each layer whose new terms the last ``propagate`` or
        ``build_graph`` with ``max_error`` dropped: layers count from 0 in the order that call
        applied them (over all its pieces, for a build with ``checkpoint``; a resumed build
        lists those since it resumed). A layer dropped every new term whose weight
        ``|sin φ · c|`` was at most its threshold, as a ``lower_atol`` of that layer would, and
        the new terms above it whose branch cannot reach the state (they cost nothing).

        >>> from monoprop import PauliOperator, PauliPropagator
        >>> PauliPropagator(PauliOperator({"Z": 1}, 1), [], cutoff=1).max_error_thresholds
        []
        """
        return [(int(layer), float(t)) for layer, t in self._engine.budget_thresholds]

    @property
    def memory_truncations(self) -> list[tuple[int, float]]:
        """The layers the last :meth:`propagate` or :meth:`build_graph` thinned to fit the memory
        budget (``on_memory_limit="truncate"``), as ``(layer, lower_atol)`` pairs (read-only).

        ``layer`` counts that call's rotation and noise layers from 0 in application order
        (Clifford gates, folded into a frame, are not layers); ``lower_atol`` is the threshold
        the layer's new terms had to pass: a term with ``|sin(phi) * c| <= lower_atol`` was
        only scaled by ``cos(phi)``. Later layers of the call scan with at least that
        ``lower_atol``. Empty when nothing was thinned; a failed call leaves the last record.
        The thresholds depend on the room the process has at that moment (its resident
        memory), so two runs may differ; a rerun of the same thresholds gives the same
        operator.

        >>> from monoprop import PauliOperator, PauliPropagator
        >>> PauliPropagator(PauliOperator({"Z": 1}, 1), [], cutoff=1).memory_truncations
        []
        """
        return [(int(layer), float(atol)) for layer, atol in self._engine.memory_truncations]

    @property
    def effective_lower_atol(self) -> float | None:
        """The largest ``lower_atol`` the last :meth:`propagate` or :meth:`build_graph` used
        (read-only): :attr:`lower_atol`, or the highest threshold a memory truncation raised it
        to (:attr:`memory_truncations`).

        >>> from monoprop import PauliOperator, PauliPropagator
        >>> prop = PauliPropagator(PauliOperator({"Z": 1}, 1), [], cutoff=1, lower_atol=1e-5)
        >>> prop.effective_lower_atol
        1e-05
        """
        raised = [atol for _, atol in self.memory_truncations]
        lower = self.lower_atol
        if lower is not None and lower >= 0:
            raised.append(lower)
        return max(raised) if raised else lower

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

    @property
    def cutoff(self) -> int:
        """The structural truncation bound: a new term is made only when its size is at most
        ``cutoff`` (Pauli: its weight in qubits; Majorana: counted as ``cutoff_type`` says),
        or when it is fully paired (a Z-string), or when ``upper_atol`` lets it through.

        Settable to any int >= 0 (anything else raises ``TypeError``; values above the largest
        possible size keep every term). A new value takes effect at the next ``build_graph``
        or ``propagate``; the graph already recorded, and functionals, are unchanged.
        """
        return self._engine.cutoff

    @cutoff.setter
    def cutoff(self, value: int) -> None:
        self._engine.cutoff = min(cutoff_value(value), _CUTOFF_MAX)

    @property
    def lower_atol(self) -> float | None:
        """The activity tolerance (a coefficient magnitude, in the observable's units), or None.

        Under a gate rotating by ``phi``, an anticommuting term with coefficient ``c`` is
        active, and may make or rotate with its partner, only when
        ``|sin(phi) * c| > lower_atol``; None makes every such term active. It needs
        coefficients: ``propagate`` and a seeded ``build_graph`` use it, a build without a seed
        ignores it and warns (:class:`~monoprop.ToleranceWarning`).

        Settable to a finite float or None (``TypeError`` for another type, ``ValueError`` for
        NaN or infinity, ``RuntimeError`` above a set ``upper_atol``); a negative value means
        the same as None and warns. A new value takes effect at the next ``build_graph`` or
        ``propagate``; the graph already recorded is unchanged.
        """
        return self._engine.lower_atol

    @lower_atol.setter
    def lower_atol(self, value: float | None) -> None:
        value = optional_atol(value, "lower_atol")
        upper = self._engine.upper_atol
        if value is not None and upper is not None and value > upper:
            raise RuntimeError(
                f"New lower_atol ({value!r}) must be less than or equal to current upper_atol "
                f"({upper!r})."
            )
        _warn_negative_tolerance("lower_atol", value)
        self._engine.lower_atol = value

    @property
    def upper_atol(self) -> float | None:
        """The rescue tolerance (same units as :attr:`lower_atol`), or None.

        An active term with ``|sin(phi) * c| > upper_atol`` makes or rotates with its partner
        even when the partner is larger than :attr:`cutoff`; None applies the cutoff to every
        term. Like ``lower_atol`` it needs coefficients (``propagate``, a seeded
        ``build_graph``); a build without a seed ignores it and warns.

        Settable to a finite float or None (``TypeError`` for another type, ``ValueError`` for
        NaN or infinity, ``RuntimeError`` below a set ``lower_atol``); a negative value lets
        every active term through, even one the rotation does not move, and warns (0 lets
        every term that moves through). A new value takes effect at the next ``build_graph``
        or ``propagate``; the graph already recorded is unchanged.
        """
        return self._engine.upper_atol

    @upper_atol.setter
    def upper_atol(self, value: float | None) -> None:
        value = optional_atol(value, "upper_atol")
        lower = self._engine.lower_atol
        if value is not None and lower is not None and value < lower:
            raise RuntimeError(
                f"New upper_atol ({value!r}) must be greater than or equal to current lower_atol "
                f"({lower!r})."
            )
        _warn_negative_tolerance("upper_atol", value)
        self._engine.upper_atol = value

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


@contextmanager
def _layer_progress(engine: Any, what: str, enabled: bool) -> Iterator[None]:
    """While the block runs, show the engine's progress as one tqdm bar on stderr (see
    :func:`_progress_bar`). Nothing when not enabled."""
    if not enabled:
        yield
        return
    with _progress_bar(what, enabled) as report:
        engine.set_progress(report)
        try:
            yield
        finally:
            engine.set_progress(None)


@contextmanager
def _progress_bar(
    what: str, enabled: bool
) -> Iterator[Callable[[int, int, int, float], None] | None]:
    """A ``report(layers done, layers, terms held, bound)`` drawing one tqdm bar on stderr
    while the block runs, with the terms and, once truncation dropped something, the bound
    accumulated so far as a postfix; ``None`` when not enabled."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm  # imported only when asked for: importing monoprop stays light

    # The total is known only from the first report, so the bar is made then; a resumed
    # build's first report is where it stands.
    bar = None

    def report(done: int, total: int, terms: int, bound: float) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(
                total=total,
                initial=done,
                desc=what,
                unit="layer",
                file=sys.stderr,
                dynamic_ncols=True,
            )
        if bound > 0.0:
            bar.set_postfix(terms=terms, bound=f"{bound:.2e}", refresh=False)
        else:
            bar.set_postfix(terms=terms, refresh=False)
        bar.update(done - bar.n)

    try:
        yield report
    finally:
        if bar is not None:
            bar.close()


def _points_with_error(
    engine: Any, points: np.ndarray, gradient: bool, pare: float, mapping: list[int] | None
) -> tuple:
    """``(values, [gradients,] TruncationError of (K,) arrays)`` at the rows of ``points``.

    The error bars come point by point: each replay adds up what it drops on its own.
    """
    rows = [
        engine.expectation_value_and_gradient_with_error(row.tolist(), pare, mapping)
        if gradient
        else engine.expectation_value_with_error(row.tolist(), pare, mapping)
        for row in points
    ]
    values = np.array([row[0] for row in rows], dtype=np.float64)
    error = TruncationError(
        np.array([row[-2] for row in rows], dtype=np.float64),
        np.array([row[-1] for row in rows], dtype=np.float64),
    )
    if not gradient:
        return values, error
    gradients = np.array([row[1] for row in rows], dtype=np.float64).reshape(len(rows), -1)
    return values, gradients, error


def _with_check(functional: Callable, checked_engine: Callable[[], Any]) -> Callable:
    """Give a functional its ``check()``: the staleness and validity tests of a call, run
    without replaying the graph."""

    def check() -> None:
        checked_engine()

    functional.check = check  # type: ignore[attr-defined]
    return functional


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
            stacklevel=_caller_stacklevel(),
        )


def _warn_negative_tolerance(name: str, value: float | None) -> None:
    """Say what a negative ``lower_atol`` or ``upper_atol`` does (the value is kept).

    The engine compares ``|sin(phi) * c_a| > tolerance`` (strictly), which a negative tolerance
    passes for every term, even one the rotation does not move (``sin(phi) * c_a = 0``). So a
    negative ``lower_atol`` makes every anticommuting term active: exactly ``None``. A negative
    ``upper_atol`` lets every active term ask for its partner whatever the cutoff, wherever
    coefficients steer truncation, even a term the rotation does not move (a zero angle or
    coefficient, as at a seed of zeros); ``0`` lets through only the terms that move. (A
    negative ``upper_atol`` needs ``lower_atol`` None or negative, so every anticommuting term
    is active then.)
    """
    if value is None or value >= 0:
        return
    if name == "lower_atol":
        text = (
            f"lower_atol={value!r} is negative, so every anticommuting term is active "
            "(|sin(phi) * c| > lower_atol always holds): the same as lower_atol=None. Pass None "
            "for that, or a positive value to leave small rotations out."
        )
    else:
        text = (
            f"upper_atol={value!r} is negative, so wherever coefficients steer truncation "
            "(propagate, seeded builds) every active term keeps its partner whatever the cutoff "
            "(|sin(phi) * c| > upper_atol always holds), even a term the rotation does not move "
            "(a zero angle or coefficient, as at a seed of zeros, where the graph then keeps "
            "every partner). upper_atol=0 lets through only the terms that move: pass 0 for "
            "that, or None to let the cutoff decide."
        )
    warnings.warn(text, ToleranceWarning, stacklevel=_caller_stacklevel())


def _warn_ignored_tolerances(engine: Any, layers: LayerArrays, *, first_build: bool) -> None:
    """Warn when a build without a seed would ignore ``lower_atol``/``upper_atol``.

    Without parameter values there are no coefficients to compare the tolerances with, so
    the build is structural: every anticommuting term is active and only the cutoff decides.
    Only tolerances that would act with a seed are named (a negative ``lower_atol`` acts as
    ``None`` anyway), and only when the circuit has a layer they could act on (a rotation or
    a noise channel; Clifford gates are exact).
    """
    lower, upper = engine.lower_atol, engine.upper_atol
    named = [
        f"{name}={value!r}"
        for name, value in (("lower_atol", lower), ("upper_atol", upper))
        if value is not None and (name == "upper_atol" or value >= 0)
    ]
    if not named or not np.any(np.asarray(layers.quarter_turns) == 0):
        return
    bind = " or bind the circuit's parameters" if first_build else ""
    warnings.warn(
        f"build_graph has no seed, so it builds structurally and ignores {' and '.join(named)}: "
        "without parameter values there are no coefficients to compare with, and only the "
        f"cutoff truncates. Pass seed_parameters= (the full parameter vector after this call)"
        f"{bind} to let {'it' if len(named) == 1 else 'them'} act, or set "
        f"{'it' if len(named) == 1 else 'them'} to None to build structurally without this "
        "warning.",
        ToleranceWarning,
        stacklevel=_caller_stacklevel(),
    )


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning issued by this function's caller at the first
    frame outside the monoprop package: the user's line, whichever front-end was called."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame: FrameType | None = sys._getframe(1)  # the caller: stacklevel 1
    level = 1
    while (
        frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == package
    ):
        frame = frame.f_back
        level += 1
    return level


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


def _memory_limit(value: Any) -> int | None:
    """``memory_limit`` as a plain int (bytes, from 1 to 2**64 - 1), or None."""
    if value is None:
        return None
    return check_int(
        value,
        "memory_limit",
        minimum=1,
        maximum=2**64 - 1,
        message="memory_limit must be a number of bytes (an int) or None; got {value!r} "
        "({type}). Pass for example memory_limit=8 * 10**9 for 8 GB.",
        range_message="memory_limit={value!r} is not a number of bytes from 1 to 2**64 - 1; pass "
        "a positive int such as 8 * 10**9 for 8 GB, or None for the default budget.",
    )


def _truncate_to_fit(on_memory_limit: Any, comm: Any) -> bool:
    """``on_memory_limit`` checked: True for ``"truncate"``, False for ``"raise"``."""
    if not isinstance(on_memory_limit, str):
        raise TypeError(
            f"on_memory_limit must be the str 'raise' or 'truncate'; got {on_memory_limit!r} "
            f"({type(on_memory_limit).__name__})."
        )
    if on_memory_limit not in ("raise", "truncate"):
        raise ValueError(
            f"on_memory_limit={on_memory_limit!r} is not a choice; pass 'raise' (stop with a "
            "MemoryError) or 'truncate' (drop the smallest new terms to fit)."
        )
    if on_memory_limit == "truncate" and comm is not None and int(comm.Get_size()) > 1:
        raise ValueError(
            f"on_memory_limit='truncate' thins layers on one MPI rank only, and comm has "
            f"{int(comm.Get_size())} ranks; pass on_memory_limit='raise' or run on one rank."
        )
    return on_memory_limit == "truncate"


def _pare(threshold: float | None) -> float:
    if threshold is None:
        return 0.0
    value = optional_atol(threshold, "pare_threshold")
    assert value is not None  # threshold is not None
    if value < 0:
        raise ValueError(f"pare_threshold must be >= 0; got {threshold!r}.")
    return value


def _noise_arrays(noise: list[Any]) -> NoiseArrays:
    """The core's per-layer noise fields; rotation and Clifford layers are kind 0."""
    rows = [
        (0, 0, 0, 0.0, 0.0, 0.0, 0.0)
        if entry is None
        else (
            entry[0].kind,
            entry[0].form,
            entry[0].patterns,
            entry[0].alpha,
            entry[0].beta,
            entry[1],
            entry[2],
        )
        for entry in noise
    ]
    return NoiseArrays(*(list(column) for column in zip(*rows, strict=True)))
