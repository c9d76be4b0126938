"""Building a graph in pieces, with checkpoints a killed build resumes from.

A build with ``checkpoint=path`` applies the circuit's layers in pieces: the first piece puts
the whole circuit's parameters and gates on the graph's axes, and each later one appends its
layers to that graph, so the pieces record exactly the graph one build of the whole circuit
records (bitwise). Between pieces, once ``checkpoint_every`` seconds have passed since the last
save, the propagator is saved to ``path`` with a :class:`BuildRecord`: a fingerprint of the
circuit, the seed, ``only_rotate_len_k`` and the truncation settings, and how many of the
circuit's layers are done. ``monoprop.load(path).build_graph(circuit, resume=True)`` checks the
fingerprint and applies the rest. When the build finishes, ``path`` holds the finished graph, and
resuming from it does nothing.

Until its build finishes, a propagator refuses values, gradients and every change other than
``build_graph(circuit, resume=True)``: the graph it holds lacks the layers still to come.
"""

from __future__ import annotations

import hashlib
import numbers
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from . import archive
from .core_arrays import LayerArrays

__all__ = ["BuildRecord", "build_in_pieces", "fingerprint"]

# A piece aims at this share of checkpoint_every, so that a checkpoint comes close to when it
# is due; and at most doubles from one piece to the next, since layers grow dearer as the
# operand grows.
_PIECE_SHARE = 0.25


@dataclass(frozen=True)
class BuildRecord:
    """Where a build in pieces stands: the circuit's fingerprint and its layers done.

    ``done`` counts the circuit's layers (one per generator term, and per quarter turn of a
    Clifford gate) in the order they are applied: from the end of the circuit in the Heisenberg
    picture, from its start in the Schrödinger picture. ``steps_done`` and ``steps`` count the
    same without Clifford layers, as the progress bar does. ``layers_before`` is the graph's
    layer count when the build began, which decides the default seed.
    """

    fingerprint: str
    done: int
    total: int
    steps_done: int
    steps: int
    layers_before: int

    @property
    def finished(self) -> bool:
        return self.done == self.total

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: Any) -> BuildRecord:
        """The record a save's header holds; ``ValueError`` when it is not one."""
        names = [name for name in cls.__dataclass_fields__ if name != "fingerprint"]
        if (
            not isinstance(value, dict)
            or set(value) != {"fingerprint", *names}
            or not isinstance(value["fingerprint"], str)
            or not all(type(value[name]) is int and value[name] >= 0 for name in names)
            or value["done"] > value["total"]
            or value["steps_done"] > value["steps"]
        ):
            raise ValueError(f"the save's build record {value!r} is not one monoprop writes")
        return cls(**value)


def fingerprint(
    layers: LayerArrays, seed: list[float] | None, k: int | None, settings: tuple
) -> str:
    """SHA-256 of everything that decides the graph a build records."""
    digest = hashlib.sha256()

    def add(array: Any) -> None:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())

    for array in (layers.terms.slots, layers.terms.offsets, layers.terms.coefficients):
        add(array)
    for array in (layers.parameters, layers.gates, layers.quarter_turns):
        add(array)
    if layers.noise is not None:
        for name in layers.noise.__dataclass_fields__:
            add(getattr(layers.noise, name))
    add(np.asarray([layers.n_parameters, layers.n_gates], dtype=np.int64))
    add(np.asarray([] if seed is None else seed, dtype=np.float64))
    digest.update(repr((seed is None, k, settings)).encode())
    return digest.hexdigest()


def build_in_pieces(
    engine: Any,
    layers: LayerArrays,
    seed: list[float] | None,
    k: int | None,
    record: BuildRecord,
    on_record: Callable[[BuildRecord], None],
    save: Callable[[], None] | None,
    every: float,
    report: Callable[[int, int, int, float], None] | None,
) -> None:
    """Applies the layers ``record`` has not done, in pieces; after each, ``on_record`` gets
    the new record, and ``save`` runs once ``every`` seconds have passed since the last save
    (and when the build finishes).

    ``report(steps done, steps, terms, bound)`` follows the whole circuit, from where the
    record stood; ``bound`` adds up what the pieces of this call dropped at the seed.
    """
    heisenberg = not engine.schrodinger
    rotations = np.asarray(layers.quarter_turns) == 0
    steps = record.steps
    piece = 1
    target = _PIECE_SHARE * every
    last_save = time.monotonic()
    dropped = [0.0, 0.0]  # the bound of the pieces done, and of the running piece so far
    if report is not None:
        report(record.steps_done, record.steps, engine.size(), 0.0)
    while not record.finished:
        rows = min(piece, record.total - record.done)
        # The circuit's rows this piece applies: the next ones in application order.
        if heisenberg:
            start, stop = record.total - record.done - rows, record.total - record.done
        else:
            start, stop = record.done, record.done + rows
        part = layers.rows(start, stop)
        # What later pieces apply: the reach of what this one drops is planned through it.
        following = layers.rows(0, start) if heisenberg else layers.rows(stop, record.total)
        offset = record.steps_done
        if report is not None:

            def piece_report(
                done: int, _: int, terms: int, bound: float, offset: int = offset
            ) -> None:
                dropped[1] = bound
                report(offset + done, steps, terms, dropped[0] + bound)

            engine.set_progress(piece_report)
        began = time.monotonic()
        try:
            if record.done == 0:  # the first piece puts the circuit's axes on the graph
                engine.build_graph(part, seed, k, following)
            else:
                engine.continue_graph(part, seed, k, following)
        finally:
            engine.set_progress(None)
        took = time.monotonic() - began
        record = replace(
            record,
            done=record.done + rows,
            steps_done=offset + int(np.count_nonzero(rotations[start:stop])),
        )
        on_record(record)
        dropped[:] = [dropped[0] + dropped[1], 0.0]
        if report is not None:
            report(record.steps_done, steps, engine.size(), dropped[0])
        if save is not None and (record.finished or time.monotonic() - last_save >= every):
            save()
            last_save = time.monotonic()
        fitting = int(rows * target / took) if took > 0 else 2 * rows
        piece = max(1, min(2 * rows, fitting))


def checked_arguments(path: Any, every: Any) -> tuple[str | None, float]:
    """``checkpoint`` and ``checkpoint_every`` as :meth:`build_graph` takes them, refusing what
    cannot be a checkpoint directory or a number of seconds."""
    if not isinstance(every, numbers.Real) or isinstance(every, bool):
        raise TypeError(f"checkpoint_every must be a number of seconds; got {every!r}.")
    seconds = float(every)
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"checkpoint_every={every!r} must be a finite number of seconds >= 0.")
    if path is None:
        return None, seconds
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"checkpoint must be a path (str or os.PathLike); got {path!r}.")
    archive.check_writable(path)
    return os.fspath(path), seconds
