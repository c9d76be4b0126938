"""Tolerances that would not do what their value suggests say so with a ToleranceWarning.

1. A build without a seed (no ``seed_parameters``, and no bound parameters on a first build)
   is structural and ignores ``lower_atol``/``upper_atol``: it warns, naming the values and
   the remedy, once per build (a checkpointed build in pieces included, a resume not again),
   and builds the same graph as with the tolerances unset. Seeded builds, ``propagate``,
   Clifford-only circuits and a negative ``lower_atol`` (which acts as None) do not warn.
2. A negative tolerance is accepted as given (at construction and by the setters) and warns
   with what it means, which is checked against the engine: a negative ``lower_atol`` gives
   the operator ``lower_atol=None`` gives, bitwise; a negative ``upper_atol`` lets a term that
   a rotation does not move keep its partner past the cutoff, which ``upper_atol=0`` does not.
"""

from __future__ import annotations

import math
import re
import warnings
from contextlib import contextmanager

import pytest

from monoprop import (
    Circuit,
    CliffordGate,
    ExpGate,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
    ToleranceWarning,
    _saved_state,
)

FAMILIES = ["pauli", "majorana"]


def observable(family):
    if family == "pauli":
        return PauliOperator({"ZZ": 1.0, "XI": 1e-5}, 2)
    return MajoranaOperator({(0, 1): 1j, (0,): 1e-5}, 2)


def gates(family):
    """Three gates under which, at the seed SEED and cutoff 1, each tolerance below changes
    the graph."""
    if family == "pauli":
        terms = [{"YI": 0.5}, {"ZX": 0.5}, {"XY": 0.5}]
        return [ExpGate(PauliOperator(t, 2)) for t in terms]
    terms = [{(1, 2): 1j}, {(0, 3): 1j}, {(0, 2): 1j}]
    return [ExpGate(MajoranaOperator(t, 2)) for t in terms]


SEED = [0.3, 0.4, 0.5]


def propagator(family, **config):
    config.setdefault("cutoff", 1)
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    return cls(observable(family), [], **config)


@contextmanager
def tolerance_warnings():
    """Records every warning of the block; yields the texts of the ToleranceWarnings and
    checks that no other warning was raised."""
    said: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield said
        said += [str(w.message) for w in caught if issubclass(w.category, ToleranceWarning)]
    assert len(said) == len(caught), [str(w.message) for w in caught]


def graph_state(prop):
    """The terms and graph as the engine saves them, without the change counter and the
    tolerance settings."""
    arrays = prop._engine.save_state()
    skip = ("generation", "lower_atol", "upper_atol")
    return {name: a.tobytes() for name, a in arrays.items() if name not in skip}


# ---------------------------------------------------------------------------------------
# 1. Builds that ignore the tolerances
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    "config,named",
    [
        ({"lower_atol": 1e-3}, "lower_atol=0.001"),
        ({"upper_atol": 0.25}, "upper_atol=0.25"),
        ({"lower_atol": 1e-3, "upper_atol": 0.25}, "lower_atol=0.001 and upper_atol=0.25"),
    ],
)
def test_an_unseeded_first_build_warns_and_ignores_the_tolerances(family, config, named):
    prop = propagator(family, **config)
    with pytest.warns(ToleranceWarning) as caught:
        prop.build_graph(Circuit(gates(family), 2))  # unbound: no seed
    assert len(caught) == 1
    text = str(caught[0].message)
    assert f"no seed, so it builds structurally and ignores {named}:" in text, text
    assert "seed_parameters=" in text and "bind the circuit's parameters" in text, text
    assert "to None" in text, text
    assert caught[0].filename == __file__  # points at the caller's line
    # What it says: the graph is the one built with the tolerances unset, although with a
    # seed the tolerances would change it.
    plain = propagator(family)
    plain.build_graph(Circuit(gates(family), 2))
    assert graph_state(prop) == graph_state(plain)
    seeded, seeded_plain = propagator(family, **config), propagator(family)
    for p in (seeded, seeded_plain):
        p.build_graph(Circuit(gates(family), 2), seed_parameters=SEED)
    assert graph_state(seeded) != graph_state(seeded_plain)
    # The settings themselves are unchanged.
    assert (prop.lower_atol, prop.upper_atol) == (
        config.get("lower_atol"),
        config.get("upper_atol"),
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_an_unseeded_extension_warns_without_the_binding_remedy(family):
    prop = propagator(family, lower_atol=1e-3)
    with tolerance_warnings() as said:
        prop.build_graph(Circuit(gates(family), 2, parameters=SEED))  # seeded: bound
    assert said == []
    with pytest.warns(ToleranceWarning, match=re.escape("ignores lower_atol=0.001")) as caught:
        prop.build_graph(Circuit(gates(family), 2, parameters=SEED))  # bound, but no seed
    assert len(caught) == 1
    # Bound parameters seed only a first build, so only seed_parameters= is offered.
    assert "bind" not in str(caught[0].message)


@pytest.mark.parametrize("family", FAMILIES)
def test_builds_with_a_seed_and_propagate_do_not_warn(family):
    with tolerance_warnings() as said:
        prop = propagator(family, lower_atol=1e-3, upper_atol=0.25)
        prop.build_graph(Circuit(gates(family), 2), seed_parameters=SEED)
        prop.build_graph(Circuit(gates(family), 2), seed_parameters=SEED + SEED)
        other = propagator(family, lower_atol=1e-3, upper_atol=0.25)
        other.propagate(Circuit(gates(family), 2, parameters=SEED))
    assert said == []


def test_no_warning_where_the_tolerances_could_not_act():
    with tolerance_warnings() as said:
        # Clifford gates are exact: no truncation for a tolerance to steer.
        clifford = PauliPropagator(PauliOperator({"ZZ": 1.0}, 2), [], cutoff=1, lower_atol=1e-3)
        clifford.build_graph(Circuit([CliffordGate(PauliOperator({"XY": 1.0}, 2))], 2))
        # A negative lower_atol acts as None, so ignoring it changes nothing.
        negative = propagator("pauli")
        negative._engine.lower_atol = -1.0  # set past the setter, which warns itself
        negative.build_graph(Circuit(gates("pauli"), 2))
        # Unset tolerances.
        propagator("pauli").build_graph(Circuit(gates("pauli"), 2))
    assert said == []


def test_a_checkpointed_build_warns_once_and_its_resume_not_again(tmp_path, monkeypatch):
    prop = propagator("pauli", lower_atol=1e-3)
    prop.build_graph(Circuit(gates("pauli"), 2), seed_parameters=SEED)
    extension = Circuit(gates("pauli") * 2, 2)  # six layers, each a piece
    real_save = _saved_state.save

    def stop_after_two(p, path):
        real_save(p, path)
        if p._build.done == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(_saved_state, "save", stop_after_two)
    with tolerance_warnings() as said, pytest.raises(KeyboardInterrupt):
        prop.build_graph(extension, checkpoint=tmp_path / "ck", checkpoint_every=0)
    assert len(said) == 1 and "ignores lower_atol=0.001" in said[0], said
    monkeypatch.setattr(_saved_state, "save", real_save)
    assert not prop._build.finished
    with tolerance_warnings() as said:
        prop.build_graph(extension, resume=True)  # four layers still to build
    # The build the resume finished is the one a single structural extension makes.
    whole = propagator("pauli", lower_atol=1e-3)
    whole.build_graph(Circuit(gates("pauli"), 2), seed_parameters=SEED)
    with pytest.warns(ToleranceWarning):
        whole.build_graph(extension)
    assert graph_state(whole) == graph_state(prop)
    assert said == [] and prop._build.finished


# ---------------------------------------------------------------------------------------
# 2. Negative tolerances
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_a_negative_lower_atol_warns_and_is_the_same_as_none(family):
    with pytest.warns(ToleranceWarning) as caught:
        prop = propagator(family, lower_atol=-1e-3, cutoff=4)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "lower_atol=-0.001 is negative" in text, text
    assert "every anticommuting term is active" in text and "same as lower_atol=None" in text
    assert "Pass None" in text, text
    assert caught[0].filename == __file__
    assert prop.lower_atol == -1e-3  # kept as given
    # A small term (1e-5) that lower_atol=1e-3 leaves inactive: None and -1e-3 agree.
    circuit = Circuit(gates(family), 2, parameters=[math.pi / 4, 0.4, 0.5])
    none, positive = propagator(family, cutoff=4), propagator(family, lower_atol=1e-3, cutoff=4)
    for p in (prop, none, positive):
        p.propagate(circuit)
    assert prop.evolved_operator(atol=0.0) == none.evolved_operator(atol=0.0)
    assert prop.size() == none.size()
    assert positive.evolved_operator(atol=0.0) != none.evolved_operator(atol=0.0)


def test_a_negative_upper_atol_warns_and_keeps_partners_that_do_not_move():
    with pytest.warns(ToleranceWarning) as caught:
        prop = PauliPropagator(PauliOperator({"ZI": 1.0}, 2), [], cutoff=1, upper_atol=-1.0)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "upper_atol=-1.0 is negative" in text and "whatever the cutoff" in text, text
    assert "does not move" in text and "upper_atol=0" in text and "None" in text, text
    assert prop.upper_atol == -1.0
    # A zero angle moves nothing: Z0 under exp(0 * i X0 X1) stays Z0. The partner Y0 X1
    # (weight 2 > cutoff 1) is made, with coefficient 0, under upper_atol < 0 only.
    still = Circuit([ExpGate(PauliOperator({"XX": 1.0}, 2))], 2, parameters=[0.0])
    zero = PauliPropagator(PauliOperator({"ZI": 1.0}, 2), [], cutoff=1, upper_atol=0.0)
    for p in (prop, zero):
        p.propagate(still)
    assert (prop.size(), zero.size()) == (2, 1)
    # A moving rotation: both let the partner past the cutoff, with the same coefficients.
    moving = Circuit([ExpGate(PauliOperator({"XX": 1.0}, 2))], 2, parameters=[0.3])
    for p in (prop, zero):
        p.propagate(moving)
    assert prop.evolved_operator(atol=1e-15) == zero.evolved_operator(atol=1e-15)
    assert zero.size() == 2


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("name", ["lower_atol", "upper_atol"])
def test_the_setters_warn_on_negative_values_and_keep_them(family, name):
    prop = propagator(family)
    with pytest.warns(ToleranceWarning, match=re.escape(f"{name}=-2.5 is negative")) as caught:
        setattr(prop, name, -2.5)
    assert len(caught) == 1 and caught[0].filename == __file__
    assert getattr(prop, name) == -2.5
    with tolerance_warnings() as said:  # zero and positive values are silent
        setattr(prop, name, 0.0)
        setattr(prop, name, None)
    assert said == []


def test_an_order_error_raises_before_warning():
    with pytest.warns(ToleranceWarning, match="upper_atol=-3.0 is negative"):
        prop = propagator("pauli", upper_atol=-3.0)
    with tolerance_warnings() as said, pytest.raises(RuntimeError, match="less than or equal"):
        prop.lower_atol = -1.0  # above upper_atol: refused, nothing said about its sign
    assert said == [] and prop.lower_atol is None
