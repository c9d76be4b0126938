#!/usr/bin/env python
"""Thread and MPI scaling of ours, against the reference engine at every thread count.

Three phases per workload: ``propagate()`` of the whole circuit at its bound angles (wall time
of the call), ``build_graph()`` of a shorter circuit seeded with its angles (wall time), and
``expectation_value_and_gradient`` on that graph at those angles (one warm-up call, then the
median of ``--repeat`` calls).

Threads: T = 1, 2, 4, ... up to ``os.cpu_count()`` (``--threads``).  Every (workload, engine,
T) runs ``--runs`` times, the engines alternately (the order flips every round), each run two
fresh processes (propagate; build_graph and replays) of ``versus_worker.py`` with
``monoprop_NUM_THREADS=T OMP_NUM_THREADS=T OMP_DYNAMIC=FALSE`` and one BLAS thread, started
from ``/``; the tables show medians over runs.  Ours is this interpreter's monoprop (``pip
install .``: it must be installed, as ``versus.py`` requires); the reference is
``monoprop==0.9.2`` in its own venv made by ``versus.py``'s machinery (``--reference-venv``,
default ``~/.cache/monoprop-versus/venv-0.9.2``), run as a black box through the public API
alone and without PYTHONPATH (``--no-reference`` leaves it out).

MPI: ranks 1, 2, 4 (``--ranks``) with T threads each (``--mpi-threads``, default 1), ours only,
run as ``mpi.py`` runs them: ``mpiexec -n R python benchmarks/scaling.py --worker JOB`` under
``timeout``, every rank with ``comm=MPI.COMM_WORLD``, each phase started at a barrier and timed
as the maximum over ranks.  The interpreter is ``--mpi-python`` (default: this one), which must
have a monoprop built with MPI and mpi4py; ``mpiexec`` is the one beside it (the ``mpich``
wheel puts it there), else PATH's, unless ``--mpiexec`` names one.  Without such an
interpreter the MPI rows are skipped, with a line that says so.  A T above the core count, or
more ranks x threads than cores, is oversubscribed (marked ``*``): its time is not a timing,
and it runs once (``--runs`` does not apply), for its checks.

Workloads (sizes per ``--size``: ``quick`` for a smoke run, ``full`` for a 2-core machine,
``large`` for a many-core one; the script prints each with its steps and tolerance):

* ``ising``: ``threads.py``'s kicked Ising on an open Lx x Ly square lattice (``rx(0.6)``, then
  ``rzz(-pi/2)`` on every bond in four colour classes; Z on the centre qubit, |0...0>);
* ``tfim``: the 2D transverse-field Ising Trotter circuit of ``threads.py`` and ``versus.py``
  (J 1, h 3, dt 0.1, magnetisation);
* ``tilted``: ``versus.py``'s 2D tilted-field Ising (J 1.5, hx = hz = 1, dt 0.05, Z on a
  central qubit);
* ``hubbard``: ``versus.py``'s 1D Fermi-Hubbard in ``MajoranaPropagator`` (dt 0.25, J 1, U 4,
  n_0, Neel-like half filling, length cutoff 8);
* ``hh`` (only with ``--only``; needs qiskit): ``versus.py``'s 115-qubit heavy-hex kicked Ising.

Printed per workload and phase: the time at each T, speedup over T = 1 and parallel
efficiency (speedup / T) for both engines, and ours / reference at each T; for MPI, the time
at each rank count and the speedup over 1 rank.  Then a summary against the targets of the
scaling issue, which are printed, not enforced:

* T = 2 over T = 1 at least 1.8x on propagate and build_graph, 1.7x on value+grad;
* 2 ranks over 1 rank (T = 1 each) at least 1.6x on propagate and value+grad;
* ours / reference at most 0.5x the time at every T;
* on a many-core machine, T = 16 at least 12x T = 1 on every phase.

Checks that make the exit status 1: a failed run; ours reporting another T than it was given;
ours at T > 1, or on R ranks, not reproducing ours at T = 1 (values of propagation and replay,
gradient) to 1e-9 relative; MPI runs that do not span R ranks, give different values on
different ranks or different total kept terms; repeated runs of ours at one (ranks, T) that
are not bitwise equal; the two engines' values or kept terms disagreeing beyond ``versus.py``'s
tolerances (1e-9 and 1e-3 relative).  The gradients of the two engines are compared and
printed only.

Writes a PNG plot (matplotlib, Agg) of parallel efficiency against T, one line per workload
and phase, ours solid and the reference dashed (``--plot``, default ``scaling.png`` in the
current directory), and with ``--json PATH`` all raw numbers.  Progress goes to stderr.

Usage:  python benchmarks/scaling.py [--quick | --size full|large] [--threads 1,2,4]
            [--ranks 1,2,4] [--mpi-threads 1] [--mpi-python PATH] [--only ising,tfim]
            [--runs N] [--repeat N] [--plot PATH] [--json PATH] [--no-reference] [--no-mpi]
"""

from __future__ import annotations

import argparse
import gc
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

# benchmarks/ is not a package
from mpi import compare, find_mpiexec, spread, timed, worker_main  # noqa: E402
from mpi import spawn as spawn_mpi  # noqa: E402
from propagate import _proc_status_mb, fermi_hubbard_workload, fmt_num  # noqa: E402
from threads import kicked_ising_workload, relative, tfim2d_workload  # noqa: E402
from versus import (  # noqa: E402
    DEFAULT_VENV,
    REFERENCE,
    TERMS_TOL,
    TIME_TARGET,
    VALUE_TOL,
    make_job,
    measure,
    reference_python,
    tilted_ising_workload,
)

PHASES = ("propagate", "build_graph", "value+grad")
THREAD_TARGETS = {"propagate": 1.8, "build_graph": 1.8, "value+grad": 1.7}  # T=2 over T=1
RANK_TARGETS = {"propagate": 1.6, "value+grad": 1.6}  # 2 ranks over 1 rank, T=1 each
MANY_CORE_T, MANY_CORE_TARGET = 16, 12.0  # T=16 over T=1
REL_TOL = 1e-9  # ours at T or on R ranks against ours at T=1: values and gradient, relative

# name -> (size, propagation steps, graph steps, lower_atol) per --size.  "full" is sized for
# the 2-core machine: after propagation 1.2M (ising), 2.6M (tfim), 3.7M (tilted) and 1.8M
# (hubbard) kept terms, graphs of 6-45M entries; at T = 1 each phase of ours takes seconds,
# the reference up to twice as long.  "large" gives a many-core machine 2-4 times that work
# (1.2M, 4.6M, 14.7M and 3.4M kept terms, under 1 GB a process), so that T = 16 still has
# something to time; "quick" is a smoke run of a few minutes.
CONFIGS = {
    "quick": {
        "ising": ({"lx": 5, "ly": 5}, 6, 5, 1e-3),
        "tfim": ({"lx": 4, "ly": 4}, 7, 6, 1e-5),
        "tilted": ({"lx": 5, "ly": 5}, 9, 7, 1e-6),
        "hubbard": ({"L": 8}, 7, 7, 1e-6),
        "hh": ({}, 4, 3, 1e-4),
    },
    "full": {
        "ising": ({"lx": 7, "ly": 7}, 8, 6, 1e-3),
        "tfim": ({"lx": 5, "ly": 5}, 8, 7, 1e-5),
        "tilted": ({"lx": 6, "ly": 6}, 11, 8, 1e-6),
        "hubbard": ({"L": 12}, 10, 8, 1e-6),
        "hh": ({}, 8, 6, 1e-4),
    },
    "large": {
        "ising": ({"lx": 8, "ly": 8}, 14, 10, 1e-3),
        "tfim": ({"lx": 7, "ly": 7}, 9, 8, 1e-5),
        "tilted": ({"lx": 6, "ly": 6}, 13, 10, 1e-6),
        "hubbard": ({"L": 16}, 12, 10, 1e-6),
        "hh": ({}, 12, 8, 1e-4),
    },
}
DEFAULT_WORKLOADS = ("ising", "tfim", "tilted", "hubbard")


def workload(name: str, size: dict) -> tuple[dict, dict, str]:
    """(neutral workload of ``versus_worker.py``, its front and cutoff, description)."""
    settings: dict = {}
    if name == "ising":
        wl = kicked_ising_workload(**size)
        desc = wl["desc"]
    elif name == "tfim":
        wl = tfim2d_workload(**size)
        desc = wl["desc"]
    elif name == "tilted":
        wl = tilted_ising_workload(**size, J=1.5, hx=1.0, hz=1.0, dt=0.05)
        desc = f"2D tilted-field Ising {size['lx']}x{size['ly']}, J=1.5, hx=hz=1, dt=0.05"
    elif name == "hubbard":
        wl = fermi_hubbard_workload(**size)
        settings = {"front": "majorana", "cutoff": 8}
        desc = f"1D Fermi-Hubbard (Majorana, length cutoff 8), {wl['desc']}"
    elif name == "hh":
        from propagate import heavy_hex_workload

        try:
            wl = heavy_hex_workload()
        except ImportError as exc:
            sys.exit(f"the hh workload needs qiskit and rustworkx in this interpreter ({exc})")
        desc = f"heavy-hex kicked Ising, {wl['desc']}"
    else:
        raise ValueError(name)
    return {k: wl[k] for k in ("n", "layers", "observable", "occupied")}, settings, desc


def jobs_for(name: str, size_name: str, repeat: int) -> tuple[dict, dict, dict, str]:
    """(propagate job, graph job, MPI job, title) of workload ``name`` at ``size_name``."""
    size, prop_steps, graph_steps, atol = CONFIGS[size_name][name]
    wl, settings, desc = workload(name, size)
    prop = make_job(wl, prop_steps, atol, "propagate", **settings)
    graph = make_job(wl, graph_steps, atol, "graph", repeat=repeat, **settings)
    graph["gradient"] = True
    both = {**graph, "prop_steps": prop_steps, "graph_steps": graph_steps}
    title = (
        f"{desc}; lower_atol {atol:g}; propagate {prop_steps} steps, graph of {graph_steps} steps"
    )
    return prop, graph, both, title


# --------------------------------------------------------------------------------------------
# MPI worker (one process per rank, under mpiexec): versus_worker's propagators with comm=
# --------------------------------------------------------------------------------------------


def mpi_worker(job: dict) -> dict | None:
    from mpi4py import MPI
    from versus_worker import build

    comm = MPI.COMM_WORLD
    mp, prop, circuit, _ = build({**job, "mode": "propagate", "steps": job["prop_steps"]}, comm)
    out = {
        "module": mp.__file__,
        "version": mp.__version__,
        "has_mpi": bool(mp.has_mpi),
        "ranks": comm.Get_size(),
        "engine_ranks": prop._engine.comm_size,
        "mpi": MPI.Get_library_version().splitlines()[0].strip(),
        "num_threads": comm.allreduce(prop.num_threads, op=MPI.MAX),
    }
    out["propagate"], _ = timed(comm, prop.propagate, circuit)
    out["prop_terms"], out["prop_balance"] = spread(comm, prop.size())
    out["prop_energy"] = float(prop.expectation_value())
    del prop, circuit
    gc.collect()

    _, prop, circuit, _ = build({**job, "mode": "graph", "steps": job["graph_steps"]}, comm)
    out["build_graph"], _ = timed(comm, prop.build_graph, circuit)
    theta = list(circuit.parameters)
    prop.expectation_value_and_gradient(theta)  # warm-up: first-call allocations
    times = []
    for _ in range(job["repeat"]):
        elapsed, (value, gradient) = timed(comm, prop.expectation_value_and_gradient, theta)
        times.append(elapsed)
    out["value+grad"] = statistics.median(times)
    out["replay_value"] = float(value)
    out["gradient"] = [float(g) for g in gradient]
    # Global results must be identical on every rank, bit for bit.
    mine = [out["replay_value"], *out["gradient"]]
    out["ranks_agree"] = all(other == mine for other in comm.allgather(mine))
    out["graph_terms"], _ = spread(comm, prop.size())
    out["entries"], out["entry_balance"] = spread(comm, sum(prop.graph_size()))
    del prop, circuit
    gc.collect()
    out["peak_mb"] = comm.allreduce(_proc_status_mb("VmHWM"), op=MPI.MAX)
    return out if comm.Get_rank() == 0 else None


# --------------------------------------------------------------------------------------------
# Parent: running
# --------------------------------------------------------------------------------------------

PROBE = (
    "import importlib.util, json, monoprop as m\n"
    "print('RESULT ' + json.dumps({'module': m.__file__, 'version': m.__version__, "
    "'has_mpi': bool(getattr(m, 'has_mpi', False)), "
    "'mpi4py': importlib.util.find_spec('mpi4py') is not None}))"
)


def probe(python: str) -> dict:
    """Which monoprop ``python`` imports from a neutral directory, and whether it has MPI."""
    try:
        proc = subprocess.run(
            [python, "-c", PROBE], capture_output=True, text=True, timeout=120, cwd="/"
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": str(exc)}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
    return {"error": " | ".join(tail) or f"exit {proc.returncode}"}


def thread_record(p: dict, g: dict) -> dict:
    """One run (propagate process ``p``, graph process ``g``) in the form ``mpi_worker``
    returns, so that both compare with ``mpi.compare``."""
    for res in (p, g):
        if "error" in res:
            return {"error": res["error"]}
    return {
        "propagate": p["time"],
        "build_graph": g["build_time"],
        "value+grad": g["time"],
        "prop_energy": p["value"],
        "prop_terms": p["terms"],
        "replay_value": g["value"],
        "gradient": g.get("gradient", []),
        "graph_terms": g["terms"],
        "entries": g["entries"],
        "num_threads": p.get("num_threads"),
        "peak_mb": max(p["peak_mb"], g["peak_mb"]),
        "module": p["module"],
        "version": p["version"],
    }


class Progress:
    """Progress lines on stderr: runs done of all, elapsed time."""

    def __init__(self, total: int):
        self.total, self.done, self.start = total, 0, time.perf_counter()

    def __call__(self, what: str, rec: dict) -> None:
        self.done += 1
        if "error" in rec:
            figures = "ERROR " + rec["error"]
        else:
            figures = (
                f"propagate {rec['propagate']:.3f} s, build {rec['build_graph']:.3f} s, "
                f"value+grad {rec['value+grad'] * 1e3:.1f} ms"
            )
        elapsed = time.perf_counter() - self.start
        print(
            f"# [{self.done}/{self.total}, {elapsed:.0f} s] {what}: {figures}",
            file=sys.stderr,
            flush=True,
        )


def median_times(records: list[dict]) -> dict | None:
    """{phase: median time over the records that did not fail}, or None if all failed."""
    ok = [r for r in records if "error" not in r]
    if not ok:
        return None
    return {phase: statistics.median(r[phase] for r in ok) for phase in PHASES}


def bitwise_equal(records: list[dict]) -> bool:
    keys = ("prop_energy", "replay_value", "gradient", "prop_terms", "graph_terms", "entries")
    ok = [[r[k] for k in keys] for r in records if "error" not in r]
    return all(r == ok[0] for r in ok)


def gradient_diff(res: dict, base: dict) -> float:
    """max |g - g_base| / max |g_base|; inf when the lengths differ, nan when not finite."""
    a, b = res.get("gradient") or [], base.get("gradient") or []
    if len(a) != len(b):
        return math.inf
    if not all(math.isfinite(v) for v in a + b):
        return math.nan
    scale = max(max((abs(v) for v in b), default=0.0), 1e-300)
    return max((abs(x - y) for x, y in zip(a, b, strict=True)), default=0.0) / scale


# --------------------------------------------------------------------------------------------
# Parent: report
# --------------------------------------------------------------------------------------------


def fmt_time(seconds: float | None, phase: str) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.1f} ms" if phase == "value+grad" else f"{seconds:.3f} s"


def print_workload(name: str, title: str, threads: list[int], cpus: int, med: dict) -> None:
    """The thread table of one workload: time, xT1 and efficiency per engine, ours/ref."""
    print()
    print(f"== {name}: {title} ==")
    header = (
        f"{'phase':11s} {'T':>4s} | {'ours':>10s} {'xT1':>6s} {'eff':>5s} | "
        f"{'reference':>10s} {'xT1':>6s} {'eff':>5s} | {'ours/ref':>8s}"
    )
    print(header)
    print("-" * len(header))
    for phase in PHASES:
        for t in threads:
            cells = []
            for engine in ("ours", "ref"):
                m, base = med[engine].get(t), med[engine].get(1)
                x = base[phase] / m[phase] if m and base and m[phase] > 0 else None
                cells.append(
                    f"{fmt_time(m[phase] if m else None, phase):>10s} "
                    f"{fmt_num(x, '.2f'):>6s} {fmt_num(x / t if x else None, '.2f'):>5s}"
                )
            o, r = med["ours"].get(t), med["ref"].get(t)
            ratio = o[phase] / r[phase] if o and r and r[phase] > 0 else None
            mark = "*" if t > cpus else " "
            label = phase if t == threads[0] else ""
            print(
                f"{label:11s} {t:>3d}{mark} | {cells[0]} | {cells[1]} | "
                f"{fmt_num(ratio, '.2f') + ('x' if ratio else ''):>8s}"
            )


def speedup(med: dict, phase: str, t: int) -> float | None:
    m, base = med.get(t), med.get(1)
    return base[phase] / m[phase] if m and base and m[phase] > 0 else None


def plot(path: Path, threads, names, med_by_name, mpi_med_by_name, ranks, cpus) -> str:
    """Writes the efficiency plot; returns a line saying where (or why not)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib is not installed (pip install '.[plot]')"
    panels = [*PHASES]
    with_mpi = any(mpi_med_by_name.get(n) for n in names)
    if with_mpi:
        panels.append("mpi")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, panel in zip(axes[0], panels, strict=True):
        if panel == "mpi":
            ax.set_title("MPI ranks, ours (x: oversubscribed)")
            xs_all = ranks
            for i, name in enumerate(names):
                for t, by_r in sorted(mpi_med_by_name.get(name, {}).items()):
                    for phase, style in zip(PHASES, ("-", "-.", ":"), strict=True):
                        pts = [(r, speedup(by_r, phase, r)) for r in ranks]
                        pts = [(r, x / r) for r, x in pts if x is not None]
                        if not pts:
                            continue
                        colour = colours[i % len(colours)]
                        ax.plot(*zip(*pts, strict=True), style, color=colour)
                        for r, e in pts:
                            ax.plot(r, e, "x" if r * t > cpus else "o", color=colour, ms=5)
                        ax.lines[-len(pts) - 1].set_label(f"{name} {phase}, T={t}")
            ax.plot([2], [RANK_TARGETS["propagate"] / 2], "k*", ms=10, label="target")
            ax.set_xlabel("ranks")
        else:
            ax.set_title(panel)
            xs_all = threads
            for i, name in enumerate(names):
                for engine, style in (("ours", "-o"), ("ref", "--s")):
                    by_t = med_by_name[name][engine]
                    pts = [
                        (t, speedup(by_t, panel, t) / t)
                        for t in threads
                        if speedup(by_t, panel, t) is not None
                    ]
                    if pts:
                        ax.plot(
                            [p[0] for p in pts],
                            [p[1] for p in pts],
                            style,
                            color=colours[i % len(colours)],
                            mfc="none" if engine == "ref" else None,
                            label=f"{name} ({'ours' if engine == 'ours' else 'reference'})",
                        )
            targets = [(2, THREAD_TARGETS[panel] / 2)]
            if max(threads) >= MANY_CORE_T:
                targets.append((MANY_CORE_T, MANY_CORE_TARGET / MANY_CORE_T))
            ax.plot(*zip(*targets, strict=True), "k*", ms=10, label="target")
            ax.set_xlabel("threads T")
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs_all)
        ax.set_xticklabels([str(x) for x in xs_all])
        ax.set_ylim(0, max(1.2, ax.get_ylim()[1]))
        ax.grid(alpha=0.3)
        if panel in ("mpi", PHASES[0]):  # the phases share colours and styles: one legend
            ax.legend(fontsize=6, loc="lower left")
    axes[0][0].set_ylabel("parallel efficiency (speedup / T)")
    fig.suptitle(
        f"monoprop scaling, {cpus} CPUs: ours solid, reference ({REFERENCE}) dashed", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"plot written to {path}"


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def parse_counts(text: str, with_one: bool = True) -> list[int]:
    """``"1,2,4"`` -> [1, 2, 4]; 1 is added when ``with_one`` (the baseline of the ratios)."""
    try:
        values = {int(v) for v in text.split(",") if v.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a list like 1,2,4; got {text!r}") from None
    values = sorted(values | ({1} if with_one else set()))
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError("counts must be >= 1")
    return values


def default_threads(cpus: int) -> list[int]:
    """1, 2, 4, ... up to ``cpus``, and ``cpus`` itself."""
    values, t = [], 1
    while t <= cpus:
        values.append(t)
        t *= 2
    return sorted(set(values) | {cpus})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="--size quick: a smoke run")
    ap.add_argument("--size", choices=sorted(CONFIGS), default=None, help="default full")
    ap.add_argument("--only", help="comma-separated workloads (default ising,tfim,tilted,hubbard)")
    ap.add_argument(
        "--threads", type=parse_counts, default=None, help="T values (default 1,2,4,.. cores)"
    )
    ap.add_argument("--ranks", type=parse_counts, default=[1, 2, 4], help="default 1,2,4")
    ap.add_argument(
        "--mpi-threads",
        type=lambda s: parse_counts(s, with_one=False),
        default=[1],
        help="T per rank in the MPI rows (default 1)",
    )
    ap.add_argument("--mpi-python", help="interpreter with an MPI build (default: this one)")
    ap.add_argument("--mpiexec", help="the mpiexec to use (default: beside --mpi-python)")
    ap.add_argument("--no-mpi", action="store_true", help="leave the MPI rows out")
    ap.add_argument("--no-reference", action="store_true", help="leave the reference out")
    ap.add_argument("--reference-venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--runs", type=int, default=None, help="runs per engine and T (default 1/3)")
    ap.add_argument("--repeat", type=int, default=None, help="timed replays per run (3/5)")
    ap.add_argument("--timeout", type=float, default=None, help="per-process timeout, s")
    ap.add_argument("--plot", type=Path, default=Path("scaling.png"), help="PNG path")
    ap.add_argument("--json", type=Path, help="write every raw number here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        return worker_main(json.loads(args.worker), mpi_worker)

    started = time.perf_counter()
    size = "quick" if args.quick else (args.size or "full")
    runs = max(args.runs or (1 if size == "quick" else 3), 1)
    repeat = max(args.repeat or (3 if size == "quick" else 5), 1)
    timeout = args.timeout or (120.0 if size == "quick" else 1200.0)
    cpus = os.cpu_count() or 1
    threads = args.threads or default_threads(cpus)
    names = args.only.split(",") if args.only else list(DEFAULT_WORKLOADS)
    unknown = [n for n in names if n not in CONFIGS[size]]
    if unknown:
        sys.exit(f"unknown workload(s) {unknown}; choose from {sorted(CONFIGS[size])}")

    failures: list[str] = []
    print(
        f"# monoprop scaling ({size}), {time.strftime('%Y-%m-%d %H:%M')}: {cpus} CPUs "
        f"(os.cpu_count()); T in {threads}; medians of {runs} run(s), value+grad the median "
        f"of {repeat} calls a run"
    )
    ours_python = sys.executable
    ours = probe(ours_python)
    if "error" in ours:
        print(
            f"FAILED: {ours_python} cannot import monoprop from a neutral directory "
            f"({ours['error']}); install this checkout into it: pip install '.[plot]'"
        )
        return 1
    print(f"# ours: monoprop {ours['version']} from {ours['module']}")
    ref_python = None
    if not args.no_reference:
        ref_python = str(reference_python(args.reference_venv))
        print(f"# reference: {REFERENCE} in {args.reference_venv} (a black box, public API)")
    else:
        print("# reference: left out (--no-reference)")
    over = [t for t in threads if t > cpus]
    if over:
        print(f"# T = {over} exceeds os.cpu_count(): oversubscribed (*), not a timing")

    # MPI: which interpreter and mpiexec, or why the rows are skipped.
    mpi_python = mpiexec = None
    mpi_skip = None
    how = (
        "to run them, give --mpi-python PATH: an interpreter whose monoprop is built with MPI "
        "(pip install -C cmake.define.MONOPROP_MPI=ON '.[mpi]', which brings mpi4py; the "
        "mpich wheel puts mpiexec beside it, or give --mpiexec)"
    )
    if args.no_mpi:
        mpi_skip = "--no-mpi"
    else:
        mpi_python = args.mpi_python or ours_python
        info = probe(mpi_python)
        mpiexec = find_mpiexec(args.mpiexec, mpi_python)
        if "error" in info:
            mpi_skip = f"{mpi_python} cannot import monoprop ({info['error']})"
        elif not info["has_mpi"]:
            mpi_skip = f"the monoprop of {mpi_python} ({info['module']}) is built without MPI"
        elif not info["mpi4py"]:
            mpi_skip = f"{mpi_python} has no mpi4py"
        elif mpiexec is None:
            mpi_skip = f"no mpiexec beside {mpi_python} or on PATH"
    if mpi_skip:
        print(f"# MPI rows skipped: {mpi_skip}" + ("" if args.no_mpi else f"; {how}"))
    else:
        print(
            f"# MPI: ranks {args.ranks} x T {args.mpi_threads} each, {mpiexec}, "
            f"monoprop from {info['module']}"
        )
        over = [(r, t) for t in args.mpi_threads for r in args.ranks if r * t > cpus]
        if over:
            print(
                "# ranks x T above os.cpu_count() (oversubscribed, *, not a timing): "
                + ", ".join(f"{r} x {t}" for r, t in over)
            )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > 0.5:
        print(f"# warning: 1-minute load average {load:.1f} before the run: other work competes")
    print(f"# per-process timeout {timeout:.0f} s", flush=True)

    engines = [("ours", ours_python)] + ([("ref", ref_python)] if ref_python else [])

    # An oversubscribed configuration is no timing, so it runs once: as a check of its results
    # (with MPI's busy-polling ranks it can also take many times as long as the others).
    def runs_at(cores: int) -> int:
        return runs if cores <= cpus else 1

    mpi_runs = 0
    if not mpi_skip:
        mpi_runs = sum(runs_at(r * t) for r in args.ranks for t in args.mpi_threads)
    thread_runs = sum(runs_at(t) for t in threads) * len(engines)
    progress = Progress(len(names) * (thread_runs + mpi_runs))
    raw: dict = {}
    med_by_name: dict = {}
    mpi_med_by_name: dict = {}
    for name in names:
        prop_job, graph_job, mpi_job, title = jobs_for(name, size, repeat)
        records: dict = {e: {t: [] for t in threads} for e, _ in engines}
        for t in threads:
            for k in range(runs_at(t)):
                order = engines if k % 2 == 0 else engines[::-1]
                for engine, python in order:
                    isolated = engine == "ref"
                    p = measure(Path(python), prop_job, t, timeout, isolated)
                    g = measure(Path(python), graph_job, t, timeout, isolated)
                    rec = thread_record(p, g)
                    records[engine][t].append(rec)
                    progress(f"{name} {engine} T={t} run {k + 1}", rec)
        mpi_records: dict = {}
        if not mpi_skip:
            for t in args.mpi_threads:
                for r in args.ranks:
                    mpi_records[(r, t)] = []
                    for k in range(runs_at(r * t)):
                        rec = spawn_mpi(
                            mpiexec,
                            r,
                            mpi_job,
                            timeout,
                            python=mpi_python,
                            script=Path(__file__),
                            threads=t,
                        )
                        mpi_records[(r, t)].append(rec)
                        progress(f"{name} MPI {r} ranks x T={t} run {k + 1}", rec)
        raw[name] = {
            "title": title,
            "config": CONFIGS[size][name],
            "threads": {e: {str(t): v for t, v in by_t.items()} for e, by_t in records.items()},
            "mpi": {f"{r}x{t}": v for (r, t), v in mpi_records.items()},
        }

        # Tables and checks of this workload.
        med = {e: {} for e in ("ours", "ref")}
        for engine, by_t in records.items():
            for t, recs in by_t.items():
                for rec in recs:
                    if "error" in rec:
                        failures.append(f"{name} {engine} T={t}: {rec['error']}")
                m = median_times(recs)
                if m:
                    med[engine][t] = m
        med_by_name[name] = med
        raw[name]["medians"] = {e: {str(t): m for t, m in by_t.items()} for e, by_t in med.items()}
        print_workload(name, title, threads, cpus, med)
        ok = {
            e: {t: next((r for r in recs if "error" not in r), None) for t, recs in by_t.items()}
            for e, by_t in records.items()
        }
        base = ok["ours"].get(1)
        for t in threads:
            res = ok["ours"].get(t)
            if res is None:
                continue
            if res["num_threads"] != t:
                failures.append(f"{name} ours T={t}: the propagator reports T={res['num_threads']}")
            if not bitwise_equal(records["ours"][t]):
                failures.append(f"{name} ours T={t}: repeated runs differ")
            if base is None or t == 1:
                continue
            de, dg = compare(base, res)
            same = (res["prop_terms"], res["entries"]) == (base["prop_terms"], base["entries"])
            print(
                f"    ours T={t} vs T=1: value rel diff {de:.1e}, gradient max rel diff {dg:.1e}, "
                f"terms/entries {'equal' if same else 'DIFFER'}"
            )
            if not (de < REL_TOL and dg < REL_TOL):
                failures.append(f"{name} ours T={t} vs T=1: value {de:.1e}, gradient {dg:.1e}")
        for t in threads:
            o, r = ok["ours"].get(t), ok.get("ref", {}).get(t)
            if o is None or r is None:
                continue
            if r["version"] != REFERENCE.split("==")[1] or r["module"] == o["module"]:
                failures.append(
                    f"{name} T={t}: the reference run imported monoprop {r['version']} from "
                    f"{r['module']}, not {REFERENCE}"
                )
            dv = max(
                relative(o["prop_energy"], r["prop_energy"]),
                relative(o["replay_value"], r["replay_value"]),
            )
            dterms = max(abs(o[k] - r[k]) / max(r[k], 1) for k in ("prop_terms", "graph_terms"))
            print(
                f"    ours vs reference T={t}: value rel diff {dv:.1e}, kept terms rel diff "
                f"{dterms:.1e}, graph entries {o['entries']} vs {r['entries']}, gradient max "
                f"rel diff {gradient_diff(o, r):.1e} (printed only)"
            )
            if not (dv <= VALUE_TOL and dterms <= TERMS_TOL):
                failures.append(
                    f"{name} T={t} ours vs reference: value {dv:.1e}, terms {dterms:.1e}"
                )
        if base is not None:
            print(
                f"    ours T=1: <O> propagate {base['prop_energy']:.12f} ({base['prop_terms']} "
                f"terms), replay {base['replay_value']:.12f} ({len(base['gradient'])} "
                f"parameters, {base['entries']} graph entries), peak {base['peak_mb']:.0f} MB"
            )

        # MPI rows of this workload.
        if mpi_records:
            mpi_med: dict = {}
            print(f"  MPI ({name}; x1 = time on 1 rank / time on R ranks, same T per rank):")
            header = f"  {'phase':11s} {'T':>3s} | " + " | ".join(
                f"{'R=' + str(r):>10s} {'x1':>6s}" for r in args.ranks
            )
            print(header)
            print("  " + "-" * (len(header) - 2))
            for t in args.mpi_threads:
                by_r = {}
                for r in args.ranks:
                    recs = mpi_records[(r, t)]
                    for rec in recs:
                        if "error" in rec:
                            failures.append(f"{name} MPI {r} ranks x T={t}: {rec['error']}")
                            continue
                        if (rec["ranks"], rec["engine_ranks"]) != (r, r):
                            failures.append(
                                f"{name} MPI {r} ranks x T={t}: the run spans {rec['ranks']} "
                                f"ranks (engine {rec['engine_ranks']}); is mpiexec from the MPI "
                                "that mpi4py uses?"
                            )
                        if rec["num_threads"] != t:
                            failures.append(
                                f"{name} MPI {r} ranks: a propagator reports "
                                f"T={rec['num_threads']}, not {t}"
                            )
                        if not rec["ranks_agree"]:
                            failures.append(f"{name} MPI {r} ranks x T={t}: ranks disagree")
                    if not bitwise_equal(recs):
                        failures.append(f"{name} MPI {r} ranks x T={t}: repeated runs differ")
                    m = median_times(recs)
                    if m:
                        by_r[r] = m
                mpi_med[t] = by_r
                for phase in PHASES:
                    cells = []
                    for r in args.ranks:
                        x = speedup(by_r, phase, r)
                        mark = "*" if r * t > cpus else " "
                        m = by_r.get(r)
                        cells.append(
                            f"{fmt_time(m[phase] if m else None, phase):>10s}"
                            f"{mark}{fmt_num(x, '.2f'):>5s}"
                        )
                    print(f"  {phase:11s} {t:>3d} | " + " | ".join(cells))
            mpi_med_by_name[name] = mpi_med
            raw[name]["mpi_medians"] = {
                f"{r}x{t}": m for t, by_r in mpi_med.items() for r, m in by_r.items()
            }
            mpi_base = base
            for (r, t), recs in mpi_records.items():
                res = next((x for x in recs if "error" not in x), None)
                if res is None:
                    continue
                if mpi_base is None:
                    mpi_base = res
                de, dg = compare(mpi_base, res)
                same = (res["prop_terms"], res["graph_terms"]) == (
                    mpi_base["prop_terms"],
                    mpi_base["graph_terms"],
                )
                print(
                    f"    MPI {r} ranks x T={t} vs ours T=1: value rel diff {de:.1e}, gradient "
                    f"max rel diff {dg:.1e}, terms {'equal' if same else 'DIFFER'}; balance "
                    f"{res['prop_balance']:.3f} (terms), {res['entry_balance']:.3f} (entries)"
                )
                if not (de < REL_TOL and dg < REL_TOL) or not same:
                    failures.append(
                        f"{name} MPI {r} ranks x T={t}: value {de:.1e}, gradient {dg:.1e}, "
                        f"terms {res['prop_terms']}/{res['graph_terms']}"
                    )
        sys.stdout.flush()

    # Summary against the targets.
    print()
    print(
        "== Summary: ours, speedup over T=1 (efficiency); ours/reference time; 2 ranks over "
        "1 (T=1 each) =="
    )
    tcols = [t for t in threads if t > 1]
    header = (
        f"{'workload':8s} {'phase':11s} | "
        + " ".join(f"{'T=' + str(t) + ('*' if t > cpus else ''):>13s}" for t in tcols)
        + " | "
        + " ".join(f"{'/ref T=' + str(t):>10s}" for t in threads)
        + f" | {'R=2/R=1':>7s}"
    )
    print(header)
    print("-" * len(header))
    misses = []
    for name in names:
        med = med_by_name[name]
        by_r = mpi_med_by_name.get(name, {}).get(1, {})
        for phase in PHASES:
            cells = []
            for t in tcols:
                x = speedup(med["ours"], phase, t)
                cells.append(f"{x:.2f}x ({x / t:.2f})" if x else "-")
            ratios = []
            for t in threads:
                o, r = med["ours"].get(t), med["ref"].get(t)
                q = o[phase] / r[phase] if o and r and r[phase] > 0 else None
                ratios.append(f"{fmt_num(q, '.2f')}x" if q else "-")
                if q is not None and q > TIME_TARGET and t <= cpus:
                    misses.append(f"{name} {phase} ours/ref T={t} {q:.2f}x")
            xr = speedup(by_r, phase, 2) if 2 <= cpus else None
            print(
                f"{name:8s} {phase:11s} | "
                + " ".join(f"{c:>13s}" for c in cells)
                + " | "
                + " ".join(f"{c:>10s}" for c in ratios)
                + f" | {fmt_num(xr, '.2f') + ('x' if xr else ''):>7s}"
            )
            x2 = speedup(med["ours"], phase, 2)
            if x2 is not None and 2 <= cpus and x2 < THREAD_TARGETS[phase]:
                misses.append(f"{name} {phase} T=2/T=1 {x2:.2f}x")
            x16 = speedup(med["ours"], phase, MANY_CORE_T)
            if x16 is not None and MANY_CORE_T <= cpus and x16 < MANY_CORE_TARGET:
                misses.append(f"{name} {phase} T=16/T=1 {x16:.2f}x")
            if xr is not None and phase in RANK_TARGETS and xr < RANK_TARGETS[phase]:
                misses.append(f"{name} {phase} R=2/R=1 {xr:.2f}x")
    print(
        "targets (printed, not enforced): T=2/T=1 >= 1.8x propagate and build_graph, >= 1.7x "
        "value+grad; R=2/R=1 >= 1.6x propagate and value+grad; ours/ref <= "
        f"{TIME_TARGET}x at every T; on a many-core machine T=16/T=1 >= {MANY_CORE_TARGET:g}x"
    )
    if MANY_CORE_T not in threads:
        print(f"  T={MANY_CORE_T} not measured here (T up to {max(threads)})")
    if mpi_skip:
        print(f"  MPI rows skipped: {mpi_skip}")
    elif 2 not in args.ranks or 1 not in args.mpi_threads:
        print("  R=2/R=1 at T=1 not measured (--ranks, --mpi-threads)")
    print("not met: " + ("; ".join(misses) if misses else "none"))
    print(
        "Columns: time at each T is the median over runs (value+grad: of each run's median "
        "call); xT1 = time at T=1 / time at T; eff = xT1 / T; * = oversubscribed, not a timing."
    )
    if hasattr(os, "getloadavg"):
        print(f"1-minute load average at the end: {os.getloadavg()[0]:.1f}")
    print(plot(args.plot, threads, names, med_by_name, mpi_med_by_name, args.ranks, cpus))
    if args.json:
        summary = {
            "size": size,
            "cpus": cpus,
            "threads": threads,
            "ranks": args.ranks,
            "mpi_threads": args.mpi_threads,
            "runs": runs,
            "repeat": repeat,
            "ours": ours,
            "reference": None if args.no_reference else REFERENCE,
            "mpi_skipped": mpi_skip,
            "workloads": raw,
            "not_met": misses,
            "failures": failures,
        }
        args.json.write_text(json.dumps(summary, indent=1))
        print(f"raw numbers written to {args.json}")
    if failures:
        print("FAILED: " + "; ".join(failures))
    print(f"total {time.perf_counter() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
