"""Truncation rules and the Schrödinger state expansion, on hand-computed values.

The rule: a gate ``exp(+i theta h G)`` rotates each held term ``a`` that anticommutes with
``G`` towards its partner ``b ~ a G`` by ``phi = 2 h theta``. ``a`` is *active* when
``|sin(phi) c_a| > lower_atol`` (strictly; always without lower_atol or in a structural
build); an active ``a`` *asks* for ``b`` when ``b`` passes the cutoff (length, support or
Pauli weight ``<= cutoff``; a fully paired Majorana monomial or a Pauli Z-string always
passes) or when ``|sin(phi) c_a| > upper_atol``. A held pair rotates both ways when one of
the two asked; a missing partner is born only from an asking term; every other anticommuting
term is only scaled by ``cos(phi)``. No held term, and nothing of the initial operator, is
ever dropped. ``only_rotate_len_k = k`` leaves terms of more than k slots untouched.
Schrödinger: the state ``prod_j (1 ± Z_j)`` is expanded to products of at most
``ceil(schrodinger_cutoff / 2)`` factors ``Z_j`` (Pauli: ``schrodinger_cutoff`` factors), and
its evolution is then truncated by ``cutoff``.

Gates are structural ``g = 1`` gates from ``Circuit.from_dense_arrays`` unless stated, so a
gate on monomial G is ``exp(+i theta c m_G)`` with ``c = -i^{C(w,2)}`` (the structural
coefficient ``c = -g i^{C(w,2)}`` at ``g = 1``). Each expected coefficient below is derived by
hand with ``P -> cos(2c theta) P + i sin(2c theta) P G`` for ``P`` anticommuting with the
Hermitian-basis monomial ``G = i^{C(w,2)} m_G``; the untruncated cases are also checked
against the dense reference so that the hand algebra itself is tested.
"""

import math
import re
from itertools import combinations

import dense_reference as dr
import numpy as np
import pytest
import truncating_reference as tr

from monoprop import (
    Circuit,
    ExpGate,
    MajoranaOperator,
    MajoranaPropagator,
    PauliOperator,
    PauliPropagator,
    ToleranceWarning,
)

C06, S06 = math.cos(0.6), math.sin(0.6)
ATOL = 1e-11  # evolved_operator rounds to 12 decimals


def structural_gate(monomial, n, theta=None):
    """One g=1 structural gate; bound to ``theta`` unless it is None."""
    params = [] if theta is None else [theta]
    return Circuit.from_dense_arrays([monomial], [1.0], [0], n, parameters=params)


def assert_terms(actual, expected, context=""):
    assert set(actual) == set(expected), f"{context}: keys {sorted(actual)} != {sorted(expected)}"
    worst, key = dr.max_coefficient_difference(actual, expected)
    assert worst <= ATOL, f"{context}: {key!r} got {actual[key]!r}, expected {expected[key]!r}"


def dense_heisenberg_majorana(observable, monomial, theta, n):
    """Dense U^dagger O U for one structural g=1 gate (for cross-checking hand values)."""
    gen = dr.majorana_operator_matrix({monomial: dr.structural_to_bare(monomial, 1.0)}, n)
    u = dr.circuit_unitary([gen], [theta])
    return dr.majorana_decompose(
        dr.heisenberg_operator(dr.majorana_operator_matrix(observable, n), u), n
    )


def dense_heisenberg_pauli(observable, generator, theta, n):
    u = dr.circuit_unitary([dr.pauli_operator_matrix(generator, n)], [theta])
    return dr.real_coefficients(
        dr.pauli_decompose(dr.heisenberg_operator(dr.pauli_operator_matrix(observable, n), u), n)
    )


def run_majorana(observable, n, monomial, theta, *, route, **config):
    """Evolve with one structural gate; route 'propagate' or 'graph' (seeded build)."""
    prop = MajoranaPropagator(MajoranaOperator(observable, n), [], **config)
    if route == "propagate":
        prop.propagate(structural_gate(monomial, n, theta))
        return prop, prop.evolved_operator().terms
    prop.build_graph(structural_gate(monomial, n, theta))
    return prop, prop.evolved_operator([theta]).terms


def run_pauli(observable, n, generator, theta, *, route, state=(), **config):
    prop = PauliPropagator(PauliOperator(observable, n), list(state), **config)
    circuit = Circuit([ExpGate(PauliOperator(generator, n))], n, parameters=[theta])
    if route == "propagate":
        prop.propagate(circuit)
        evolved = prop.evolved_operator()
    else:
        prop.build_graph(circuit)
        evolved = prop.evolved_operator([theta])
    return prop, dr.pauli_terms_to_strings(evolved.terms, n)


ROUTES = ["propagate", "graph"]


# ---------------------------------------------------------------------------------------
# {(0,1): 1j} on 5 modes under the length-4 gate (1,2,3,4) at theta = pi/6
# ---------------------------------------------------------------------------------------
# G = M_1234 = m1m2m3m4, c = -i^6 = +1: i m0m1 -> cos(pi/3) i m0m1 + i sin(pi/3) i m0m1 m1m2m3m4
#   = 0.5 i m0m1 - sin(pi/3) m0m2m3m4.

EX_A_OBS = {(0, 1): 1j}
EX_A_KEPT = {(0, 1): 0.5j, (0, 2, 3, 4): -math.sin(math.pi / 3)}
EX_A_DROPPED = {(0, 1): 0.5j}


def test_example_a_hand_values_match_dense():
    dense = dense_heisenberg_majorana(EX_A_OBS, (1, 2, 3, 4), math.pi / 6, 5)
    worst, _ = dr.max_coefficient_difference(dense, EX_A_KEPT)
    assert worst < 1e-12


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "config,kept",
    [
        ({"cutoff": 3}, False),
        ({"cutoff": 4}, True),
        ({"cutoff": 1, "upper_atol": 0.49}, True),
        ({"cutoff": 1, "upper_atol": 1.0}, False),
        ({"cutoff": 4, "lower_atol": 0.9}, False),
        ({"cutoff": 4, "lower_atol": 0.1}, True),
    ],
    ids=["cutoff3", "cutoff4", "upper0.49", "upper1.0", "lower0.9", "lower0.1"],
)
def test_example_a_cutoff_and_atols(config, kept, route):
    prop, terms = run_majorana(EX_A_OBS, 5, (1, 2, 3, 4), math.pi / 6, route=route, **config)
    assert_terms(terms, EX_A_KEPT if kept else EX_A_DROPPED, f"{config} {route}")
    assert prop.size() == (2 if kept else 1)
    # Vacuum: only i m0m1 = -Z0 contributes.
    assert prop.expectation_value(None if route == "propagate" else [math.pi / 6]) == (
        pytest.approx(-0.5, abs=1e-12)
    )
    if route == "graph":
        # (n_cos_only, n_cycles): a dropped sine partner leaves a cos-only entry.
        assert prop.graph_size() == ((0, 1) if kept else (1, 0))


@pytest.mark.parametrize(
    "config,kept",
    [
        ({"cutoff": 4, "lower_atol": 0.9}, True),  # structural build: lower_atol never drops
        ({"cutoff": 1, "upper_atol": 0.49}, False),  # structural build: upper_atol never rescues
        ({"cutoff": 3}, False),
        ({"cutoff": 4}, True),
    ],
)
def test_example_a_structural_build_ignores_atols(config, kept):
    prop = MajoranaPropagator(MajoranaOperator(EX_A_OBS, 5), [], **config)
    ignored = [
        f"{name}={config[name]!r}" for name in ("lower_atol", "upper_atol") if name in config
    ]
    if ignored:  # the build says it ignores them
        with pytest.warns(ToleranceWarning, match=re.escape(f"ignores {ignored[0]}")) as caught:
            prop.build_graph(structural_gate((1, 2, 3, 4), 5))  # unbound: no seed
        assert len(caught) == 1
    else:
        prop.build_graph(structural_gate((1, 2, 3, 4), 5))
    assert_terms(
        prop.evolved_operator([math.pi / 6]).terms, EX_A_KEPT if kept else EX_A_DROPPED, str(config)
    )


@pytest.mark.parametrize(
    "config,kept",
    [
        ({"cutoff": 4, "lower_atol": 0.9}, False),
        ({"cutoff": 1, "upper_atol": 0.49}, True),
    ],
)
def test_example_a_seed_parameters_make_build_coefficient_informed(config, kept):
    prop = MajoranaPropagator(MajoranaOperator(EX_A_OBS, 5), [], **config)
    prop.build_graph(structural_gate((1, 2, 3, 4), 5), seed_parameters=[math.pi / 6])
    assert_terms(
        prop.evolved_operator([math.pi / 6]).terms, EX_A_KEPT if kept else EX_A_DROPPED, str(config)
    )


# ---------------------------------------------------------------------------------------
# {(0,1,2,4): 1} on 4 modes, cutoff 2, theta = 0.3: fully paired partners survive
# ---------------------------------------------------------------------------------------
# Gate (3,4): G = i m3m4, c = -1: O -> cos(0.6) O - i sin(0.6) m0m1m2m4 (i m3m4)
#   = cos(0.6) O - sin(0.6) m0m1m2m3;  <vac| m0m1m2m3 |vac> = <-Z0 Z1> = -1.
# Gate (4,6): O -> cos(0.6) O + sin(0.6) m0m1m2m6 (length 4, not fully paired).

EX_B_OBS = {(0, 1, 2, 4): 1.0}
EX_B_34 = {(0, 1, 2, 4): C06, (0, 1, 2, 3): -S06}
EX_B_46 = {(0, 1, 2, 4): C06, (0, 1, 2, 6): S06}


@pytest.mark.parametrize("monomial,expected", [((3, 4), EX_B_34), ((4, 6), EX_B_46)])
def test_example_b_hand_values_match_dense(monomial, expected):
    worst, _ = dr.max_coefficient_difference(
        dense_heisenberg_majorana(EX_B_OBS, monomial, 0.3, 4), expected
    )
    assert worst < 1e-12


@pytest.mark.parametrize("route", ROUTES)
def test_example_b_fully_paired_partner_kept_beyond_cutoff(route):
    prop, terms = run_majorana(EX_B_OBS, 4, (3, 4), 0.3, route=route, cutoff=2)
    assert_terms(terms, EX_B_34, route)
    value = prop.expectation_value(None if route == "propagate" else [0.3])
    assert value == pytest.approx(S06, abs=1e-12)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("upper_atol,kept", [(None, False), (0.1, True), (0.6, False)])
def test_example_b_unpaired_partner_dropped_unless_upper_atol(route, upper_atol, kept):
    prop, terms = run_majorana(
        EX_B_OBS, 4, (4, 6), 0.3, route=route, cutoff=2, upper_atol=upper_atol
    )
    assert_terms(terms, EX_B_46 if kept else {(0, 1, 2, 4): C06}, f"upper={upper_atol}")


# ---------------------------------------------------------------------------------------
# Length vs support: {(0,4): 1j} on 3 modes under (1,2,4), theta = 0.3
# ---------------------------------------------------------------------------------------
# G = M_124 = -i m1m2m4, bare c = -i^3 = i so H = -G (c = -1):
# i m0m4 -> cos(0.6) i m0m4 - i sin(0.6) (i m0m4)(-i m1m2m4) = cos(0.6) i m0m4 - i sin(0.6) m0m1m2.
# Partner (0,1,2): length 3, support 2 (modes 0 and 1).

EX_C_OBS = {(0, 4): 1j}
EX_C_KEPT = {(0, 4): 1j * C06, (0, 1, 2): -1j * S06}
EX_C_DROPPED = {(0, 4): 1j * C06}


def test_example_c_hand_values_match_dense():
    worst, _ = dr.max_coefficient_difference(
        dense_heisenberg_majorana(EX_C_OBS, (1, 2, 4), 0.3, 3), EX_C_KEPT
    )
    assert worst < 1e-12


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "cutoff_type,cutoff,kept",
    [
        ("length", 2, False),
        ("length", 3, True),
        ("support", 2, True),
        ("support", 1, False),
    ],
)
def test_example_c_length_versus_support(route, cutoff_type, cutoff, kept):
    _, terms = run_majorana(
        EX_C_OBS, 3, (1, 2, 4), 0.3, route=route, cutoff=cutoff, cutoff_type=cutoff_type
    )
    assert_terms(terms, EX_C_KEPT if kept else EX_C_DROPPED, f"{cutoff_type} {cutoff}")


def test_cutoff_type_setter_changes_later_builds():
    prop = MajoranaPropagator(MajoranaOperator(EX_C_OBS, 3), [], cutoff=2)
    assert prop.cutoff_type == "length"
    prop.cutoff_type = "support"
    assert prop.cutoff_type == "support"
    prop.propagate(structural_gate((1, 2, 4), 3, 0.3))
    assert_terms(prop.evolved_operator().terms, EX_C_KEPT)


# ---------------------------------------------------------------------------------------
# Pauli weight cutoff, theta = 0.3
# ---------------------------------------------------------------------------------------
# X0Z1Z2 under Y0: X Y = iZ, so P -> cos P + i sin (iZ)Z Z = cos X0Z1Z2 - sin Z0Z1Z2.
# Under Y0X3: partner -sin Z0Z1Z2X3 (weight 4, not a Z-string).
# Z0 under X0X1: Z X = iY, so partner -sin Y0X1.


@pytest.mark.parametrize("route", ROUTES)
def test_pauli_z_string_partner_kept_beyond_cutoff(route):
    expected = {"XZZI": C06, "ZZZI": -S06}
    prop, terms = run_pauli({"XZZI": 1.0}, 4, {"YIII": 1.0}, 0.3, route=route, cutoff=1)
    assert_terms(terms, expected, route)
    assert_terms(dense_heisenberg_pauli({"XZZI": 1.0}, {"YIII": 1.0}, 0.3, 4), expected)
    # The Z-string is what the vacuum sees.
    assert prop.expectation_value(None if route == "propagate" else [0.3]) == pytest.approx(
        -S06, abs=1e-12
    )


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("cutoff,kept", [(1, False), (3, False), (4, True)])
def test_pauli_weight_4_partner(route, cutoff, kept):
    expected_full = {"XZZI": C06, "ZZZX": -S06}
    assert_terms(dense_heisenberg_pauli({"XZZI": 1.0}, {"YIIX": 1.0}, 0.3, 4), expected_full)
    _, terms = run_pauli({"XZZI": 1.0}, 4, {"YIIX": 1.0}, 0.3, route=route, cutoff=cutoff)
    assert_terms(terms, expected_full if kept else {"XZZI": C06}, f"cutoff={cutoff}")


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("cutoff,kept", [(1, False), (2, True)])
def test_pauli_weight_2_partner(route, cutoff, kept):
    expected_full = {"ZI": C06, "YX": -S06}
    assert_terms(dense_heisenberg_pauli({"ZI": 1.0}, {"XX": 1.0}, 0.3, 2), expected_full)
    _, terms = run_pauli({"ZI": 1.0}, 2, {"XX": 1.0}, 0.3, route=route, cutoff=cutoff)
    assert_terms(terms, expected_full if kept else {"ZI": C06}, f"cutoff={cutoff}")


# ---------------------------------------------------------------------------------------
# lower_atol: {(0,2): 1j} on 2 modes under (2,3)
# ---------------------------------------------------------------------------------------
# G = i m2m3, c = -1: i m0m2 -> cos(2t) i m0m2 + i sin(2t) m0m3.


def ex_e_expected(theta):
    return {(0, 2): 1j * math.cos(2 * theta), (0, 3): 1j * math.sin(2 * theta)}


@pytest.mark.parametrize("theta", [0.01, math.pi / 4 - 0.01, 0.3])
def test_example_e_hand_values_match_dense(theta):
    worst, _ = dr.max_coefficient_difference(
        dense_heisenberg_majorana({(0, 2): 1j}, (2, 3), theta, 2), ex_e_expected(theta)
    )
    assert worst < 1e-12


@pytest.mark.parametrize("route", ROUTES)
def test_example_e_lower_atol_drops_small_partner(route):
    prop, terms = run_majorana({(0, 2): 1j}, 2, (2, 3), 0.01, route=route, cutoff=4, lower_atol=0.1)
    assert_terms(terms, {(0, 2): 1j * math.cos(0.02)})
    if route == "graph":
        assert prop.graph_size() == (1, 0)


@pytest.mark.parametrize("route", ROUTES)
def test_example_e_cos_branch_never_dropped(route):
    theta = math.pi / 4 - 0.01  # cos(2 theta) = sin(0.02) ~ 0.02 < lower_atol
    prop, terms = run_majorana(
        {(0, 2): 1j}, 2, (2, 3), theta, route=route, cutoff=4, lower_atol=0.1
    )
    assert_terms(terms, ex_e_expected(theta))
    assert abs(terms[(0, 2)]) == pytest.approx(math.sin(0.02), abs=1e-11)
    if route == "graph":
        assert prop.graph_size() == (0, 1)


# {(0,2): 1j} under (1,2), theta = 0.01: G = i m1m2, c = -1:
# i m0m2 -> cos(0.02) i m0m2 - i sin(0.02) m0m1 (fully paired; <vac| m0m1 |vac> = i).
FULLY_PAIRED_KEPT = {(0, 2): 1j * math.cos(0.02), (0, 1): -1j * math.sin(0.02)}


def test_fully_paired_small_partner_hand_values_match_dense():
    worst, _ = dr.max_coefficient_difference(
        dense_heisenberg_majorana({(0, 2): 1j}, (1, 2), 0.01, 2), FULLY_PAIRED_KEPT
    )
    assert worst < 1e-12


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "config,kept",
    [
        ({"cutoff": 0}, True),  # fully paired passes the structural test at any cutoff
        ({"cutoff": 4, "lower_atol": 0.1}, False),  # but lower_atol still removes it
        ({"cutoff": 0, "lower_atol": 0.1}, False),
        ({"cutoff": 0, "lower_atol": 0.01}, True),
    ],
)
def test_lower_atol_removes_small_fully_paired_partner(route, config, kept):
    prop, terms = run_majorana({(0, 2): 1j}, 2, (1, 2), 0.01, route=route, **config)
    expected = FULLY_PAIRED_KEPT if kept else {(0, 2): 1j * math.cos(0.02)}
    assert_terms(terms, expected, str(config))
    value = prop.expectation_value(None if route == "propagate" else [0.01])
    assert value == pytest.approx(math.sin(0.02) if kept else 0.0, abs=1e-12)


# ---------------------------------------------------------------------------------------
# Two held terms: both are kept; they rotate into each other when one of them asks
# ---------------------------------------------------------------------------------------
# {(0,1): a i, (0,2): b i} under (1,2) at theta:
# (0,1) -> i(a cos - b sin), (0,2) -> i(b cos + a sin).
# (0,1) is active when |sin 0.6| * 1 > lower_atol and asks when its partner (0,2) passes:
# length 2 <= cutoff, or |sin 0.6| > upper_atol. (0,2) is active when |sin 0.6| * 1e-7 >
# lower_atol, and its partner (0,1) always passes: it is fully paired (mode 0).


def held_pair_rotates(cutoff, lower_atol=None, upper_atol=None):
    moved_a, moved_b = S06 * 1.0, S06 * 1e-7
    a_asks = (lower_atol is None or moved_a > lower_atol) and (
        cutoff >= 2 or (upper_atol is not None and moved_a > upper_atol)
    )
    b_asks = lower_atol is None or moved_b > lower_atol
    return a_asks or b_asks


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("cutoff", [0, 1, 4])
@pytest.mark.parametrize(
    "atols",
    [
        {},
        {"lower_atol": 1e-3},
        {"upper_atol": 1e-3},
        {"lower_atol": 1e-3, "upper_atol": 1e-2},
        {"lower_atol": 0.5, "upper_atol": 0.5},
        {"lower_atol": 10.0},
    ],
    ids=["none", "lower", "upper", "both", "equal", "huge-lower"],
)
def test_held_partner_always_kept(route, cutoff, atols):
    a, b = 1.0, 1e-7
    prop, terms = run_majorana(
        {(0, 1): 1j, (0, 2): 1e-7j}, 2, (1, 2), 0.3, route=route, cutoff=cutoff, **atols
    )
    if held_pair_rotates(cutoff, **atols):
        expected = {(0, 1): 1j * (a * C06 - b * S06), (0, 2): 1j * (b * C06 + a * S06)}
    else:
        expected = {(0, 1): 1j * a * C06, (0, 2): 1j * b * C06}
    assert_terms(terms, expected, f"cutoff={cutoff} {atols}")
    assert prop.size() == 2
    if route == "graph":
        assert prop.graph_size() == ((0, 1) if held_pair_rotates(cutoff, **atols) else (2, 0))


# ---------------------------------------------------------------------------------------
# The activity rule, case by case (Pauli, exp(+i theta G))
# ---------------------------------------------------------------------------------------
# Z0 = 1e-5, Y0 = 2e-5 under X0 at pi/4: sin = 1, cos ~ 6e-17; a swap when one of them is
# active (|c| > lower_atol), cosine only when neither is.
QUARTER = math.pi / 4


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "lower,swapped", [(1e-4, False), (2e-5, False), (1e-5, True), (5e-6, True)]
)
def test_small_held_pair_rotates_only_when_one_term_is_active(route, lower, swapped):
    prop, terms = run_pauli(
        {"Z": 1e-5, "Y": 2e-5}, 1, {"X": 1.0}, QUARTER, route=route, cutoff=1, lower_atol=lower
    )
    if swapped:
        exact = dense_heisenberg_pauli({"Z": 1e-5, "Y": 2e-5}, {"X": 1.0}, QUARTER, 1)
        assert_terms({k: v for k, v in terms.items() if k != "I"}, exact, f"lower_atol={lower}")
    else:  # both only scaled by cos(pi/2) ~ 6e-17: far below what evolved_operator shows
        c = abs(math.cos(2 * QUARTER))
        held = np.sort(
            np.abs(
                prop.contract_partially(None if route == "propagate" else [QUARTER], inplace=False)
            )
        )
        np.testing.assert_allclose(held, [1e-5 * c, 2e-5 * c], rtol=1e-9)
    if route == "graph":
        assert prop.graph_size() == ((0, 1) if swapped else (2, 0))


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("lower,born", [(1.0, False), (0.999, True)])
def test_birth_needs_sine_weight_strictly_above_lower_atol(route, lower, born):
    # Z0 = 1 under X0 at pi/4: |sin(pi/2) * 1| = 1 exactly.
    prop, terms = run_pauli(
        {"Z": 1.0}, 1, {"X": 1.0}, QUARTER, route=route, cutoff=1, lower_atol=lower
    )
    assert prop.size() == (2 if born else 1)
    assert ("Y" in terms) == born
    if route == "graph":
        assert prop.graph_size() == ((0, 1) if born else (1, 0))


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "config,rotates",
    [
        ({"cutoff": 1}, False),  # both partners have weight 2: nobody asks, even without atols
        ({"cutoff": 2}, True),
        ({"cutoff": 1, "upper_atol": 0.4}, True),  # XX's sine weight sin(0.6) rescues its partner
        ({"cutoff": 1, "upper_atol": 0.6}, False),
    ],
)
def test_held_partner_failing_the_cutoff_does_not_rotate(route, config, rotates):
    observable = {"XX": 1.0, "YX": 0.5}
    prop, terms = run_pauli(observable, 2, {"ZI": 1.0}, 0.3, route=route, **config)
    exact = dense_heisenberg_pauli(observable, {"ZI": 1.0}, 0.3, 2)
    expected = exact if rotates else {k: v * C06 for k, v in observable.items()}
    assert_terms({k: v for k, v in terms.items() if k != "II"}, expected, str(config))
    if route == "graph":
        assert prop.graph_size() == ((0, 1) if rotates else (2, 0))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("seed", range(30))
def test_random_circuits_follow_the_truncation_rule(seed, route, threads, monkeypatch):
    """Against a plain Python propagator written from the rule (truncating_reference)."""
    monkeypatch.setenv("monoprop_NUM_THREADS", str(threads))
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 6))

    observable = {
        tr.random_string(rng, n): float(c) for c in rng.normal(size=int(rng.integers(2, 6)))
    }
    gates = [
        (tr.random_string(rng, n), float(rng.choice([QUARTER, -QUARTER, rng.normal()])))
        for _ in range(int(rng.integers(6, 14)))
    ]
    lower = float(10 ** rng.uniform(-3, -0.5))
    upper = lower * float(rng.uniform(1, 5)) if rng.random() < 0.3 else None
    cutoff = int(rng.integers(1, n + 1))
    expected = tr.propagate(observable, gates, cutoff, lower, upper)

    prop = PauliPropagator(
        PauliOperator(observable, n), [], cutoff=cutoff, lower_atol=lower, upper_atol=upper
    )
    circuit = Circuit(
        [ExpGate(PauliOperator({g: 1.0}, n)) for g, _ in gates], n, parameters=[t for _, t in gates]
    )
    if route == "propagate":
        prop.propagate(circuit)
        evolved = prop.evolved_operator(atol=0.0)
    else:
        prop.build_graph(circuit)
        evolved = prop.evolved_operator(list(circuit.parameters), atol=0.0)
    terms = dr.pauli_terms_to_strings(evolved.terms, n)
    if "I" * n not in expected:
        assert terms.pop("I" * n) == 0.0
    context = f"seed {seed}: lower_atol {lower:.3g}, upper_atol {upper}, cutoff {cutoff}"
    assert_terms(terms, expected, context)
    assert prop.size() == len(expected) - ("I" * n in expected)


@pytest.mark.parametrize("config", [{"cutoff": 0}, {"cutoff": 0, "lower_atol": 1e-3}])
def test_initial_operator_never_truncated(config):
    obs = {(0, 1, 2, 3): 1.0, (0, 1): 1j, (1, 2, 5): 1e-9j, (): 0.25}
    prop = MajoranaPropagator(MajoranaOperator(obs, 3), [], **config)
    assert prop.size() == 3  # identity is the separate core term
    # m0m1m2m3 = -Z0Z1 -> -1; i m0m1 = -Z0 -> -1; identity 0.25.
    assert prop.expectation_value() == pytest.approx(-1.75, abs=1e-12)
    assert_terms(prop.evolved_operator(atol=0.0).terms, obs)


# ---------------------------------------------------------------------------------------
# only_rotate_len_k
# ---------------------------------------------------------------------------------------
# {(0,2): 1j, (0,1,2,4,5,6): 1j} on 4 modes under (2,3) at 0.3. The length-6 term
# anticommutes with (2,3) (6*2 - 1 odd); without the cap it becomes
# cos(0.6) i m012456 + i sin(0.6) m013456.

EX_H_OBS = {(0, 2): 1j, (0, 1, 2, 4, 5, 6): 1j}
EX_H_CAPPED = {(0, 2): 1j * C06, (0, 3): 1j * S06, (0, 1, 2, 4, 5, 6): 1j}
EX_H_FULL = {
    (0, 2): 1j * C06,
    (0, 3): 1j * S06,
    (0, 1, 2, 4, 5, 6): 1j * C06,
    (0, 1, 3, 4, 5, 6): 1j * S06,
}


def test_only_rotate_hand_values_match_dense():
    worst, _ = dr.max_coefficient_difference(
        dense_heisenberg_majorana(EX_H_OBS, (2, 3), 0.3, 4), EX_H_FULL
    )
    assert worst < 1e-12


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "k,expected",
    [(2, EX_H_CAPPED), (5, EX_H_CAPPED), (6, EX_H_FULL), (8, EX_H_FULL), (None, EX_H_FULL)],
)
def test_only_rotate_len_k_majorana(route, k, expected):
    prop = MajoranaPropagator(MajoranaOperator(EX_H_OBS, 4), [], cutoff=8)
    circuit = structural_gate((2, 3), 4, 0.3)
    if route == "propagate":
        prop.propagate(circuit, only_rotate_len_k=k)
        terms = prop.evolved_operator().terms
    else:
        prop.build_graph(circuit, only_rotate_len_k=k)
        terms = prop.evolved_operator([0.3]).terms
    assert_terms(terms, expected, f"k={k}")


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "observable,k,expected",
    [
        # Z counts as 2 slots: capped at k=1, rotated at k=2. Z X = iY -> -sin Y.
        ({"ZI": 1.0}, 1, {"ZI": 1.0}),
        ({"ZI": 1.0}, 2, {"ZI": C06, "YI": -S06}),
        # Y is 1 slot: rotated at k=1. Y X = -iZ -> +sin Z.
        ({"YI": 1.0}, 1, {"YI": C06, "ZI": S06}),
    ],
)
def test_only_rotate_len_k_pauli_counts_slots(route, observable, k, expected):
    assert_terms(
        dense_heisenberg_pauli(observable, {"XI": 1.0}, 0.3, 2),
        {"ZI": C06, "YI": -S06} if "ZI" in observable else {"YI": C06, "ZI": S06},
    )
    prop = PauliPropagator(PauliOperator(observable, 2), [], cutoff=4)
    circuit = Circuit([ExpGate(PauliOperator({"XI": 1.0}, 2))], 2, parameters=[0.3])
    if route == "propagate":
        prop.propagate(circuit, only_rotate_len_k=k)
        terms = prop.evolved_operator().terms
    else:
        prop.build_graph(circuit, only_rotate_len_k=k)
        terms = prop.evolved_operator([0.3]).terms
    assert_terms(dr.pauli_terms_to_strings(terms, 2), expected, f"k={k}")


def test_only_rotate_none_is_identical_to_omitting_it():
    props = []
    for kwargs in ({}, {"only_rotate_len_k": None}):
        prop = MajoranaPropagator(MajoranaOperator(EX_H_OBS, 4), [], cutoff=3)
        prop.build_graph(structural_gate((2, 3), 4, 0.3), **kwargs)
        props.append(prop)
    assert props[0].size() == props[1].size()
    assert props[0].graph_size() == props[1].graph_size()
    assert props[0].evolved_operator([0.3]) == props[1].evolved_operator([0.3])


# ---------------------------------------------------------------------------------------
# Schrödinger initial state expansion: 2^n rho = prod_j (1 ± Z_j), - for occupied modes,
# kept up to products of p = ceil(min(sc, 2n) / 2) factors Z_j (Pauli: min(sc, n) factors)
# ---------------------------------------------------------------------------------------


def z_products(n, max_factors):
    return [s for k in range(max_factors + 1) for s in combinations(range(n), k)]


def expected_majorana_state(n, occupied, p):
    """prod_j (1 + s_j Z_j), Z_j = -i m_{2j} m_{2j+1}, truncated to <= p factors."""
    out = {}
    for modes in z_products(n, p):
        sign = (-1) ** sum(1 for j in modes if j in occupied)
        key = tuple(k for j in modes for k in (2 * j, 2 * j + 1))
        out[key] = sign * (-1j) ** len(modes)
    return out


def expected_pauli_state(n, occupied, p):
    out = {}
    for qubits in z_products(n, p):
        sign = (-1) ** sum(1 for j in qubits if j in occupied)
        out[dr.widen_pauli("Z" * len(qubits), qubits, n)] = float(sign)
    return out


# Term counts sum_{k<=p} C(4, k) on 4 modes, p = ceil(min(sc, 2n) / 2): 1, 5, 11, 15, 16.
@pytest.mark.parametrize(
    "sc,count,max_length",
    [
        (0, 1, 0),
        (1, 5, 2),
        (2, 5, 2),
        (3, 11, 4),
        (4, 11, 4),
        (5, 15, 6),
        (6, 15, 6),
        (7, 16, 8),
        (8, 16, 8),
        (100, 16, 8),
    ],
)
def test_majorana_schrodinger_expansion_counts(sc, count, max_length):
    prop = MajoranaPropagator(
        MajoranaOperator({(0, 1): 1j}, 4), [], cutoff=8, schrodinger_cutoff=sc
    )
    assert prop.size() == count
    state = prop.evolved_operator(atol=0.0).terms
    assert len(state) == count
    assert max(len(k) for k in state) == max_length
    assert_terms(state, expected_majorana_state(4, set(), max_length // 2), f"sc={sc}")


@pytest.mark.parametrize("sc,count", [(0, 1), (1, 5), (2, 11), (3, 15), (4, 16), (9, 16)])
def test_pauli_schrodinger_expansion_counts(sc, count):
    prop = PauliPropagator(PauliOperator({"ZIII": 1.0}, 4), [], cutoff=4, schrodinger_cutoff=sc)
    assert prop.size() == count
    state = dr.pauli_terms_to_strings(prop.evolved_operator(atol=0.0).terms, 4)
    assert_terms(state, expected_pauli_state(4, set(), min(sc, 4)), f"sc={sc}")


@pytest.mark.parametrize("occupied", [[1], [0, 2], [0, 1, 2]])
def test_schrodinger_expansion_signs_for_occupied_modes(occupied):
    n = 3
    mprop = MajoranaPropagator(MajoranaOperator({}, n), occupied, cutoff=6, schrodinger_cutoff=4)
    assert_terms(
        mprop.evolved_operator(atol=0.0).terms, expected_majorana_state(n, set(occupied), 2)
    )
    pprop = PauliPropagator(PauliOperator({}, n), occupied, cutoff=3, schrodinger_cutoff=2)
    assert_terms(
        dr.pauli_terms_to_strings(pprop.evolved_operator(atol=0.0).terms, n),
        expected_pauli_state(n, set(occupied), 2),
    )
    # Full expansion = 2^n |ref><ref| of the dense reference.
    full = PauliPropagator(PauliOperator({}, n), occupied, cutoff=3, schrodinger_cutoff=3)
    dense = dr.real_coefficients(dr.pauli_decompose(dr.reference_R(occupied, n), n))
    assert_terms(dr.pauli_terms_to_strings(full.evolved_operator(atol=0.0).terms, n), dense)


@pytest.mark.parametrize("sc", [1, 2, 3, 4, 6])
def test_pauli_schrodinger_max_weight_equals_cutoff(sc):
    n = 10
    prop = PauliPropagator(
        PauliOperator({"ZZ" + "I" * 8: 1.0}, n), [], cutoff=4, schrodinger_cutoff=sc
    )
    state = prop.evolved_operator(atol=0.0).terms
    assert max(len(p.qubits) for p in state) == sc
    assert len(state) == sum(math.comb(n, k) for k in range(sc + 1))
    # <Z0 Z1> of the vacuum is 1 once Z0Z1 is in the expansion.
    assert prop.expectation_value() == pytest.approx(1.0 if sc >= 2 else 0.0, abs=1e-12)


# ---------------------------------------------------------------------------------------
# Schrödinger: evolution of the state is truncated by `cutoff`, not by `schrodinger_cutoff`
# ---------------------------------------------------------------------------------------
# Pauli, vacuum, gate X0X1 at 0.3: U Z0 U^dagger = cos(0.6) Z0 + sin(0.6) Y0X1, so
# <Y0X1> = sin(0.6) iff the weight-2 partner survives.


@pytest.mark.parametrize(
    "cutoff,sc,expected",
    [
        (1, 2, 0.0),  # partner of weight 2 > cutoff 1: dropped even though sc = 2
        (2, 1, S06),  # partner weight 2 > sc = 1 but <= cutoff: kept
        (2, 2, S06),
    ],
)
def test_pauli_schrodinger_evolution_uses_cutoff(cutoff, sc, expected):
    dense = dr.circuit_expectation(
        dr.pauli_string_matrix("YX"), [], 2, [dr.pauli_string_matrix("XX")], [0.3]
    )
    assert dense == pytest.approx(S06, abs=1e-12)
    prop = PauliPropagator(PauliOperator({"YX": 1.0}, 2), [], cutoff=cutoff, schrodinger_cutoff=sc)
    prop.propagate(Circuit([ExpGate(PauliOperator({"XX": 1.0}, 2))], 2, parameters=[0.3]))
    assert prop.expectation_value() == pytest.approx(expected, abs=1e-12)
    state = dr.pauli_terms_to_strings(prop.evolved_operator().terms, 2)
    assert ("YX" in state) == (expected != 0.0)
    if expected:
        assert state["YX"] == pytest.approx(S06, abs=ATOL)


# Majorana, vacuum on 2 modes, structural gate (1,2) at 0.3: <i m0m2> = sin(0.6);
# the state term -i m0m1 evolves into a length-2 partner ~ m0m2.
@pytest.mark.parametrize("cutoff,sc,expected", [(1, 4, 0.0), (2, 2, S06), (2, 4, S06)])
def test_majorana_schrodinger_evolution_uses_cutoff(cutoff, sc, expected):
    dense = dr.circuit_expectation(
        dr.majorana_operator_matrix({(0, 2): 1j}, 2),
        [],
        2,
        [dr.majorana_operator_matrix({(1, 2): dr.structural_to_bare((1, 2), 1.0)}, 2)],
        [0.3],
    )
    assert dense == pytest.approx(S06, abs=1e-12)
    prop = MajoranaPropagator(
        MajoranaOperator({(0, 2): 1j}, 2), [], cutoff=cutoff, schrodinger_cutoff=sc
    )
    prop.propagate(structural_gate((1, 2), 2, 0.3))
    assert prop.expectation_value() == pytest.approx(expected, abs=1e-12)


def test_schrodinger_full_cutoff_matches_dense_state():
    # A two-gate Pauli circuit on 3 qubits, occupied [1]: the whole state 2^n rho(theta).
    n, occupied = 3, [1]
    gens = [{"XYI": 0.7}, {"IZX": -0.4, "ZII": 0.3}]
    params = [0.45, -0.8]
    prop = PauliPropagator(PauliOperator({"ZZZ": 1.0}, n), occupied, cutoff=3, schrodinger_cutoff=3)
    prop.propagate(Circuit([ExpGate(PauliOperator(g, n)) for g in gens], n, parameters=params))
    u = dr.circuit_unitary([dr.pauli_operator_matrix(g, n) for g in gens], params)
    dense = dr.real_coefficients(dr.pauli_decompose(dr.schrodinger_R(occupied, n, u), n))
    worst, key = dr.max_coefficient_difference(
        dr.pauli_terms_to_strings(prop.evolved_operator().terms, n), dense
    )
    assert worst <= ATOL, key
    assert np.isclose(
        prop.expectation_value(),
        dr.expectation(dr.pauli_string_matrix("ZZZ"), occupied, n, u),
        atol=1e-12,
    )
