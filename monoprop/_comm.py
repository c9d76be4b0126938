"""The ``comm=`` argument of propagators and of :func:`monoprop.load`: an mpi4py communicator,
checked and turned into the handle the compiled core takes."""

from __future__ import annotations

from typing import Any

from . import _core

__all__ = ["comm_handle"]


def comm_handle(comm: Any) -> int | None:
    """The address of ``comm``'s MPI handle for the engine, or None to run without MPI.

    Builds without MPI accept a single-rank communicator (``MPI.COMM_SELF``) and run serially,
    so that scripts written for MPI run unchanged on one process; a larger one is an error.
    """
    if comm is None:
        return None
    if not _core.has_mpi:
        size = comm.Get_size() if hasattr(comm, "Get_size") else None
        if size == 1:
            return None
        raise RuntimeError(
            f"comm={comm!r} spans {size} ranks but this monoprop build has no MPI "
            "(monoprop.has_mpi is False); pass comm=None, or rebuild with "
            "pip install -C cmake.define.MONOPROP_MPI=ON '.[mpi]'."
        )
    try:
        from mpi4py import MPI
    except ImportError as error:  # pragma: no cover - the [mpi] extra installs it
        raise RuntimeError(
            "comm= needs mpi4py (pip install 'monoprop[mpi]'); pass comm=None to run serially."
        ) from error
    if not isinstance(comm, MPI.Comm):
        raise TypeError(
            f"comm must be an mpi4py communicator (MPI.COMM_WORLD, MPI.COMM_SELF, a Split, ...); "
            f"got {comm!r}."
        )
    if comm == MPI.COMM_NULL:
        raise ValueError("comm is MPI.COMM_NULL; pass a live communicator.")
    ours, theirs = _core.mpi_library_version(), MPI.Get_library_version()
    if ours.split("\n")[0].strip() != theirs.split("\n")[0].strip():
        raise RuntimeError(
            "monoprop and mpi4py use different MPI libraries, so they cannot share a "
            f"communicator: monoprop has {ours.splitlines()[0]!r}, mpi4py has "
            f"{theirs.splitlines()[0]!r}. Rebuild monoprop against the MPI mpi4py loads."
        )
    return MPI._addressof(comm)
