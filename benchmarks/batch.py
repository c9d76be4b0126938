#!/usr/bin/env python
"""Many parameter points in one replay: a batch against the same points one call each.

A 2-D array of points, ``prop.expectation_value_and_gradient(P)`` with ``P`` of shape
``(K, n_parameters)``, splits the points over the threads, each replaying up to 16 of them
side by side where they stay in the cache (else point by point), and replays the layers all
points turn alike once (values). For each workload and thread count T this
prints, from a fresh process per (workload, T):

* value+grad of K = 1, 4, 8, 16, 64 points in one call, against one point alone (target:
  K = 8 in at most 2x one point's time at T = 1), and the speed-up over K single calls;
* a landscape: the values at 4,096 points (a 64 x 64 grid over two parameters, the others
  fixed) in one call, against 4,096 single calls (target: at least 8x faster). The single
  calls' time is the median of 64 of them times 4,096 (the full loop would take minutes);
* that every batched result is bitwise the single call's at the same point;
* against the other engine with this API (``monoprop==0.9.2``, run by ``versus.py``'s worker
  in its own environment, see there), which evaluates a batch point by point (its
  ``jax.vmap`` too): its time for one value+grad call over ours per point in a batch of 64.

Workloads (``versus.py``'s, where the reference engine's timings of the same graphs are):

* ``hubbard``: 1D Fermi-Hubbard, 12 sites (24 Majorana modes), 10 Trotter steps, length
  cutoff 8, lower_atol 1e-6: the graph of versus.py's value+grad row;
* ``vqe``: the README's main job, the 8-qubit TFIM Hamiltonian-variational ansatz (4 layers,
  68 parameters, unbound).

Usage:  python benchmarks/batch.py [--only hubbard] [--threads 1,2] [--repeat 5] [--no-reference]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

COUNTS = (1, 4, 8, 16, 64)
GRID = 64  # the landscape is GRID x GRID points
PAIR_TARGET, LANDSCAPE_TARGET = 2.0, 8.0


def workload(name: str) -> dict:
    from versus import jobs  # noqa: PLC0415 (the benchmark's own modules, on sys.path)

    all_jobs = jobs(quick=False)
    if name == "hubbard":
        return next(j for j in all_jobs["hubbard"] if j["mode"] == "graph")
    return all_jobs["vqe"][0]


def timed(fn, repeat: int) -> tuple[float, object]:
    """Median time of one call over ``repeat`` samples (after one warm-up call), and the last
    result. A sample times enough calls to last 0.1 s: the VQE graph's replays take tens of
    microseconds, where one call's time is mostly the clock's and the machine's noise."""
    start = time.perf_counter()
    result = fn()
    calls = max(1, int(0.1 / max(time.perf_counter() - start, 1e-6)))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            result = fn()
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times), result


def measure(name: str, repeat: int) -> dict:
    """Runs in the child: builds the graph and times single calls against batches."""
    import numpy as np
    from versus_worker import build  # noqa: PLC0415

    _, prop, circuit, _ = build(workload(name))
    prop.build_graph(circuit)
    rng = np.random.default_rng(7)
    n = prop.n_parameters
    seed = np.asarray(circuit.parameters, dtype=float) if len(circuit.parameters) else np.zeros(n)
    points = seed + rng.normal(scale=0.05, size=(max(COUNTS), n))
    out: dict = {"n_parameters": n, "graph_size": [int(v) for v in prop.graph_size()]}
    out["terms"] = prop.size()
    one, _ = timed(lambda: prop.expectation_value_and_gradient(points[0]), repeat)
    out["one"] = one
    bitwise = True
    for K in COUNTS:
        t, (values, gradients) = timed(
            lambda K=K: prop.expectation_value_and_gradient(points[:K]), max(1, repeat // 2)
        )
        out[f"K{K}"] = t
        for i in (0, K - 1):
            v, g = prop.expectation_value_and_gradient(points[i])
            bitwise &= bool(v == values[i]) and bool(np.array_equal(g, gradients[i]))
    # The landscape: parameters 0 and 1 over a grid, the rest at the seed.
    axis = np.linspace(-np.pi / 2, np.pi / 2, GRID)
    grid = np.repeat(seed[None, :], GRID * GRID, axis=0)
    grid[:, 0] = np.repeat(axis, GRID)
    grid[:, 1] = np.tile(axis, GRID)
    start = time.perf_counter()
    landscape = prop.expectation_value(grid)
    out["landscape"] = time.perf_counter() - start
    sample = rng.choice(GRID * GRID, size=64, replace=False)
    times = []
    for i in sample:
        start = time.perf_counter()
        value = prop.expectation_value(grid[i])
        times.append(time.perf_counter() - start)
        bitwise &= bool(value == landscape[i])
    out["pointwise_value"] = statistics.median(times)
    out["bitwise"] = bitwise
    return out


def reference_call(python: Path, name: str, threads: int, timeout: float) -> float:
    """The reference engine's time for one value+grad call on the same graph, at T."""
    import versus  # noqa: PLC0415

    job = workload(name)
    result = versus.measure(python, job, threads, timeout, isolated=True)
    if "error" in result:
        raise RuntimeError(f"the reference failed on {name} T={threads}: {result['error']}")
    # A graph job times the median call; a VQE job all its calls.
    return result["time"] / result["calls"] if job["mode"] == "vqe" else result["time"]


def child(name: str, threads: int, repeat: int, timeout: float) -> dict:
    env = dict(os.environ)
    env.update(
        {
            "monoprop_NUM_THREADS": str(threads),
            "OMP_NUM_THREADS": str(threads),
            "OMP_DYNAMIC": "FALSE",
            "OPENBLAS_NUM_THREADS": "1",
        }
    )
    command = [sys.executable, __file__, "--child", name, "--repeat", str(repeat)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{name} T={threads} failed:\n{done.stderr[-2000:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated workloads (hubbard, vqe)")
    ap.add_argument("--threads", default="1,2", help="comma-separated T values (default 1,2)")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per measurement (median)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="per child, seconds")
    ap.add_argument("--no-reference", action="store_true", help="skip the reference engine")
    ap.add_argument("--reference-venv", type=Path, default=None, help="as for versus.py")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print("RESULT " + json.dumps(measure(args.child, args.repeat)), flush=True)
        return 0

    started = time.perf_counter()
    names = args.only.split(",") if args.only else ["hubbard", "vqe"]
    reference = None
    if not args.no_reference:
        import versus  # noqa: PLC0415

        reference = versus.reference_python(args.reference_venv or versus.DEFAULT_VENV)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, medians of {args.repeat}")
    header = "| workload | T | one point | " + " | ".join(f"K={K}" for K in COUNTS)
    header += " | 4,096 values | pointwise | speed-up | bitwise | reference / ours, K=64 |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    misses = []
    for name in names:
        for T in (int(t) for t in args.threads.split(",")):
            r = child(name, T, args.repeat, args.timeout)
            cells = []
            for K in COUNTS:
                cells.append(f"{r[f'K{K}'] / r['one']:.2f}x ({K * r['one'] / r[f'K{K}']:.1f}x)")
            pointwise = GRID * GRID * r["pointwise_value"]
            speedup = pointwise / r["landscape"]
            versus_reference = "-"
            if reference is not None:
                ref = reference_call(reference, name, T, args.timeout)
                versus_reference = f"{ref / (r['K64'] / 64):.1f}x ({1e3 * ref:.2f} ms)"
            print(
                f"| {name} | {T} | {1e3 * r['one']:.2f} ms | " + " | ".join(cells) + " | "
                f"{r['landscape']:.3f} s | {pointwise:.2f} s | {speedup:.1f}x | {r['bitwise']} | "
                f"{versus_reference} |",
                flush=True,
            )
            if T == 1 and r["K8"] / r["one"] > PAIR_TARGET:
                misses.append(f"{name} K=8 at T=1: {r['K8'] / r['one']:.2f}x one point")
            if speedup < LANDSCAPE_TARGET:
                misses.append(f"{name} landscape at T={T}: {speedup:.1f}x")
            if not r["bitwise"]:
                misses.append(f"{name} T={T}: a batched result differs from its single call")
    print()
    print("K=n cells: the batch's time over one point's (in brackets: over n single calls, faster)")
    print("reference / ours: its value+grad call over ours per point in a batch of 64 (its time)")
    print(
        f"targets: value+grad of 8 points <= {PAIR_TARGET}x one point at T=1; 4,096 values >= "
        f"{LANDSCAPE_TARGET}x faster than single calls; bitwise equal"
    )
    print("not met: " + ("; ".join(misses) if misses else "none"))
    print(f"total {time.perf_counter() - started:.0f} s")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
