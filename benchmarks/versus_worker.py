"""One measurement for ``versus.py``, run by either engine's interpreter.

This script uses only numpy and monoprop's public API (the API both engines share),
so the same file runs in this project's environment and in the reference engine's.
It reads a job (JSON) from its first argument, runs it, and prints one line
``RESULT {json}``.

A job names a neutral workload: ``n`` qubits, ``front`` ("pauli" or "majorana"),
``layers`` (lists of rotations ``[letters, qubits, t]``, each the Qiskit gate
``R_P(t) = exp(-i t P / 2)``, i.e. ``ExpGate({P: -0.5})`` at angle ``t``), repeated
``steps`` times, an ``observable`` (``[letters, qubits, coefficient]`` terms), the
occupied qubits and the truncation settings. With ``clifford_quarter_turns``, the rotations at
``t = -pi/2`` become exact ``CliffordGate`` quarter turns (only engines that have them can run
such a job). ``mode`` is one of:

* ``propagate``: one ``propagate()`` of the whole circuit at its angles;
* ``graph``: ``build_graph()`` seeded with the angles, then ``repeat`` timed
  ``expectation_value_and_gradient`` calls (after one warm-up call);
* ``vqe``: ``build_graph()`` of an unbound ansatz, then ``repeat`` value-and-gradient
  replays at points near zero, as an optimiser makes them.

With ``"gradient": true`` a ``graph`` job also returns the last gradient, entry by entry.
``scaling.py`` imports ``build`` to run our engine under MPI (its ``comm`` argument).
"""

from __future__ import annotations

import json
import statistics
import sys
import time


def status_mb(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def build(job: dict, comm=None):
    """(monoprop, propagator, circuit, rotations) of ``job``; ``comm`` is passed to the
    propagator only when given (the reference is never given one)."""
    import monoprop as mp
    from monoprop.pauli import Pauli, PauliOperator

    n, majorana = job["n"], job["front"] == "majorana"

    def operator(terms):
        op = PauliOperator({Pauli(letters, tuple(q)): c for letters, q, c in terms}, n)
        return op.get_majorana_operator() if majorana else op

    rotations = [g for _ in range(job["steps"]) for layer in job["layers"] for g in layer]
    if job.get("clifford_quarter_turns"):
        # R_P(-pi/2) = exp(+i pi/4 P), one quarter turn: as an exact Clifford gate.
        def clifford(g):
            return abs(g[2] + 1.5707963267948966) < 1e-12

        gates = [
            mp.CliffordGate(operator([(letters, q, 1.0)]))
            if clifford((letters, q, t))
            else mp.ExpGate(operator([(letters, q, -0.5)]))
            for letters, q, t in rotations
        ]
        rotations = [g for g in rotations if not clifford(g)]
    else:
        gates = [mp.ExpGate(operator([(letters, q, -0.5)])) for letters, q, _ in rotations]
    bound = job["mode"] != "vqe"
    circuit = mp.Circuit(gates, n, parameters=[t for *_, t in rotations] if bound else ())
    config = {"cutoff": job["cutoff"]}
    if job.get("lower_atol") is not None:
        config["lower_atol"] = job["lower_atol"]
    if comm is not None:
        config["comm"] = comm
    if majorana:
        config["cutoff_type"] = job.get("cutoff_type", "length")
        prop = mp.MajoranaPropagator(operator(job["observable"]), job["occupied"], **config)
    else:
        prop = mp.PauliPropagator(operator(job["observable"]), job["occupied"], **config)
    return mp, prop, circuit, len(rotations)


def run(job: dict) -> dict:
    mp, prop, circuit, n_rotations = build(job)
    out = {"module": mp.__file__, "version": mp.__version__, "rotations": n_rotations}
    out["num_threads"] = getattr(prop, "num_threads", None)
    import numpy as np

    # The first random generator imports numpy.random (about 3 MB): before the
    # reading, so that the peak over it counts the engine's memory alone.
    np.random.default_rng(1)
    rss_before = status_mb("VmRSS")
    if job["mode"] == "propagate":
        start = time.perf_counter()
        prop.propagate(circuit)
        out["time"] = time.perf_counter() - start
        start = time.perf_counter()
        out["value"] = float(prop.expectation_value())
        out["value_time"] = time.perf_counter() - start
    else:
        start = time.perf_counter()
        prop.build_graph(circuit)
        out["build_time"] = time.perf_counter() - start
        out["graph_size"] = [int(v) for v in prop.graph_size()]
        out["entries"] = sum(out["graph_size"])
        if job["mode"] == "graph":
            points = [np.asarray(circuit.parameters, dtype=float)] * (job["repeat"] + 1)
        else:
            rng = np.random.default_rng(1)
            size = prop.n_parameters
            points = [rng.normal(scale=0.1, size=size) for _ in range(job["repeat"] + 1)]
        value, gradient = prop.expectation_value_and_gradient(points[0])  # warm-up
        times = []
        for x in points[1:]:
            start = time.perf_counter()
            value, gradient = prop.expectation_value_and_gradient(x)
            times.append(time.perf_counter() - start)
        out["time"] = statistics.median(times) if job["mode"] == "graph" else sum(times)
        out["calls"] = len(times)
        out["value"] = float(value)
        out["gradient_norm"] = float(np.linalg.norm(gradient))
        if job.get("gradient"):
            out["gradient"] = [float(g) for g in gradient]
    out["terms"] = int(prop.size())
    out["peak_mb"] = status_mb("VmHWM")
    out["rss_before_mb"] = rss_before
    return out


if __name__ == "__main__":
    print("RESULT " + json.dumps(run(json.loads(sys.argv[1]))), flush=True)
