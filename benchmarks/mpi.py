#!/usr/bin/env python
"""MPI distribution: 2 ranks against 1 rank, one thread per rank.

Every (workload, R ranks) runs as ``mpiexec -n R python benchmarks/mpi.py --worker JOB`` in a
fresh process group, under ``timeout`` and a subprocess timeout, with ``monoprop_NUM_THREADS=1
OMP_NUM_THREADS=1 OMP_DYNAMIC=FALSE`` and the rest of this process's environment (PYTHONPATH
included).  ``mpiexec`` is taken from the directory of ``sys.executable`` (where the ``mpich``
wheel and venvs put it), else from PATH, unless ``--mpiexec`` names one.  Every rank builds the
same propagator with ``comm=MPI.COMM_WORLD`` and makes the same calls; rank 0 prints one JSON
line that the parent collects.  In each run:

(a) propagation: ``propagate()`` of the whole circuit at its bound angles (no graph).  All
    ranks meet at a barrier, then each times its call; the reported time is the maximum over
    ranks.  Then: kept terms summed over ranks, the rank balance max/mean of the ranks'
    ``size()``, the payload bytes sent through MPI during the call (``_engine.exchanged_bytes``
    before and after, summed over ranks) divided by the number of gates, and the (global)
    expectation value.  Every gate here has a single-monomial generator, so it is one layer of
    the engine and bytes/gate is bytes per layer.
(b) replay: ``build_graph()`` of a shorter circuit (seeded with its angles; time = max over
    ranks), then ``expectation_value_and_gradient`` at those angles: one warm-up call and
    ``--repeat`` timed calls, each started at a barrier and timed as the maximum over ranks,
    median reported; the bytes sent per call (summed over ranks) too.

Workloads (the layer lists of ``threads.py``, built by its ``make_propagator``):

* ``ising``: kicked Ising on an open Lx x Ly square lattice (``threads.kicked_ising_workload``):
  ``rx(0.6)`` on every qubit, then ``rzz(-pi/2)`` on every bond in four colour classes.
  Observable Z on the centre qubit, state |0...0>, ``PauliPropagator``.
* ``fh``: spinful 1D Fermi-Hubbard Trotter circuit (``threads.fh_workload``: dt 0.25, J 1,
  U 4, observable n_0, Neel-like half filling) in ``MajoranaPropagator`` on the Jordan-Wigner
  image of the gates.

Sizes, steps and ``lower_atol`` are ``threads.CONFIGS`` (full: ising 7x7, 8 steps and a graph of
6, 1e-3; fh L=16, 10 steps and a graph of 8, 1e-5), so both scripts time the same runs.

Target: 2 ranks over 1 rank at least 1.7x on 2 cores, for propagate and value+gradient; it is
printed, not enforced (timings on a shared VM are noisy).  Checks that make the exit status 1:
a failed run, a run that does not span the requested ranks, 2 ranks not reproducing 1 rank's
expectation values (propagation and replay) and gradient to 1e-9 relative, or different total
kept terms (after propagation, and under the graph), or a value or gradient that is not the
same on every rank.  Graph entries are compared and printed.

Needs a monoprop built with MPI (``pip install -C cmake.define.MONOPROP_MPI=ON '.[mpi]'``).

Usage:  python benchmarks/mpi.py [--quick] [--only ising|fh] [--repeat N] [--timeout S]
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import traceback
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# benchmarks/ is not a package
from propagate import _proc_status_mb, fmt_num, import_monoprop  # noqa: E402
from threads import CONFIGS as THREAD_CONFIGS  # noqa: E402
from threads import (  # noqa: E402
    fh_workload,
    job_for,
    kicked_ising_workload,
    make_propagator,
    relative,
    thread_env,
)

TARGET = 1.7  # 2 ranks over 1 rank, T = 1 each
REL_TOL = 1e-9  # 2 ranks against 1 rank: energies and gradient, relative
RANKS = (1, 2)

WORKLOADS = {"ising": kicked_ising_workload, "fh": fh_workload}

# name -> (size, propagation steps, replay steps, lower_atol), quick and full: threads.py's
# sizes, so that the two scripts measure the same runs.  Full: 1.3M (ising) and 4.2M (fh) kept
# terms after propagation, graphs of 24M and 15M entries.
CONFIGS = {
    mode: {name: THREAD_CONFIGS[mode][name] for name in WORKLOADS} for mode in THREAD_CONFIGS
}

COLUMNS = """\
Columns: prop s = propagate() wall time (max over ranks); terms = kept terms summed over ranks;
  bal = max/mean of the ranks' terms; B/gate = payload bytes sent through MPI during propagate,
  all ranks, per gate (= per engine layer); build s = build_graph() wall time; entries = graph
  entries summed over ranks, bal their max/mean; vg ms = median expectation_value_and_gradient
  call (max over ranks); B/call = bytes sent per such call, all ranks; peakMB = largest VmHWM of
  a rank; x1 = time on 1 rank / time on R ranks."""


# --------------------------------------------------------------------------------------------
# Worker (one process per rank, under mpiexec)
# --------------------------------------------------------------------------------------------


def with_comm(mp, comm):
    """``mp`` as ``threads.make_propagator`` uses it, with ``comm=`` bound on both propagators."""
    return types.SimpleNamespace(
        Circuit=mp.Circuit,
        ExpGate=mp.ExpGate,
        PauliPropagator=functools.partial(mp.PauliPropagator, comm=comm),
        MajoranaPropagator=functools.partial(mp.MajoranaPropagator, comm=comm),
    )


def timed(comm, call, *args) -> tuple[float, object]:
    """(wall time of ``call(*args)`` started together on every rank, maximum over ranks;
    its result)."""
    from mpi4py import MPI

    comm.Barrier()
    start = time.perf_counter()
    result = call(*args)
    return comm.allreduce(time.perf_counter() - start, op=MPI.MAX), result


def spread(comm, value: int) -> tuple[int, float]:
    """(sum over ranks, max/mean over ranks) of a rank-local count."""
    values = comm.allgather(int(value))
    total = sum(values)
    return total, (max(values) * len(values) / total if total else 1.0)


def worker(job: dict) -> dict | None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    mp = import_monoprop()
    wl = WORKLOADS[job["name"]](**job["size"])
    out = {
        "desc": wl["desc"],
        "module": mp.__file__,
        "build_type": mp.__build_type__,
        "has_mpi": bool(mp.has_mpi),
        "ranks": comm.Get_size(),
        "mpi": MPI.Get_library_version().splitlines()[0].strip(),
    }
    mpc = with_comm(mp, comm)

    prop, circuit = make_propagator(mpc, wl, job["prop_steps"], job["atol"])
    out["engine_ranks"] = prop._engine.comm_size
    out["T_seen"] = comm.allreduce(prop.num_threads, op=MPI.MAX)
    sent = prop._engine.exchanged_bytes
    out["prop_time"], _ = timed(comm, prop.propagate, circuit)
    sent = comm.allreduce(prop._engine.exchanged_bytes - sent)
    out["gates"] = len(circuit)
    out["prop_bytes"] = sent
    out["prop_terms"], out["prop_balance"] = spread(comm, prop.size())
    out["prop_energy"] = prop.expectation_value()
    del prop
    gc.collect()

    prop, circuit = make_propagator(mpc, wl, job["replay_steps"], job["atol"])
    out["build_time"], _ = timed(comm, prop.build_graph, circuit)
    theta = list(circuit.parameters)
    prop.expectation_value_and_gradient(theta)  # warm-up: first-call allocations
    times = []
    sent = prop._engine.exchanged_bytes
    for _ in range(job["repeat"]):
        elapsed, (value, gradient) = timed(comm, prop.expectation_value_and_gradient, theta)
        times.append(elapsed)
    sent = comm.allreduce(prop._engine.exchanged_bytes - sent)
    out["replay_time"] = statistics.median(times)
    out["replay_times"] = times
    out["replay_bytes"] = sent / max(job["repeat"], 1)
    out["replay_value"] = float(value)
    out["gradient"] = [float(g) for g in gradient]
    # Global results must be identical on every rank, bit for bit.
    mine = [out["replay_value"], *out["gradient"]]
    out["ranks_agree"] = all(other == mine for other in comm.allgather(mine))
    out["n_parameters"] = prop.n_parameters
    out["graph_terms"], _ = spread(comm, prop.size())
    out["graph_entries"], out["graph_balance"] = spread(comm, sum(prop.graph_size()))
    del prop
    gc.collect()
    out["peak_mb"] = comm.allreduce(_proc_status_mb("VmHWM"), op=MPI.MAX)
    return out if comm.Get_rank() == 0 else None


def worker_main(job: dict, work=None) -> int:
    """Runs ``work(job)`` (default: this script's ``worker``) on every rank; rank 0 prints
    the result."""
    from mpi4py import MPI

    try:
        out = (work or worker)(job)
    except BaseException:  # noqa: B036  (SPMD: a rank that stops alone would hang the others)
        traceback.print_exc()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
        return 1
    if out is not None:
        print("RESULT " + json.dumps(out), flush=True)
    return 0


# --------------------------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------------------------


def find_mpiexec(explicit: str | None, python: str | None = None) -> str | None:
    """``explicit``, else the mpiexec beside ``python`` (default: this interpreter), else PATH's."""
    if explicit:
        return shutil.which(explicit) or (explicit if Path(explicit).is_file() else None)
    here = Path(python or sys.executable).parent / "mpiexec"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("mpiexec")


def spawn(
    mpiexec: str,
    ranks: int,
    job: dict,
    timeout: float,
    *,
    python: str | None = None,
    script: Path | None = None,
    threads: int = 1,
) -> dict:
    """Runs ``mpiexec -n ranks python script --worker job`` (default: this interpreter and this
    script) with T = ``threads`` per rank; returns rank 0's JSON or {"error": ...}.
    ``timeout`` (when installed) ends mpiexec first; the subprocess timeout, a little later,
    kills the whole process group."""
    script = Path(script or __file__).resolve()
    cmd = [mpiexec, "-n", str(ranks), python or sys.executable, str(script)]
    cmd += ["--worker", json.dumps(job)]
    guard = shutil.which("timeout")
    if guard:
        cmd = [guard, "-k", "10", f"{timeout:.0f}", *cmd]
    env = {**os.environ, **thread_env(threads)}
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"error": f"timeout after {timeout:.0f} s"}
    for line in reversed(stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    if proc.returncode == 124:
        return {"error": f"timeout after {timeout:.0f} s"}
    tail = (stderr or stdout).strip().splitlines()[-3:]
    return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}


def compare(base: dict, res: dict) -> tuple[float, float]:
    """(energy rel diff, gradient max abs diff / max |gradient|) of res against base."""
    de = max(
        relative(res["prop_energy"], base["prop_energy"]),
        relative(res["replay_value"], base["replay_value"]),
    )
    scale = max(max((abs(g) for g in base["gradient"]), default=0.0), 1e-300)
    if len(res["gradient"]) != len(base["gradient"]):
        return de, float("inf")
    dg = max(
        (abs(a - b) for a, b in zip(res["gradient"], base["gradient"], strict=True)), default=0.0
    )
    return de, dg / scale


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, well under a minute")
    ap.add_argument("--only", choices=sorted(WORKLOADS), help="run one workload only")
    ap.add_argument("--repeat", type=int, default=None, help="timed replay calls (default 3/7)")
    ap.add_argument("--timeout", type=float, default=None, help="per-run timeout in seconds")
    ap.add_argument("--mpiexec", help="the mpiexec to use (default: next to python, else PATH)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        return worker_main(json.loads(args.worker))

    t_start = time.perf_counter()
    mode = "quick" if args.quick else "full"
    repeat = max(args.repeat or (3 if args.quick else 7), 1)
    timeout = args.timeout or (120.0 if args.quick else 600.0)
    mpiexec = find_mpiexec(args.mpiexec)
    if mpiexec is None:
        print("FAILED: no mpiexec next to the interpreter or on PATH (see --mpiexec)")
        return 1
    cpus = os.cpu_count() or 1
    print(f"# monoprop MPI ({mode}): ranks {list(RANKS)}, T = 1 each; {mpiexec}")
    print(
        f"# os.cpu_count() = {cpus}; child env monoprop_NUM_THREADS=1 OMP_NUM_THREADS=1 "
        f"OMP_DYNAMIC=FALSE; per-run timeout {timeout:.0f} s"
    )
    if max(RANKS) > cpus:
        print(f"# {max(RANKS)} ranks exceed os.cpu_count(): oversubscribed, not a timing")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > 0.5:
        print(f"# warning: 1-minute load average {load:.1f} before the run: other work competes")

    names = [args.only] if args.only else list(WORKLOADS)
    summary = []  # (name, {phase: ratio}, bytes/gate, balance)
    failures = []
    info = None
    for name in names:
        job = job_for(name, mode, repeat)
        prop_steps, replay_steps, atol = job["prop_steps"], job["replay_steps"], job["atol"]
        results = {r: spawn(mpiexec, r, job, timeout) for r in RANKS}
        base = results[1]
        desc = next((r["desc"] for r in results.values() if "desc" in r), name)
        print()
        print(
            f"== {name}: {desc}; lower_atol {atol:g}; (a) propagate {prop_steps} steps, "
            f"(b) graph of {replay_steps} steps =="
        )
        header = (
            f"{'ranks':>5s} | {'prop s':>8s} {'x1':>5s} {'terms':>9s} {'bal':>5s} "
            f"{'B/gate':>9s} | {'build s':>8s} {'entries':>10s} {'bal':>5s} | "
            f"{'vg ms':>8s} {'x1':>5s} {'B/call':>9s} | {'peakMB':>6s}"
        )
        print(header)
        print("-" * len(header))
        for r, res in results.items():
            if "error" in res:
                failures.append(f"{name} ranks={r}: {res['error']}")
                print(f"{r:>5d} | ERROR {res['error']}")
                continue
            info = res
            if (res["ranks"], res["engine_ranks"]) != (r, r):
                failures.append(
                    f"{name} ranks={r}: the run spans {res['ranks']} ranks (engine "
                    f"{res['engine_ranks']}); is mpiexec from the MPI that mpi4py uses?"
                )
            if res["T_seen"] != 1:
                failures.append(f"{name} ranks={r}: a propagator reports T={res['T_seen']}")
            if not res["ranks_agree"]:
                failures.append(f"{name} ranks={r}: value+gradient differ between ranks")
            ok = "error" not in base
            x = {}
            for phase, key in (("propagate", "prop_time"), ("value+grad", "replay_time")):
                x[phase] = base[key] / res[key] if ok and res[key] > 0 else None
            if r > 1:
                summary.append(
                    (name, x, res["prop_bytes"] / max(res["gates"], 1), res["prop_balance"])
                )
            print(
                f"{r:>5d} | {res['prop_time']:8.3f} {fmt_num(x['propagate'], '.2f'):>5s} "
                f"{res['prop_terms']:9d} {res['prop_balance']:5.3f} "
                f"{res['prop_bytes'] / max(res['gates'], 1):9.3g} | "
                f"{res['build_time']:8.3f} {res['graph_entries']:10d} "
                f"{res['graph_balance']:5.3f} | {res['replay_time'] * 1e3:8.2f} "
                f"{fmt_num(x['value+grad'], '.2f'):>5s} {res['replay_bytes']:9.3g} | "
                f"{res['peak_mb']:6.0f}",
                flush=True,
            )
        if "error" in base:
            continue
        for r, res in results.items():
            if r == 1 or "error" in res:
                continue
            de, dg = compare(base, res)
            same_terms = (res["prop_terms"], res["graph_terms"]) == (
                base["prop_terms"],
                base["graph_terms"],
            )
            same_entries = res["graph_entries"] == base["graph_entries"]
            print(
                f"    {r} ranks vs 1: energy rel diff {de:.1e}, gradient max rel diff {dg:.1e}, "
                f"terms {'equal' if same_terms else 'DIFFER'}, graph entries "
                f"{'equal' if same_entries else 'differ'}; {res['gates']} gates, "
                f"{res['prop_bytes'] / 1e6:.1f} MB sent in propagate"
            )
            if not de < REL_TOL or not dg < REL_TOL:
                failures.append(f"{name} ranks={r}: energy {de:.1e}, gradient {dg:.1e}")
            if not same_terms:
                failures.append(
                    f"{name} ranks={r}: terms {res['prop_terms']}/{res['graph_terms']} vs "
                    f"{base['prop_terms']}/{base['graph_terms']} on 1 rank"
                )
        print(
            f"    1 rank: <O> propagate {base['prop_energy']:.12f}, replay "
            f"{base['replay_value']:.12f} ({base['n_parameters']} parameters)"
        )

    print()
    print(f"== {max(RANKS)} ranks over 1 rank (T = 1 each; target >= {TARGET}x) ==")
    header = (
        f"{'workload':8s} {'propagate':>9s} {'value+grad':>10s} {'B/gate':>9s} {'balance':>7s}  "
        "target"
    )
    print(header)
    print("-" * len(header))
    for name, x, per_gate, balance in summary:
        cells = [f"{v:.2f}x" if v is not None else "-" for v in x.values()]
        met = all(v is not None and v >= TARGET for v in x.values())
        print(
            f"{name:8s} {cells[0]:>9s} {cells[1]:>10s} {per_gate:9.3g} {balance:7.3f}  "
            f"{'met' if met else 'NOT met'}"
        )
    if hasattr(os, "getloadavg"):
        print(f"1-minute load average at the end: {os.getloadavg()[0]:.1f}")
    if info:
        print(
            f"monoprop imported from {info['module']} (build type {info['build_type']}, "
            f"has_mpi {info['has_mpi']}); MPI: {info['mpi']}"
        )
    print(COLUMNS)
    if failures:
        print("FAILED: " + "; ".join(failures))
    print(f"total {time.perf_counter() - t_start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
