"""The truncation settings of a propagator: cutoff, tolerances, memory budget and error budget.

The settable ones (``cutoff``, ``lower_atol``, ``upper_atol``) are checked here, at
construction and when assigned, and a tolerance that does something other than it seems to
(a negative one; one a structural build ignores) warns with what it does. The read-only ones
report what construction fixed (``memory_limit``, ``on_memory_limit``) and what the last
``propagate`` or ``build_graph`` chose (``max_error_thresholds``, ``memory_truncations``,
``effective_lower_atol``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .arguments import cutoff_value, optional_atol
from .core_arrays import LayerArrays
from .exceptions import ToleranceWarning
from .propagator_state import PropagatorState
from .stacklevel import caller_stacklevel
from .validation import check_int

__all__ = [
    "CUTOFF_MAX",
    "TruncationSettings",
    "checked_memory_limit",
    "checked_pare",
    "truncate_to_fit",
    "warn_ignored_tolerances",
    "warn_negative_tolerance",
]

# Cutoffs beyond this are all equivalent (a term has at most 2048 slots); the
# core stores the bound as a 64-bit integer.
CUTOFF_MAX = 2**62


class TruncationSettings(PropagatorState):
    """The truncation settings of :class:`~monoprop.MonomialPropagator`, as properties."""

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
        self._engine.cutoff = min(cutoff_value(value), CUTOFF_MAX)

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
        warn_negative_tolerance("lower_atol", value)
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
        warn_negative_tolerance("upper_atol", value)
        self._engine.upper_atol = value


def warn_negative_tolerance(name: str, value: float | None) -> None:
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
    warnings.warn(text, ToleranceWarning, stacklevel=caller_stacklevel())


def warn_ignored_tolerances(engine: Any, layers: LayerArrays, *, first_build: bool) -> None:
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
        stacklevel=caller_stacklevel(),
    )


def checked_memory_limit(value: Any) -> int | None:
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


def truncate_to_fit(on_memory_limit: Any, comm: Any) -> bool:
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


def checked_pare(threshold: float | None) -> float:
    """A functional's ``pare_threshold`` as the core's ``pare``: 0.0 for None (exact replays),
    else the finite threshold, which must be ``>= 0``."""
    if threshold is None:
        return 0.0
    value = optional_atol(threshold, "pare_threshold")
    assert value is not None  # threshold is not None
    if value < 0:
        raise ValueError(f"pare_threshold must be >= 0; got {threshold!r}.")
    return value
