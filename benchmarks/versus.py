#!/usr/bin/env python
"""monoprop against the other engine with the same Python API, side by side.

The other engine is ``monoprop==0.9.2`` from PyPI (the "reference"). This script makes
a virtual environment for it outside the repository (``--reference-venv``, default
``~/.cache/monoprop-versus/venv-0.9.2``) with ``python -m venv`` and ``pip install``, and
runs it only as a black box: the same workload script, ``versus_worker.py``, is run by
this environment's interpreter (our monoprop, ``pip install .`` from this checkout) and
by the reference's, through the public API alone.

Every measurement is a fresh process with ``monoprop_NUM_THREADS=T OMP_NUM_THREADS=T
OMP_DYNAMIC=FALSE`` (and one BLAS thread). For each workload and T the two engines run
alternately, ``--repeat`` times each (the order flips every round); the table shows
medians and ratios ours / reference (lower is better):

* time: the wall time of the call (propagate, build_graph), the median value+grad call
  (graph replay), or all calls of the VQE loop;
* peak: the process's peak resident memory (VmHWM), all of it, interpreter included;
* terms: terms held at the end, and the relative difference of the values;
* B/term and B/entry: our peak over the RSS before the call, per kept term or graph entry.

Workloads (Heisenberg; rotations are Qiskit's ``R_P(t)``):

* ``hh``: heavy-hex kicked Ising, 115 qubits, rx(0.6) then rzz(-pi/2) on the 132 edges in
  three colour classes, Z on the central qubit, 8 steps, lower_atol 1e-4;
* ``hh5``: the same at lower_atol 1e-5;
* ``tfim``: 2D transverse-field Ising 5x5, J 1, h 3, dt 0.1, magnetisation, 8 steps, 1e-5;
* ``tilted``: 2D tilted-field Ising 6x6, J 1.5, hx = hz = 1, dt 0.05, Z on a central
  qubit, 11 steps, 1e-6 (21 steps hold more than 9 GB and 20 minutes in either engine;
  at 11 the reference takes a few seconds);
* ``hubbard``: 1D Fermi-Hubbard, 12 sites (24 modes, Majorana), dt 0.25, J 1, U 4, n_0,
  10 steps, 1e-6, length cutoff 8: propagate, and build_graph with value+grad replays;
* ``vqe``: the README's main job, a Hamiltonian-variational ansatz for the 8-qubit TFIM
  chain (4 layers, 68 parameters, unbound), 2000 value+grad replays at points near zero.

Usage:  python benchmarks/versus.py [--quick] [--only hh,vqe] [--threads 1,2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from propagate import fermi_hubbard_workload, heavy_hex_workload, run_result  # noqa: E402
from threads import bond_layers, tfim2d_workload, thread_env  # noqa: E402

REFERENCE = "monoprop==0.9.2"
DEFAULT_VENV = Path.home() / ".cache" / "monoprop-versus" / "venv-0.9.2"
TIME_TARGET, MEMORY_TARGET = 0.5, 0.7
TERMS_TOL, VALUE_TOL = 1e-3, 1e-9


# --------------------------------------------------------------------------------------------
# Workloads: neutral descriptions that versus_worker.py turns into circuits
# --------------------------------------------------------------------------------------------


def tilted_ising_workload(lx: int, ly: int, J: float, hx: float, hz: float, dt: float) -> dict:
    """exp(-i dt H) for H = J sum ZZ + hx sum X + hz sum Z, first order."""
    n, centre = lx * ly, lx // 2 + lx * (ly // 2)
    return {
        "n": n,
        "layers": [
            *bond_layers(lx, ly, "ZZ", 2 * J * dt),
            [("X", (q,), 2 * hx * dt) for q in range(n)],
            [("Z", (q,), 2 * hz * dt) for q in range(n)],
        ],
        "observable": [("Z", (centre,), 1.0)],
        "occupied": [],
    }


def vqe_workload(n: int, layers: int) -> dict:
    """The README's main job: the ansatz of examples/vqe_tfim.py, one rotation a gate."""
    gates = [[("Y", (i,), 0.0) for i in range(n)]]
    for _ in range(layers):
        gates.append([("ZZ", (i, i + 1), 0.0) for i in range(n - 1)])
        gates.append([("X", (i,), 0.0) for i in range(n)])
    observable = [("ZZ", (i, i + 1), -1.0) for i in range(n - 1)]
    observable += [("X", (i,), -1.0) for i in range(n)]
    return {"n": n, "layers": gates, "observable": observable, "occupied": []}


def make_job(
    wl: dict, steps: int, atol, mode="propagate", front="pauli", cutoff=None, repeat=0
) -> dict:
    """A ``versus_worker.py`` job: the neutral workload ``wl`` run ``steps`` times in ``mode``."""
    return {
        **wl,
        "steps": steps,
        "lower_atol": atol,
        "mode": mode,
        "front": front,
        "cutoff": cutoff if cutoff is not None else wl["n"],
        "repeat": repeat,
    }


def jobs(quick: bool) -> dict[str, list[dict]]:
    """Workload name -> the jobs (modes) measured for it."""
    hh = heavy_hex_workload()
    hh = {k: hh[k] for k in ("n", "layers", "observable", "occupied")}
    L = 6 if quick else 12
    hubbard = fermi_hubbard_workload(L)
    hubbard = {k: hubbard[k] for k in ("n", "layers", "observable", "occupied")}
    tfim = tfim2d_workload(4 if quick else 5, 4 if quick else 5)
    tfim = {k: tfim[k] for k in ("n", "layers", "observable", "occupied")}
    tilted = tilted_ising_workload(*(4, 4) if quick else (6, 6), 1.5, 1.0, 1.0, 0.05)
    hub = {"front": "majorana", "cutoff": 8}
    return {
        "hh": [make_job(hh, 5 if quick else 8, 1e-4)],
        "hh5": [make_job(hh, 4 if quick else 8, 1e-5)],
        "tfim": [make_job(tfim, 8, 1e-5)],
        "tilted": [make_job(tilted, 8 if quick else 11, 1e-6)],
        "hubbard": [
            make_job(hubbard, 10, 1e-6, **hub),
            make_job(hubbard, 10, 1e-6, mode="graph", repeat=5, **hub),
        ],
        "vqe": [make_job(vqe_workload(8, 4), 1, None, mode="vqe", repeat=200 if quick else 2000)],
    }


# --------------------------------------------------------------------------------------------
# The two engines
# --------------------------------------------------------------------------------------------


def reference_python(venv: Path) -> Path:
    """The reference venv's interpreter, made on first use (outside the repository)."""
    python = venv / "bin" / "python"
    if venv.resolve().is_relative_to(HERE.parent):
        sys.exit(f"--reference-venv {venv} lies inside the repository; choose a path outside it.")
    marker = venv / ".monoprop-versus-ready"
    if marker.exists():
        return python
    print(f"# making the reference venv {venv} ({REFERENCE}); this happens once", flush=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", REFERENCE], check=True)
    marker.write_text(REFERENCE + "\n")
    return python


def measure(python: Path, job: dict, threads: int, timeout: float, isolated: bool = False) -> dict:
    """Runs ``job`` in ``versus_worker.py`` under ``python`` with T = ``threads``.  With
    ``isolated`` (the reference's runs), PYTHONPATH is left out: a build of ours on it would
    come before the venv's own site-packages and be imported in its place."""
    env = {**os.environ, **thread_env(threads)}
    if isolated:
        env.pop("PYTHONPATH", None)
    # Run from a neutral directory, so that neither engine imports this checkout's sources.
    cmd = [str(python), str(HERE / "versus_worker.py"), json.dumps(job)]
    return run_result(cmd, env, timeout, cwd="/")


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def median_of(runs: list[dict], key: str) -> float:
    values = [r[key] for r in runs if key in r]
    return statistics.median(values) if values else math.nan


def row(name: str, job: dict, threads: int, ours: list[dict], ref: list[dict]) -> dict:
    phase = {"propagate": "propagate", "graph": "value+grad", "vqe": "vqe loop"}[job["mode"]]
    o, r = ours[0], ref[0]
    out = {
        "name": name,
        "phase": phase,
        "T": threads,
        "time": (median_of(ours, "time"), median_of(ref, "time")),
        "peak": (median_of(ours, "peak_mb"), median_of(ref, "peak_mb")),
        "terms": (o["terms"], r["terms"]),
        "value_diff": abs(o["value"] - r["value"]) / max(abs(r["value"]), 1e-300),
        "net_mb": median_of(ours, "peak_mb") - median_of(ours, "rss_before_mb"),
    }
    if job["mode"] != "propagate":
        out["build"] = (median_of(ours, "build_time"), median_of(ref, "build_time"))
        out["entries"] = (o["entries"], r["entries"])
    return out


def print_table(rows: list[dict]) -> list[str]:
    header = (
        f"{'workload':9s} {'phase':10s} {'T':>2s} | {'ours s':>8s} {'ref s':>8s} {'time':>6s} | "
        f"{'ours MB':>8s} {'ref MB':>8s} {'peak':>6s} | {'terms ours':>11s} {'ref':>11s} "
        f"{'dterms':>7s} {'dvalue':>8s} | {'B/term':>6s} {'B/entry':>7s}"
    )
    print(header)
    print("-" * len(header))
    misses = []

    def line(name, phase, T, ours_s, ref_s, r, show_memory):
        t_ratio = ours_s / ref_s
        p_ratio = r["peak"][0] / r["peak"][1]
        dterms = abs(r["terms"][0] - r["terms"][1]) / max(r["terms"][1], 1)
        net = r["net_mb"] * 2**20
        per_term = net / max(r["terms"][0], 1)
        per_entry = net / r["entries"][0] if r.get("entries") else math.nan
        mem = (
            f"{r['peak'][0]:8.0f} {r['peak'][1]:8.0f} {p_ratio:5.2f}x"
            if show_memory
            else f"{'':8s} {'':8s} {'':6s}"
        )
        print(
            f"{name:9s} {phase:10s} {T:2d} | {ours_s:8.3f} {ref_s:8.3f} {t_ratio:5.2f}x | {mem} | "
            f"{r['terms'][0]:11d} {r['terms'][1]:11d} {dterms:7.1e} {r['value_diff']:8.1e} | "
            f"{per_term:6.0f} {per_entry:7.1f}"
        )
        if t_ratio > TIME_TARGET:
            misses.append(f"{name} {phase} T={T} time {t_ratio:.2f}x")
        if show_memory and p_ratio > MEMORY_TARGET:
            misses.append(f"{name} {phase} T={T} peak {p_ratio:.2f}x")
        if dterms > TERMS_TOL or r["value_diff"] > VALUE_TOL:
            misses.append(f"{name} {phase} T={T} terms {dterms:.1e} value {r['value_diff']:.1e}")

    for r in rows:
        if "build" in r and r["phase"] == "value+grad":
            line(r["name"], "build", r["T"], *r["build"], r, True)
        line(r["name"], r["phase"], r["T"], *r["time"], r, "build" not in r)
    return misses


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, a few minutes")
    ap.add_argument("--only", help="comma-separated workload names")
    ap.add_argument("--threads", default="1,2", help="comma-separated T values (default 1,2)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per engine and T (median)")
    ap.add_argument("--timeout", type=float, default=1200.0, help="per-run timeout, seconds")
    ap.add_argument("--reference-venv", type=Path, default=DEFAULT_VENV)
    args = ap.parse_args()

    started = time.perf_counter()
    ref_python = reference_python(args.reference_venv)
    ours_python = Path(sys.executable)
    all_jobs = jobs(args.quick)
    names = args.only.split(",") if args.only else list(all_jobs)
    unknown = [n for n in names if n not in all_jobs]
    if unknown:
        sys.exit(f"unknown workload(s) {unknown}; choose from {sorted(all_jobs)}")
    threads = [int(t) for t in args.threads.split(",")]
    print(
        f"# {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs; ours: {ours_python}; "
        f"reference: {REFERENCE} in {args.reference_venv}; medians of {args.repeat}"
    )

    rows, failures = [], []
    for name in names:
        for job in all_jobs[name]:
            for T in threads:
                ours, ref = [], []
                for k in range(args.repeat):
                    sides = [(ours_python, ours), (ref_python, ref)]
                    for python, sink in sides if k % 2 == 0 else sides[::-1]:
                        isolated = python == ref_python
                        result = measure(python, job, T, args.timeout, isolated)
                        if "error" in result:
                            failures.append(
                                f"{name} {job['mode']} T={T} {python}: {result['error']}"
                            )
                        else:
                            sink.append(result)
                if ours and ref:
                    rows.append(row(name, job, T, ours, ref))
                    print(f"# done {name} {job['mode']} T={T}", file=sys.stderr, flush=True)
    print()
    misses = print_table(rows)
    print()
    print(
        f"targets: time <= {TIME_TARGET}x, peak <= {MEMORY_TARGET}x, terms within "
        f"{TERMS_TOL:g}, values within {VALUE_TOL:g} relative"
    )
    print("not met: " + ("; ".join(misses) if misses else "none"))
    for f in failures:
        print("FAILED: " + f)
    print(f"total {time.perf_counter() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
