"""The channel objects of :mod:`monoprop.noise`, below both it and :mod:`monoprop.circuit`.

A :class:`Channel` stands in a circuit's gate list; :mod:`monoprop.circuit` checks and lays out
circuits that hold them, and :mod:`monoprop.noise` builds them (and puts them after a circuit's
gates, for which it needs circuits). Build channels with :mod:`monoprop.noise`'s functions, which
export :class:`Channel` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Channel", "NoiseLayer"]


@dataclass(frozen=True)
class NoiseLayer:
    """One engine layer of a channel: ``v = f(alpha + beta * rate)`` with ``f`` per ``form``."""

    kind: int
    slots: tuple[int, ...]
    form: int
    alpha: float
    beta: float
    patterns: int = 0


@dataclass(frozen=True)
class _Part:
    """Layers that read one rate: a fixed one (``index`` None) or parameter slot ``index``."""

    index: int | None
    layers: tuple[NoiseLayer, ...]
    lowest: float
    highest: float


class Channel:
    """A noise channel in a circuit's gate list; build one with this module's functions.

    ``name`` is the function that built it (``"depolarizing"``, ``"amplitude_damping"``, ...);
    ``family`` is ``"pauli"`` or ``"majorana"``; ``sites`` the qubits or modes it acts on;
    ``rate`` its fixed rate(s), or None when ``index`` names parameter slots.
    """

    __slots__ = ("_parts", "family", "index", "name", "rate", "sites")
    __hash__ = None  # type: ignore[assignment]

    def __init__(
        self,
        name: str,
        family: Literal["pauli", "majorana"],
        sites: tuple[int, ...],
        rate: Any,
        index: Any,
        parts: Sequence[_Part],
    ) -> None:
        self.name = name
        self.family = family
        self.sites = sites
        self.rate = rate
        self.index = index
        self._parts: tuple[_Part, ...] = tuple(parts)

    @property
    def slots(self) -> tuple[int, ...]:
        """The parameter slots the channel reads, one per rate (empty for fixed rates)."""
        return tuple(part.index for part in self._parts if part.index is not None)

    def _shifted(self, offset: int) -> Channel:
        """The channel with its parameter slots moved by ``offset`` (circuit concatenation)."""
        parts = [
            _Part(None if p.index is None else p.index + offset, p.layers, p.lowest, p.highest)
            for p in self._parts
        ]
        index = self.index
        if isinstance(index, int):
            index += offset
        elif index is not None:
            index = tuple(i + offset for i in index)
        return Channel(self.name, self.family, self.sites, self.rate, index, parts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Channel):
            return NotImplemented
        return (self.name, self.family, self.sites, self.rate, self.index, self._parts) == (
            other.name,
            other.family,
            other.sites,
            other.rate,
            other.index,
            other._parts,
        )

    def __repr__(self) -> str:
        what = f"index={self.index!r}" if self.rate is None else f"rate={self.rate!r}"
        return f"Channel({self.name!r}, sites={self.sites!r}, {what})"
