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

from . import _core, archive
from .monomial_propagator import MonomialPropagator, _comm_handle

__all__ = ["load", "save"]

_FAMILY_CODES = {"pauli": 0, "majorana": 1}


def save(prop: MonomialPropagator, path: str | os.PathLike) -> None:
    """Writes ``prop`` to the directory ``path`` (see :meth:`MonomialPropagator.save`)."""
    meta, arrays = _state(prop)
    archive.write(path, meta, arrays)


def load(path: str | os.PathLike, *, comm: Any = None) -> MonomialPropagator:
    """The propagator saved at ``path``, with this process's thread count (see above).

    Raises :class:`FileNotFoundError` when nothing is at ``path``, and :class:`ValueError`
    naming the path and the problem when it holds no monoprop save, a save of a newer format,
    or a damaged one (truncated, corrupted, inconsistent); nothing half-loaded is returned.
    """
    meta, arrays = archive.read(path)
    try:
        return _restore(meta, arrays, comm)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def _state(prop: MonomialPropagator) -> tuple[dict[str, Any], dict[str, Any]]:
    arrays = prop._engine.save_state()
    meta = {
        "class": type(prop).__name__,
        "family": prop._family,
        "num_modes": prop.num_modes,
        "threads": prop.num_threads,
        "initial_state": [int(mode) for mode in prop._initial_state],
    }
    return meta, arrays


def _classes() -> dict[str, type[MonomialPropagator]]:
    from .majorana_propagator import MajoranaPropagator
    from .pauli_propagator import PauliPropagator

    return {cls.__name__: cls for cls in (PauliPropagator, MajoranaPropagator)}


def _restore(meta: dict[str, Any], arrays: dict[str, Any], comm: Any = None) -> MonomialPropagator:
    cls = _classes().get(meta.get("class"))  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"the save holds a {meta.get('class')!r}, not a monoprop propagator")
    family = arrays.get("family")
    if family is None or family.shape != () or int(family) != _FAMILY_CODES[cls._family]:
        raise ValueError(f"the save's engine is not a {cls.__name__}'s")
    state = meta.get("initial_state")
    if not isinstance(state, list) or not all(isinstance(m, int) for m in state):
        raise ValueError(f"the save's initial_state {state!r} is not a list of modes")
    prop = object.__new__(cls)
    prop._initial_state = tuple(state)
    prop._engine = _core.restore_engine(arrays, comm_handle=_comm_handle(comm))
    prop._comm = comm
    return prop
