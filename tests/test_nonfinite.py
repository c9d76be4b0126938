"""Bad numbers refused: NaN and infinities, and what goes with them.

Every float that enters monoprop is refused with a ``ValueError`` when it is NaN, ``inf`` or
``-inf``: operator coefficients and arithmetic scalars, gate and circuit coefficients and
bound parameters, parameter vectors of every evaluation, tolerances, ``pare_threshold``, the
operator of ``update_initial_operator`` and electronic-structure integrals. Each test checks
the exact message (argument, value, fix) and that the object the call was made on is unchanged.

Also here: a gateless circuit from dense arrays, the parameter-length message, the warning
for the upper-case thread variable, and what ``import monoprop`` imports.
"""

import math
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import monoprop
from monoprop import (
    Circuit,
    ExpGate,
    FermiOperator,
    MajoranaOperator,
    MajoranaPropagator,
    Pauli,
    PauliOperator,
    PauliPropagator,
    integrals_to_fermion,
)
from monoprop import monomial_propagator as mp_module
from monoprop.validation import check_finite, check_finite_array

BAD = [math.nan, math.inf, -math.inf]
BAD_IDS = ["nan", "inf", "-inf"]
bad_values = pytest.mark.parametrize("bad", BAD, ids=BAD_IDS)
FAMILIES = ["pauli", "majorana"]

PARAMETERS_FIX = "pass a finite angle for every parameter"
COEFFICIENT_FIX = "give every term a finite coefficient"
OPTIONAL_FIX = "pass a finite float (or None)"


def refused(where: str, value: object, fix: str):
    """``pytest.raises`` for the one message of a non-finite number, matched in full."""
    message = f"{where}={value!r} is not a finite number; {fix}."
    return pytest.raises(ValueError, match="^" + re.escape(message) + "$")


# ---------------------------------------------------------------------------------------
# The helpers
# ---------------------------------------------------------------------------------------


class TestHelpers:
    @bad_values
    def test_scalar(self, bad):
        with refused("x", bad, "pass a finite float"):
            check_finite(bad, "x")

    @bad_values
    def test_complex_parts(self, bad):
        with refused("x", complex(1.0, bad), "fix it"):
            check_finite(complex(1.0, bad), "x", fix="fix it")
        with refused("x", complex(bad, 1.0), "fix it"):
            check_finite(np.complex128(complex(bad, 1.0)), "x", fix="fix it")

    def test_finite_and_non_numbers_pass(self):
        assert check_finite(1.5, "x") == 1.5
        assert check_finite(-1e308, "x") == -1e308
        assert check_finite("a", "x") == "a"  # not a number: the caller's type check reports it
        assert check_finite(None, "x") is None
        check_finite_array(np.arange(3), "x")
        check_finite_array([1.0, 2j], "x")

    @bad_values
    def test_array_names_first_bad_index(self, bad):
        values = np.zeros((2, 3))
        values[1, 2] = bad
        values[1, 1] = bad  # the first one in C order
        with refused("h[1, 1]", bad, "pass only finite values"):
            check_finite_array(values, "h")
        with refused("p[2]", bad, "fix"):
            check_finite_array([0.0, 1.0, bad], "p", fix="fix")
        with refused("terms['Y']", bad, "fix"):
            check_finite_array([0.0, bad], "terms", fix="fix", labels=["X", "Y"])


# ---------------------------------------------------------------------------------------
# Operators: coefficients and arithmetic scalars
# ---------------------------------------------------------------------------------------


def pauli_op():
    return PauliOperator({"XZ": 1.0, "IY": 0.5}, 2)


def majorana_op():
    return MajoranaOperator({(0, 1): 1j, (2,): 0.5}, 2)


def fermi_op():
    return FermiOperator([[(0, "+"), (1, "-")], [(1, "+"), (0, "-")]], [1.0, 1.0], 2)


OPERATORS = {"pauli": pauli_op, "majorana": majorana_op, "fermi": fermi_op}


class TestOperatorCoefficients:
    @bad_values
    def test_pauli_operator(self, bad):
        with refused("terms['IX']", bad, COEFFICIENT_FIX):
            PauliOperator({"ZI": 1.0, "IX": bad}, 2)

    @bad_values
    def test_pauli_operator_skip_validation(self, bad):
        with refused("terms['X']", bad, COEFFICIENT_FIX):
            PauliOperator({"X": bad}, 1, skip_validation=True)

    @bad_values
    def test_pauli_operator_numpy_scalar(self, bad):
        with refused("terms['X']", bad, COEFFICIENT_FIX):
            PauliOperator({"X": np.float64(bad)}, 1)

    @bad_values
    def test_majorana_operator(self, bad):
        with refused("terms[(2,)]", bad, COEFFICIENT_FIX):
            MajoranaOperator({(0, 1): 1j, (2,): bad}, 2)

    @bad_values
    def test_majorana_operator_imaginary_part(self, bad):
        value = complex(0.0, bad)
        with refused("terms[(1, 0)]", value, COEFFICIENT_FIX):
            MajoranaOperator({(1, 0): value}, 1, skip_validation=True)

    @bad_values
    def test_fermi_operator(self, bad):
        with refused("coefficients[1]", bad, COEFFICIENT_FIX):
            FermiOperator([[(0, "+")], [(1, "-")]], [1.0, bad], 2)

    @bad_values
    def test_fermi_from_dict(self, bad):
        with refused("coefficients[0]", bad, COEFFICIENT_FIX):
            FermiOperator.from_dict({((0, "+"), (0, "-")): bad}, 1)


class TestOperatorArithmetic:
    @pytest.mark.parametrize("kind", OPERATORS)
    @bad_values
    def test_times_scalar(self, kind, bad):
        op = OPERATORS[kind]()
        with refused("scalar factor", bad, "multiply by a finite number"):
            op * bad  # noqa: B018
        with refused("scalar factor", bad, "multiply by a finite number"):
            bad * op  # noqa: B018
        with refused("scalar factor", bad, "multiply by a finite number"):  # shown as a float
            np.float64(bad) * op  # noqa: B018
        assert op == OPERATORS[kind]()

    @pytest.mark.parametrize("kind", OPERATORS)
    @bad_values
    def test_divided_by_scalar(self, kind, bad):
        op = OPERATORS[kind]()
        with refused("divisor", bad, "divide by a finite number"):
            op / bad  # noqa: B018
        assert op == OPERATORS[kind]()

    @pytest.mark.parametrize("kind", OPERATORS)
    @bad_values
    def test_complex_scalar(self, kind, bad):
        op = OPERATORS[kind]()
        factor = complex(1.0, bad)
        with refused("scalar factor", factor, "multiply by a finite number"):
            op * factor  # noqa: B018
        assert op == OPERATORS[kind]()

    def test_finite_arithmetic_unchanged(self):
        assert (pauli_op() * 2).terms == {Pauli("XZ"): 2.0, Pauli("Y", 1): 1.0}
        assert (pauli_op() / 4).terms == {Pauli("XZ"): 0.25, Pauli("Y", 1): 0.125}
        with pytest.raises(ZeroDivisionError):
            pauli_op() / 0  # noqa: B018


# ---------------------------------------------------------------------------------------
# Gates and circuits
# ---------------------------------------------------------------------------------------


class TestGatesAndCircuits:
    @bad_values
    def test_gate_atol(self, bad):
        with refused("atol", bad, "pass a finite float"):
            ExpGate(PauliOperator({"X": 1.0}, 1), atol=bad)

    @bad_values
    def test_gate_generator_edited_after_construction(self, bad):
        generator = PauliOperator({"XI": 1.0, "IX": 0.5}, 2)
        generator.terms[Pauli("X", 1)] = bad  # bypasses the operator's own check
        with refused("generator terms[Pauli('X', (1,))]", bad, COEFFICIENT_FIX):
            ExpGate(generator)

    @bad_values
    def test_majorana_gate_generator_edited(self, bad):
        generator = MajoranaOperator({(1, 2): 1j}, 2)
        generator.terms[(1, 2)] = complex(0.0, bad)
        with refused("generator terms[(1, 2)]", complex(0.0, bad), COEFFICIENT_FIX):
            ExpGate(generator)

    @bad_values
    def test_circuit_parameters(self, bad):
        gates = [ExpGate(PauliOperator({"X": 1.0}, 1)), ExpGate(PauliOperator({"Z": 1.0}, 1))]
        with refused("parameters[1]", bad, PARAMETERS_FIX):
            Circuit(gates, 1, parameters=[0.1, bad])

    @bad_values
    def test_circuit_numpy_parameters(self, bad):
        gates = [ExpGate(PauliOperator({"X": 1.0}, 1))]
        with refused("parameters[0]", bad, PARAMETERS_FIX):
            Circuit(gates, 1, parameters=np.array([bad]))

    @bad_values
    def test_concatenation_keeps_the_check(self, bad):
        a = Circuit([ExpGate(PauliOperator({"X": 1.0}, 1))], 1, parameters=[0.1])
        b = Circuit([ExpGate(PauliOperator({"Z": 1.0}, 1))], 1, parameters=[0.2])
        b.parameters = (bad,)  # edited after construction
        with refused("parameters[1]", bad, PARAMETERS_FIX):
            a + b  # noqa: B018
        assert a.parameters == (0.1,)

    @bad_values
    def test_dense_gen_coeffs(self, bad):
        with refused("gen_coeffs[1]", bad, "pass finite structural coefficients"):
            Circuit.from_dense_arrays([(0, 1), (2, 3)], [0.5, bad], [0, 0], 2)
        with refused("gen_coeffs[0]", bad, "pass finite structural coefficients"):
            Circuit.from_dense_arrays([(0, 1)], np.array([bad]), [0], 2)

    @bad_values
    def test_dense_parameters(self, bad):
        with refused("parameters[0]", bad, PARAMETERS_FIX):
            Circuit.from_dense_arrays([(0, 1)], [0.5], [0], 2, parameters=[bad])


# ---------------------------------------------------------------------------------------
# Propagators: every entry point, object unchanged after the refused call
# ---------------------------------------------------------------------------------------


def observable(family):
    if family == "pauli":
        return PauliOperator({"ZZ": 1.0, "XI": 0.25}, 2)
    return MajoranaOperator({(0, 1): 1j, (0,): 0.25}, 2)


def gate(family, qubit=0):
    if family == "pauli":
        return ExpGate(PauliOperator({"XI" if qubit == 0 else "IX": 1.0}, 2))
    return ExpGate(MajoranaOperator({(1, 2): 1j} if qubit == 0 else {(0, 3): 1j}, 2))


def circuit(family, parameters=()):
    return Circuit([gate(family, 0), gate(family, 1)], 2, parameters=list(parameters))


def fresh(family, **config):
    config.setdefault("cutoff", 4)
    cls = PauliPropagator if family == "pauli" else MajoranaPropagator
    return cls(observable(family), [], **config)


def built(family, **config):
    """A propagator with a two-gate graph, seeded at THETA when a tolerance is set (a build
    without a seed would ignore it, with a warning)."""
    prop = fresh(family, **config)
    tolerances = config.get("lower_atol") is not None or config.get("upper_atol") is not None
    prop.build_graph(circuit(family), seed_parameters=THETA if tolerances else None)
    return prop


THETA = [0.3, -0.2]


def snapshot(prop):
    """Everything a refused call must leave as it was (without changing it itself)."""
    at = THETA if prop.n_parameters else None
    value, grad = prop.expectation_value_and_gradient(at)
    return {
        "value": value,
        "gradient": list(grad),
        "evolved": prop.evolved_operator(at),
        "size": prop.size(),
        "graph_size": prop.graph_size(),
        "graph_layers": prop.graph_layers,
        "n_parameters": prop.n_parameters,
        "lower_atol": prop.lower_atol,
        "upper_atol": prop.upper_atol,
        "cutoff": prop.cutoff,
    }


family_param = pytest.mark.parametrize("family", FAMILIES)


@family_param
@bad_values
class TestPropagatorConstruction:
    @pytest.mark.parametrize("name", ["lower_atol", "upper_atol"])
    def test_tolerances(self, family, bad, name):
        with refused(name, bad, OPTIONAL_FIX):
            fresh(family, **{name: bad})

    @pytest.mark.parametrize("name", ["lower_atol", "upper_atol"])
    def test_numpy_tolerances(self, family, bad, name):
        with refused(name, bad, OPTIONAL_FIX):
            fresh(family, **{name: np.float64(bad)})

    def test_initial_operator_edited_after_construction(self, family, bad):
        op = observable(family)
        key = list(op.terms)[1]  # XI (Pauli) or (0,) (Majorana)
        op.terms[key] = bad  # bypasses the operator's own check
        cls = PauliPropagator if family == "pauli" else MajoranaPropagator
        with refused(f"initial_operator.terms[{key!r}]", bad, COEFFICIENT_FIX):
            cls(op, [], cutoff=4)


@family_param
@bad_values
class TestPropagatorCalls:
    @pytest.mark.parametrize("name", ["lower_atol", "upper_atol"])
    def test_tolerance_setters_keep_the_old_value(self, family, bad, name):
        prop = built(family, lower_atol=1e-6, upper_atol=1e-3)
        before = snapshot(prop)
        with refused(name, bad, OPTIONAL_FIX):
            setattr(prop, name, bad)
        assert getattr(prop, name) == {"lower_atol": 1e-6, "upper_atol": 1e-3}[name]
        assert snapshot(prop) == before

    @pytest.mark.parametrize(
        "method",
        [
            "expectation_value",
            "expval",
            "expectation_value_and_gradient",
            "gradient",
            "evolved_operator",
            "contract_partially",
        ],
    )
    @pytest.mark.parametrize("as_array", [False, True], ids=["list", "array"])
    def test_parameter_vectors(self, family, bad, method, as_array):
        prop = built(family)
        before = snapshot(prop)
        vector = [0.3, bad]
        with refused("parameters[1]", bad, PARAMETERS_FIX):
            getattr(prop, method)(np.array(vector) if as_array else vector)
        assert snapshot(prop) == before

    def test_evolved_operator_coefficients(self, family, bad):
        prop = built(family)
        before = snapshot(prop)
        term = Pauli("ZZ") if family == "pauli" else (0, 1)
        with refused("parameters[0]", bad, PARAMETERS_FIX):
            prop.evolved_operator_coefficients([term], [bad, 0.1])
        assert snapshot(prop) == before

    def test_evolved_operator_atol(self, family, bad):
        prop = built(family)
        before = snapshot(prop)
        with refused("atol", bad, "pass a finite float"):
            prop.evolved_operator(THETA, atol=bad)
        assert snapshot(prop) == before

    @pytest.mark.parametrize(
        "maker", ["expectation_value_functional", "expectation_value_and_gradient_functional"]
    )
    def test_functional_calls(self, family, bad, maker):
        prop = built(family)
        fn = getattr(prop, maker)()
        before = snapshot(prop)
        with refused("parameters[0]", bad, PARAMETERS_FIX):
            fn([bad, 0.1])
        assert snapshot(prop) == before
        fn.check()  # still current: nothing changed
        fn(THETA)

    @pytest.mark.parametrize(
        "maker", ["expectation_value_functional", "expectation_value_and_gradient_functional"]
    )
    def test_pare_threshold(self, family, bad, maker):
        prop = built(family)
        before = snapshot(prop)
        with refused("pare_threshold", bad, OPTIONAL_FIX):
            getattr(prop, maker)(pare_threshold=bad)
        assert snapshot(prop) == before

    def test_seed_parameters(self, family, bad):
        prop = built(family)
        before = snapshot(prop)
        # The full post-call vector: the new circuit's two parameters, then the graph's two.
        with refused("seed_parameters[3]", bad, PARAMETERS_FIX):
            prop.build_graph(circuit(family), seed_parameters=[0.1, 0.2, 0.3, bad])
        assert snapshot(prop) == before

    def test_first_build_seeded_by_the_circuit(self, family, bad):
        prop = fresh(family)
        before = snapshot(prop)
        bound = circuit(family, [0.1, 0.2])
        bound.parameters = (0.1, bad)  # edited after construction
        with refused("circuit.parameters[1]", bad, PARAMETERS_FIX):
            prop.build_graph(bound)
        assert snapshot(prop) == before

    def test_propagate_uses_the_circuit_parameters(self, family, bad):
        prop = fresh(family)
        before = snapshot(prop)
        bound = circuit(family, [0.1, 0.2])
        bound.parameters = (bad, 0.2)  # edited after construction
        with refused("circuit.parameters[0]", bad, PARAMETERS_FIX):
            prop.propagate(bound)
        assert snapshot(prop) == before

    def test_update_initial_operator(self, family, bad):
        prop = built(family)
        before = snapshot(prop)
        op = observable(family)
        key = list(op.terms)[1]  # XI (Pauli) or (0,) (Majorana)
        op.terms[key] = bad  # bypasses the operator's own check
        with refused(f"new_operator.terms[{key!r}]", bad, COEFFICIENT_FIX):
            prop.update_initial_operator(op)
        assert snapshot(prop) == before


@bad_values
def test_update_initial_operator_fermi(bad):
    prop = built("majorana")
    before = snapshot(prop)
    op = FermiOperator([[(0, "+"), (0, "-")], [(1, "+"), (1, "-")]], [1.0, -1.0], 2)
    op.coefficients[1] = bad  # bypasses the operator's own check
    with refused("new_operator.coefficients[1]", bad, COEFFICIENT_FIX):
        prop.update_initial_operator(op)
    assert snapshot(prop) == before


def test_negative_tolerances_still_accepted():
    # Accepted as given, with a ToleranceWarning each (tests/test_propagator_errors.py checks
    # what the warnings say).
    with pytest.warns(monoprop.ToleranceWarning) as caught:
        prop = built("pauli", lower_atol=-1.0, upper_atol=-0.5)
    assert len(caught) == 2
    assert (prop.lower_atol, prop.upper_atol) == (-1.0, -0.5)
    with pytest.warns(monoprop.ToleranceWarning, match="lower_atol=-2.0 is negative"):
        prop.lower_atol = -2.0
    assert prop.lower_atol == -2.0


# ---------------------------------------------------------------------------------------
# Integrals
# ---------------------------------------------------------------------------------------


def integrals(k=2):
    h1 = np.zeros((2, k, k))
    h1[:, 0, 0] = -1.0
    h2 = np.zeros((3, k, k, k, k))
    h2[1] = 0.5
    return h1, h2


@bad_values
class TestIntegrals:
    def test_h0(self, bad):
        h1, h2 = integrals()
        with refused("h0", bad, "pass finite integrals"):
            integrals_to_fermion(bad, h1, h2)

    def test_h1(self, bad):
        h1, h2 = integrals()
        h1[1, 0, 1] = bad
        given = h1.copy()
        with refused("h1[1, 0, 1]", bad, "pass finite integrals"):
            integrals_to_fermion(0.0, h1, h2)
        np.testing.assert_array_equal(h1, given)  # the input is not touched

    def test_h2(self, bad):
        h1, h2 = integrals()
        h2[2, 1, 0, 1, 0] = bad
        with refused("h2[2, 1, 0, 1, 0]", bad, "pass finite integrals"):
            integrals_to_fermion(0.0, h1, h2.tolist())


# ---------------------------------------------------------------------------------------
# A gateless circuit from dense arrays
# ---------------------------------------------------------------------------------------


class TestEmptyDenseCircuit:
    def test_gates_and_family(self):
        c = Circuit.from_dense_arrays(majoranas=[], gen_coeffs=[], param_inds=[], system_size=2)
        assert c.gates == () and c.family == "empty"
        assert c.n_parameters == 0 and c.parameters == () and c.initial_state == ()

    def test_consistent_with_a_gateless_circuit(self):
        dense = Circuit.from_dense_arrays([], [], [], 2)
        plain = Circuit([], 2)
        assert plain.gates == () and plain.family == "empty"
        assert dense == plain
        assert Circuit([], 2, initial_state=[]) == dense

    def test_nonempty_gates_are_a_tuple_too(self):
        c = Circuit.from_dense_arrays([(0, 1)], [0.5], [0], 2)
        assert isinstance(c.gates, tuple) and len(c.gates) == 1

    @family_param
    def test_propagators_accept_it(self, family):
        empty = Circuit.from_dense_arrays([], [], [], 2)
        prop = fresh(family)
        before = snapshot(prop)
        prop.propagate(empty)
        prop.build_graph(empty)
        assert snapshot(prop) == before
        assert prop.graph_layers == 0 and prop.n_parameters == 0


# ---------------------------------------------------------------------------------------
# The parameter-length message
# ---------------------------------------------------------------------------------------


def length_message(got: int, expected: int) -> str:
    return (
        f"Invalid functional call. Parameter length {got} does not match the expected number "
        f"of parameters {expected}. Pass a vector of {expected} values: one per graph parameter "
        "(after a Heisenberg build_graph extension the new circuit's parameters come first)."
    )


@family_param
@pytest.mark.parametrize(
    "call",
    [
        lambda p, v: p.expectation_value(v),
        lambda p, v: p.gradient(v),
        lambda p, v: p.expectation_value_functional()(v),
        lambda p, v: p.evolved_operator(v),
        lambda p, v: p.contract_partially(v),
    ],
    ids=["expectation_value", "gradient", "functional", "evolved_operator", "contract"],
)
def test_parameter_length_message(family, call):
    prop = built(family)
    prop.build_graph(circuit(family))  # a Heisenberg extension: 4 parameters now
    with pytest.raises(RuntimeError, match="^" + re.escape(length_message(3, 4)) + "$"):
        call(prop, [0.1, 0.2, 0.3])
    assert prop.graph_layers == 4 and prop.n_parameters == 4


# ---------------------------------------------------------------------------------------
# The upper-case thread variable
# ---------------------------------------------------------------------------------------

WRONG_CASE_WARNING = (
    "MONOPROP_NUM_THREADS is set but monoprop reads monoprop_NUM_THREADS (lower-case prefix); "
    "the value is ignored. Set monoprop_NUM_THREADS instead."
)


@pytest.fixture
def first_construction(monkeypatch):
    """As if no propagator had been constructed yet in this process."""
    monkeypatch.setattr(mp_module, "_warned_wrong_case_threads", False)
    return monkeypatch


def test_upper_case_thread_variable_warns_once(first_construction):
    first_construction.setenv("MONOPROP_NUM_THREADS", "3")
    first_construction.delenv("monoprop_NUM_THREADS", raising=False)
    with pytest.warns(UserWarning, match="^" + re.escape(WRONG_CASE_WARNING) + "$") as record:
        prop = fresh("pauli")
    assert len(record) == 1
    assert record[0].filename == __file__  # points at the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = fresh("majorana")  # no second warning in this process
    assert prop.num_threads == second.num_threads  # the value is not read


def test_no_warning_when_the_lower_case_variable_is_set(first_construction):
    first_construction.setenv("MONOPROP_NUM_THREADS", "3")
    first_construction.setenv("monoprop_NUM_THREADS", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prop = fresh("pauli")
    assert prop.num_threads == 1
    assert mp_module._warned_wrong_case_threads is False


def test_no_warning_without_the_upper_case_variable(first_construction):
    first_construction.delenv("MONOPROP_NUM_THREADS", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh("pauli")
    assert mp_module._warned_wrong_case_threads is False


# ---------------------------------------------------------------------------------------
# Import weight
# ---------------------------------------------------------------------------------------

HEAVY = ("qiskit", "jax", "optuna", "matplotlib")


def test_import_monoprop_stays_light(tmp_path):
    """``import monoprop`` imports none of the optional heavy packages."""
    parent = os.path.dirname(os.path.dirname(os.path.abspath(monoprop.__file__)))
    env = {**os.environ, "PYTHONPATH": parent}
    code = (
        "import sys, monoprop\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules) or 'none')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "none"
