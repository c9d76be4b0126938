"""ExpGate and Circuit: construction, validation, mapping, concatenation.

A gate ``ExpGate(H, index)`` is ``exp(+i theta H)`` for a Hermitian generator whose terms
pairwise commute (terms at or below ``atol`` dropped first); a ``Circuit`` lists gates of one
family in application order with the system size, optional bound parameters and an optional
initial state. Either every gate sets an ``index`` (gates sharing one share a parameter; the
indices must cover 0..max) or none does (one parameter per gate).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from monoprop.circuit import Circuit, CircuitFamily, ExpGate, GateFamily
from monoprop.fermi import FermiOperator, FermiString
from monoprop.majorana import Majorana, MajoranaOperator
from monoprop.pauli import Pauli, PauliOperator


def pgate(terms, n=2, index=None, **kwargs):
    return ExpGate(PauliOperator(terms, n), index, **kwargs)


def mgate(terms, n=2, index=None, **kwargs):
    return ExpGate(MajoranaOperator(terms, n), index, **kwargs)


def flat_monomials(circuit):
    return [key for gate in circuit for key in gate.generator.terms]


# --------------------------------------------------------------------------- ExpGate


class TestExpGateFamily:
    def test_pauli_operator_is_pauli_family(self):
        gate = pgate({"XZ": 0.5})
        assert gate.family == "pauli"
        assert isinstance(gate.generator, PauliOperator)
        assert gate.system_size == 2

    def test_majorana_operator_is_majorana_family(self):
        gate = mgate({(0, 1): 1j}, n=3)
        assert gate.family == "majorana"
        assert isinstance(gate.generator, MajoranaOperator)
        assert gate.system_size == 3

    def test_fermi_operator_is_converted(self):
        hop = FermiOperator([[(0, "+"), (1, "-")], [(1, "+"), (0, "-")]], [1.0, 1.0], 2)
        gate = ExpGate(hop)
        assert gate.family == "majorana"
        # The m0m2 and m1m3 entries of the hopping term cancel to zero: below atol, dropped.
        assert gate.generator == MajoranaOperator({(0, 3): 0.5j, (1, 2): -0.5j}, 2)

    def test_duck_typed_generator(self):
        class Custom:
            def get_majorana_operator(self):
                return MajoranaOperator({(2,): 1.0}, 2)

        gate = ExpGate(Custom())
        assert gate.family == "majorana"
        assert gate.generator == MajoranaOperator({(2,): 1.0}, 2)

    @pytest.mark.parametrize(
        "bad",
        [Pauli("X"), Majorana(0, 1), FermiString([(0, "+")]), {"X": 1.0}, "X", 1.0, None],
        ids=["Pauli", "Majorana", "FermiString", "dict", "str", "float", "None"],
    )
    def test_non_operator_is_type_error(self, bad):
        with pytest.raises(TypeError, match="not a bare term"):
            ExpGate(bad)

    def test_family_aliases(self):
        assert GateFamily.__args__ == ("pauli", "majorana")
        assert CircuitFamily.__args__ == ("pauli", "majorana", "empty")


class TestExpGateTruncation:
    def test_atol_boundary_is_dropped(self):
        gate = pgate({"XI": 1e-8, "ZI": 1.0000001e-8, "IZ": 2.0})
        assert gate.generator.terms == {Pauli("Z", 0): 1.0000001e-8, Pauli("Z", 1): 2.0}

    def test_custom_atol(self):
        gate = mgate({(0, 1): 0.1j, (0, 1, 2, 3): 1.0}, atol=0.1)
        assert gate.generator.terms == {(0, 1, 2, 3): 1.0}
        assert gate._atol == 0.1

    def test_generator_is_new_object_and_input_untouched(self):
        op = PauliOperator({"XX": 1.0, "ZZ": 1e-12}, 2)
        gate = ExpGate(op)
        assert gate.generator is not op
        assert type(gate.generator) is PauliOperator
        assert len(op) == 2 and len(gate.generator) == 1

    def test_majorana_generator_is_new_object(self):
        op = MajoranaOperator({(0, 1): 1j}, 2)
        gate = ExpGate(op)
        assert gate.generator is not op and gate.generator == op

    def test_non_commuting_terms(self):
        with pytest.raises(
            ValueError, match=r"The provided generator must be composed of commuting terms\."
        ):
            pgate({"XI": 1.0, "ZI": 1.0})
        with pytest.raises(ValueError, match="commuting terms"):
            mgate({(0,): 1.0, (1,): 1.0})

    def test_commutation_checked_after_dropping(self):
        gate = pgate({"XI": 1.0, "ZI": 1e-9})
        assert gate.generator.terms == {Pauli("X", 0): 1.0}

    def test_commuting_multi_term(self):
        gate = pgate({"XX": 1.0, "YY": 0.5, "ZZ": -0.25})
        assert len(gate.generator) == 3


class TestExpGateAttributes:
    def test_index_conversion(self):
        assert pgate({"X": 1}, 1).index is None
        gate = pgate({"X": 1}, 1, index=1.0)
        assert gate.index == 1 and type(gate.index) is int
        assert type(pgate({"X": 1}, 1, index=np.int64(3)).index) is int

    def test_slots(self):
        assert ExpGate.__slots__ == ("_atol", "_structural", "family", "generator", "index")
        gate = pgate({"X": 1}, 1)
        assert not hasattr(gate, "__dict__")
        with pytest.raises(AttributeError):
            gate.param = 1  # no param= mechanism exists

    def test_no_param_keyword(self):
        with pytest.raises(TypeError):
            ExpGate(PauliOperator({"X": 1}, 1), param=0)

    def test_equality(self):
        a = pgate({"XX": 1.0}, index=0)
        assert a == pgate({"XX": 1.0}, index=0)
        assert a != pgate({"XX": 1.0}, index=1)
        assert a != pgate({"XX": 2.0}, index=0)
        assert a != pgate({"XX": 1.0}, n=3, index=0)
        assert a != "gate" and a != 3
        assert not (a == None)  # noqa: E711

    def test_structural_never_equals_hermitian(self):
        op = MajoranaOperator({(0, 1): 1.0}, 2)
        assert ExpGate._structural_gate(op, 0) != ExpGate(op, 0)
        assert ExpGate._structural_gate(op, 0) == ExpGate(op, 0, _structural=True)

    def test_unhashable(self):
        with pytest.raises(TypeError):
            hash(pgate({"X": 1}, 1))

    def test_repr(self):
        gate = pgate({"XZ": 1.0}, index=2)
        assert repr(gate) == (
            "ExpGate(PauliOperator(1 terms, 2 qubits: 1.0*Pauli('XZ', (0, 1))), index=2)"
        )
        assert repr(mgate({(0, 1): 1j})).startswith("ExpGate(MajoranaOperator(")

    def test_with_index_preserves_atol_and_structural(self):
        gate = ExpGate._structural_gate(MajoranaOperator({(0, 1): 0.5, (2, 3): 0.2}, 2), None)
        gate = ExpGate(gate.generator, None, atol=0.3, _structural=True)
        clone = ExpGate._with_index(gate, 4)
        assert clone.index == 4 and clone._atol == 0.3 and clone._structural
        assert clone.generator == gate.generator and clone.generator is not gate.generator
        assert gate.index is None

    def test_structural_gate(self):
        gate = ExpGate._structural_gate(MajoranaOperator({(0, 1): -1.0}, 2), 3)
        assert gate._structural and gate.index == 3 and gate.family == "majorana"
        assert not mgate({(0, 1): 1j})._structural

    def test_pickle(self):
        gate = ExpGate(MajoranaOperator({(0, 1): 1j}, 2), 1, atol=1e-3, _structural=True)
        clone = pickle.loads(pickle.dumps(gate))
        assert clone == gate and clone._atol == 1e-3


# --------------------------------------------------------------------------- Circuit


class TestCircuitValidation:
    def test_positional_order(self):
        gates = [pgate({"XI": 1.0}), pgate({"IZ": 1.0})]
        c = Circuit(gates, 2, [0.1, 0.2], [1])
        assert c.system_size == 2 and c.parameters == (0.1, 0.2) and c.initial_state == (1,)
        assert Circuit(gates, 2).parameters == ()

    def test_non_gate(self):
        with pytest.raises(TypeError, match="Circuit gates must be ExpGate"):
            Circuit([PauliOperator({"X": 1.0}, 1)], 1)

    def test_size_mismatch(self):
        with pytest.raises(ValueError, match="does not match circuit system_size"):
            Circuit([pgate({"XI": 1.0}, n=2)], 3)

    def test_mixing_families(self):
        gates = [pgate({"XI": 1.0}), mgate({(0, 1): 1j})]
        with pytest.raises(TypeError, match="cannot mix qubit and Majorana"):
            Circuit(gates, 2)
        with pytest.raises(TypeError, match="mix"):
            Circuit(gates[::-1], 2)

    @pytest.mark.parametrize(
        ("size", "error", "fragment"),
        [
            (True, TypeError, r"system_size must be an integer \(not bool\)"),
            (2.0, TypeError, r"system_size must be an integer \(not float\)"),
            ("2", TypeError, r"system_size must be an integer \(not str\)"),
            (-1, ValueError, "system_size must be non-negative; got -1"),
        ],
    )
    def test_system_size_rule(self, size, error, fragment):
        with pytest.raises(error, match=fragment):
            Circuit([], size)

    def test_zero_size_is_allowed(self):
        c = Circuit([], 0)
        assert c.system_size == 0 and c.family == "empty"

    def test_parameters_become_float_tuple(self):
        c = Circuit([pgate({"XI": 1.0}), pgate({"IX": 1.0})], 2, np.array([1, 2]))
        assert c.parameters == (1.0, 2.0)
        assert all(type(p) is float for p in c.parameters)

    def test_initial_state_none_and_vacuum(self):
        c = Circuit([], 2)
        assert c.initial_state == () and c._state_given is False
        c = Circuit([], 2, initial_state=())
        assert c.initial_state == () and c._state_given is True

    def test_initial_state_converted(self):
        c = Circuit([], 3, initial_state=np.array([2, 0]))
        assert c.initial_state == (2, 0) and all(type(i) is int for i in c.initial_state)

    def test_initial_state_duplicates(self):
        with pytest.raises(ValueError, match="Duplicate indices in initial state"):
            Circuit([], 3, initial_state=[1, 1])

    @pytest.mark.parametrize("state", [[0, 2], [-1]])
    def test_initial_state_range(self, state):
        with pytest.raises(ValueError, match=r"initial_state entries must be in 0\.\.1; got \["):
            Circuit([], 2, initial_state=state)


class TestParameterMapping:
    def test_default_mapping(self):
        c = Circuit([pgate({"XI": 1.0}), pgate({"IX": 1.0}), pgate({"ZZ": 1.0})], 2)
        assert c.resolved_mapping == (0, 1, 2)
        assert c.n_parameters == 3

    def test_explicit_shared_indices(self):
        c = Circuit(
            [pgate({"XI": 1.0}, index=1), pgate({"IX": 1.0}, index=0), pgate({"ZZ": 1.0}, index=1)],
            2,
            [0.5, 0.6],
        )
        assert c.resolved_mapping == (1, 0, 1)
        assert c.n_parameters == 2

    @pytest.mark.parametrize("indices", [(0, 2), (1, 1), (-1, 0), (-1, -1)])
    def test_not_contiguous(self, indices):
        gates = [pgate({"XI": 1.0}, index=i) for i in indices]
        with pytest.raises(ValueError, match="contiguous"):
            Circuit(gates, 2)

    def test_mixed_indices(self):
        gates = [pgate({"XI": 1.0}, index=0), pgate({"IX": 1.0})]
        with pytest.raises(ValueError, match="every gate must set"):
            Circuit(gates, 2)

    def test_empty(self):
        c = Circuit([], 2)
        assert c.resolved_mapping == () and c.n_parameters == 0 and c.family == "empty"

    def test_bound_needs_one_value_per_parameter(self):
        with pytest.raises(ValueError, match="1 parameters"):
            Circuit([pgate({"XI": 1.0})], 2, [0.1, 0.2])
        shared = [pgate({"XI": 1.0}, index=0), pgate({"IX": 1.0}, index=0)]
        with pytest.raises(ValueError, match="1 parameter"):
            Circuit(shared, 2, [0.1, 0.2])
        assert Circuit(shared, 2, [0.1]).parameters == (0.1,)

    def test_message_names_both_counts(self):
        with pytest.raises(ValueError, match="parameters has 3 values but the circuit has 2 "):
            Circuit([pgate({"XI": 1.0}), pgate({"IX": 1.0})], 2, [1, 2, 3])


class TestIdentityGates:
    def identity_gates(self):
        empty = ExpGate(PauliOperator({}, 2))
        zero = ExpGate(PauliOperator({"XX": 0.0}, 2), atol=-1.0)  # zero term survives atol<0
        assert len(zero.generator) == 1
        return empty, zero

    def test_dropped_with_their_parameters(self):
        empty, zero = self.identity_gates()
        x, z = pgate({"XI": 1.0}), pgate({"IZ": 2.0})
        c = Circuit([empty, x, zero, z], 2, [0.1, 0.2, 0.3, 0.4])
        assert c.gates == (x, z) and len(c) == 2
        assert c.parameters == (0.2, 0.4)
        assert c.resolved_mapping == (0, 1)

    def test_unbound_drop(self):
        empty, _ = self.identity_gates()
        c = Circuit([empty, pgate({"XI": 1.0})], 2)
        assert len(c) == 1 and c.parameters == () and c.n_parameters == 1

    def test_count_against_original_gates(self):
        empty, _ = self.identity_gates()
        with pytest.raises(ValueError, match="2 gates"):
            Circuit([empty, pgate({"XI": 1.0})], 2, [0.1])

    def test_all_dropped(self):
        empty, zero = self.identity_gates()
        c = Circuit([empty, zero], 2, [1.0, 2.0])
        assert len(c) == 0 and c.family == "empty" and c.parameters == ()

    def test_kept_with_explicit_indices(self):
        empty = ExpGate(PauliOperator({}, 2), 0)
        c = Circuit([empty, pgate({"XI": 1.0}, index=1)], 2, [0.1, 0.2])
        assert len(c) == 2 and c.resolved_mapping == (0, 1) and c.parameters == (0.1, 0.2)

    def test_identity_term_is_not_an_identity_gate(self):
        # exp(iθ c I) is a global phase but still a gate with a nonzero coefficient.
        c = Circuit([ExpGate(PauliOperator({"": 1.0}, 2))], 2)
        assert len(c) == 1

    def test_majorana_identity_gate(self):
        c = Circuit([mgate({(0, 1): 1e-12j}), mgate({(0, 1): 1j})], 2, [5.0, 6.0])
        assert len(c) == 1 and c.parameters == (6.0,)


class TestCircuitProtocol:
    def test_family(self):
        assert Circuit([pgate({"XI": 1.0})], 2).family == "pauli"
        assert Circuit([mgate({(0, 1): 1j})], 2).family == "majorana"

    def test_len_iter(self):
        gates = [pgate({"XI": 1.0}), pgate({"IX": 1.0})]
        c = Circuit(gates, 2)
        assert len(c) == 2 and list(c) == gates

    def test_equality(self):
        def make(params=(0.1,), state=None, size=2, coeff=1.0):
            return Circuit([pgate({"XI": coeff}, n=size)], size, params, state)

        assert make() == make()
        assert make() != make(params=(0.2,))
        assert make() != make(state=[1])
        assert make() != make(size=3)
        assert make() != make(coeff=2.0)
        assert make() != "circuit"
        # None and () store the same initial_state tuple.
        assert make(state=None) == make(state=())

    def test_unhashable(self):
        with pytest.raises(TypeError):
            hash(Circuit([], 1))

    def test_repr(self):
        c = Circuit([pgate({"XI": 1.0})], 2, [0.5], [1])
        assert repr(c) == (
            "Circuit(gates=[ExpGate(PauliOperator(1 terms, 2 qubits: 1.0*Pauli('X', (0,))), "
            "index=None)], parameters=(0.5,), initial_state=(1,), system_size=2)"
        )

    def test_pickle(self):
        c = Circuit([mgate({(0, 1): 1j}, index=0)], 2, [0.5], [1])
        clone = pickle.loads(pickle.dumps(c))
        assert clone == c and clone._state_given and clone.resolved_mapping == (0,)


# --------------------------------------------------------------------------- __add__


class TestConcatenation:
    def test_example(self):
        a = Circuit([pgate({"XI": 1.0}), pgate({"IZ": 1.0})], 2, [0.1, 0.2])
        b = Circuit([pgate({"YY": 1.0})], 2, [0.3])
        c = a + b
        assert c.resolved_mapping == (0, 1, 2)
        assert c.parameters == (0.1, 0.2, 0.3)
        assert c.n_parameters == 3
        assert all(g.index is not None for g in c)
        assert [g.generator for g in c] == [g.generator for g in [*a, *b]]

    def test_shared_indices_shift(self):
        a = Circuit([pgate({"XI": 1.0}, index=0), pgate({"IX": 1.0}, index=0)], 2, [0.1])
        b = Circuit([pgate({"ZI": 1.0}, index=1), pgate({"IZ": 1.0}, index=0)], 2, [0.2, 0.3])
        c = a + b
        assert c.resolved_mapping == (0, 0, 2, 1)
        assert c.parameters == (0.1, 0.2, 0.3)
        # Operands are unchanged.
        assert a.resolved_mapping == (0, 0) and b.resolved_mapping == (1, 0)

    def test_unbound(self):
        a = Circuit([pgate({"XI": 1.0})], 2)
        c = a + a
        assert c.parameters == () and c.n_parameters == 2

    def test_bound_plus_unbound(self):
        with pytest.raises(ValueError, match="bound"):
            Circuit([pgate({"XI": 1.0})], 2, [0.1]) + Circuit([pgate({"XI": 1.0})], 2)

    def test_non_circuit(self):
        with pytest.raises(TypeError):
            Circuit([], 2) + 1
        assert Circuit([], 2).__add__([]) is NotImplemented

    def test_families_differ(self):
        with pytest.raises(TypeError, match="gate families differ"):
            Circuit([pgate({"XI": 1.0})], 2) + Circuit([mgate({(0, 1): 1j})], 2)

    def test_empty_joins_any_family(self):
        m = Circuit([mgate({(0, 1): 1j})], 2, [0.4])
        assert (Circuit([], 2) + m).family == "majorana"
        assert (m + Circuit([], 2)).family == "majorana"
        assert (m + Circuit([], 2)).parameters == (0.4,)

    def test_different_system_size(self):
        with pytest.raises(ValueError, match="different system_size"):
            Circuit([], 2) + Circuit([], 3)

    def test_different_initial_states(self):
        with pytest.raises(ValueError, match="different initial states"):
            Circuit([], 2, initial_state=[0]) + Circuit([], 2, initial_state=[1])
        with pytest.raises(ValueError, match="different initial states"):
            Circuit([], 2, initial_state=[0]) + Circuit([], 2, initial_state=())

    def test_initial_state_resolution(self):
        given, other, none = (
            Circuit([], 3, initial_state=[2, 0]),
            Circuit([], 3, initial_state=[1]),
            Circuit([], 3),
        )
        assert (given + none).initial_state == (2, 0) and (given + none)._state_given
        assert (none + other).initial_state == (1,) and (none + other)._state_given
        assert not (none + none)._state_given
        # Same set of occupied modes in another order is the same state: self's is kept.
        assert (given + Circuit([], 3, initial_state=[0, 2])).initial_state == (2, 0)

    def test_clones_preserve_atol_and_structural(self):
        a = Circuit.from_dense_arrays([(0, 1)], [0.5], [0], 2, [0.1])
        gate = ExpGate(PauliOperator({"X": 1.0}, 1), atol=0.25)
        b = Circuit([gate], 1, [0.2])
        c = a + a
        assert all(g._structural for g in c)
        assert (b + b).gates[1]._atol == 0.25
        assert c.initial_state == () and c._state_given


# --------------------------------------------------------------------------- from_dense_arrays


class TestFromDenseArrays:
    def test_example(self):
        c = Circuit.from_dense_arrays(
            [(0, 1), (2, 3), (0, 3)], [0.5, -0.5, 1.0], [0, 0, 1], 2, [1.0, 2.0], [0, 1]
        )
        assert len(c) == 2
        assert [len(g.generator) for g in c] == [2, 1]
        assert c.resolved_mapping == (0, 1)
        assert c.initial_state == (0, 1)
        assert c.parameters == (1.0, 2.0)
        assert c.family == "majorana"
        assert all(g._structural for g in c)
        # Structural coefficients are stored as complex(g), not converted to c.
        assert c.gates[0].generator.terms == {(0, 1): 0.5 + 0j, (2, 3): -0.5 + 0j}
        assert all(type(v) is complex for g in c for v in g.generator.terms.values())

    def test_terms_keep_input_order(self):
        majoranas = [(2, 3), (0, 1), (4, 5), (0, 1, 2, 3)]
        c = Circuit.from_dense_arrays(majoranas, [1.0, 2.0, 3.0, 4.0], [0, 0, 0, 1], 3)
        assert flat_monomials(c) == majoranas

    def test_non_consecutive_repeat_is_separate_gate(self):
        c = Circuit.from_dense_arrays([(0, 1), (2, 3), (4, 5)], [1.0, 1.0, 1.0], [0, 1, 0], 3)
        assert len(c) == 3
        assert c.resolved_mapping == (0, 1, 0)
        assert c.n_parameters == 2

    def test_index_conversion(self):
        c = Circuit.from_dense_arrays([np.array([0, 1])], np.array([0.5]), np.array([0]), 1, [0.1])
        assert flat_monomials(c) == [(0, 1)]
        assert all(type(i) is int for i in flat_monomials(c)[0])
        assert type(c.gates[0].index) is int

    def test_unsorted_canonicalised_with_sign(self):
        c = Circuit.from_dense_arrays([(1, 0), (5, 4, 1)], [0.5, 2.0], [0, 1], 3)
        assert c.gates[0].generator.terms == {(0, 1): -0.5}
        assert c.gates[1].generator.terms == {(1, 4, 5): -2.0}

    def test_negative_index(self):
        with pytest.raises(ValueError, match="must be non-negative"):
            Circuit.from_dense_arrays([(0, -1)], [1.0], [0], 2)

    def test_out_of_range(self):
        with pytest.raises(ValueError, match=r"acts on an index >= 2\*system_size"):
            Circuit.from_dense_arrays([(0, 4)], [1.0], [0], 2)
        # 2*system_size - 1 is the last valid index.
        assert len(Circuit.from_dense_arrays([(0, 3)], [1.0], [0], 2)) == 1

    def test_non_commuting_group(self):
        with pytest.raises(ValueError, match="commuting"):
            Circuit.from_dense_arrays([(0,), (1,)], [1.0, 1.0], [0, 0], 1)
        # In separate (non-consecutive) groups they are fine.
        assert len(Circuit.from_dense_arrays([(0,), (1,)], [1.0, 1.0], [0, 1], 1)) == 2

    def test_complex_coefficient_rejected(self):
        with pytest.raises(TypeError):
            Circuit.from_dense_arrays([(0, 1)], [1j], [0], 1)
        with pytest.raises(TypeError):
            Circuit.from_dense_arrays([(0, 1)], np.array([1 + 0j]), [0], 1)

    def test_length_mismatch(self):
        with pytest.raises(ValueError, match="same length"):
            Circuit.from_dense_arrays([(0, 1)], [1.0, 2.0], [0], 1)

    def test_empty_arrays(self):
        c = Circuit.from_dense_arrays([], [], [], 3)
        assert len(c) == 0 and c.family == "empty" and c.n_parameters == 0

    def test_state_is_always_explicit(self):
        c = Circuit.from_dense_arrays([(0, 1)], [1.0], [0], 1)
        assert c.initial_state == () and c._state_given is True

    def test_parameter_mapping_errors(self):
        with pytest.raises(ValueError, match="contiguous"):
            Circuit.from_dense_arrays([(0, 1), (2, 3)], [1.0, 1.0], [0, 2], 2)
        with pytest.raises(ValueError, match="1 parameters"):
            Circuit.from_dense_arrays([(0, 1)], [1.0], [0], 1, [0.1, 0.2])

    def test_system_size_rule(self):
        with pytest.raises(TypeError, match="system_size must be an integer"):
            Circuit.from_dense_arrays([], [], [], 2.0)
