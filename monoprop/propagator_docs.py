"""The text the propagator front-ends' docstrings share, written once.

:class:`~monoprop.PauliPropagator` and :class:`~monoprop.MajoranaPropagator` take the same
constructor arguments, and most of them mean the same in both: the truncation tolerances
(``lower_atol``, ``upper_atol``, in each front-end's units), the communicator, the memory
budget and what happens at it, and the functionals' ``pare_threshold``. Their descriptions
live here; each front-end's class docstring names them by a placeholder line (``{name}``)
that :func:`compose` replaces, so that ``help()`` and the API pages show the whole text on
each class. The truncation rule itself is stated once, on
:class:`~monoprop.MonomialPropagator`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import TypeVar

__all__ = [
    "PARE_THRESHOLD",
    "RESOURCE_PARAMETERS",
    "compose",
    "tolerance_parameters",
]

ClassT = TypeVar("ClassT", bound=type)

# Wide enough for a docstring indented by four spaces within the 100 columns of the source.
_WIDTH = 96 - 4


def _bullets(*items: str) -> str:
    """Each item, a sentence or more, as one ``*`` bullet filled to the docstrings' width."""
    return "\n".join(
        textwrap.fill(
            " ".join(item.split()),
            width=_WIDTH,
            initial_indent="* ",
            subsequent_indent="  ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        for item in items
    )


def tolerance_parameters(*, units: str, coefficient: str, partner: str) -> str:
    """The ``lower_atol`` and ``upper_atol`` bullets of a front-end's constructor parameters.

    ``units``: what the tolerances are measured in; ``coefficient``: what the ``h`` of a gate
    term is; ``partner``: what of the partner ``cutoff`` bounds.
    """
    return _bullets(
        f"""``lower_atol`` (default ``None``; a coefficient magnitude, in {units}): under a gate
        rotating by ``phi = 2θh`` (``h`` the gate term's {coefficient}), a term with
        coefficient ``c`` that anticommutes with the gate is *active* only when
        ``|sin(phi) * c| > lower_atol``. Only an active term asks for its partner (the product
        with the gate term): it makes it when missing and rotates with it when held; a term no
        one asks for is only scaled by ``cos(phi)``, and no held term is ever dropped.
        ``None`` makes every anticommuting term active. It needs coefficients, so it applies in
        ``propagate`` and in a ``build_graph`` with parameter values (``seed_parameters``, or
        the circuit's bound parameters on the first build); a structural build ignores it and
        warns (:class:`~monoprop.ToleranceWarning`). A negative value is the same as ``None``
        (it warns). Typical: ``1e-4`` to ``1e-6``.""",
        f"""``upper_atol`` (default ``None``; same unit; ``>= lower_atol``): an active term with
        ``|sin(phi) * c| > upper_atol`` asks for its partner even when {partner} exceeds
        ``cutoff``, so that large contributions are not cut. ``None`` applies ``cutoff`` to
        every term. Like ``lower_atol`` it needs coefficients. A negative value lets every
        active term ask, even one the rotation does not move (it warns; ``0`` asks for every
        term that moves). Typical: 100 to 1000 times ``lower_atol``, e.g. ``1e-2``.""",
    )


# The bullets of the constructor arguments that are the same in every front-end, after the
# picture's own (schrodinger_cutoff).
RESOURCE_PARAMETERS = _bullets(
    """``comm`` (default ``None``): an mpi4py communicator to distribute the terms over its
    ranks (see :class:`MonomialPropagator`).""",
    """``memory_limit`` (default ``None``; bytes, an int > 0): the memory budget. An operation
    that would take the process past it stops with a :class:`MemoryError` before it grows, and
    leaves the propagator as it was. ``None`` reads ``monoprop_MEMORY_LIMIT`` (bytes), else
    sets the budget when each operation starts to what the process holds plus 80% of the
    memory then available (``MemAvailable``, or the room under a container's limit), at most
    90% of the physical memory. A budget belongs to the machine: copies keep it, :meth:`save`
    does not record it (a loaded propagator has ``None``).""",
    """``on_memory_limit`` (default ``"raise"``): what a layer that would pass the memory
    budget does. ``"raise"`` stops the operation with the :class:`MemoryError`.
    ``"truncate"`` keeps the layer's largest new terms that fit: it raises ``lower_atol`` for
    that layer and the rest of the call just enough (:attr:`memory_truncations`,
    :attr:`effective_lower_atol`), and the branches it drops are ordinary inactive (cos-only)
    entries. It needs coefficients (``propagate``, or a build with parameter values); it never
    drops held terms, so a build's layer whose graph entries cannot fit without any new term
    still raises (a propagate records nothing: at worst a layer keeps none of its new terms).
    One MPI rank only.""",
)

# Where the front-ends point at the functionals' argument, documented on the first of them.
PARE_THRESHOLD = """\
``pare_threshold`` of :meth:`expectation_value_functional` and
:meth:`expectation_value_and_gradient_functional`: see the former."""


def compose(**fragments: str) -> Callable[[ClassT], ClassT]:
    """A class decorator: each line of the class's docstring that holds only ``{name}``
    becomes the fragment ``name``, every line of it indented as the placeholder was.

    A placeholder without a fragment raises ``KeyError`` when the class is defined. Without
    docstrings (``python -OO``) there is nothing to compose.
    """

    def decorate(cls: ClassT) -> ClassT:
        if cls.__doc__ is None:
            return cls
        lines = []
        for line in cls.__doc__.splitlines():
            name = line.strip()
            if not (name.startswith("{") and name.endswith("}") and name[1:-1].isidentifier()):
                lines.append(line)
                continue
            indent = line[: len(line) - len(line.lstrip())]
            fragment = fragments[name[1:-1]]
            lines.extend(indent + part if part else "" for part in fragment.splitlines())
        cls.__doc__ = "\n".join(lines)
        return cls

    return decorate
