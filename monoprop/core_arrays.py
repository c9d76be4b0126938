"""What crosses into the compiled core: monomial terms and circuit layers as flat arrays.

A *monomial term* is a product of generators times a real coefficient,
``c * g_{s1} g_{s2} ... g_{sw}``, written by the *slots* ``s1 < s2 < ... < sw`` it
contains. What a slot means depends on the propagator:

* Majorana: slot ``j`` is the Majorana ``m_j``, and the coefficient is the real
  Hermitian-basis coefficient ``h`` of ``M_S = i**C(w, 2) m_S`` (the product of
  ``w`` Majoranas times the phase that makes it Hermitian), so ``c m_S = h M_S``
  with ``h = c / i**C(w, 2)``.
* Pauli: qubit ``q`` owns slots ``2q`` and ``2q + 1``: ``X_q`` is slot ``2q``,
  ``Y_q`` is slot ``2q + 1`` and ``Z_q`` sets both. The coefficient is the Pauli
  coefficient itself.

:class:`TermArrays` holds a list of ``n`` terms in compressed sparse row (CSR)
layout: ``slots`` concatenates every term's slots, term ``t`` owns
``slots[offsets[t]:offsets[t + 1]]``, and ``coefficients[t]`` is its coefficient.
For example the Pauli terms ``2.0 * Z0`` (slots 0 and 1) and ``-0.5 * X1 Y2``
(slots 2 and 5) are::

    slots        = [0, 1, 2, 5]
    offsets      = [0, 2, 4]
    coefficients = [2.0, -0.5]

:class:`LayerArrays` holds a circuit flattened to *layers*, one generator term per
layer: layer ``l`` applies ``exp(+i theta h G)`` with ``G`` and ``h`` the layer's
term, ``theta = parameters_vector[parameters[l]]``, and records that it came from gate
``gates[l]`` of the circuit. A *Clifford layer* (``quarter_turns[l] = q`` in 1..3)
instead applies the fixed gate ``exp(+i q pi/4 G)``; it has no parameter and no gate
(both ``-1``) and its coefficient is not read.

A *noise layer* (``noise`` given, ``noise.kinds[l]`` in 1..3) applies a channel's part to
the terms its monomial or slots select (see :class:`NoiseArrays`); a fixed rate has parameter
and gate ``-1``.

Both check their invariants when constructed and raise :class:`ValueError` naming the
field and the offending values, so that the core only ever sees well-formed arrays.
Their array fields are read-only views in the dtype the core takes.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, fields
from itertools import chain
from typing import Any

import numpy as np

from . import _core
from .validation import check_int

__all__ = ["LayerArrays", "NoiseArrays", "TermArrays"]

# Every slot index the core can hold: two slots per mode, for MAX_NUM_MODES modes.
SLOT_LIMIT = 2 * _core.MAX_NUM_MODES


@dataclass(frozen=True, eq=False)
class TermArrays:
    """A list of monomial terms in CSR layout (see the module docstring).

    Fields and their invariants:

    * ``slots`` (int64, 1-D): every term's slots, concatenated; each in
      ``0 .. 2 * MAX_NUM_MODES - 1``.
    * ``offsets`` (int64, 1-D, length ``n + 1``): term ``t`` owns
      ``slots[offsets[t]:offsets[t + 1]]``; ``offsets[0] == 0``, non-decreasing,
      ``offsets[n] == len(slots)``.
    * ``coefficients`` (float64, 1-D, length ``n``): one real coefficient per term.

    The Pauli terms ``2.0 * Z0`` and ``-0.5 * X1 Y2``:

    >>> terms = TermArrays([0, 1, 2, 5], [0, 2, 4], [2.0, -0.5])
    >>> len(terms), terms.keys()
    (2, [(0, 1), (2, 5)])
    >>> TermArrays.from_keys([(0, 1), (2, 5)], [2.0, -0.5]).offsets.tolist()
    [0, 2, 4]
    >>> TermArrays([0, 1, 2, 5], [0, 2, 7], [2.0, -0.5])
    Traceback (most recent call last):
    ...
    ValueError: offsets[2] = 7 exceeds len(slots) = 4.
    """

    slots: np.ndarray
    offsets: np.ndarray
    coefficients: np.ndarray

    def __post_init__(self) -> None:
        slots = _integer_field("slots", self.slots)
        offsets = _integer_field("offsets", self.offsets)
        coefficients = _real_field("coefficients", self.coefficients)
        _check_offsets(offsets, len(slots), len(coefficients))
        _check_range("slots", slots, 0, SLOT_LIMIT)
        object.__setattr__(self, "slots", _frozen(slots, np.int64))
        object.__setattr__(self, "offsets", _frozen(offsets, np.int64))
        object.__setattr__(self, "coefficients", _frozen(coefficients, np.float64))

    @classmethod
    def from_keys(cls, keys: Sequence[Sequence[int]], coefficients: Any = None) -> TermArrays:
        """Terms from one slot tuple per term; coefficients default to zeros.

        >>> TermArrays.from_keys([(3,), ()]).coefficients.tolist()
        [0.0, 0.0]
        """
        lengths = np.fromiter((len(k) for k in keys), dtype=np.int64, count=len(keys))
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        slots = np.fromiter(chain.from_iterable(keys), dtype=np.int64, count=int(offsets[-1]))
        if coefficients is None:
            coefficients = np.zeros(len(keys), dtype=np.float64)
        return cls(slots, offsets, coefficients)

    def keys(self) -> list[tuple[int, ...]]:
        """One slot tuple per term: the inverse of :meth:`from_keys`."""
        flat = self.slots.tolist()
        bounds = self.offsets.tolist()
        return [tuple(flat[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def __len__(self) -> int:
        return len(self.coefficients)


@dataclass(frozen=True, eq=False)
class NoiseArrays:
    """Per layer, the noise layer it is (``kinds`` 0 for a rotation or Clifford layer).

    ``kinds``: 1 scales the terms that anticommute with the layer's monomial; 2 scales the
    terms whose bits at the layer's slots (1 to 4) form one of ``patterns`` (bit ``p`` for
    pattern ``p``, the ``k``-th slot being bit ``k`` of ``p``); 3 moves ``v c`` of each term
    holding the layer's monomial (Heisenberg), or none of its slots (Schrödinger), to the
    term with the monomial taken out (or put in). The layer's number ``v`` is
    ``f(alpha + beta * rate)`` with ``f`` per ``forms``: 0 identity, 1 square root, 2 exp. A
    rate from the parameter vector must lie in ``[lowest, highest]``.

    >>> NoiseArrays([0, 2], [0, 0], [0, 14], [0.0, 0.99], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]).kinds
    array([0, 2], dtype=int8)
    """

    kinds: Any
    forms: Any
    patterns: Any
    alpha: Any
    beta: Any
    lowest: Any
    highest: Any

    def __post_init__(self) -> None:
        kinds = _integer_field("kinds", self.kinds)
        forms = _integer_field("forms", self.forms)
        patterns = _integer_field("patterns", self.patterns)
        _check_range("kinds", kinds, 0, 4)
        _check_range("forms", forms, 0, 3)
        _check_range("patterns", patterns, 0, 1 << 16)
        object.__setattr__(self, "kinds", _frozen(kinds, np.int8))
        object.__setattr__(self, "forms", _frozen(forms, np.int8))
        object.__setattr__(self, "patterns", _frozen(patterns, np.int32))
        for name in ("alpha", "beta", "lowest", "highest"):
            values = np.array(getattr(self, name), dtype=np.float64)
            if values.ndim != 1 or len(values) != len(kinds):
                raise ValueError(f"{name} needs one value per layer ({len(kinds)}).")
            object.__setattr__(self, name, _frozen(values, np.float64))


@dataclass(frozen=True, eq=False)
class LayerArrays:
    """A circuit flattened to layers, first layer applied first (see the module docstring).

    Fields and their invariants:

    * ``terms`` (:class:`TermArrays`): layer ``l``'s generator monomial ``G`` and its
      coefficient ``h`` in ``exp(+i theta h G)``.
    * ``parameters`` (int32, 1-D, one per layer): the index of layer ``l``'s angle in the
      circuit's parameter vector, in ``0 .. n_parameters - 1``.
    * ``gates`` (int32, 1-D, one per layer): the circuit gate layer ``l`` comes from, in
      ``0 .. n_gates - 1`` (a gate with several commuting terms gives several layers).
    * ``n_parameters``, ``n_gates`` (int, ``>= 0``): the circuit's parameter and rotation gate
      counts.
    * ``quarter_turns`` (int8, 1-D, one per layer; default all 0): 0 for a rotation, ``q`` in
      1..3 for the Clifford layer ``exp(+i q pi/4 G)``, whose ``parameters`` and ``gates``
      entries are ``-1``.

    Two layers from one gate ``exp(+i theta (X0 + 0.5 Y1))`` on two qubits:

    >>> layers = LayerArrays(TermArrays([0, 3], [0, 1, 2], [1.0, 0.5]), [0, 0], [0, 0], 1, 1)
    >>> len(layers), layers.parameters.dtype
    (2, dtype('int32'))
    >>> LayerArrays(layers.terms, [0, 1], [0, 0], 1, 1)
    Traceback (most recent call last):
    ...
    ValueError: parameters[1] = 1 is out of range 0..0 (n_parameters = 1).
    """

    terms: TermArrays
    parameters: np.ndarray
    gates: np.ndarray
    n_parameters: int
    n_gates: int
    quarter_turns: Any = None
    noise: NoiseArrays | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.terms, TermArrays):
            raise TypeError(f"terms must be a TermArrays; got {type(self.terms).__name__}.")
        n_parameters = _count("n_parameters", self.n_parameters)
        n_gates = _count("n_gates", self.n_gates)
        parameters = _integer_field("parameters", self.parameters)
        gates = _integer_field("gates", self.gates)
        layers = len(self.terms)
        turns = _integer_field(
            "quarter_turns",
            np.zeros(layers, dtype=np.int8) if self.quarter_turns is None else self.quarter_turns,
        )
        fields = (("parameters", parameters), ("gates", gates), ("quarter_turns", turns))
        for name, values in fields:
            if len(values) != layers:
                raise ValueError(
                    f"{name} has {len(values)} entries but terms has {layers}; give one per layer."
                )
        _check_range("quarter_turns", turns, 0, 4)
        rotation = turns == 0
        if self.noise is not None:
            if not isinstance(self.noise, NoiseArrays) or len(self.noise.kinds) != layers:
                raise ValueError(
                    f"noise must be a NoiseArrays with one entry per layer ({layers})."
                )
            # A noise layer of fixed rate has no parameter and no gate, as a Clifford layer.
            rotation &= ~((self.noise.kinds != 0) & (parameters == -1))
        _check_range(
            "parameters", parameters, 0, n_parameters, f"n_parameters = {n_parameters}", rotation
        )
        _check_range("gates", gates, 0, n_gates, f"n_gates = {n_gates}", rotation)
        for name, values in (("parameters", parameters), ("gates", gates)):
            _check_range(
                name, values, -1, 0, "a Clifford or fixed noise layer has none: -1", ~rotation
            )
        object.__setattr__(self, "quarter_turns", _frozen(turns, np.int8))
        object.__setattr__(self, "parameters", _frozen(parameters, np.int32))
        object.__setattr__(self, "gates", _frozen(gates, np.int32))
        object.__setattr__(self, "n_parameters", n_parameters)
        object.__setattr__(self, "n_gates", n_gates)

    def __len__(self) -> int:
        return len(self.terms)

    def rows(self, start: int, stop: int) -> LayerArrays:
        """Layers ``start .. stop - 1``, on the whole circuit's parameter and gate axes.

        >>> layers = LayerArrays(TermArrays([0, 3], [0, 1, 2], [1.0, 0.5]), [0, 1], [0, 1], 2, 2)
        >>> part = layers.rows(1, 2)
        >>> part.terms.keys(), part.parameters.tolist(), part.n_parameters
        ([(3,)], [1], 2)
        """
        offsets = self.terms.offsets
        terms = TermArrays(
            self.terms.slots[offsets[start] : offsets[stop]],
            offsets[start : stop + 1] - offsets[start],
            self.terms.coefficients[start:stop],
        )
        noise = None
        if self.noise is not None:
            noise = NoiseArrays(
                *(getattr(self.noise, f.name)[start:stop] for f in fields(NoiseArrays))
            )
        return LayerArrays(
            terms,
            self.parameters[start:stop],
            self.gates[start:stop],
            self.n_parameters,
            self.n_gates,
            self.quarter_turns[start:stop],
            noise,
        )


# -- checks -------------------------------------------------------------------------------

_INT32_MAX = np.iinfo(np.int32).max


def _one_dimensional(name: str, value: Any) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {array.shape}.")
    return array


def _integer_field(name: str, value: Any) -> np.ndarray:
    array = _one_dimensional(name, value)
    # An empty list arrives as float64; anything else must hold integers already, since
    # a cast from floats would truncate silently.
    if array.size and array.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers; got dtype {array.dtype}.")
    return array


def _real_field(name: str, value: Any) -> np.ndarray:
    array = _one_dimensional(name, value)
    if array.size and array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold real numbers; got dtype {array.dtype}.")
    return array


def _count(name: str, value: Any) -> int:
    return check_int(
        value,
        name,
        minimum=0,
        maximum=_INT32_MAX,
        types=numbers.Integral,
        message="{name} must be an int; got {value!r}.",
        range_message="{name} = {value} is out of range 0..{maximum}.",
        type_error=ValueError,
    )


def _check_offsets(offsets: np.ndarray, n_slots: int, n_terms: int) -> None:
    """CSR bounds: ``n_terms + 1`` offsets from 0 up to ``n_slots``, never decreasing."""
    if len(offsets) != n_terms + 1:
        raise ValueError(
            f"offsets has {len(offsets)} entries but coefficients has {n_terms}; "
            "offsets needs one more (each term's start, then the end)."
        )
    if offsets[0] != 0:
        raise ValueError(f"offsets[0] = {offsets[0]}; the first term starts at 0.")
    down = np.flatnonzero(offsets[1:] < offsets[:-1])
    if down.size:
        i = int(down[0]) + 1
        raise ValueError(
            f"offsets[{i}] = {offsets[i]} is less than offsets[{i - 1}] = {offsets[i - 1]}; "
            "offsets must be non-decreasing."
        )
    if offsets[-1] > n_slots:
        i = int(np.argmax(offsets > n_slots))
        raise ValueError(f"offsets[{i}] = {offsets[i]} exceeds len(slots) = {n_slots}.")
    if offsets[-1] != n_slots:
        raise ValueError(
            f"offsets[{n_terms}] = {offsets[-1]} but len(slots) = {n_slots}; "
            "the last offset must be len(slots)."
        )


def _check_range(
    name: str, values: np.ndarray, low: int, end: int, why: str = "", where: Any = True
) -> None:
    """Every value (where ``where``) in ``low .. end - 1``, checked before any narrowing cast
    can wrap."""
    bad = np.flatnonzero(((values < low) | (values >= end)) & where)
    if bad.size:
        i = int(bad[0])
        reason = f" ({why})" if why else ""
        raise ValueError(f"{name}[{i}] = {values[i]} is out of range {low}..{end - 1}{reason}.")


def _frozen(array: np.ndarray, dtype: type) -> np.ndarray:
    """A read-only, C-contiguous view (a copy only where the dtype or layout differs)."""
    view: np.ndarray = np.ascontiguousarray(array, dtype=dtype).view()
    view.flags.writeable = False
    return view
