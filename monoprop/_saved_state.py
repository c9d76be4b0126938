"""A propagator's saved state: writing it (:func:`save`) and building a propagator of a given
class from it (:func:`restore`).

Below both :mod:`monoprop.monomial_propagator`, whose ``save``, pickling and build checkpoints
write through :func:`save` and :func:`state`, and :mod:`monoprop.persistence`, whose ``load``
finds the class a save names and rebuilds it with :func:`restore`; see there for the format and
for what a loaded propagator is.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol, TypeVar

from . import _comm, _core, archive
from .checkpointed_build import BuildRecord

__all__ = ["Saveable", "agree", "check", "part_name", "restore", "save", "state"]

_FAMILY_CODES = {"pauli": 0, "majorana": 1}

# Errors one rank meets and every rank raises alike (others become RuntimeError).
_SHARED_ERRORS = {
    e.__name__: e for e in (ValueError, TypeError, FileNotFoundError, FileExistsError)
}


class Saveable(Protocol):
    """What saving reads of a propagator (a :class:`~monoprop.MonomialPropagator`)."""

    _engine: Any
    _family: str
    _initial_state: tuple[int, ...]
    _build: BuildRecord | None
    _comm: Any

    @property
    def num_modes(self) -> int: ...

    @property
    def num_threads(self) -> int: ...


P = TypeVar("P")


def save(prop: Saveable, path: str | os.PathLike) -> None:
    """Writes ``prop`` to the directory ``path`` (see :meth:`MonomialPropagator.save`)."""
    comm = prop._comm
    if comm is None or comm.Get_size() == 1:
        meta, arrays = state(prop)
        archive.write(path, meta, arrays)
    else:
        _save_parts(prop, path, comm)


def state(prop: Saveable) -> tuple[dict[str, Any], dict[str, Any]]:
    """The save of ``prop`` as a JSON-able header and named arrays (of this rank)."""
    arrays = prop._engine.save_state()
    meta = {
        "class": type(prop).__name__,
        "family": prop._family,
        "num_modes": prop.num_modes,
        "threads": prop.num_threads,
        "initial_state": [int(mode) for mode in prop._initial_state],
        "build": None if prop._build is None else prop._build.to_json(),
    }
    return meta, arrays


def check(cls: type[Any], meta: dict[str, Any], arrays: dict[str, Any]) -> None:
    """Raises ValueError when a save's arrays and header are not a ``cls``'s (a damaged save)."""
    family = arrays.get("family")
    if family is None or family.shape != () or int(family) != _FAMILY_CODES[cls._family]:
        raise ValueError(f"the save's engine is not a {cls.__name__}'s")
    initial_state = meta.get("initial_state")
    if not isinstance(initial_state, list) or not all(isinstance(m, int) for m in initial_state):
        raise ValueError(f"the save's initial_state {initial_state!r} is not a list of modes")
    build = meta.get("build")
    if build is not None:
        BuildRecord.from_json(build)


def restore(cls: type[P], meta: dict[str, Any], arrays: dict[str, Any], comm: Any = None) -> P:
    """A ``cls`` holding the saved state, on ``comm``; ValueError if the save is damaged.

    Unpickling a propagator calls this with the class it was pickled from."""
    check(cls, meta, arrays)
    build = meta.get("build")
    prop: Any = object.__new__(cls)
    prop._build = None if build is None else BuildRecord.from_json(build)
    prop._initial_state = tuple(meta["initial_state"])
    prop._engine = _core.restore_engine(arrays, comm_handle=_comm.comm_handle(comm))
    prop._comm = comm
    return prop


def part_name(rank: int, ranks: int) -> str:
    """The name of rank ``rank``'s part in a save over ``ranks`` ranks."""
    return f"rank-{rank}-of-{ranks}"


def _save_parts(prop: Saveable, path: str | os.PathLike, comm: Any) -> None:
    """Every rank writes its part into one hidden directory, which the first rank then puts in
    place of ``path``; collective, and any rank's failure raises on all before ``path``
    changes."""
    rank, ranks = comm.Get_rank(), comm.Get_size()
    staging = None
    error: Exception | None = None
    if rank == 0:
        try:
            staging = archive.begin(path)
        except (OSError, ValueError) as failure:
            error = failure
    agree(comm, error)
    staging = Path(comm.bcast(None if staging is None else str(staging), root=0))
    try:
        error = None
        try:
            meta, arrays = state(prop)
            archive.write(staging / part_name(rank, ranks), meta, arrays)
        except (OSError, ValueError, RuntimeError) as failure:
            error = failure
        agree(comm, error)
        if rank == 0:
            try:
                top = {key: meta[key] for key in ("class", "family", "num_modes", "threads")}
                top["ranks"] = ranks
                archive.commit(staging, path, top, [part_name(r, ranks) for r in range(ranks)])
            except (OSError, ValueError) as failure:
                error = failure
        agree(comm, error)
    finally:
        if rank == 0:
            archive.abort(staging)  # nothing left once committed


def agree(comm: Any, error: BaseException | None) -> None:
    """Raises on every rank when any rank met an error: a rank its own, the others the error
    of the lowest failing rank, so that no rank goes on alone into a collective step."""
    errors = comm.allgather(None if error is None else (type(error).__name__, str(error)))
    if error is not None:
        raise error
    for rank, failure in enumerate(errors):
        if failure is not None:
            kind, message = failure
            raise _SHARED_ERRORS.get(kind, RuntimeError)(f"rank {rank}: {message}")
