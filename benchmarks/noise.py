#!/usr/bin/env python
"""Noise channels: what they cost and what they save, side by side with the noiseless circuit.

The workload is the 115-qubit heavy-hex kicked Ising circuit of ``versus.py`` (``hh``): rx(0.6)
on every qubit, then rzz(-pi/2) on the 132 edges in three colour classes, Z on the central
qubit, Heisenberg, all as rotations. The noisy circuit adds one-qubit depolarizing at rate
``--rate`` on every qubit after each of the four layers of a step (460 channels a step), all
reading their rate from one parameter slot. In one process, alternating, ``--repeat`` times
(medians):

* ``propagate`` at ``lower_atol``: time and terms kept, noisy against noiseless. Damping
  pulls terms under ``lower_atol`` sooner, so noise should make propagation cheaper.
* a coefficient-informed ``build_graph`` at the same ``lower_atol``, then value+gradient
  replays of each graph: the time of one replay, noisy against noiseless, and the graph's
  entries. The noisy graph has a layer per channel and one more gradient component (the rate).

Usage:  python benchmarks/noise.py [--steps 8] [--rate 0.01] [--lower-atol 1e-4]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from propagate import heavy_hex_workload  # noqa: E402

from monoprop import Circuit, ExpGate, Pauli, PauliOperator, PauliPropagator, noise  # noqa: E402


def circuit(hh: dict, steps: int, rate: float | None) -> tuple[Circuit, list[float]]:
    """The kicked Ising circuit (rotations ``exp(-i t P / 2)`` at angle t) and its parameters;
    with a ``rate``, depolarizing on every qubit after every layer, all reading the rate from
    the slot after the last angle."""
    n = hh["n"]
    angles = [t for _ in range(steps) for layer in hh["layers"] for _, _, t in layer]
    rate_slot = len(angles)
    gates: list = []
    for _ in range(steps):
        for layer in hh["layers"]:
            gates += [
                ExpGate(PauliOperator({Pauli(letters, qubits): -0.5}, n))
                for letters, qubits, _ in layer
            ]
            if rate is not None:
                gates += [noise.depolarizing(qubits=q, index=rate_slot) for q in range(n)]
    return Circuit(gates, n), angles if rate is None else [*angles, rate]


def propagator(hh: dict, lower_atol: float) -> PauliPropagator:
    observable = PauliOperator({Pauli(p, q): c for p, q, c in hh["observable"]}, hh["n"])
    return PauliPropagator(observable, [], cutoff=hh["n"], lower_atol=lower_atol)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rate", type=float, default=0.01)
    parser.add_argument("--lower-atol", type=float, default=1e-4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--replays", type=int, default=5, help="value+gradient replays timed")
    args = parser.parse_args()
    hh = heavy_hex_workload()
    forms = {}
    for name, rate in (("noiseless", None), ("noisy", args.rate)):
        c, theta = circuit(hh, args.steps, rate)
        forms[name] = (c, np.array(theta))
    print(
        f"# heavy-hex kicked Ising, {hh['n']} qubits, {args.steps} steps, lower_atol "
        f"{args.lower_atol:g}; noisy: depolarizing {args.rate:g} on every qubit after every "
        f"layer ({sum(isinstance(g, noise.Channel) for g in forms['noisy'][0].gates)} channels)",
        flush=True,
    )

    runs: dict[str, dict[str, list[float]]] = {name: {} for name in forms}
    for _ in range(args.repeat):
        for name, (c, theta) in forms.items():
            record = runs[name]
            bound = Circuit(c.gates, c.system_size, parameters=theta)
            prop = propagator(hh, args.lower_atol)
            start = time.perf_counter()
            prop.propagate(bound)
            record.setdefault("propagate s", []).append(time.perf_counter() - start)
            record.setdefault("terms", []).append(prop.size())
            record.setdefault("value", []).append(prop.expectation_value())

            prop = propagator(hh, args.lower_atol)
            start = time.perf_counter()
            prop.build_graph(c, seed_parameters=theta)
            record.setdefault("build s", []).append(time.perf_counter() - start)
            record.setdefault("graph entries", []).append(sum(prop.graph_size()))
            replay = prop.expectation_value_and_gradient_functional()
            replay(theta)  # buffers in place
            start = time.perf_counter()
            for _ in range(args.replays):
                value, gradient = replay(theta)
            record.setdefault("value+grad s", []).append(
                (time.perf_counter() - start) / args.replays
            )
            record.setdefault("replay value", []).append(value)
            if name == "noisy":
                record.setdefault("d value / d rate", []).append(gradient[-1])

    medians = {name: {k: statistics.median(v) for k, v in r.items()} for name, r in runs.items()}
    keys = ["propagate s", "terms", "value", "build s", "graph entries", "value+grad s"]
    print(f"{'':>16} " + " ".join(f"{k:>14}" for k in keys))
    for name, m in medians.items():
        print(f"{name:>16} " + " ".join(f"{m[k]:>14.6g}" for k in keys))
    quiet, loud = medians["noiseless"], medians["noisy"]
    ratios = {
        k: loud[k] / quiet[k] for k in ("propagate s", "terms", "graph entries", "value+grad s")
    }
    print(
        f"{'noisy/noiseless':>16} "
        + " ".join(f"{ratios[k]:>14.3f}" if k in ratios else f"{'':>14}" for k in keys)
    )
    print(f"# d value / d rate at rate {args.rate:g}: {loud['d value / d rate']:.6g}")
    # Noise at the same lower_atol must not keep more terms: a check, not a timing.
    cheaper = ratios["terms"] <= 1.0 and math.isfinite(loud["value"])
    print(f"# noise keeps {'no more' if cheaper else 'MORE'} terms than the noiseless run")
    return 0 if cheaper else 1


if __name__ == "__main__":
    sys.exit(main())
