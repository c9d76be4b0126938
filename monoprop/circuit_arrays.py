"""A :class:`~monoprop.circuit.Circuit` flattened into the arrays the compiled core takes.

:func:`~monoprop.circuit.circuit_layers` lists a circuit's layers in application order (one
per generator term, per quarter turn of a Clifford gate, per layer of a noise channel); this
module packs them into a :class:`~monoprop.core_arrays.LayerArrays`, with the noise fields of
the channels' layers in a :class:`~monoprop.core_arrays.NoiseArrays`. The front-end supplies
how a layer's structural coefficient becomes the core's ``h`` (its ``_layer_coefficients``:
unchanged for Pauli layers, negated for Majorana ones).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .circuit import Circuit, circuit_layers
from .core_arrays import LayerArrays, NoiseArrays, TermArrays

__all__ = ["layer_arrays", "noise_arrays"]


def layer_arrays(
    circuit: Circuit, num_modes: int, coefficients: Callable[[np.ndarray], np.ndarray]
) -> LayerArrays:
    """The circuit as the core takes it: one layer per generator term (and per quarter turn
    of a Clifford gate), in order.

    ``coefficients`` maps the layers' structural coefficients ``g`` (float64) to the core's
    ``h`` in ``exp(+iθ h M)``.
    """
    keys, g, mapping, gate_indices, turns, noise = circuit_layers(circuit, num_modes)
    h = coefficients(np.asarray(g, dtype=np.float64))
    return LayerArrays(
        terms=TermArrays.from_keys(keys, h),
        parameters=np.asarray(mapping, dtype=np.int32),
        gates=np.asarray(gate_indices, dtype=np.int32),
        n_parameters=circuit.n_parameters,
        n_gates=circuit.n_gates,
        quarter_turns=np.asarray(turns, dtype=np.int8),
        noise=noise_arrays(noise) if any(noise) else None,
    )


def noise_arrays(noise: list[Any]) -> NoiseArrays:
    """The core's per-layer noise fields; rotation and Clifford layers are kind 0."""
    rows = [
        (0, 0, 0, 0.0, 0.0, 0.0, 0.0)
        if entry is None
        else (
            entry[0].kind,
            entry[0].form,
            entry[0].patterns,
            entry[0].alpha,
            entry[0].beta,
            entry[1],
            entry[2],
        )
        for entry in noise
    ]
    return NoiseArrays(*(list(column) for column in zip(*rows, strict=True)))
