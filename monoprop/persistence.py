"""Saving a propagator to disk and loading it back.

:meth:`MonomialPropagator.save` writes everything a propagator is (its class, settings and
truncation, the operator or Schrödinger state, the reference state, the recorded graph with its
parameter axis, Clifford frames and noise layers) as a directory in the format of
:mod:`monoprop.archive`; :func:`load` rebuilds it. Like a new propagator, a loaded one has
this process's thread count (``monoprop_NUM_THREADS``, else the OpenMP default). At the thread
count it was saved with, its terms return to the shards and slots they were saved in, and its
values and gradients are bitwise those of the saved one; at another, its terms are dealt to the
shards that own them now and the graph is re-encoded between their new slots, so the same terms
give values and gradients equal up to rounding (the shards' sums add in another order).

A propagator distributed over the ranks of an MPI communicator saves collectively: each rank
writes its part (its terms, its share of the graph, the entries it shares with each peer) as
``path/rank-r-of-R``, and the save takes the place of ``path`` once every part is written.
``load(path, comm=comm)`` reads it on a communicator of as many ranks, with the rank routing
(``monoprop_ROUTING``, ``monoprop_ROUTING_SEED``) it was saved with; another rank count, a
missing or foreign part, or a damaged one raises on every rank before anything is loaded.

>>> import tempfile
>>> from pathlib import Path
>>> import monoprop
>>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
>>> circuit = Circuit([ExpGate(PauliOperator({"XY": 0.5}, 2))], 2, parameters=[0.3])
>>> prop = PauliPropagator(PauliOperator({"ZZ": 1.0, "XI": 0.5}, 2), [0], cutoff=4)
>>> prop.build_graph(circuit)
>>> path = Path(tempfile.mkdtemp()) / "prop"
>>> prop.save(path)
>>> loaded = monoprop.load(path)
>>> loaded.expectation_value([0.7]) == prop.expectation_value([0.7])
True
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import _core, archive
from .checkpointed_build import BuildRecord
from .monomial_propagator import MonomialPropagator, _comm_handle

__all__ = ["load", "save"]

_FAMILY_CODES = {"pauli": 0, "majorana": 1}

# Errors one rank meets and every rank raises alike (others become RuntimeError).
_SHARED_ERRORS = {
    e.__name__: e for e in (ValueError, TypeError, FileNotFoundError, FileExistsError)
}


def save(prop: MonomialPropagator, path: str | os.PathLike) -> None:
    """Writes ``prop`` to the directory ``path`` (see :meth:`MonomialPropagator.save`)."""
    comm = prop._comm
    if comm is None or comm.Get_size() == 1:
        meta, arrays = _state(prop)
        archive.write(path, meta, arrays)
    else:
        _save_parts(prop, path, comm)


def load(path: str | os.PathLike, *, comm: Any = None) -> MonomialPropagator:
    """The propagator saved at ``path``, with this process's thread count (see above).

    Raises :class:`FileNotFoundError` when nothing is at ``path``, and :class:`ValueError`
    naming the path and the problem when it holds no monoprop save, a save of a newer format,
    a damaged one (truncated, corrupted, inconsistent), or a save over another number of MPI
    ranks than ``comm`` has; nothing half-loaded is returned. With a communicator of several
    ranks it is collective, and every rank raises alike.
    """
    ranks = 1 if comm is None else _comm_size(comm)
    if ranks == 1:
        meta, arrays = archive.read(path)
        _check_ranks(path, meta, 1)
        return _restored(path, meta, arrays, comm)
    part: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
    error = None
    try:
        top, _ = archive.read(path)
        _check_ranks(path, top, ranks)
        part = archive.read_part(path, _part(comm.Get_rank(), ranks))
        _checked_class(*part)
    except (ValueError, FileNotFoundError) as failure:
        error = failure
    _agree(comm, error)
    return _restored(path, *part, comm)  # the core agrees on its own checks


def _part(rank: int, ranks: int) -> str:
    return f"rank-{rank}-of-{ranks}"


def _check_ranks(path: str | os.PathLike, meta: dict[str, Any], ranks: int) -> None:
    saved = meta.get("ranks", 1)
    if saved != ranks:
        how = "in one process (comm=None)" if saved == 1 else f"on {saved} MPI ranks"
        raise ValueError(
            f"{path} holds a propagator saved over {saved} rank(s); this load has {ranks}: "
            f"load it {how}."
        )


def _save_parts(prop: MonomialPropagator, path: str | os.PathLike, comm: Any) -> None:
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
    _agree(comm, error)
    staging = Path(comm.bcast(None if staging is None else str(staging), root=0))
    try:
        error = None
        try:
            meta, arrays = _state(prop)
            archive.write(staging / _part(rank, ranks), meta, arrays)
        except (OSError, ValueError, RuntimeError) as failure:
            error = failure
        _agree(comm, error)
        if rank == 0:
            try:
                top = {key: meta[key] for key in ("class", "family", "num_modes", "threads")}
                top["ranks"] = ranks
                archive.commit(staging, path, top, [_part(r, ranks) for r in range(ranks)])
            except (OSError, ValueError) as failure:
                error = failure
        _agree(comm, error)
    finally:
        if rank == 0:
            archive.abort(staging)  # nothing left once committed


def _agree(comm: Any, error: BaseException | None) -> None:
    """Raises on every rank when any rank met an error: a rank its own, the others the error
    of the lowest failing rank, so that no rank goes on alone into a collective step."""
    errors = comm.allgather(None if error is None else (type(error).__name__, str(error)))
    if error is not None:
        raise error
    for rank, failure in enumerate(errors):
        if failure is not None:
            kind, message = failure
            raise _SHARED_ERRORS.get(kind, RuntimeError)(f"rank {rank}: {message}")


def _comm_size(comm: Any) -> int:
    _comm_handle(comm)  # refuses what is not an mpi4py communicator
    return int(comm.Get_size())


def _state(prop: MonomialPropagator) -> tuple[dict[str, Any], dict[str, Any]]:
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


def _classes() -> dict[str, type[MonomialPropagator]]:
    from .majorana_propagator import MajoranaPropagator
    from .pauli_propagator import PauliPropagator

    return {cls.__name__: cls for cls in (PauliPropagator, MajoranaPropagator)}


def _checked_class(meta: dict[str, Any], arrays: dict[str, Any]) -> type[MonomialPropagator]:
    """The class a save's metadata names, checked against its arrays; ValueError if damaged."""
    cls = _classes().get(meta.get("class"))  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"the save holds a {meta.get('class')!r}, not a monoprop propagator")
    family = arrays.get("family")
    if family is None or family.shape != () or int(family) != _FAMILY_CODES[cls._family]:
        raise ValueError(f"the save's engine is not a {cls.__name__}'s")
    state = meta.get("initial_state")
    if not isinstance(state, list) or not all(isinstance(m, int) for m in state):
        raise ValueError(f"the save's initial_state {state!r} is not a list of modes")
    build = meta.get("build")
    if build is not None:
        BuildRecord.from_json(build)
    return cls


def _restored(
    path: str | os.PathLike, meta: dict[str, Any], arrays: dict[str, Any], comm: Any
) -> MonomialPropagator:
    try:
        return _restore(meta, arrays, comm)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def _restore(meta: dict[str, Any], arrays: dict[str, Any], comm: Any = None) -> MonomialPropagator:
    cls = _checked_class(meta, arrays)
    build = meta.get("build")
    prop = object.__new__(cls)
    prop._build = None if build is None else BuildRecord.from_json(build)
    prop._initial_state = tuple(meta["initial_state"])
    prop._engine = _core.restore_engine(arrays, comm_handle=_comm_handle(comm))
    prop._comm = comm
    return prop
