"""The smoke test tools/wheel runs against the installed wheel (in an environment of its own).

A one-qubit rotation ``exp(+i θ X / 2)`` on ``|0>`` gives ``<Z> = cos θ`` and ``d<Z>/dθ =
-sin θ``; a four-qubit chain is propagated with two OpenMP threads and with one, which must
agree. The OpenMP runtime in use must be the one inside the wheel.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np

import monoprop
from monoprop import Circuit, CliffordGate, ExpGate, PauliOperator, PauliPropagator


def check(condition: bool, what: str) -> None:
    if not condition:
        sys.exit(f"wheel smoke test failed: {what}")


def main() -> None:
    installed = Path(monoprop.__file__).resolve()
    check(
        installed.is_relative_to(Path(sys.prefix).resolve()),
        f"monoprop was imported from {installed}, not from the environment {sys.prefix}",
    )
    print(f"monoprop {monoprop.__version__} ({monoprop.__build_type__}) from {installed.parent}")

    # Value and gradient from a recorded graph, against the exact ones.
    theta = 0.37
    rotation = Circuit([ExpGate(PauliOperator({"X": 0.5}, 1))], 1)
    prop = PauliPropagator(PauliOperator({"Z": 1.0}, 1), [], cutoff=1)
    prop.build_graph(rotation)
    value, gradient = prop.expectation_value_and_gradient([theta])
    print(f"<Z> = {value!r} (cos θ = {math.cos(theta)!r}), gradient {gradient.tolist()!r}")
    check(abs(value - math.cos(theta)) < 1e-12, f"value {value} is not cos({theta})")
    check(
        np.allclose(gradient, [-math.sin(theta)], rtol=0, atol=1e-12),
        f"gradient {gradient} is not [-sin({theta})]",
    )

    # A propagation at bound angles, on two OpenMP threads and on one: the same value.
    n = 4
    gates = [CliffordGate.h(q, n) for q in range(n)]
    for q in range(n - 1):
        gates.append(ExpGate(PauliOperator({"I" * q + "ZZ": 1.0}, n)))
        gates.append(ExpGate(PauliOperator({"I" * q + "X": 1.0}, n)))
    angles = np.linspace(0.1, 0.7, 2 * (n - 1))
    chain = Circuit(gates, n, parameters=angles)
    observable = PauliOperator({"ZZII": 1.0, "IXXI": 0.5, "IIYZ": -0.25}, n)
    threads = PauliPropagator(observable, [], cutoff=n)
    check(threads.num_threads == 2, f"monoprop_NUM_THREADS=2 gave {threads.num_threads} threads")
    threads.propagate(chain)
    os.environ["monoprop_NUM_THREADS"] = "1"
    serial = PauliPropagator(observable, [], cutoff=n)
    serial.propagate(chain)
    a, b = threads.expectation_value(), serial.expectation_value()
    print(f"propagated: {a!r} on 2 threads, {b!r} on 1")
    check(abs(a - b) < 1e-12 and abs(a) > 1e-6, f"2 threads gave {a}, 1 thread {b}")

    # The OpenMP runtime this process loaded is the wheel's copy.
    maps = Path("/proc/self/maps").read_text().splitlines()
    gomp = sorted({line.split()[-1] for line in maps if "libgomp" in line})
    print(f"OpenMP runtime: {gomp}")
    check(
        len(gomp) == 1 and "/monoprop.libs/" in gomp[0],
        f"libgomp loaded from {gomp}, not from the wheel's monoprop.libs",
    )
    print("wheel smoke test: ok")


if __name__ == "__main__":
    main()
