"""What every part of a propagator shares: the core engine it wraps, and the lock of an
unfinished checkpointed build.

:class:`~monoprop.MonomialPropagator` is put together from a few parts, one concern each
(evaluation, truncation settings, introspection, besides construction and building in the
class itself); each part is a base class of it and reaches the engine through this one.
"""

from __future__ import annotations

from typing import Any

from .checkpointed_build import BuildRecord

__all__ = ["PropagatorState"]


class PropagatorState:
    """The engine (``_engine``, a ``monoprop._core.Engine``) and the checkpointed build in
    progress (``_build``, or None) that a propagator holds."""

    _engine: Any
    _build: BuildRecord | None

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
