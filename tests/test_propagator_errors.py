"""Errors of the propagator API: a bad argument raises its exception before anything changes.

Covered: construction (mode count, Hermiticity of the observable, initial state, cutoff and
tolerance types), the settable configuration (cutoff, lower/upper_atol, cutoff_type), the checks
build_graph and propagate make on a circuit, the parameter mapping, evaluation and functionals,
evolved_operator_coefficients, update_initial_operator, and comm= and the routing variables.
Every bad call checks the exception type and the expected message fragment, then checks
that the object it was made on still works and is unchanged (same expectation value, same
graph size, same settings), because argument errors must be raised before anything changes.
"""

import math
import re

import dense_reference as dr
import numpy as np
import pytest

import monoprop
from monoprop import (
    Circuit,
    ExpGate,
    FermiOperator,
    Majorana,
    MajoranaOperator,
    MajoranaPropagator,
    MonomialPropagator,
    Pauli,
    PauliOperator,
    PauliPropagator,
)
from monoprop.exceptions import NumberOfModesInvalidError

COS06 = math.cos(0.6)
FAMILIES = ["pauli", "majorana"]


# ---------------------------------------------------------------------------------------
# Small working systems: 2 qubits / 2 modes, one gate at 0.3
# ---------------------------------------------------------------------------------------
# Pauli: ZZ under exp(i t X0) -> <vac| . |vac> = cos(2t).
# Majorana: i m0m1 (= -Z0) under exp(i t (i m1m2)) -> -cos(2t).


def observable(family, n=2):
    if family == "pauli":
        return PauliOperator({"ZZ" + "I" * (n - 2): 1.0}, n)
    return MajoranaOperator({(0, 1): 1j}, n)


def gate(family, n=2, index=None):
    if family == "pauli":
        return ExpGate(PauliOperator({"X" + "I" * (n - 1): 1.0}, n), index)
    return ExpGate(MajoranaOperator({(1, 2): 1j}, n), index)


def one_gate_circuit(family, parameters=(0.3,), n=2, initial_state=None):
    return Circuit([gate(family, n)], n, parameters=list(parameters), initial_state=initial_state)


def propagator(family, state=(), n=2, **config):
    config.setdefault("cutoff", 4)
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    return cls(observable(family, n), list(state), **config)


def reference_sign(family, state=()):
    """<ref| O |ref> before any gate: Z0Z1 (Pauli) or i m0m1 = -Z0 (Majorana)."""
    if family == "pauli":
        return (-1.0) ** len({0, 1} & set(state))
    return 1.0 if 0 in state else -1.0


def value_at(family, theta, state=()):
    # Only the cos branch (ZZ resp. i m0m1) has a reference expectation.
    return reference_sign(family, state) * math.cos(2 * theta)


def built(family, **config):
    prop = propagator(family, **config)
    prop.build_graph(one_gate_circuit(family))
    return prop


def assert_graph_intact(prop, family, state=()):
    """The one-gate graph is still there and still evaluates correctly."""
    assert prop.graph_layers == 1
    assert prop.n_parameters == 1
    assert prop.expectation_value([0.3]) == pytest.approx(value_at(family, 0.3, state), abs=1e-12)
    np.testing.assert_allclose(
        prop.gradient([0.3]), [-2 * math.sin(0.6) * reference_sign(family, state)], atol=1e-12
    )


def assert_fresh_and_usable(prop, family, state=()):
    """No graph was recorded by the failed call; a good build still works."""
    assert prop.graph_layers == 0
    assert prop.n_parameters == 0
    assert prop.n_gates == 0
    prop.build_graph(one_gate_circuit(family))
    assert_graph_intact(prop, family, state)


# ---------------------------------------------------------------------------------------
# Construction: 1 <= num_modes <= 1024, a Hermitian observable, initial-state entries that
# are mode indices, a keyword-only non-negative integer cutoff, upper_atol >= lower_atol
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    "n,fragment", [(0, "num_modes must be > 0"), (1025, "num_modes must be <= 1024")]
)
def test_number_of_modes_invalid(family, n, fragment):
    op = PauliOperator({}, n) if family == "pauli" else MajoranaOperator({}, n)
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    with pytest.raises(NumberOfModesInvalidError, match="Number of Fermionic modes") as info:
        cls(op, [], cutoff=4)
    assert isinstance(info.value, ValueError)
    assert fragment in str(info.value)
    assert str(n) in str(info.value)
    # The limits themselves are accepted.
    for ok in (1, 1024):
        op = (
            PauliOperator({"Z" + "I" * (ok - 1): 1.0}, ok)
            if family == "pauli"
            else MajoranaOperator({(0, 1): 1j}, ok)
        )
        prop = cls(op, [0], cutoff=4)
        assert prop.num_modes == ok
        assert prop.expectation_value() == pytest.approx(-1.0 if family == "pauli" else 1.0)


@pytest.mark.parametrize("family", FAMILIES)
def test_upper_below_lower_at_construction(family):
    with pytest.raises(
        RuntimeError,
        match=re.escape("upper_atol (0.1) must be greater than or equal to lower_atol (0.5)"),
    ):
        propagator(family, lower_atol=0.5, upper_atol=0.1)
    prop = propagator(family, lower_atol=0.5, upper_atol=0.5)  # equal is allowed
    prop.build_graph(one_gate_circuit(family))
    assert prop.expectation_value([0.3]) == pytest.approx(value_at(family, 0.3), abs=1e-12)


@pytest.mark.parametrize(
    "terms",
    [{(0, 1): 1.0}, {(0,): 1j}, {(0, 1, 2, 3): 1j}, {(0, 1, 2): 1.0}, {(0, 1): 1j, (2, 3): 0.5}],
)
def test_non_hermitian_observable(terms):
    with pytest.raises(RuntimeError, match="Non-Hermitian coeffs detected"):
        MajoranaPropagator(MajoranaOperator(terms, 2), [], cutoff=4)
    # The Hermitian versions (i^{C(w,2)} phases) are fine.
    good = {k: abs(v) * dr.hermitian_phase(len(k)) for k, v in terms.items()}
    assert MajoranaPropagator(MajoranaOperator(good, 2), [], cutoff=4).size() == len(good)


def test_non_hermitian_fermi_observable():
    creation = FermiOperator([[(0, "+")]], [1.0], 2)  # c_0^dagger alone
    with pytest.raises(RuntimeError, match="Non-Hermitian coeffs detected"):
        MajoranaPropagator(creation, [], cutoff=4)
    number = FermiOperator([[(0, "+"), (0, "-")]], [1.0], 2)
    assert MajoranaPropagator(number, [0], cutoff=4).expectation_value() == pytest.approx(1.0)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("state,named", [([7], "7"), ([-1], "-1"), ([0, 5], "5"), ([0.5], "0.5")])
def test_invalid_initial_state_entries(family, state, named):
    with pytest.raises(ValueError) as info:
        propagator(family, state=state)
    assert named in str(info.value)
    for good_state in ([1, 0], (0, 1), np.array([1, 0])):
        good = propagator(family, state=good_state)
        assert good.expectation_value() == pytest.approx(value_at(family, 0.0, [0, 1]))


@pytest.mark.parametrize("family", FAMILIES)
def test_cutoff_is_keyword_only_and_required(family):
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    with pytest.raises(TypeError):
        cls(observable(family), [], 4)
    with pytest.raises(TypeError):
        cls(observable(family), [])
    assert cls(observable(family), [], cutoff=4).cutoff == 4


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("bad", [1.5, "3", -1, None])
def test_bad_cutoff_at_construction(family, bad):
    with pytest.raises(TypeError):
        propagator(family, cutoff=bad)
    assert propagator(family, cutoff=True).cutoff == 1  # bool accepted as int
    assert propagator(family, cutoff=0).expectation_value() == pytest.approx(
        1.0 if family == "pauli" else -1.0
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_schrodinger_cutoff_validation(family):
    with pytest.raises(TypeError):
        propagator(family, schrodinger_cutoff=-1)
    prop = propagator(family, schrodinger_cutoff=0)  # accepted: identity-only state
    assert prop.schrodinger is True
    assert prop.size() == 1
    assert prop.expectation_value() == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("name", ["lower_atol", "upper_atol"])
def test_bad_atol_type_at_construction(family, name):
    with pytest.raises(TypeError):
        propagator(family, **{name: "a"})
    # Negative values are not rejected; they warn with what they mean
    # (tests/test_tolerance_warnings.py).
    with pytest.warns(monoprop.ToleranceWarning, match=f"{name}=-1.0 is negative"):
        prop = propagator(family, **{name: -1.0})
    assert getattr(prop, name) == -1.0


def test_bad_cutoff_type_at_construction():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Unknown CutoffType string: 'bad'. Valid options are: 'length', 'support'."
        ),
    ):
        propagator("majorana", cutoff_type="bad")
    with pytest.raises(TypeError):
        propagator("majorana", cutoff_type=1)
    with pytest.raises(TypeError):  # not a PauliPropagator parameter (fixed to "support")
        propagator("pauli", cutoff_type="support")
    assert propagator("majorana", cutoff_type="support").cutoff_type == "support"


def test_pauli_propagator_rejects_majorana_operator():
    with pytest.raises(AttributeError):
        PauliPropagator(MajoranaOperator({(0, 1): 1j}, 2), [], cutoff=4)
    assert propagator("pauli").expectation_value() == pytest.approx(1.0)


def test_majorana_propagator_maps_pauli_operator():
    # Not an error: a PauliOperator is JW-mapped (Z0 = -i m0 m1).
    prop = MajoranaPropagator(PauliOperator({"ZI": 1.0}, 2), [0], cutoff=4)
    assert prop.expectation_value() == pytest.approx(-1.0)


def test_monomial_propagator_is_abstract():
    with pytest.raises(TypeError):
        MonomialPropagator(observable("majorana"), [], cutoff=4)


# ---------------------------------------------------------------------------------------
# Settable configuration: cutoff and the tolerances keep lower_atol <= upper_atol (None
# clears either); cutoff_type is settable only on MajoranaPropagator; schrodinger is read-only
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("bad", [1.5, "3", -1])
def test_bad_cutoff_setter(family, bad):
    prop = built(family)
    with pytest.raises(TypeError):
        prop.cutoff = bad
    assert prop.cutoff == 4
    assert_graph_intact(prop, family)
    for ok in (0, 1000):
        prop.cutoff = ok
        assert prop.cutoff == ok


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("name", ["lower_atol", "upper_atol"])
def test_bad_atol_setter_type(family, name):
    prop = built(family)
    with pytest.raises(TypeError):
        setattr(prop, name, "a")
    assert getattr(prop, name) is None
    assert_graph_intact(prop, family)


@pytest.mark.parametrize("family", FAMILIES)
def test_lower_atol_above_upper_setter(family):
    prop = built(family, upper_atol=1e-4)
    with pytest.raises(RuntimeError, match=re.escape("New lower_atol (0.001)")) as info:
        prop.lower_atol = 1e-3
    assert "must be less than or equal to current upper_atol" in str(info.value)
    assert prop.lower_atol is None
    assert prop.upper_atol == 1e-4
    assert_graph_intact(prop, family)
    prop.lower_atol = 1e-4  # equal is allowed
    assert prop.lower_atol == 1e-4


@pytest.mark.parametrize("family", FAMILIES)
def test_upper_atol_below_lower_setter(family):
    prop = built(family, lower_atol=1e-8)
    with pytest.raises(RuntimeError, match="must be greater than or equal to") as info:
        prop.upper_atol = 1e-9
    assert "New upper_atol (1e-09)" in str(info.value)
    assert "lower_atol (1e-08)" in str(info.value)
    assert prop.upper_atol is None
    assert prop.lower_atol == 1e-8
    assert_graph_intact(prop, family)
    # None clears; then any order is fine.
    prop.lower_atol = None
    prop.upper_atol = 1e-9
    assert prop.upper_atol == 1e-9


def test_cutoff_type_setter_errors():
    prop = built("majorana")
    with pytest.raises(ValueError, match="Unknown CutoffType string"):
        prop.cutoff_type = "bad"
    for bad in (None, 1):
        with pytest.raises(TypeError):
            prop.cutoff_type = bad
    assert prop.cutoff_type == "length"
    assert_graph_intact(prop, "majorana")
    prop.cutoff_type = "support"
    assert prop.cutoff_type == "support"


def test_pauli_cutoff_type_is_read_only():
    prop = built("pauli")
    assert prop.cutoff_type == "support"
    with pytest.raises(AttributeError):
        prop.cutoff_type = "length"
    assert prop.cutoff_type == "support"
    assert_graph_intact(prop, "pauli")


@pytest.mark.parametrize("family", FAMILIES)
def test_schrodinger_is_read_only(family):
    prop = built(family)
    with pytest.raises(AttributeError):
        prop.schrodinger = True
    assert prop.schrodinger is False
    assert_graph_intact(prop, family)


def test_num_qubits_only_on_pauli_propagator():
    assert propagator("pauli").num_qubits == 2
    assert propagator("pauli").num_modes == 2
    assert propagator("majorana").num_modes == 2
    with pytest.raises(AttributeError):
        _ = propagator("majorana").num_qubits


# ---------------------------------------------------------------------------------------
# build_graph / propagate pre-checks, in order: the circuit's initial state (compared as a
# set), its width, 0 < only_rotate_len_k <= 2*num_modes, its family, Hermitian generators;
# a failed check records nothing
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("method", ["build_graph", "propagate"])
def test_circuit_state_mismatch(family, method):
    prop = propagator(family, state=[0])
    bad = one_gate_circuit(family, initial_state=[1])
    with pytest.raises(ValueError, match="does not match the propagator's initial state"):
        getattr(prop, method)(bad)
    assert_fresh_and_usable(prop, family, state=[0])


@pytest.mark.parametrize("family", FAMILIES)
def test_circuit_state_compared_as_set(family):
    prop = propagator(family, state=[0, 1])
    prop.build_graph(one_gate_circuit(family, initial_state=[1, 0]))
    assert prop.graph_layers == 1
    # Unspecified state defers to the propagator.
    prop.build_graph(one_gate_circuit(family, initial_state=None))
    assert prop.graph_layers == 2


def test_dense_arrays_circuit_counts_as_explicit_vacuum():
    prop = propagator("majorana", state=[0])
    circuit = Circuit.from_dense_arrays([(1, 2)], [1.0], [0], 2, parameters=[0.3])
    with pytest.raises(ValueError, match="initial state"):
        prop.build_graph(circuit)
    assert_fresh_and_usable(prop, "majorana", state=[0])


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("method", ["build_graph", "propagate"])
def test_circuit_width_mismatch(family, method):
    prop = propagator(family)
    with pytest.raises(ValueError, match="does not match propagator width"):
        getattr(prop, method)(one_gate_circuit(family, n=3))
    assert_fresh_and_usable(prop, family)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("method", ["build_graph", "propagate"])
@pytest.mark.parametrize("k", [0, -1, 5, 100])
def test_only_rotate_len_k_out_of_range(family, method, k):
    prop = propagator(family)
    message = f"only_rotate_len_k={k} is out of range; must be 0 < k <= 2*num_qubits"
    with pytest.raises(ValueError, match=re.escape(message)):
        getattr(prop, method)(one_gate_circuit(family), only_rotate_len_k=k)
    assert_fresh_and_usable(prop, family)
    # The bounds themselves are valid.
    for ok in (1, 4):
        propagator(family).build_graph(one_gate_circuit(family), only_rotate_len_k=ok)


@pytest.mark.parametrize("method", ["build_graph", "propagate"])
def test_wrong_circuit_family(method):
    mprop = propagator("majorana")
    with pytest.raises(TypeError, match="qubit"):
        getattr(mprop, method)(one_gate_circuit("pauli"))
    assert_fresh_and_usable(mprop, "majorana")
    pprop = propagator("pauli")
    with pytest.raises(TypeError):
        getattr(pprop, method)(one_gate_circuit("majorana"))
    assert_fresh_and_usable(pprop, "pauli")


@pytest.mark.parametrize("method", ["build_graph", "propagate"])
@pytest.mark.parametrize("terms", [{(1, 2): 1.0}, {(1,): 1j}, {(0, 1, 2, 3): 1j}])
def test_non_hermitian_gate_generator(method, terms):
    prop = propagator("majorana")
    bad = Circuit([ExpGate(MajoranaOperator(terms, 2))], 2, parameters=[0.3])
    with pytest.raises(ValueError, match="not Hermitian"):
        getattr(prop, method)(bad)
    assert_fresh_and_usable(prop, "majorana")


def test_build_graph_check_order():
    # state, then width, then only_rotate_len_k, then family, then hermiticity.
    prop = propagator("majorana")
    wrong_state_and_width = one_gate_circuit("majorana", n=3, initial_state=[2])
    with pytest.raises(ValueError, match="initial state"):
        prop.build_graph(wrong_state_and_width, only_rotate_len_k=0)
    with pytest.raises(ValueError, match="does not match propagator width"):
        prop.build_graph(one_gate_circuit("majorana", n=3), only_rotate_len_k=0)
    with pytest.raises(ValueError, match="only_rotate_len_k=0 is out of range"):
        prop.build_graph(one_gate_circuit("pauli"), only_rotate_len_k=0)
    non_hermitian = Circuit([ExpGate(MajoranaOperator({(1, 2): 1.0}, 2))], 2)
    with pytest.raises(ValueError, match="only_rotate_len_k=0 is out of range"):
        prop.build_graph(non_hermitian, only_rotate_len_k=0)
    assert_fresh_and_usable(prop, "majorana")


def test_propagate_checks_only_rotate_len_k_first():
    prop = propagator("pauli")
    wrong_state = one_gate_circuit("pauli", initial_state=[1])
    with pytest.raises(ValueError, match="only_rotate_len_k=0 is out of range"):
        prop.propagate(wrong_state, only_rotate_len_k=0)
    with pytest.raises(ValueError, match="initial state"):
        prop.build_graph(wrong_state, only_rotate_len_k=0)
    assert_fresh_and_usable(prop, "pauli")


@pytest.mark.parametrize("family", FAMILIES)
def test_seed_parameters_wrong_length(family):
    prop = propagator(family, lower_atol=1e-3)
    with pytest.raises(RuntimeError, match="length of parameters"):
        prop.build_graph(one_gate_circuit(family, parameters=()), seed_parameters=[0.1, 0.2])
    assert_fresh_and_usable(prop, family)  # retry-safe
    # Extending: seed_parameters covers the whole accumulated axis (2 parameters now).
    with pytest.raises(RuntimeError, match="length of parameters"):
        prop.build_graph(one_gate_circuit(family, parameters=()), seed_parameters=[0.3])
    assert_graph_intact(prop, family)
    prop.build_graph(one_gate_circuit(family, parameters=()), seed_parameters=[0.3, 0.3])
    assert prop.n_parameters == 2
    assert prop.expval([0.3, 0.3]) == pytest.approx(value_at(family, 0.6), abs=1e-12)


@pytest.mark.parametrize("family", FAMILIES)
def test_propagate_unbound_circuit(family):
    prop = propagator(family)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "The length of parameters (0) must be the same as max(parameter_mapping)+1 (1)."
        ),
    ):
        prop.propagate(one_gate_circuit(family, parameters=()))
    assert prop.n_parameters == 0
    assert prop.expectation_value() == pytest.approx(value_at(family, 0.0))
    prop.propagate(one_gate_circuit(family))
    assert prop.expectation_value() == pytest.approx(value_at(family, 0.3), abs=1e-12)


@pytest.mark.parametrize("family", FAMILIES)
def test_propagate_with_stored_graph(family):
    prop = built(family)
    with pytest.raises(RuntimeError, match="non-empty graph"):
        prop.propagate(one_gate_circuit(family))
    assert_graph_intact(prop, family)
    assert prop.size() == 2


# ---------------------------------------------------------------------------------------
# Parameter mapping: one entry per graph layer or per gate, contiguous from 0
# ---------------------------------------------------------------------------------------


def two_gate_three_layer(family):
    """Gate 0 has two commuting terms (2 layers), gate 1 one term: mapping [0, 0, 1]."""
    if family == "pauli":
        gates = [
            ExpGate(PauliOperator({"XI": 1.0, "IX": 0.5}, 2)),
            ExpGate(PauliOperator({"YY": 0.7}, 2)),
        ]
    else:
        gates = [
            ExpGate(MajoranaOperator({(1, 2): 1j, (0, 3): 0.5j}, 2)),
            ExpGate(MajoranaOperator({(0, 2): 0.7j}, 2)),
        ]
    prop = propagator(family)
    prop.build_graph(Circuit(gates, 2))
    return prop


@pytest.mark.parametrize("family", FAMILIES)
def test_parameter_mapping_setter_errors(family):
    prop = two_gate_three_layer(family)
    assert prop.graph_layers == 3 and prop.n_gates == 2
    assert prop.parameter_mapping == [0, 0, 1]
    before = prop.expval([0.2, -0.4])
    with pytest.raises(ValueError, match=r"per graph layer.*per gate") as info:
        prop.parameter_mapping = [0, 1, 0, 1]
    assert "4 entries" in str(info.value)
    for bad in ([0, 2], [1, 1], [0, 0, 2]):
        with pytest.raises(ValueError, match="contiguous"):
            prop.parameter_mapping = bad
    assert prop.parameter_mapping == [0, 0, 1]
    assert prop.n_parameters == 2
    assert prop.expval([0.2, -0.4]) == pytest.approx(before, abs=1e-14)
    # A per-gate mapping expands to all layers of each gate.
    prop.parameter_mapping = [0, 0]
    assert prop.parameter_mapping == [0, 0, 0]
    assert prop.n_parameters == 1


# ---------------------------------------------------------------------------------------
# Evaluation: the parameter vector has exactly n_parameters entries (none without a graph),
# as a list, tuple, 1-D array or bound Circuit; contract_partially in place consumes the graph
# ---------------------------------------------------------------------------------------

EVALUATORS = [
    "expectation_value",
    "expval",
    "gradient",
    "grad",
    "expectation_value_and_gradient",
    "expval_and_grad",
]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("method", EVALUATORS)
@pytest.mark.parametrize("params", [[0.1, 0.2], [], None, np.array([0.1, 0.2, 0.3])])
def test_wrong_parameter_vector_length(family, method, params):
    prop = built(family)
    k = 0 if params is None else len(params)
    message = (
        f"Invalid functional call. Parameter length {k} does not match the expected "
        f"number of parameters 1."
    )
    with pytest.raises(RuntimeError, match=re.escape(message)):
        getattr(prop, method)(params)
    assert_graph_intact(prop, family)


@pytest.mark.parametrize("family", FAMILIES)
def test_non_numeric_parameter(family):
    prop = built(family)
    with pytest.raises(ValueError):
        prop.expectation_value(["a"])
    assert_graph_intact(prop, family)


@pytest.mark.parametrize("family", FAMILIES)
def test_no_graph_accepts_empty_parameters(family):
    prop = propagator(family)
    for params in (None, [], (), np.array([])):
        assert prop.expval(params) == pytest.approx(value_at(family, 0.0))
        grad = prop.grad(params)
        assert isinstance(grad, np.ndarray) and grad.shape == (0,)
    with pytest.raises(RuntimeError, match="Parameter length 1"):
        prop.expval([0.3])
    assert prop.expval() == pytest.approx(value_at(family, 0.0))


@pytest.mark.parametrize("family", FAMILIES)
def test_parameter_values_forms(family):
    # list, tuple, 1-D ndarray, or a Circuit (its .parameters) are all accepted.
    prop = built(family)
    expected = value_at(family, 0.3)
    for params in ([0.3], (0.3,), np.array([0.3]), one_gate_circuit(family, (0.3,))):
        assert prop.expval(params) == pytest.approx(expected, abs=1e-12)
    assert prop.expval(["0.3"]) == pytest.approx(expected, abs=1e-12)  # float("0.3")


@pytest.mark.parametrize("family", FAMILIES)
def test_contract_in_place_consumes_graph(family):
    prop = built(family)
    before = prop.expval([0.3])
    contracted = prop.contract_partially([0.3])
    assert isinstance(contracted, np.ndarray)
    assert (prop.graph_layers, prop.n_gates, prop.n_parameters) == (0, 0, 0)
    with pytest.raises(RuntimeError, match="Parameter length 1"):
        prop.expval([0.3])
    assert prop.expval() == pytest.approx(before, abs=1e-12)


@pytest.mark.parametrize("family", FAMILIES)
def test_evolved_operator_needs_parameters_with_graph(family):
    prop = built(family)
    with pytest.raises(RuntimeError):
        prop.evolved_operator()
    assert_graph_intact(prop, family)
    assert len(prop.evolved_operator([0.3])) == 2


# ---------------------------------------------------------------------------------------
# Functionals: a functional goes stale (RuntimeError) once the graph or the operator changes
# (build_graph, update_initial_operator, contract_partially in place), not on settings
# ---------------------------------------------------------------------------------------

FUNCTIONALS = [
    "expectation_value_functional",
    "expval_functional",
    "expectation_value_and_gradient_functional",
    "expval_and_grad_functional",
]


def call_value(fn, params):
    out = fn(params)
    return out[0] if isinstance(out, tuple) else out


def extend(prop, family):
    prop.build_graph(one_gate_circuit(family))


def update(prop, family):
    prop.update_initial_operator(observable(family))


def contract_in_place(prop, family):
    prop.contract_partially([0.3])


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("factory", FUNCTIONALS)
@pytest.mark.parametrize("mutation", [extend, update, contract_in_place])
def test_stale_functional(family, factory, mutation):
    prop = built(family)
    fn = getattr(prop, factory)()
    assert call_value(fn, [0.3]) == pytest.approx(value_at(family, 0.3), abs=1e-12)
    mutation(prop, family)
    with pytest.raises(RuntimeError, match="MP object has been modified"):
        fn([0.3])
    # The propagator and a new functional work.
    params = [0.3] * prop.n_parameters
    expected = prop.expval(params)
    assert call_value(getattr(prop, factory)(), params) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("factory", FUNCTIONALS)
def test_functional_survives_settings_and_query(family, factory):
    prop = built(family)
    fn = getattr(prop, factory)()
    prop.cutoff = 1
    prop.lower_atol = 1e-9
    prop.upper_atol = 1e-3
    prop.parameter_mapping = [0]
    prop.contract_partially([0.3], inplace=False)
    assert call_value(fn, [0.3]) == pytest.approx(value_at(family, 0.3), abs=1e-12)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("factory", FUNCTIONALS)
def test_functional_wrong_parameter_length(family, factory):
    prop = built(family)
    fn = getattr(prop, factory)()
    with pytest.raises(RuntimeError, match="Parameter length 2"):
        fn([0.3, 0.3])
    with pytest.raises(RuntimeError, match="Parameter length 0"):
        fn(None)
    assert call_value(fn, [0.3]) == pytest.approx(value_at(family, 0.3), abs=1e-12)
    assert_graph_intact(prop, family)


# ---------------------------------------------------------------------------------------
# evolved_operator_coefficients: monomials of the propagator's own family, indices sorted,
# distinct and in range; an absent monomial has coefficient 0
# ---------------------------------------------------------------------------------------


def test_majorana_coefficient_queries():
    prop = propagator("majorana")
    good = [(0, 1), Majorana(0, 1), [0, 1], np.array([0, 1]), (0, 2)]
    np.testing.assert_allclose(
        prop.evolved_operator_coefficients(good), [1j, 1j, 1j, 1j, 0.0], atol=1e-15
    )
    with pytest.raises(ValueError, match="distinct and sorted"):
        prop.evolved_operator_coefficients([(1, 0)])
    with pytest.raises(ValueError, match="distinct and sorted"):
        prop.evolved_operator_coefficients([(0, 0)])
    for bad in ("01", 5):
        with pytest.raises(TypeError):
            prop.evolved_operator_coefficients([bad])
    with pytest.raises(
        RuntimeError, match=re.escape("Majorana index 9 is out of range; must be less than 4.")
    ):
        prop.evolved_operator_coefficients([(0, 9)])
    np.testing.assert_allclose(
        prop.evolved_operator_coefficients(good), [1j, 1j, 1j, 1j, 0.0], atol=1e-15
    )
    assert prop.expectation_value() == pytest.approx(-1.0)


def test_pauli_coefficient_queries():
    prop = propagator("pauli")
    good = [Pauli("ZZ"), Pauli("X", 1)]
    np.testing.assert_allclose(prop.evolved_operator_coefficients(good), [1.0, 0.0], atol=1e-15)
    for bad in ("ZZ", (0, 1), Majorana(0, 1)):
        with pytest.raises(TypeError):
            prop.evolved_operator_coefficients([bad])
    with pytest.raises(RuntimeError, match="Pauli index 9 is out of range"):
        prop.evolved_operator_coefficients([Pauli("X", 9)])
    np.testing.assert_allclose(prop.evolved_operator_coefficients(good), [1.0, 0.0], atol=1e-15)
    assert prop.expectation_value() == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------
# update_initial_operator: Heisenberg updates only terms already present (the others are
# zeroed, the identity kept); a Schrödinger update replaces the observable; both must be Hermitian
# ---------------------------------------------------------------------------------------


def test_heisenberg_update_with_unknown_term():
    prop = MajoranaPropagator(MajoranaOperator({(0, 1): 1j, (2, 3): 1j, (): 0.5}, 2), [], cutoff=4)
    assert prop.expectation_value() == pytest.approx(-1.5)
    with pytest.raises(
        RuntimeError, match=re.escape("Operator term [0, 2] not found in the operator.")
    ):
        prop.update_initial_operator(MajoranaOperator({(0, 2): 1j}, 2))
    assert prop.expectation_value() == pytest.approx(-1.5)
    # Listed terms updated, other non-identity terms zeroed, identity kept.
    prop.update_initial_operator(MajoranaOperator({(0, 1): 2j}, 2))
    assert prop.expectation_value() == pytest.approx(-1.5)


def test_pauli_heisenberg_update_with_unknown_term():
    prop = PauliPropagator(PauliOperator({"ZI": 1.0, "IZ": 2.0}, 2), [0], cutoff=4)
    assert prop.expectation_value() == pytest.approx(1.0)
    with pytest.raises(RuntimeError, match="not found in the operator"):
        prop.update_initial_operator(PauliOperator({"XI": 1.0}, 2))
    assert prop.expectation_value() == pytest.approx(1.0)
    prop.update_initial_operator(PauliOperator({"IZ": 3.0}, 2))
    assert prop.expectation_value() == pytest.approx(3.0)


@pytest.mark.parametrize("schrodinger_cutoff", [None, 4])
def test_non_hermitian_update(schrodinger_cutoff):
    prop = MajoranaPropagator(
        MajoranaOperator({(0, 1): 1j, (2, 3): 1j}, 2),
        [],
        cutoff=4,
        schrodinger_cutoff=schrodinger_cutoff,
    )
    assert prop.expectation_value() == pytest.approx(-2.0)
    with pytest.raises(RuntimeError, match="Non-Hermitian coeffs detected"):
        prop.update_initial_operator(MajoranaOperator({(0, 1): 1.0}, 2))
    assert prop.expectation_value() == pytest.approx(-2.0)
    prop.update_initial_operator(MajoranaOperator({(0, 1): 2j}, 2))
    assert prop.expectation_value() == pytest.approx(-2.0)  # (2,3) zeroed or replaced


def test_schrodinger_update_replaces_observable():
    prop = MajoranaPropagator(MajoranaOperator({(0, 3): 1j}, 2), [], cutoff=4, schrodinger_cutoff=4)
    assert prop.expectation_value() == pytest.approx(0.0, abs=1e-15)
    prop.update_initial_operator(MajoranaOperator({(0, 1): 2j}, 2))  # a new term is fine
    assert prop.expectation_value() == pytest.approx(-2.0)


# ---------------------------------------------------------------------------------------
# comm= in a build without MPI (a single-rank communicator runs serially, more ranks are an
# error), and the routing variables monoprop_ROUTING and monoprop_ROUTING_SEED (a bad value
# raises at construction, naming the variable)
# ---------------------------------------------------------------------------------------


class _FakeComm:
    """Stands in for an mpi4py communicator of `size` ranks (mpi4py is not needed here)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def Get_size(self) -> int:  # noqa: N802 (mpi4py's name)
        return self.size


@pytest.mark.skipif(monoprop.has_mpi, reason="checks the build without MPI")
def test_multi_rank_comm_without_mpi_is_an_error():
    observable = PauliOperator({"ZZ": 1.0}, 2)
    with pytest.raises(RuntimeError, match=r"spans 2 ranks.*has_mpi is False"):
        PauliPropagator(observable, [], cutoff=4, comm=_FakeComm(2))
    # A single-rank communicator runs serially, like comm=None.
    circuit = Circuit([ExpGate(PauliOperator({"XI": 1.0}, 2))], 2)
    values = []
    for comm in (_FakeComm(1), None):
        prop = PauliPropagator(observable, [], cutoff=4, comm=comm)
        prop.build_graph(circuit)
        values.append(prop.expectation_value([0.3]))
    assert values[0] == values[1] == pytest.approx(np.cos(0.6), abs=1e-15)


@pytest.mark.parametrize(
    "variable, value",
    [("monoprop_ROUTING", "Linear"), ("monoprop_ROUTING", ""), ("monoprop_ROUTING_SEED", "0x10")],
)
def test_bad_routing_variable_raises_naming_it(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(RuntimeError, match=variable):
        PauliPropagator(PauliOperator({"ZZ": 1.0}, 2), [], cutoff=4)
    monkeypatch.setenv(variable, "splitmix" if variable == "monoprop_ROUTING" else "42")
    assert PauliPropagator(PauliOperator({"ZZ": 1.0}, 2), [], cutoff=4).size() == 1
