"""The segments of a reseeding optimisation: one ``scipy.optimize.minimize`` run per graph.

A graph truncated with ``lower_atol``/``upper_atol`` keeps the branches that matter at the
parameters it was seeded with. As the optimiser moves, ``minimize(..., reseed_every=k)``
rebuilds the graph at the current point. A method's line search and curvature history are
only valid for one function, so each graph gets a fresh scipy run (a segment): a segment
stops after ``k`` iterations, the graph is rebuilt at its last point, and the next segment
starts there. What belongs to the whole call (iteration and evaluation counts, the limits
in ``options``, the user's callback and the progress bar) lives in :class:`Run`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import scipy.optimize

__all__ = ["Reseed", "Run", "Segment"]

# The options that bound a run's evaluations (L-BFGS-B and TNC say maxfun; Nelder-Mead,
# Powell and COBYQA say maxfev). With maxiter, they bound the whole call across segments.
_EVALUATION_LIMITS = ("maxfun", "maxfev")

# Reseeds in a row whose fresh graph gives no value below the best one so far, after which
# the call ends: seeded truncation can cycle, each graph's optimum seeding a graph whose
# optimum lies back near the first.
STALLED_RESEEDS = 3


class Segment(NamedTuple):
    """One ``scipy.optimize.minimize`` run inside :func:`~monoprop.optimize.minimize`, on one
    graph.

    It ran the call's iterations ``start`` to ``end`` (``end`` excluded) and ``nfev`` function
    evaluations, and ended at the value ``fun`` of its graph. ``reason`` is ``"reseed"`` when it
    reached ``reseed_every`` iterations and the next segment starts from its last point on a
    graph rebuilt there, ``"max_error"`` when it ended at a point whose truncation error passed
    ``max_error`` and the next segment starts there on a graph rebuilt within that budget;
    otherwise it says why the call ended there (scipy's message, or that reseeding stopped
    lowering the energy).
    """

    start: int
    end: int
    nfev: int
    fun: float
    reason: str


class Reseed(Exception):
    """Raised from the iteration callback to end a segment for a reseed. scipy lets it pass
    (it catches ``StopIteration`` alone), and the segment's last point comes with it."""

    def __init__(self, x: np.ndarray, fun: float) -> None:
        super().__init__("reseed")
        self.x, self.fun = x, fun


class Run:
    """What spans the segments of one call: the iteration and evaluation counts, the user's
    callback, the progress bar, and the limits left for the next segment."""

    def __init__(
        self,
        value: Callable[[np.ndarray], float],
        user_callback: Callable | None,
        bar: Any,
        reseed_every: int | None,
        options: dict,
    ) -> None:
        self.value, self.user_callback, self.bar = value, user_callback, bar
        self.reseed_every, self.options = reseed_every, options
        self.iterations = self.evaluations = self.segment_start = 0
        self.function = _Counted(value)
        self.best_seeded = np.inf
        self.stalled = 0

    def segment(self, function: Callable) -> _Counted:
        """Start a segment that minimises ``function``; returns it counting its calls."""
        self.evaluations += self.function.calls
        self.segment_start = self.iterations
        self.function = _Counted(function)
        return self.function

    def segment_options(self) -> dict | None:
        """The options with the call's limits less what earlier segments spent."""
        options = dict(self.options)
        if "maxiter" in options:
            options["maxiter"] = options["maxiter"] - self.iterations
        for name in _EVALUATION_LIMITS:
            if name in options:
                options[name] = options[name] - self.evaluations
        return options or None

    def step(self, intermediate_result: Any) -> None:
        """scipy's per-iteration callback: count, show, call the user's, end for a reseed."""
        self.iterations += 1
        result = _intermediate(intermediate_result, self.value)
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(f"energy={result.fun:.10g}", refresh=False)
        if self.user_callback is not None:
            self.user_callback(result)
        every = self.reseed_every
        if every and self.iterations - self.segment_start == every and self._room_left():
            raise Reseed(np.array(result.x, dtype=np.float64), float(result.fun))

    def stalls(self, seeded_value: float) -> bool:
        """Note the value of a freshly seeded graph at its seed; True once the last
        ``STALLED_RESEEDS`` such values all failed to go below the best before them."""
        if seeded_value < self.best_seeded:
            self.best_seeded, self.stalled = seeded_value, 0
        else:
            self.stalled += 1
        return self.stalled >= STALLED_RESEEDS

    def _room_left(self) -> bool:
        """Whether the call's limits leave a next segment something to do; at a limit scipy
        ends the segment itself, with its own message."""
        maxiter = self.options.get("maxiter")
        if maxiter is not None and self.iterations >= maxiter:
            return False
        calls = self.evaluations + self.function.calls
        return all(
            name not in self.options or calls < self.options[name] for name in _EVALUATION_LIMITS
        )


class _Counted:
    """A function that counts its calls (scipy's ``nfev`` for a segment it did not finish)."""

    def __init__(self, function: Callable) -> None:
        self.function, self.calls = function, 0

    def __call__(self, x: np.ndarray) -> Any:
        self.calls += 1
        return self.function(x)


def _intermediate(reported: Any, value: Callable) -> scipy.optimize.OptimizeResult:
    """scipy reports an OptimizeResult (most methods) or the bare point (TNC, COBYLA)."""
    if isinstance(reported, scipy.optimize.OptimizeResult) and "fun" in reported:
        return reported
    x = np.array(reported.x if isinstance(reported, scipy.optimize.OptimizeResult) else reported)
    return scipy.optimize.OptimizeResult(x=x, fun=value(x))
