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
from typing import Any

from . import _comm, _saved_state, archive
from ._saved_state import agree
from .majorana_propagator import MajoranaPropagator
from .monomial_propagator import MonomialPropagator
from .pauli_propagator import PauliPropagator

__all__ = ["load", "save"]

# The classes a save may name.
_CLASSES: dict[str, type[MonomialPropagator]] = {
    cls.__name__: cls for cls in (PauliPropagator, MajoranaPropagator)
}


def save(prop: MonomialPropagator, path: str | os.PathLike) -> None:
    """Writes ``prop`` to the directory ``path`` (see :meth:`MonomialPropagator.save`)."""
    _saved_state.save(prop, path)


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
        part = archive.read_part(path, _saved_state.part_name(comm.Get_rank(), ranks))
        _checked_class(*part)
    except (ValueError, FileNotFoundError) as failure:
        error = failure
    agree(comm, error)
    return _restored(path, *part, comm)  # the core agrees on its own checks


def _check_ranks(path: str | os.PathLike, meta: dict[str, Any], ranks: int) -> None:
    saved = meta.get("ranks", 1)
    if saved != ranks:
        how = "in one process (comm=None)" if saved == 1 else f"on {saved} MPI ranks"
        raise ValueError(
            f"{path} holds a propagator saved over {saved} rank(s); this load has {ranks}: "
            f"load it {how}."
        )


def _comm_size(comm: Any) -> int:
    _comm.comm_handle(comm)  # refuses what is not an mpi4py communicator
    return int(comm.Get_size())


def _checked_class(meta: dict[str, Any], arrays: dict[str, Any]) -> type[MonomialPropagator]:
    """The class a save's metadata names, checked against its arrays; ValueError if damaged."""
    cls = _CLASSES.get(meta.get("class"))  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"the save holds a {meta.get('class')!r}, not a monoprop propagator")
    _saved_state.check(cls, meta, arrays)
    return cls


def _restored(
    path: str | os.PathLike, meta: dict[str, Any], arrays: dict[str, Any], comm: Any
) -> MonomialPropagator:
    try:
        return _restore(meta, arrays, comm)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def _restore(meta: dict[str, Any], arrays: dict[str, Any], comm: Any = None) -> MonomialPropagator:
    """The propagator of the class the save names (also what pickles of monoprop 0.1 call)."""
    return _saved_state.restore(_checked_class(meta, arrays), meta, arrays, comm)
