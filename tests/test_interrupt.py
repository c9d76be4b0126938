"""Ctrl-C during long operations: the core asks Python for pending signals between layers
and about every 0.1 s inside long ones, and raises the signal handler's exception
(KeyboardInterrupt) within about that time. A build or a propagation stopped so leaves the
propagator as it was before the call; a replay changes nothing. A progress callback that
raises stops the operation the same way.

The signal goes to a child process (so that it cannot reach pytest), at 1 and 2 threads.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
from monoprop.pauli import Pauli

# A 2D transverse-field Ising Trotter circuit on 5x5 qubits with a length cutoff: the long
# circuit takes several seconds to build or propagate, the short ones milliseconds.
CHILD = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
    from monoprop.pauli import Pauli

    LX = LY = 5
    N = LX * LY

    def tfim(steps):
        gates = []
        for _ in range(steps):
            for x in range(LX):
                for y in range(LY):
                    q = x + LX * y
                    if x + 1 < LX:
                        gates.append(("ZZ", (q, q + 1), -0.2))
                    if y + 1 < LY:
                        gates.append(("ZZ", (q, q + LX), -0.2))
            gates += [("X", (q,), 0.6) for q in range(N)]
        ops = [ExpGate(PauliOperator({Pauli(lab, qs): -0.5}, N)) for lab, qs, _ in gates]
        return Circuit(ops, N, parameters=[t for *_, t in gates])

    def fresh():
        z = PauliOperator({Pauli("Z", (12,)): 1.0}, N)
        return PauliPropagator(z, [], cutoff=6, lower_atol=1e-6)

    # what: build_graph (structural, after a first build), propagate, or replay (value and
    # gradient of a graph built at its seed), `steps` Trotter steps long.
    what, steps = sys.argv[1], int(sys.argv[2])
    small, long, after = tfim(1), tfim(steps), tfim(2)
    first = long if what == "replay" else small
    p = fresh()
    if what == "propagate":
        p.propagate(first)
        call = lambda: p.propagate(long)
        value = lambda: [p.expectation_value()]
        follow = lambda q: q.propagate(after)
    else:
        p.build_graph(first)
        theta = np.linspace(-1, 1, p.n_parameters)
        if what == "build_graph":
            call = lambda: p.build_graph(long)
        else:
            def call():
                for _ in range(100000):
                    p.expectation_value_and_gradient(theta)
        def value():
            f, g = p.expectation_value_and_gradient(np.linspace(-1, 1, p.n_parameters))
            return [f, *g]
        # (a replay's follower replays: the values are compared below)
        follow = (lambda q: q.build_graph(after)) if what == "build_graph" else (lambda _: None)
    facts = {"before": {"size": p.size(), "graph_layers": p.graph_layers, "value": value()}}
    print("started", flush=True)
    start = time.monotonic()
    try:
        call()
        facts["finished"] = time.monotonic() - start
    except KeyboardInterrupt:
        facts["caught"] = time.time()
    facts["after"] = {"size": p.size(), "graph_layers": p.graph_layers, "value": value()}
    # Still usable: the next call gives what it gives on a propagator never interrupted.
    follow(p)
    q = fresh()
    (q.propagate if what == "propagate" else q.build_graph)(first)
    follow(q)
    theta = np.linspace(-1, 1, p.n_parameters)
    facts["next"] = [p.size(), q.size(), p.expectation_value(theta), q.expectation_value(theta)]
    print(json.dumps(facts), flush=True)
    """
)


def _interrupt(what: str, steps: int, threads: int) -> dict:
    """Sends SIGINT 1 s after the child starts `what`; returns the child's facts, with the
    seconds from the signal to the KeyboardInterrupt as "latency"."""
    env = dict(os.environ, monoprop_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    child = subprocess.Popen(
        [sys.executable, "-P", "-c", CHILD, what, str(steps)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        started = child.stdout.readline().strip()
        time.sleep(1.0)
        sent = time.time()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:  # not stopped by the signal: do not wait for the whole call
            child.kill()
            child.wait()
    assert started == "started" and child.returncode == 0, err
    facts = json.loads(out)
    assert "caught" in facts, f"the call ended after {facts['finished']:.1f} s, before the signal"
    facts["latency"] = facts["caught"] - sent
    return facts


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("what", "steps"), [("build_graph", 4), ("propagate", 12), ("replay", 7)])
def test_ctrl_c_stops_a_long_operation_and_leaves_the_propagator_as_it_was(what, steps, threads):
    facts = _interrupt(what, steps, threads)
    # Polls come about 0.1 s apart; a second is the promise, with room for a busy machine.
    assert facts["latency"] < 1.0
    assert facts["after"] == facts["before"]  # exactly: size, layers, value and gradient
    p_size, q_size, p_value, q_value = facts["next"]
    assert p_size == q_size and p_value == q_value


def _long_build() -> tuple[PauliPropagator, Circuit]:
    n = 6
    prop = PauliPropagator(PauliOperator({Pauli("Z", (0,)): 1.0}, n), [], cutoff=n)
    gates = [ExpGate(PauliOperator({"XYIIII"[-q:] + "XYIIII"[:-q]: 1.0}, n)) for q in range(n)] * 3
    return prop, Circuit(gates, n, parameters=np.linspace(0.1, 0.9, 3 * n))


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
@pytest.mark.parametrize("operation", ["build_graph", "propagate"])
def test_a_raising_progress_callback_stops_the_operation_and_rolls_back(error, operation):
    prop, circuit = _long_build()
    first = Circuit(list(circuit)[:2], 6, parameters=list(circuit.parameters)[:2])
    getattr(prop, operation)(first)
    theta = np.linspace(-1, 1, prop.n_parameters)
    before = prop.size(), prop.graph_layers, prop.expectation_value(theta)

    def callback(done, total, terms, bound):
        if done == 3:
            raise error("stop here")

    prop._engine.set_progress(callback)
    with pytest.raises(error, match="stop here"):
        getattr(prop, operation)(circuit)
    prop._engine.set_progress(None)
    assert (prop.size(), prop.graph_layers, prop.expectation_value(theta)) == before
    getattr(prop, operation)(circuit)  # and usable
    assert prop.graph_layers == before[1] + (len(circuit) if operation == "build_graph" else 0)
