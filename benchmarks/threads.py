#!/usr/bin/env python
"""Thread scaling of the sharded OpenMP runtime: T threads (= T shards) against T = 1.

Every (workload, T) runs in a fresh subprocess whose environment has
``monoprop_NUM_THREADS=T OMP_NUM_THREADS=T OMP_DYNAMIC=FALSE`` (a propagator reads its
budget once, at construction).  The child prints one JSON line that the parent collects.  In
each child:

(a) propagation: ``propagate()`` of the whole circuit at its bound angles (no graph), wall time
    of the call; then kept terms, bytes per kept term (``sum(memory().values()) / size()``, and
    the ``terms`` part alone) and the expectation value.
(b) replay: ``build_graph()`` of a shorter circuit (seeded with its angles; wall time reported
    too), then ``expectation_value_and_gradient`` at those angles, one warm-up call and
    ``--repeat`` timed calls, median per call.

Workloads (library-neutral layer lists in the format of ``propagate.py``; gate
``(letters, qubits, t)`` = ``exp(-i t P / 2)``, one parameter per gate):

* ``ising``: kicked Ising on an open Lx x Ly square lattice, the step of ``propagate.py``'s
  heavy-hex workload: ``rx(0.6)`` on every qubit, then ``rzz(-pi/2)`` on every bond in four
  colour classes (horizontal even/odd, vertical even/odd).  Observable Z on the centre qubit,
  state |0...0>, ``PauliPropagator``.
* ``tfim``: 2D transverse-field Ising Trotter circuit, H = -J sum ZZ - h sum X on an open
  Lx x Ly lattice, first order, step dt: ``rzz(-2 J dt)`` in the four bond classes, then
  ``rx(-2 h dt)``.  Observable: the magnetisation sum_i Z_i / n, state |0...0>,
  ``PauliPropagator``.
* ``fh``: spinful 1D Fermi-Hubbard Trotter circuit, ``propagate.fermi_hubbard_workload(L)``
  (dt 0.25, J 1, U 4, observable n_0, Neel-like half filling), run in ``MajoranaPropagator`` on
  the Jordan-Wigner image of the gates.

Checks: T > 1 must reproduce T = 1's expectation values (propagation and replay) and gradient
to 1e-9 relative; kept terms and graph entries should agree too.  A failed check or a failed
child makes the exit status 1.  Timings are single samples for (a) and medians for (b); a T
above ``os.cpu_count()`` is oversubscribed and its ratio is not a timing.

Usage:  python benchmarks/threads.py [--quick] [--threads 1,2,4] [--only ising|tfim|fh]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from propagate import (  # noqa: E402  (benchmarks/ is not a package)
    _proc_status_mb,
    fermi_hubbard_workload,
    fmt_num,
    import_monoprop,
    run_worker,
)

TARGET = 1.8  # T=2 over T=1
REL_TOL = 1e-9  # T>1 against T=1: energies and gradient, relative

# name -> (size, propagation steps, replay steps, lower_atol), quick and full.  Full: 0.8-4M
# kept terms after propagation, replay graphs of 11-24M entries (T=1: about 5-15 s propagation
# and 0.1-0.2 s per value+gradient call per workload on the 2-core reference machine).
CONFIGS = {
    "quick": {
        "ising": ({"lx": 4, "ly": 4}, 4, 4, 1e-4),
        "tfim": ({"lx": 5, "ly": 5}, 5, 4, 1e-5),
        "fh": ({"L": 8}, 6, 5, 1e-5),
    },
    "full": {
        "ising": ({"lx": 7, "ly": 7}, 8, 6, 1e-3),
        "tfim": ({"lx": 7, "ly": 7}, 8, 6, 1e-5),
        "fh": ({"L": 16}, 10, 8, 1e-5),
    },
}


COLUMNS = """\
Columns: seen = T the propagator reports (- if it does not); prop s = propagate() wall time
  (one call, whole circuit); terms = kept terms; B/term = sum(memory().values()) / size(),
  terms B = memory()['terms'] / size(); build s = build_graph() wall time; entries = graph
  entries; B/term there includes the graph; vg ms = median expectation_value_and_gradient call;
  peakMB = VmHWM of the child; xT1 = time at T=1 / time at T."""


# --------------------------------------------------------------------------------------------
# Workloads (layer lists as in propagate.py)
# --------------------------------------------------------------------------------------------


def bond_layers(lx: int, ly: int, letters: str, t: float) -> list[list]:
    """Bonds of an open lx x ly square lattice (qubit x + lx*y) in four commuting classes."""
    layers = []
    for horizontal in (True, False):
        for parity in (0, 1):
            layer = []
            for y in range(ly):
                for x in range(lx):
                    if horizontal and x % 2 == parity and x + 1 < lx:
                        layer.append((letters, (x + lx * y, x + 1 + lx * y), t))
                    if not horizontal and y % 2 == parity and y + 1 < ly:
                        layer.append((letters, (x + lx * y, x + lx * (y + 1)), t))
            layers.append(layer)
    return layers


def kicked_ising_workload(lx: int, ly: int, theta_h: float = 0.6) -> dict:
    n, centre = lx * ly, lx // 2 + lx * (ly // 2)
    return {
        "n": n,
        "layers": [
            [("X", (q,), theta_h) for q in range(n)],
            *bond_layers(lx, ly, "ZZ", -math.pi / 2),
        ],
        "observable": [("Z", (centre,), 1.0)],
        "occupied": [],
        "front": "pauli",
        "desc": f"2D kicked Ising {lx}x{ly}, rx({theta_h}), rzz(-pi/2), Z on qubit {centre}",
    }


def tfim2d_workload(lx: int, ly: int, J: float = 1.0, h: float = 3.0, dt: float = 0.1) -> dict:
    n = lx * ly
    return {
        "n": n,
        "layers": [
            *bond_layers(lx, ly, "ZZ", -2 * J * dt),
            [("X", (q,), -2 * h * dt) for q in range(n)],
        ],
        "observable": [("Z", (q,), 1.0 / n) for q in range(n)],
        "occupied": [],
        "front": "pauli",
        "desc": f"2D TFIM {lx}x{ly}, J={J}, h={h}, dt={dt}, magnetisation",
    }


def fh_workload(L: int) -> dict:
    wl = fermi_hubbard_workload(L)
    wl["front"] = "majorana"
    return wl


WORKLOADS = {"ising": kicked_ising_workload, "tfim": tfim2d_workload, "fh": fh_workload}


def job_for(name: str, mode: str, repeat: int) -> dict:
    """What a worker child runs for workload `name` at size `mode` ("quick" or "full")."""
    size, prop_steps, replay_steps, atol = CONFIGS[mode][name]
    return {
        "name": name,
        "size": size,
        "prop_steps": prop_steps,
        "replay_steps": replay_steps,
        "atol": atol,
        "repeat": repeat,
    }


def make_propagator(mp, wl: dict, steps: int, atol: float):
    """(propagator, circuit of `steps` steps in application order with its angles bound)."""
    from monoprop.pauli import Pauli, PauliOperator

    n, majorana = wl["n"], wl["front"] == "majorana"

    def operator(terms):
        op = PauliOperator({Pauli(lab, q): c for lab, q, c in terms}, n)
        return op.get_majorana_operator() if majorana else op

    gates = [g for _ in range(steps) for layer in wl["layers"] for g in layer]
    circuit = mp.Circuit(
        [mp.ExpGate(operator([(lab, q, -0.5)])) for lab, q, _ in gates],
        n,
        parameters=[t for *_, t in gates],
    )
    obs, occupied = operator(wl["observable"]), list(wl["occupied"])
    if majorana:
        prop = mp.MajoranaPropagator(obs, occupied, cutoff=2 * n, lower_atol=atol)
    else:
        prop = mp.PauliPropagator(obs, occupied, cutoff=n, lower_atol=atol)
    return prop, circuit


# --------------------------------------------------------------------------------------------
# Child process
# --------------------------------------------------------------------------------------------


def worker(job: dict) -> dict:
    mp = import_monoprop()
    wl = WORKLOADS[job["name"]](**job["size"])
    out = {"desc": wl["desc"], "module": mp.__file__, "build_type": mp.__build_type__}
    out["env_T"] = os.environ.get("monoprop_NUM_THREADS")

    prop, circuit = make_propagator(mp, wl, job["prop_steps"], job["atol"])
    start = time.perf_counter()
    prop.propagate(circuit)
    out["prop_time"] = time.perf_counter() - start
    out["T_seen"] = prop.num_threads
    out["prop_terms"] = prop.size()
    out["prop_memory"] = prop.memory()
    out["prop_energy"] = prop.expectation_value()
    del prop

    prop, circuit = make_propagator(mp, wl, job["replay_steps"], job["atol"])
    start = time.perf_counter()
    prop.build_graph(circuit)
    out["build_time"] = time.perf_counter() - start
    theta = list(circuit.parameters)
    prop.expectation_value_and_gradient(theta)  # warm-up: first-call allocations
    times = []
    for _ in range(job["repeat"]):
        start = time.perf_counter()
        value, gradient = prop.expectation_value_and_gradient(theta)
        times.append(time.perf_counter() - start)
    out["replay_time"] = statistics.median(times)
    out["replay_times"] = times
    out["replay_value"] = float(value)
    out["gradient"] = [float(g) for g in gradient]
    out["n_parameters"] = prop.n_parameters
    out["graph_terms"] = prop.size()
    out["graph_entries"] = sum(prop.graph_size())
    out["graph_memory"] = prop.memory()
    out["peak_mb"] = _proc_status_mb("VmHWM")
    return out


# --------------------------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------------------------


def thread_env(threads: int) -> dict:
    """The environment of a child that runs `threads` OpenMP threads and one BLAS thread."""
    return {
        "monoprop_NUM_THREADS": str(threads),
        "OMP_NUM_THREADS": str(threads),
        "OMP_DYNAMIC": "FALSE",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def spawn(job: dict, threads: int, timeout: float) -> dict:
    return run_worker(Path(__file__), job, thread_env(threads), timeout)


def relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def parse_threads(text: str) -> list[int]:
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()} | {1})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a list like 1,2,4; got {text!r}") from None
    if values[0] < 1:
        raise argparse.ArgumentTypeError("thread counts must be >= 1")
    return values


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, well under a minute")
    ap.add_argument(
        "--threads",
        type=parse_threads,
        default=[1, 2],
        help="comma-separated T values (T=1 is always added); default 1,2",
    )
    ap.add_argument("--only", choices=sorted(WORKLOADS), help="run one workload only")
    ap.add_argument("--repeat", type=int, default=None, help="timed replay calls (default 3/7)")
    ap.add_argument("--timeout", type=float, default=None, help="per-child timeout in seconds")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        print("RESULT " + json.dumps(worker(json.loads(args.worker))), flush=True)
        return 0

    t_start = time.perf_counter()
    mode = "quick" if args.quick else "full"
    repeat = args.repeat or (3 if args.quick else 7)
    timeout = args.timeout or (120.0 if args.quick else 900.0)
    cpus = os.cpu_count() or 1
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cpus
    threads = args.threads
    over = [t for t in threads if t > cpus]
    print(f"# monoprop thread scaling ({mode}): T in {threads}, one subprocess per workload and T")
    print(
        f"# os.cpu_count() = {cpus}, usable by this process = {affinity}; "
        "child env monoprop_NUM_THREADS=T OMP_NUM_THREADS=T OMP_DYNAMIC=FALSE"
    )
    if over:
        print(f"# T = {over} exceeds os.cpu_count(): oversubscribed (*), not a timing")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > 0.5:
        print(f"# warning: 1-minute load average {load:.1f} before the run: other work competes")
    if os.environ.get("OMP_THREAD_LIMIT"):
        print(f"# warning: OMP_THREAD_LIMIT={os.environ['OMP_THREAD_LIMIT']} is set")

    names = [args.only] if args.only else list(WORKLOADS)
    summary = []  # (name, phase, {T: ratio})
    worst = {"energy": 0.0, "gradient": 0.0, "compared": 0}
    failures = []
    module = build_type = None
    for name in names:
        job = job_for(name, mode, repeat)
        prop_steps, replay_steps, atol = job["prop_steps"], job["replay_steps"], job["atol"]
        results = {t: spawn(job, t, timeout) for t in threads}
        base = results[1]
        desc = next((r["desc"] for r in results.values() if "desc" in r), name)
        print()
        print(
            f"== {name}: {desc}; lower_atol {atol:g}; (a) propagate {prop_steps} steps, "
            f"(b) graph of {replay_steps} steps =="
        )
        header = (
            f"{'T':>4s} {'seen':>4s} | {'prop s':>8s} {'xT1':>6s} {'terms':>9s} {'B/term':>7s} "
            f"{'terms B':>7s} | {'build s':>8s} {'xT1':>6s} {'entries':>10s} {'B/term':>7s} | "
            f"{'vg ms':>9s} {'xT1':>6s} | {'peakMB':>7s}"
        )
        print(header)
        print("-" * len(header))
        ratios = {"propagate": {}, "build_graph": {}, "value+grad": {}}
        for t, res in results.items():
            mark = "*" if t > cpus else " "
            if "error" in res:
                failures.append(f"{name} T={t}: {res['error']}")
                print(f"{t:>3d}{mark} ERROR {res['error']}")
                continue
            module, build_type = res["module"], res["build_type"]
            if res["T_seen"] != t:
                failures.append(f"{name} T={t}: the propagator reports T={res['T_seen']}")
            ok = "error" not in base
            x = {}
            for phase, key in (
                ("propagate", "prop_time"),
                ("build_graph", "build_time"),
                ("value+grad", "replay_time"),
            ):
                x[phase] = base[key] / res[key] if ok and res[key] > 0 else None
                if x[phase] is not None:
                    ratios[phase][t] = x[phase]
            pm, gm = res["prop_memory"], res["graph_memory"]
            terms, gterms = max(res["prop_terms"], 1), max(res["graph_terms"], 1)
            print(
                f"{t:>3d}{mark} {fmt_num(res['T_seen'], 'd'):>4s} | {res['prop_time']:8.3f} "
                f"{fmt_num(x['propagate'], '.2f'):>6s} {res['prop_terms']:9d} "
                f"{sum(pm.values()) / terms:7.1f} {pm['terms'] / terms:7.1f} | "
                f"{res['build_time']:8.3f} {fmt_num(x['build_graph'], '.2f'):>6s} "
                f"{res['graph_entries']:10d} {sum(gm.values()) / gterms:7.1f} | "
                f"{res['replay_time'] * 1e3:9.2f} {fmt_num(x['value+grad'], '.2f'):>6s} | "
                f"{res['peak_mb']:7.0f}",
                flush=True,
            )
        for phase, by_t in ratios.items():
            summary.append((name, phase, by_t))
        if "error" in base:
            continue
        for t, res in results.items():
            if t == 1 or "error" in res:
                continue
            de = max(
                relative(res["prop_energy"], base["prop_energy"]),
                relative(res["replay_value"], base["replay_value"]),
            )
            scale = max(max((abs(g) for g in base["gradient"]), default=0.0), 1e-300)
            dg = max(
                (abs(a - b) for a, b in zip(res["gradient"], base["gradient"], strict=True)),
                default=0.0,
            )
            dg /= scale
            worst["compared"] += 1
            worst["energy"], worst["gradient"] = (
                max(worst["energy"], de),
                max(worst["gradient"], dg),
            )
            same = (res["prop_terms"], res["graph_entries"]) == (
                base["prop_terms"],
                base["graph_entries"],
            )
            print(
                f"    T={t} vs T=1: energy rel diff {de:.1e}, gradient max rel diff {dg:.1e}, "
                f"terms/entries {'equal' if same else 'DIFFER'}"
            )
            if de >= REL_TOL or dg >= REL_TOL:
                failures.append(f"{name} T={t}: energy {de:.1e}, gradient {dg:.1e}")
        print(
            f"    T=1: <O> propagate {base['prop_energy']:.12f}, replay {base['replay_value']:.12f}"
            f" ({base['n_parameters']} parameters, {base['graph_terms']} terms under the graph)"
        )

    print()
    print("== Speedup over T=1 (time at T=1 / time at T; * = oversubscribed, not a timing) ==")
    header = f"{'workload':8s} {'phase':11s} " + " ".join(
        f"{('T=' + str(t) + ('*' if t > cpus else '')):>7s}" for t in threads
    )
    print(header)
    print("-" * len(header))
    for name, phase, by_t in summary:
        cells = " ".join(f"{f'{by_t[t]:.2f}x' if t in by_t else '-':>7s}" for t in threads)
        print(f"{name:8s} {phase:11s} {cells}")
    print(f"target: T=2/T=1 >= {TARGET}x")
    if 2 in threads:
        lows = [
            f"{name} {phase} " + (f"{by_t[2]:.2f}x" if 2 in by_t else "not measured")
            for name, phase, by_t in summary
            if phase != "build_graph" and by_t.get(2, 0.0) < TARGET
        ]
        note = " (T=2 oversubscribed)" if 2 > cpus else ""
        print(
            f"  below target (propagate, value+grad){note}: "
            + ("; ".join(lows) if lows else "none")
        )
    if worst["compared"]:
        print(
            f"T>1 vs T=1: max energy rel diff {worst['energy']:.1e}, max gradient rel diff "
            f"{worst['gradient']:.1e} (limit {REL_TOL:g}, {worst['compared']} runs compared)"
        )
    else:
        print("T>1 vs T=1: nothing compared")
    if hasattr(os, "getloadavg"):
        print(f"1-minute load average at the end: {os.getloadavg()[0]:.1f}")
    if module:
        print(f"monoprop imported from {module} (build type {build_type})")
    print(COLUMNS)
    if failures:
        print("FAILED: " + "; ".join(failures))
    print(f"total {time.perf_counter() - t_start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
