"""What MPI launches do on failure and misuse.

With more than one rank, a failure during an operation prints the rank and the error and
aborts the launch (MPI_Abort), since the other ranks cannot be told; on a single rank the
original exception is raised and the propagator is invalid afterwards. MPI must be
initialised with at least MPI_THREAD_FUNNELED (SINGLE is refused, naming the remedy), and a
call from a thread other than the one that initialised MPI aborts that process.

Each case launches its own ``mpiexec`` (or a singleton MPI process) in a subprocess, under a
timeout, because its outcome is an aborted process. They run from one process
(the 1-rank leg of ``.ci/run``) and skip on more ranks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")
from mpi4py import MPI  # noqa: E402

import monoprop  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not monoprop.has_mpi, reason="monoprop was built without MPI"),
    # Each case starts its own launch: once, from the 1-rank leg, not once per rank.
    pytest.mark.skipif(MPI.COMM_WORLD.size > 1, reason="launch tests run from one process"),
]

TIMEOUT = 120  # seconds; an abort must come well before
MPIEXEC = shutil.which(
    "mpiexec", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
)

PROBLEM = """
import numpy as np
from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator

def build(comm):
    prop = PauliPropagator(PauliOperator({"ZZII": 1.0, "IXXI": 0.5}, 4), [0], cutoff=8, comm=comm)
    gates = [ExpGate(PauliOperator({p: 1.0}, 4)) for p in ("XIII", "IYII", "IIZX", "YIIZ")]
    prop.build_graph(Circuit(gates, 4))
    return prop
"""


def launch(script: str, ranks: int | None) -> tuple[subprocess.CompletedProcess, float]:
    """Runs `script` on `ranks` ranks (None: a singleton MPI process, no mpiexec)."""
    # The child must not think it belongs to the launch that runs this test.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PMI_", "PMIX_", "HYDRA_", "MPIR_"))
    }
    env.update(OMP_NUM_THREADS="1", monoprop_NUM_THREADS="1")
    code = textwrap.dedent(PROBLEM) + textwrap.dedent(script)
    command = [sys.executable, "-c", code]
    if ranks is not None:
        assert MPIEXEC, "mpiexec not found next to the interpreter or on PATH"
        command = [MPIEXEC, "-n", str(ranks), *command]
    start = time.monotonic()
    run = subprocess.run(
        # Not from the source tree, where ``python -c`` would import the uncompiled package.
        command,
        env=env,
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    return run, time.monotonic() - start


def test_failure_on_two_ranks_aborts_and_names_the_rank():
    run, seconds = launch(
        """
        from mpi4py import MPI
        prop = build(MPI.COMM_WORLD)
        if MPI.COMM_WORLD.rank == 1:
            prop._engine._inject_fault("evaluate")
        prop.expectation_value([0.1, 0.2, 0.3, 0.4])
        print("survived", flush=True)
        """,
        ranks=2,
    )
    assert run.returncode != 0, run.stdout + run.stderr
    assert "monoprop: rank 1: evaluate failed: injected fault in evaluate" in run.stderr, run.stderr
    assert "survived" not in run.stdout
    assert seconds < TIMEOUT / 2


def test_failure_on_one_rank_raises_the_original_exception():
    run, _ = launch(
        """
        from mpi4py import MPI
        from monoprop import InvalidPropagatorError
        prop = build(MPI.COMM_WORLD)
        prop._engine._inject_fault("evaluate")
        try:
            prop.expectation_value([0.1, 0.2, 0.3, 0.4])
        except RuntimeError as error:
            assert "injected fault in evaluate" in str(error), error
        try:
            prop.expectation_value([0.1, 0.2, 0.3, 0.4])
        except InvalidPropagatorError:
            print("invalid afterwards", flush=True)
        """,
        ranks=1,
    )
    assert run.returncode == 0, run.stderr
    assert "invalid afterwards" in run.stdout


@pytest.mark.parametrize("level, refused", [("single", True), ("funneled", False)])
def test_thread_level_single_is_refused(level, refused):
    run, _ = launch(
        f"""
        import mpi4py
        mpi4py.rc.thread_level = {level!r}
        from mpi4py import MPI
        try:
            prop = build(MPI.COMM_WORLD)
        except RuntimeError as error:
            print("refused:", error, flush=True)
        else:
            print("value", prop.expectation_value([0.1, 0.2, 0.3, 0.4]), flush=True)
        """,
        ranks=None,
    )
    assert run.returncode == 0, run.stderr
    if refused:
        assert "refused:" in run.stdout and "MPI_THREAD_SINGLE" in run.stdout, run.stdout
        assert "funneled" in run.stdout  # the remedy
    else:
        assert "value" in run.stdout, run.stdout


def test_call_from_another_thread_aborts_that_process():
    run, seconds = launch(
        """
        import threading
        from mpi4py import MPI
        prop = build(MPI.COMM_WORLD)
        worker = threading.Thread(target=lambda: prop.expectation_value([0.1, 0.2, 0.3, 0.4]))
        worker.start()
        worker.join()
        print("survived", flush=True)
        """,
        ranks=None,
    )
    assert run.returncode != 0
    assert "did not initialise MPI" in run.stderr, run.stderr
    assert "survived" not in run.stdout
    assert seconds < TIMEOUT / 2
