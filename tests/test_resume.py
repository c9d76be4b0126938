"""Checkpointed builds: a build in pieces records the graph one build records, bitwise; a build
killed with SIGKILL resumes from its last checkpoint and ends bitwise as an uninterrupted build;
a resume with other arguments, and any use of an unfinished build, is refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from test_save_load import majorana_case, pauli_case, threads  # noqa: F401 (a fixture the tests use)

import monoprop
from monoprop import MajoranaPropagator, PauliPropagator, ToleranceWarning, _saved_state, archive

HERE = Path(__file__).parent


def fresh(family: str, picture: str, **config):
    circuit, x, observable, occupied = (pauli_case if family == "pauli" else majorana_case)(
        True, True
    )
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    config.setdefault("cutoff", 4)
    config.setdefault("lower_atol", 1e-3)
    if picture == "schrodinger":
        config["schrodinger_cutoff"] = config["cutoff"]
    return cls(observable, occupied, **config), circuit, x


def state(prop) -> dict[str, bytes]:
    """Everything the engine saves, but its change counter (which counts the pieces)."""
    arrays = prop._engine.save_state()
    return {
        name: a.tobytes() + repr(a.shape).encode()
        for name, a in arrays.items()
        if name != "generation"
    }


@contextmanager
def ignoring_lower_atol(expected: bool):
    """A build without a seed ignores lower_atol (1e-3 here) and says so once, however many
    pieces it is built in; every other build, a resumed one included, says nothing."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    said = [str(w.message) for w in caught if issubclass(w.category, ToleranceWarning)]
    assert len(said) == len(caught) == (1 if expected else 0), said
    assert all("ignores lower_atol=0.001" in text for text in said), said


def assert_bitwise(a, b, x) -> None:
    left, right = state(a), state(b)
    assert left.keys() == right.keys()
    assert [name for name in left if left[name] != right[name]] == []
    if len(x) == a.n_parameters:  # a graph in this test's parameters: it replays
        value, gradient = a.expectation_value_and_gradient(x)
        other_value, other_gradient = b.expectation_value_and_gradient(x)
        assert other_value == value and other_gradient.tobytes() == gradient.tobytes()


@pytest.mark.parametrize("family", ["pauli", "majorana"])
@pytest.mark.parametrize("picture", ["heisenberg", "schrodinger"])
@pytest.mark.parametrize("seeded", [True, False], ids=["seeded", "structural"])
@pytest.mark.parametrize("earlier", [False, True], ids=["first", "extension"])
@pytest.mark.usefixtures("threads")
def test_a_build_in_pieces_records_the_graph_of_one_build(
    family, picture, seeded, earlier, tmp_path
):
    """checkpoint_every=0 saves after every piece, and pieces stay one layer long."""
    whole, circuit, x = fresh(family, picture)
    pieces, _, _ = fresh(family, picture)
    seed = x if seeded else None
    if earlier:  # an extension: the new circuit's parameters join a graph's axes
        for p in (whole, pieces):
            p.build_graph(circuit, seed_parameters=x)
        seed = np.concatenate([x, x[::-1]]) if seeded else None
    structural = seed is None and earlier  # a first build seeds from the bound circuit
    with ignoring_lower_atol(structural):
        whole.build_graph(circuit, seed_parameters=seed)
    x = np.concatenate([x, x]) if earlier else x
    saves = []
    real_save = _saved_state.save

    def counting_save(prop, path):
        saves.append(prop._build.done)
        real_save(prop, path)

    _saved_state.save, saved_save = counting_save, _saved_state.save
    try:
        with ignoring_lower_atol(structural):
            pieces.build_graph(
                circuit, seed_parameters=seed, checkpoint=tmp_path / "ck", checkpoint_every=0
            )
    finally:
        _saved_state.save = saved_save
    assert saves == list(range(1, len(pieces._layer_arrays(circuit)) + 1))
    assert_bitwise(whole, pieces, x)
    finished = monoprop.load(tmp_path / "ck")
    assert finished._build.finished
    assert_bitwise(whole, finished, x)
    with ignoring_lower_atol(False):  # the build said it when it began
        finished.build_graph(circuit, seed_parameters=seed, resume=True)  # nothing left
    assert_bitwise(whole, finished, x)


CHILD = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, {tests!r})
    import numpy as np
    from monoprop import _saved_state
    from test_resume import fresh

    stall_after = int(sys.argv[2])
    real_save = _saved_state.save
    count = 0

    def save(prop, path):
        global count
        real_save(prop, path)
        count += 1
        if count == stall_after:
            print("checkpointed", prop._build.done, flush=True)
            time.sleep(600)  # the parent kills us here

    _saved_state.save = save
    prop, circuit, x = fresh(sys.argv[3], sys.argv[4])
    prop.build_graph(circuit, seed_parameters=x, checkpoint=sys.argv[1], checkpoint_every=0)
    print("finished", flush=True)
    """
)


def run_and_kill(tmp_path: Path, stall_after: int, family: str, picture: str) -> int:
    """Runs a checkpointed build in a child, SIGKILLs it once its checkpoint number
    `stall_after` is on disk, and returns the layers that checkpoint holds."""
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(tests=str(HERE)))
    child = subprocess.Popen(
        [
            sys.executable,
            "-P",
            str(script),
            str(tmp_path / "ck"),
            str(stall_after),
            family,
            picture,
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        line = child.stdout.readline().split()
        assert line[0] == "checkpointed", line
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        child.kill()
        child.stdout.close()
    return int(line[1])


@pytest.mark.parametrize(
    ("family", "picture"),
    [("pauli", "heisenberg"), ("pauli", "schrodinger"), ("majorana", "heisenberg")],
)
@pytest.mark.usefixtures("threads")
def test_a_build_killed_with_sigkill_resumes_and_matches_an_uninterrupted_build(
    family, picture, tmp_path
):
    done = run_and_kill(tmp_path, 7, family, picture)
    resumed = monoprop.load(tmp_path / "ck")
    assert (resumed._build.done, resumed._build.finished) == (done, False)
    whole, circuit, x = fresh(family, picture)
    whole.build_graph(circuit, seed_parameters=x)
    assert 0 < resumed.graph_layers < whole.graph_layers
    resumed.build_graph(circuit, seed_parameters=x, resume=True)
    assert_bitwise(whole, resumed, x)


def test_a_kill_in_the_middle_of_a_checkpoint_resumes_from_the_one_before(tmp_path, monkeypatch):
    """The child dies while writing its third checkpoint's arrays: the second is what loads."""
    script = tmp_path / "child.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            sys.path.insert(0, {str(HERE)!r})
            import numpy as np
            from monoprop import archive
            from test_resume import fresh

            real_save, saves = np.save, []

            def save(out, data, **options):
                real_save(out, data, **options)
                if data.size > 1 and archive_writes() == 3:
                    print("writing", flush=True)
                    time.sleep(600)

            calls = [0]
            real_write = archive.write

            def write(*args, **kwargs):
                calls[0] += 1
                return real_write(*args, **kwargs)

            archive_writes = lambda: calls[0]
            archive.write, np.save = write, save
            prop, circuit, x = fresh("pauli", "heisenberg")
            prop.build_graph(circuit, seed_parameters=x, checkpoint={str(tmp_path / "ck")!r},
                             checkpoint_every=0)
            """
        )
    )
    child = subprocess.Popen([sys.executable, "-P", str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "writing"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        child.kill()
        child.stdout.close()
    resumed = monoprop.load(tmp_path / "ck")
    assert resumed._build.done == 2
    whole, circuit, x = fresh("pauli", "heisenberg")
    whole.build_graph(circuit, seed_parameters=x)
    resumed.build_graph(circuit, seed_parameters=x, resume=True)
    assert_bitwise(whole, resumed, x)


def test_a_build_stopped_in_process_resumes_on_the_same_propagator(tmp_path, monkeypatch):
    """A KeyboardInterrupt between pieces leaves the pieces done; resume=True finishes."""
    prop, circuit, x = fresh("majorana", "schrodinger")
    real_save, count = _saved_state.save, [0]

    def interrupted_save(p, path):
        real_save(p, path)
        count[0] += 1
        if count[0] == 4:
            raise KeyboardInterrupt

    monkeypatch.setattr(_saved_state, "save", interrupted_save)
    with pytest.raises(KeyboardInterrupt):
        prop.build_graph(circuit, checkpoint=tmp_path / "ck", checkpoint_every=0)
    monkeypatch.setattr(_saved_state, "save", real_save)
    assert prop._build.done == 4 and not prop._build.finished
    prop.build_graph(circuit, resume=True)
    whole, _, _ = fresh("majorana", "schrodinger")
    whole.build_graph(circuit)
    assert_bitwise(whole, prop, x)


@pytest.fixture
def unfinished(tmp_path, monkeypatch):
    """A propagator loaded from a checkpoint three layers into its build."""
    prop, circuit, x = fresh("pauli", "heisenberg")
    real_save = _saved_state.save

    def stop(p, path):
        real_save(p, path)
        if p._build.done == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(_saved_state, "save", stop)
    with pytest.raises(KeyboardInterrupt):
        prop.build_graph(circuit, seed_parameters=x, checkpoint=tmp_path / "ck", checkpoint_every=0)
    monkeypatch.setattr(_saved_state, "save", real_save)
    return monoprop.load(tmp_path / "ck"), circuit, x


@pytest.mark.parametrize(
    "use",
    [
        lambda p, c, x: p.expectation_value(x),
        lambda p, c, x: p.expectation_value_and_gradient(x),
        lambda p, c, x: p.expectation_value_functional(),
        lambda p, c, x: p.expectation_value_and_gradient_functional(),
        lambda p, c, x: p.contract_partially(x),
        lambda p, c, x: p.evolved_operator(x),
        lambda p, c, x: p.evolved_operator_coefficients([monoprop.Pauli("Z", [0])], x),
        lambda p, c, x: p.update_initial_operator(monoprop.PauliOperator({"ZIIII": 1.0}, 5)),
        lambda p, c, x: p.build_graph(c, seed_parameters=x),
        lambda p, c, x: setattr(p, "parameter_mapping", p.parameter_mapping),
    ],
    ids=[
        "value",
        "gradient",
        "functional",
        "gradient-functional",
        "contract",
        "evolved",
        "coefficients",
        "update",
        "another-build",
        "mapping",
    ],
)
def test_an_unfinished_build_refuses_everything_but_its_resume(unfinished, use):
    prop, circuit, x = unfinished
    before = state(prop)
    with pytest.raises(RuntimeError, match=r"stopped after \d+ of its \d+ layers.*resume=True"):
        use(prop, circuit, x)
    assert state(prop) == before
    assert prop.size() > 0 and prop.graph_layers > 0  # what it holds can be looked at


def test_a_resume_with_other_arguments_is_refused(unfinished, monkeypatch):
    prop, circuit, x = unfinished
    before = state(prop)
    other = list(circuit.gates)
    other[0] = monoprop.ExpGate(monoprop.PauliOperator({monoprop.Pauli("X", [0]): -0.25}, 5))
    changed = monoprop.Circuit(other, circuit.system_size, parameters=circuit.parameters)
    calls = [
        lambda: prop.build_graph(changed, seed_parameters=x, resume=True),
        lambda: prop.build_graph(circuit, seed_parameters=x + 1e-9, resume=True),
        lambda: prop.build_graph(circuit, seed_parameters=x[::-1], resume=True),
        lambda: prop.build_graph(circuit, seed_parameters=x, only_rotate_len_k=2, resume=True),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="same circuit, seed_parameters"):
            call()
    prop.cutoff = 3
    with pytest.raises(ValueError, match="truncation settings"):
        prop.build_graph(circuit, seed_parameters=x, resume=True)
    prop.cutoff = 4
    assert state(prop) == before
    prop.build_graph(circuit, seed_parameters=x, resume=True)
    assert prop._build.finished


def test_bad_checkpoint_arguments_are_refused_before_anything_changes(tmp_path):
    prop, circuit, x = fresh("pauli", "heisenberg")
    before = state(prop)
    with pytest.raises(ValueError, match="holds none"):
        prop.build_graph(circuit, resume=True)
    with pytest.raises(ValueError, match="checkpoint_every=-1"):
        prop.build_graph(circuit, checkpoint=tmp_path / "ck", checkpoint_every=-1)
    with pytest.raises(ValueError, match="checkpoint_every"):
        prop.build_graph(circuit, checkpoint=tmp_path / "ck", checkpoint_every=float("nan"))
    with pytest.raises(TypeError, match="checkpoint must be a path"):
        prop.build_graph(circuit, checkpoint=3)
    with pytest.raises(TypeError, match="resume must be True or False"):
        prop.build_graph(circuit, resume="yes")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        prop.build_graph(circuit, checkpoint=tmp_path / "other", checkpoint_every=0)
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"
    assert not (tmp_path / "ck").exists()
    assert state(prop) == before and prop._build is None


def test_a_damaged_build_record_is_refused(tmp_path):
    prop, circuit, x = fresh("pauli", "heisenberg")
    prop.build_graph(circuit, seed_parameters=x, checkpoint=tmp_path / "ck", checkpoint_every=1e9)
    meta, arrays = archive.read(tmp_path / "ck")
    meta["build"]["done"] = meta["build"]["total"] + 1
    archive.write(tmp_path / "bad", meta, {name: np.array(a) for name, a in arrays.items()})
    with pytest.raises(ValueError, match="build record"):
        monoprop.load(tmp_path / "bad")


def test_the_progress_bar_starts_at_the_resumed_position(unfinished, capfd):
    prop, circuit, x = unfinished
    steps = prop._build.steps
    prop.build_graph(circuit, seed_parameters=x, resume=True, progress=True)
    err = capfd.readouterr().err
    assert f" 3/{steps} " in err.replace("\r", "\n")  # the three layers done before, first
    assert f"{steps}/{steps}" in err
