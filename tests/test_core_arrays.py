"""The seam to the compiled core: TermArrays and LayerArrays, their invariants, and the
engine methods that take them."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator, _core
from monoprop.core_arrays import SLOT_LIMIT, LayerArrays, TermArrays

# 2.0 * Z0 and -0.5 * X1 Y2 in the Pauli slot encoding (X_q: 2q, Y_q: 2q+1, Z_q: both).
SLOTS, OFFSETS, COEFFICIENTS = [0, 1, 2, 5], [0, 2, 4], [2.0, -0.5]


def test_the_worked_example_round_trips():
    terms = TermArrays(SLOTS, OFFSETS, COEFFICIENTS)
    assert terms.keys() == [(0, 1), (2, 5)] and len(terms) == 2
    assert (terms.slots.dtype, terms.offsets.dtype, terms.coefficients.dtype) == (
        np.int64,
        np.int64,
        np.float64,
    )
    again = TermArrays.from_keys(terms.keys(), terms.coefficients)
    for field in ("slots", "offsets", "coefficients"):
        np.testing.assert_array_equal(getattr(again, field), getattr(terms, field))
    empty = TermArrays([], [0], [])
    assert len(empty) == 0 and empty.keys() == []


def test_fields_are_frozen_and_read_only_without_touching_the_callers_arrays():
    slots = np.array(SLOTS, dtype=np.int64)
    terms = TermArrays(slots, np.array(OFFSETS), np.array(COEFFICIENTS))
    with pytest.raises(ValueError, match="read-only"):
        terms.slots[0] = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        terms.slots = slots  # type: ignore[misc]
    slots[0] = 0  # the caller's array stays writable
    assert slots.flags.writeable


@pytest.mark.parametrize(
    ("slots", "offsets", "coefficients", "message"),
    [
        ([[0, 1]], [0, 2], [1.0], "slots must be 1-D; got shape (1, 2)."),
        ([0, 1], [[0, 2]], [1.0], "offsets must be 1-D; got shape (1, 2)."),
        ([0, 1], [0, 2], [[1.0]], "coefficients must be 1-D; got shape (1, 1)."),
        ([0.0, 1.0], [0, 2], [1.0], "slots must hold integers; got dtype float64."),
        ([0, 1], [0.0, 2.0], [1.0], "offsets must hold integers; got dtype float64."),
        ([0, 1], [0, 2], [1j], "coefficients must hold real numbers; got dtype complex128."),
        ([0, 1], [0, 2], [1.0, 2.0], "offsets has 2 entries but coefficients has 2;"),
        ([0, 1], [], [], "offsets has 0 entries but coefficients has 0;"),
        ([0, 1], [1, 2], [1.0], "offsets[0] = 1; the first term starts at 0."),
        (
            [0, 1, 2, 5],
            [0, 3, 1, 4],
            [1.0, 2.0, 3.0],
            "offsets[2] = 1 is less than offsets[1] = 3;",
        ),
        ([0, 1, 2, 5], [0, 2, 7], [2.0, -0.5], "offsets[2] = 7 exceeds len(slots) = 4."),
        ([0, 1, 2, 5], [0, 5, 5], [2.0, -0.5], "offsets[1] = 5 exceeds len(slots) = 4."),
        ([0, 1, 2, 5], [0, 2, 3], [2.0, -0.5], "offsets[2] = 3 but len(slots) = 4;"),
        ([0, -1], [0, 2], [1.0], f"slots[1] = -1 is out of range 0..{SLOT_LIMIT - 1}."),
        ([0, 2**32], [0, 2], [1.0], f"slots[1] = 4294967296 is out of range 0..{SLOT_LIMIT - 1}."),
    ],
)
def test_each_violated_term_invariant_names_the_field_and_values(
    slots, offsets, coefficients, message
):
    with pytest.raises(ValueError, match=re.escape(message)):
        TermArrays(slots, offsets, coefficients)


def test_the_slot_limit_is_the_cores():
    assert SLOT_LIMIT == 2 * _core.MAX_NUM_MODES
    TermArrays([SLOT_LIMIT - 1], [0, 1], [1.0])


def layers(**changes):
    fields = {
        "terms": TermArrays([0, 3], [0, 1, 2], [1.0, 0.5]),
        "parameters": [0, 1],
        "gates": [0, 0],
        "n_parameters": 2,
        "n_gates": 1,
    }
    fields.update(changes)
    return LayerArrays(**fields)


def test_layer_arrays_hold_int32_indices_per_layer():
    built = layers()
    assert len(built) == 2 and built.parameters.dtype == np.int32 and built.gates.dtype == np.int32
    assert (built.n_parameters, built.n_gates) == (2, 1)
    assert (
        layers(terms=TermArrays([], [0], []), parameters=[], gates=[], n_parameters=0).n_gates == 1
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"parameters": [0]}, "parameters has 1 entries but terms has 2; give one per layer."),
        ({"gates": [0, 0, 0]}, "gates has 3 entries but terms has 2; give one per layer."),
        ({"parameters": [0, 2]}, "parameters[1] = 2 is out of range 0..1 (n_parameters = 2)."),
        ({"parameters": [-1, 0]}, "parameters[0] = -1 is out of range 0..1 (n_parameters = 2)."),
        ({"gates": [0, 1]}, "gates[1] = 1 is out of range 0..0 (n_gates = 1)."),
        ({"parameters": [0.0, 1.0]}, "parameters must hold integers; got dtype float64."),
        ({"gates": [[0, 0]]}, "gates must be 1-D; got shape (1, 2)."),
        ({"n_parameters": -1}, "n_parameters = -1 is out of range 0..2147483647."),
        ({"n_gates": 2**31}, "n_gates = 2147483648 is out of range 0..2147483647."),
        ({"n_gates": True}, "n_gates must be an int; got True."),
        ({"n_parameters": 2.0}, "n_parameters must be an int; got 2.0."),
    ],
)
def test_each_violated_layer_invariant_names_the_field_and_values(changes, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        layers(**changes)


def test_layer_terms_must_be_term_arrays():
    with pytest.raises(TypeError, match="terms must be a TermArrays; got tuple"):
        layers(terms=(SLOTS, OFFSETS, COEFFICIENTS))


# -- the engine side ------------------------------------------------------------------------


def engine(**changes):
    config = {
        "family": "pauli",
        "num_modes": 3,
        "initial_operator": TermArrays(SLOTS, OFFSETS, COEFFICIENTS),
        "occupied": [],
        "schrodinger_slots": None,
        "cutoff": 3,
        "cutoff_type": "support",
        "lower_atol": None,
        "upper_atol": None,
    }
    config.update(changes)
    return _core.Engine(**config)


def test_the_engine_takes_the_structures_and_computes_what_the_propagator_does():
    circuit = Circuit(
        [ExpGate(PauliOperator({"XII": 1.0}, 3)), ExpGate(PauliOperator({"IYZ": 0.7}, 3))],
        3,
        parameters=[0.3, -0.4],
    )
    observable = PauliOperator({"ZII": 2.0, "IXY": -0.5}, 3)
    prop = PauliPropagator(observable, [], cutoff=3)
    prop.build_graph(circuit)
    raw = engine()
    raw.build_graph(prop._layer_arrays(circuit), [0.3, -0.4])
    assert raw.evaluate(np.array([0.3, -0.4]))[0][0] == prop.expectation_value([0.3, -0.4])
    wanted = TermArrays.from_keys([(0, 1), (3,)])
    np.testing.assert_array_equal(
        raw.coefficients_of(wanted, [0.3, -0.4]),
        prop._engine.coefficients_of(wanted, [0.3, -0.4]),
    )
    slots, offsets, coefficients = raw.evolved_terms([0.3, -0.4], 0.0)
    assert len(TermArrays(slots, offsets, coefficients)) == prop.size() + 1  # + the identity


def test_the_engine_refuses_anything_but_the_structures():
    raw = engine()
    with pytest.raises(TypeError, match="incompatible function arguments"):
        raw.build_graph((np.array(SLOTS), np.array(OFFSETS)), None, None)
    with pytest.raises(TypeError, match="incompatible"):
        engine(initial_operator=(SLOTS, OFFSETS, COEFFICIENTS))
    with pytest.raises(TypeError):  # keywords only: the arguments are too many to keep in order
        _core.Engine("pauli", 3, TermArrays(SLOTS, OFFSETS, COEFFICIENTS), [], None, 3, "support")


def test_an_unknown_family_is_refused_by_name():
    with pytest.raises(
        ValueError, match=re.escape("Unknown family string: 'qudit'. Valid options are: 'pauli'")
    ):
        engine(family="qudit")
    assert engine(family="majorana").num_modes == 3


def unchecked_terms(slots, offsets, coefficients):
    """A TermArrays whose invariants were never checked: reaches the core's backstop."""
    terms = object.__new__(TermArrays)
    for name, value in (("slots", slots), ("offsets", offsets), ("coefficients", coefficients)):
        object.__setattr__(terms, name, np.asarray(value))
    return terms


@pytest.mark.parametrize(
    ("slots", "offsets", "coefficients", "message"),
    [
        ([0, 1], [0, 2], [1.0, 2.0], "offsets has 2 entries but coefficients has 2"),
        ([0, 1], [1, 2], [1.0], "offsets[0] = 1; the first term starts at 0."),
        ([0, 1, 2, 5], [0, 7, 4], [2.0, -0.5], "offsets[1] = 7 is outside offsets[0] = 0 .."),
        ([0, 1, 2, 5], [0, 2, 7], [2.0, -0.5], "offsets[2] = 7 but len(slots) = 4."),
        ([0, 4096], [0, 2], [1.0], "slots[1] = 4096 is out of range 0..2047."),
    ],
)
def test_the_core_checks_again_and_names_values(slots, offsets, coefficients, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        engine(initial_operator=unchecked_terms(slots, offsets, coefficients))
