"""One Optuna trial across the ranks of an MPI launch.

With ``comm``, the ranks of one launch are one :func:`~monoprop.optimize.run_study` worker:
rank 0 talks to the storage, and every call it makes there (asking for a trial, a suggestion,
a report) has its result, or its error, broadcast to the other ranks, so that all of them
build the same problem and stop together. Without MPI a stand-in communicator of one rank
runs the same code.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import optuna

__all__ = ["SelfComm", "SharedTrial", "on_root"]


def on_root(comm, action: Callable[[], Any]) -> Any:
    """Run ``action`` on rank 0 and give every rank its result, or raise its error on every
    rank (the other ranks would otherwise wait for a broadcast that never comes)."""
    outcome = None
    if comm.rank == 0:
        try:
            outcome = (True, action())
        except Exception as error:  # handed to every rank, raised below
            outcome = (False, _portable(error))
    ok, value = comm.bcast(outcome, root=0)
    if not ok:
        raise value
    return value


def _portable(error: Exception) -> Exception:
    try:
        pickle.dumps(error)
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error


class SharedTrial:
    """A trial as every rank of a launch sees it. Rank 0 holds the Optuna trial; each
    attribute read and each call (``suggest_float``, ``report``, ``should_prune``, ...) is
    made there and its result broadcast, so every rank builds the same problem."""

    def __init__(self, trial: optuna.Trial | None, comm: Any) -> None:
        self._trial, self._comm = trial, comm

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        # Methods stay on rank 0; what is broadcast is whether the attribute is one.
        is_method, value = on_root(self._comm, lambda: _describe(getattr(self._trial, name)))
        if not is_method:
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            return on_root(self._comm, lambda: getattr(self._trial, name)(*args, **kwargs))

        return call


def _describe(attribute: Any) -> tuple[bool, Any]:
    return (True, None) if callable(attribute) else (False, attribute)


class SelfComm:
    """The one-process stand-in for an mpi4py communicator."""

    rank, size = 0, 1

    @staticmethod
    def bcast(value: Any, root: int = 0) -> Any:
        return value

    @staticmethod
    def allreduce(value: Any) -> Any:
        return value
