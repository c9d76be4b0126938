"""A built graph kept on disk, so that a worker loads what another built instead of rebuilding.

Building a large graph can take longer than optimising on it, and in a study every worker, every
retried trial and every replay of a best trial would build it again. :func:`load_or_build`
builds it once, with checkpoints, at a path the workers share: a later call loads it, and a call
that finds the checkpoint of a build whose worker died finishes that build.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import monoprop
from monoprop import Circuit
from monoprop.monomial_propagator import MonomialPropagator

__all__ = ["load_or_build"]


def load_or_build(
    path: str | os.PathLike,
    propagator: Callable[[], MonomialPropagator],
    circuit: Circuit,
    *,
    comm: Any = None,
    checkpoint_every: float = 600.0,
    **build_options: Any,
) -> MonomialPropagator:
    """The propagator with ``circuit`` built, from the save at ``path`` when there is one.

    * Nothing at ``path``: ``propagator()`` (a new propagator, its graph not yet built) builds
      ``circuit`` with ``build_options`` (``seed_parameters``, ``only_rotate_len_k``,
      ``progress``), saving checkpoints to ``path`` every ``checkpoint_every`` seconds and the
      finished graph at the end.
    * A finished build at ``path``: it is loaded; nothing is built.
    * The checkpoint of a build that stopped (its worker was killed): it is loaded and the
      build finishes, as :meth:`~monoprop.PauliPropagator.build_graph` with ``resume=True``.

    The save must come from a build of the same circuit with the same options and truncation
    (:class:`ValueError` otherwise), so give each graph its own path, for example one named
    after the settings that decide it. ``comm``: the MPI communicator to load onto (every rank
    calls this; ``propagator()`` should use the same one). Two workers that build the same
    graph at once both finish, and the path holds one of their identical saves.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
    >>> from monoprop.optimize import load_or_build
    >>> circuit = Circuit([ExpGate(PauliOperator({"XY": 0.5}, 2))], 2)
    >>> path = Path(tempfile.mkdtemp()) / "graph"
    >>> def fresh():
    ...     print("building")
    ...     return PauliPropagator(PauliOperator({"ZZ": 1.0}, 2), [0], cutoff=4)
    >>> first = load_or_build(path, fresh, circuit)
    building
    >>> again = load_or_build(path, fresh, circuit)  # loaded: nothing printed
    >>> again.expectation_value([0.3]) == first.expectation_value([0.3])
    True
    """
    try:
        prop = monoprop.load(path, comm=comm)
    except FileNotFoundError:
        prop = propagator()
        prop.build_graph(
            circuit, checkpoint=path, checkpoint_every=checkpoint_every, **build_options
        )
        return prop
    if prop._build is None:
        raise ValueError(
            f"{path} holds a propagator saved by save(), not a build of load_or_build, so "
            "nothing tells which circuit it holds; give load_or_build a path of its own."
        )
    prop.build_graph(
        circuit, resume=True, checkpoint=path, checkpoint_every=checkpoint_every, **build_options
    )
    return prop
