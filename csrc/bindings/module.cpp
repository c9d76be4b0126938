// pybind11 module monoprop._core: translates Python values (numpy arrays and
// the monoprop.core_arrays structures) to the core's types and back, nothing
// else; the algebra lives in the core (csrc/monoprop).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <complex>
#include <cstring>
#include <optional>
#include <utility>

#include "conversions.h"
#include "monoprop/majorana_phase.h"
#include "monoprop/monomial_propagator.h"

namespace py = pybind11;
using namespace monoprop;

namespace {

// Ctrl-C. Python runs signal handlers on its main thread only, and only when
// asked (PyErr_CheckSignals), so an operation that holds the thread in the
// core asks for it: the core calls this on the calling thread, between layers
// and inside long ones, at most every 0.1 s (interrupt.h). A handler that
// raises (the default SIGINT handler raises KeyboardInterrupt) stops the
// operation; its exception waits in `pending_error` until the Interrupted it
// becomes is translated back into it, on the same thread. A progress callback
// that raises (Ctrl-C while it runs, most often) stops the operation the same way.
unsigned long main_thread_ident = 0;
thread_local py::error_already_set* pending_error = nullptr;

// Keeps `error` (GIL held) for the translation of the Interrupted that follows.
void keep_error(py::error_already_set error) {
  delete pending_error;
  pending_error = new py::error_already_set(std::move(error));
}

bool python_signal_pending() {
  if (PyThread_get_thread_ident() != main_thread_ident) return false;
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return false;
  keep_error(py::error_already_set());  // takes the error out of the interpreter
  return true;
}

Family parse_family(const std::string& name) {
  if (name == "pauli") return Family::Pauli;
  if (name == "majorana") return Family::Majorana;
  throw std::invalid_argument("Unknown family string: '" + name + "'. Valid options are: 'pauli', 'majorana'.");
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "monoprop's compiled propagation core.";
  // The Python class lives in monoprop.exceptions; look it up when needed.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidPropagator& e) {
      py::object cls = py::module_::import("monoprop.exceptions").attr("InvalidPropagatorError");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const MultiShardUnsupported& e) {
      py::object cls = py::module_::import("monoprop.exceptions").attr("MultiShardUnsupported");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const MemoryBudgetError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const Interrupted& e) {
      if (py::error_already_set* pending = std::exchange(pending_error, nullptr)) {
        pending->restore();
        delete pending;
      } else {
        PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
      }
    }
  });
  main_thread_ident = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  m.attr("MAX_NUM_MODES") = kMaxNumModes;
  m.attr("has_mpi") = mpi::available();
  m.def("mpi_library_version", &mpi::library_version,
        "The MPI library this build links (empty without MPI), to compare with mpi4py's.");
  m.attr("__build_type__") = MONOPROP_BUILD_TYPE;
  m.def("thread_budget_from_environment", &thread_budget_from_environment,
        "The thread budget a propagator constructed now would take: monoprop_NUM_THREADS, parsed strictly, else "
        "the OpenMP default.");

  m.def(
      "is_antihermitian",
      [](const std::vector<py::object>& indices) { return is_antihermitian_product(indices.size()); },
      py::arg("indices"),
      R"doc(True iff the bare product of ``len(indices)`` Majoranas is anti-Hermitian (w mod 4 in {2, 3}).

>>> from monoprop import is_antihermitian
>>> is_antihermitian([0, 1]), is_antihermitian([0, 1, 2, 3])
(True, False)
)doc");
  m.def(
      "antihermitian_generator_correction",
      [](const std::vector<py::object>& indices) { return antihermitian_generator_correction(indices.size()); },
      py::arg("indices"),
      R"doc(``i ** (C(w, 2) + 1)`` for ``w = len(indices)``.

>>> from monoprop import antihermitian_generator_correction
>>> antihermitian_generator_correction([0, 1])
(-1+0j)
)doc");

  py::class_<MonomialPropagator> cls(m, "Engine", "One propagator's compiled state (internal).");
  cls.def(py::init([](const std::string& family, int num_modes, const TermArrays& initial_operator,
                      std::vector<int> occupied, std::optional<int> schrodinger_slots, std::int64_t cutoff,
                      const std::string& cutoff_type, std::optional<double> lower, std::optional<double> upper,
                      std::optional<BasisChange> basis_change, std::optional<std::uintptr_t> comm_handle,
                      std::optional<std::uint64_t> memory_limit, bool truncate_to_fit) {
            Config config;
            config.memory_limit = memory_limit;
            config.truncate_to_fit = truncate_to_fit;
            config.family = parse_family(family);
            config.num_modes = num_modes;
            config.initial_operator = to_terms(initial_operator);
            config.occupied = std::move(occupied);
            config.schrodinger_cutoff = schrodinger_slots;
            config.truncation = {cutoff, parse_cutoff_type(cutoff_type), lower, upper};
            // The address of an mpi4py communicator's MPI_Comm (MPI._addressof).
            if (comm_handle) config.comm = mpi::Comm::from_handle(reinterpret_cast<const void*>(*comm_handle));
            auto engine = make_propagator(std::move(config), basis_change.value_or(BasisChange{}));
            engine->set_interrupt_check(&python_signal_pending);
            return engine;
          }),
          py::kw_only(), py::arg("family"), py::arg("num_modes"), py::arg("initial_operator"), py::arg("occupied"),
          py::arg("schrodinger_slots"), py::arg("cutoff"), py::arg("cutoff_type"), py::arg("lower_atol"),
          py::arg("upper_atol"), py::arg("basis_change") = py::none(), py::arg("comm_handle") = py::none(),
          py::arg("memory_limit") = py::none(), py::arg("truncate_to_fit") = false,
          R"doc(A propagator of ``initial_operator`` on ``num_modes`` modes (or qubits, for
``family="pauli"``) from the product state with ``occupied`` modes set.

``schrodinger_slots`` (None: Heisenberg picture) bounds the Schrodinger state's terms in
slots; ``cutoff`` and ``cutoff_type`` ("length" or "support") bound new terms, and
``lower_atol`` and ``upper_atol`` steer truncation by coefficient. ``comm_handle`` is the
address of an mpi4py communicator's MPI_Comm. ``memory_limit`` (bytes; None: monoprop_MEMORY_LIMIT,
else the default from the available memory) is the memory budget; ``truncate_to_fit`` thins a layer
that would pass it instead of refusing.)doc");

  cls.def_property_readonly("comm_rank", [](const MonomialPropagator& self) { return self.config().comm.rank(); });
  cls.def_property_readonly("comm_size", [](const MonomialPropagator& self) { return self.config().comm.size(); });
  cls.def_property_readonly("exchanged_bytes",
                            [](const MonomialPropagator& self) { return self.config().comm.bytes_sent(); });
  cls.def("clone", &MonomialPropagator::clone_, py::call_guard<py::gil_scoped_release>(),
          "An independent deep copy of the compiled state.");
  cls.def(
      "propagate",
      [](MonomialPropagator& self, const LayerArrays& layers, const std::vector<double>& parameters,
         std::optional<int> only_rotate_len_k) {
        const CircuitSpec circuit = to_circuit(layers);
        py::gil_scoped_release release;
        self.propagate(circuit, parameters, only_rotate_len_k);
      },
      py::arg("layers"), py::arg("parameters"), py::arg("only_rotate_len_k") = py::none(),
      "Evolve the operand through ``layers`` at the circuit's ``parameters``; records no graph.");
  cls.def(
      "build_graph",
      [](MonomialPropagator& self, const LayerArrays& layers, const std::optional<std::vector<double>>& seed,
         std::optional<int> only_rotate_len_k, const std::optional<LayerArrays>& following) {
        CircuitSpec circuit = to_circuit(layers);
        if (following) circuit.following = to_circuit(*following).layers;
        py::gil_scoped_release release;
        self.build_graph(circuit, seed, only_rotate_len_k);
      },
      py::arg("layers"), py::arg("seed_parameters") = py::none(), py::arg("only_rotate_len_k") = py::none(),
      py::arg("following") = py::none(),
      "Append ``layers`` to the graph; with ``seed_parameters`` (the full parameter vector after the call) "
      "truncation is coefficient-informed, else structural. ``following``: the layers later pieces of a build "
      "in pieces apply, which the reach of dropped branches is planned through.");
  cls.def(
      "continue_graph",
      [](MonomialPropagator& self, const LayerArrays& layers, const std::optional<std::vector<double>>& seed,
         std::optional<int> only_rotate_len_k, const std::optional<LayerArrays>& following) {
        CircuitSpec circuit = to_circuit(layers);
        if (following) circuit.following = to_circuit(*following).layers;
        py::gil_scoped_release release;
        self.continue_graph(circuit, seed, only_rotate_len_k);
      },
      py::arg("layers"), py::arg("seed_parameters") = py::none(), py::arg("only_rotate_len_k") = py::none(),
      py::arg("following") = py::none(),
      "Append more layers of the circuit the last ``build_graph`` began (its parameters and gates are on the "
      "axes already); ``seed_parameters`` is the full parameter vector.");
  cls.def(
      "evaluate",
      [](const MonomialPropagator& self, const RealArray& points, bool gradient, bool with_error, double pare,
         const std::optional<std::vector<std::int32_t>>& mapping) {
        if (points.ndim() != 1 && points.ndim() != 2)
          throw ArgumentError(
              "evaluate takes one vector of parameters or a 2-D array of points (K, n_parameters); "
              "got an array of " +
              std::to_string(points.ndim()) + " dimensions.");
        const bool single = points.ndim() == 1;
        const auto count = single ? std::size_t{1} : static_cast<std::size_t>(points.shape(0));
        const auto width = static_cast<std::size_t>(points.shape(single ? 0 : 1));
        const auto k = static_cast<py::ssize_t>(count), n = static_cast<py::ssize_t>(width);
        py::array_t<double> values(k);
        py::object gradients = py::none(), bounds = py::none(), estimates = py::none();
        EvaluationResults out{values.mutable_data()};
        if (gradient) {
          auto g = single ? py::array_t<double>(n) : py::array_t<double>(std::vector<py::ssize_t>{k, n});
          out.gradients = g.mutable_data();
          gradients = std::move(g);
        }
        if (with_error) {
          py::array_t<double> b(k), e(k);
          out.bounds = b.mutable_data();
          out.estimates = e.mutable_data();
          bounds = std::move(b);
          estimates = std::move(e);
        }
        const Points at = single ? Points::one({points.data(), width}) : Points::rows(points.data(), count, width);
        {
          py::gil_scoped_release release;
          self.evaluate(at, {gradient, with_error, pare, mapping ? &*mapping : nullptr}, out);
        }
        return py::make_tuple(values, gradients, bounds, estimates);
      },
      py::arg("points"), py::arg("gradient") = false, py::arg("with_error") = false, py::arg("pare") = 0.0,
      py::arg("mapping") = py::none(),
      "Replay the graph at one parameter vector (1-D) or at the rows of a (K, n) array of points, taking no copy "
      "of a C-contiguous float64 array: ``(values, gradients, bounds, estimates)``, arrays of K values (a "
      "single vector: K = 1), the gradients (n, or K x n) with ``gradient``, the truncation error's bound and "
      "estimate with ``with_error`` (else None). ``pare``: skip entries whose contribution is below it; "
      "``mapping``: per-layer parameter indices in place of the graph's. Each point's results are bitwise those "
      "of the point alone.");
  cls.def(
      "contract",
      [](MonomialPropagator& self, const std::vector<double>& parameters, bool inplace) {
        std::vector<double> c;
        {
          py::gil_scoped_release release;
          c = self.contract(parameters, inplace);
        }
        return to_numpy(std::move(c));
      },
      py::arg("parameters"), py::arg("inplace"),
      "Fold the graph at ``parameters`` into the operand; returns the coefficients in store order.");
  cls.def(
      "evolved_terms",
      [](const MonomialPropagator& self, const std::vector<double>& parameters, double atol) {
        TermList t;
        {
          py::gil_scoped_release release;
          t = self.evolved_terms(parameters, atol);
        }
        py::array_t<std::uint32_t> slots(static_cast<py::ssize_t>(t.slots.size()), t.slots.data());
        py::array_t<std::uint64_t> offsets(static_cast<py::ssize_t>(t.offsets.size()), t.offsets.data());
        return py::make_tuple(slots, offsets, to_numpy(std::move(t.coefficients)));
      },
      py::arg("parameters"), py::arg("atol"),
      "``(slots, offsets, coefficients)`` of the evolved terms above ``atol``, in the layout of "
      "monoprop.core_arrays.TermArrays.");
  cls.def(
      "coefficients_of",
      [](const MonomialPropagator& self, const TermArrays& terms, const std::vector<double>& parameters) {
        const std::vector<Term> wanted = to_terms(terms);
        std::vector<double> out;
        {
          py::gil_scoped_release release;
          out = self.coefficients_of(wanted, parameters);
        }
        return to_numpy(std::move(out));
      },
      py::arg("terms"), py::arg("parameters"),
      "The evolved coefficients of ``terms`` (their own coefficients are ignored), 0 where absent.");
  cls.def(
      "update_initial_operator",
      [](MonomialPropagator& self, const TermArrays& terms) {
        const std::vector<Term> update = to_terms(terms);
        py::gil_scoped_release release;
        return self.update_initial_operator(update);
      },
      py::arg("terms"),
      "Replace the initial operator's coefficients; returns this rank's share of the update: how many of the "
      "terms its shards hold.");
  cls.def("size", &MonomialPropagator::size, "Terms held by this rank.");
  cls.def_property_readonly("valid", &MonomialPropagator::valid);
  cls.def_property_readonly(
      "memory_limit", [](const MonomialPropagator& self) { return self.config().memory_limit; },
      "The memory budget in bytes given at construction, or None.");
  cls.def_property_readonly(
      "truncate_to_fit", [](const MonomialPropagator& self) { return self.config().truncate_to_fit; },
      "Whether a layer that would pass the memory budget is thinned instead of refused.");
  cls.def_property_readonly("budget_thresholds", &MonomialPropagator::budget_thresholds,
                            "(layer, threshold) of each layer the last propagate or build thinned for max_error.");
  cls.def_property_readonly("memory_truncations", &MonomialPropagator::memory_truncations,
                            "(layer, lower_atol) of each layer the last propagate or build thinned to fit.");
  cls.def_property_readonly("memory_budget", &MonomialPropagator::memory_budget,
                            "The memory budget's limit in bytes, as construction or the last operation set it.");
  cls.def("check_valid", &MonomialPropagator::check_valid, "Raise InvalidPropagatorError once invalid.");
  cls.def("_inject_fault", &MonomialPropagator::inject_fault, py::arg("where"));
  cls.def("_set_small_work", &MonomialPropagator::set_small_work, py::arg("entries"));
  cls.def(
      "_set_replay_layout",
      [](MonomialPropagator& self, const std::string& use) {
        if (use != "never" && use != "paying" && use != "always")
          throw py::value_error("_set_replay_layout: use is 'never', 'paying' or 'always', not '" + use + "'");
        using Use = MonomialPropagator::LayoutUse;
        self.set_replay_layout(use == "never" ? Use::never : use == "always" ? Use::always : Use::paying);
      },
      py::arg("use"));
  cls.def("_replay_blocks", &MonomialPropagator::replay_blocks);
  cls.def(
      "_set_point_lanes",
      [](MonomialPropagator& self, int lanes) {
        if (lanes != 0 && lanes != 1 && lanes != 2 && lanes != 4 && lanes != 8 && lanes != 16)
          throw py::value_error("_set_point_lanes: lanes is 0 (the engine chooses), 1, 2, 4, 8 or 16, not " +
                                std::to_string(lanes));
        self.set_point_lanes(lanes);
      },
      py::arg("lanes"));
  cls.def(
      "set_progress",
      [](MonomialPropagator& self, py::object callback) {
        if (callback.is_none()) return self.set_progress(nullptr);
        // Called from the core with the GIL released, between layers, on the
        // calling thread; take the GIL back for Python. An exception stops the
        // operation as an interrupt does (the propagator as before the call) and
        // is raised again to the caller.
        self.set_progress([callback](std::size_t done, std::size_t total, std::size_t terms, double bound) {
          py::gil_scoped_acquire acquire;
          try {
            callback(done, total, terms, bound);
          } catch (py::error_already_set& e) {
            keep_error(std::move(e));
            throw Interrupted("the progress callback raised");
          }
        });
      },
      py::arg("callback"),
      "Call ``callback(layers_done, layers_total, terms_held, bound)`` during long operations (``bound``: the "
      "truncation bound this call has dropped so far where coefficients are evolved, else 0); None stops it. An "
      "exception of the callback stops the operation, which leaves the propagator as it was, and is raised again.");
  cls.def("graph_size", &MonomialPropagator::graph_size);
  // Every member refuses once the propagator is invalid: a failed operation
  // leaves the state unknown, so nothing may read it. The core checks its own
  // accessors; the properties below that read plain configuration check here.
  cls.def_property_readonly("graph_layers", &MonomialPropagator::graph_layers);
  cls.def_property_readonly("n_parameters", &MonomialPropagator::n_parameters);
  cls.def_property_readonly("n_gates", &MonomialPropagator::n_gates);
  cls.def_property_readonly("generation", &MonomialPropagator::generation);
  cls.def_property_readonly("schrodinger", [](const MonomialPropagator& self) {
    self.check_valid();
    return self.schrodinger();
  });
  cls.def_property_readonly("num_modes", [](const MonomialPropagator& self) {
    self.check_valid();
    return self.config().num_modes;
  });
  cls.def_property_readonly("num_threads", [](const MonomialPropagator& self) {
    self.check_valid();
    return self.num_threads();
  });
  cls.def_property_readonly("basis_change", [](const MonomialPropagator& self) {
    self.check_valid();
    return self.basis_change();
  });
  // Raw layout of the sole shard (T = 1), as read-only snapshots: a view into
  // arrays that the next operation may reallocate could outlive them.
  cls.def("mp_op", [](const MonomialPropagator& self) {
    const OperatorView v = self.mp_op();
    py::dict d;
    d["keys"] = frozen(v.keys, v.size * static_cast<std::size_t>(v.words),
                       {static_cast<py::ssize_t>(v.size), static_cast<py::ssize_t>(v.words)});
    d["lengths"] = frozen(v.lengths, v.size);
    d["coefficients"] = frozen(v.coefficients, v.size);
    return d;
  });
  // The index as flat (tag, slot) entries, group by group; free entries have
  // tag 0 and slot 0xFFFFFFFF.
  cls.def("indexing", [](const MonomialPropagator& self) {
    const IndexView v = self.indexing();
    constexpr int kGroup = HashIndex<std::uint32_t>::kGroup;
    std::vector<std::uint32_t> tag(v.n_groups * kGroup, 0), slot(v.n_groups * kGroup, 0xFFFFFFFFu);
    for (std::size_t g = 0; g < v.n_groups; ++g)
      for (int e = 0; e < v.groups[g].used; ++e) {
        tag[g * kGroup + e] = v.groups[g].tags[e];
        slot[g * kGroup + e] = v.groups[g].slots[e];
      }
    py::dict d;
    d["tag"] = frozen(tag);
    d["slot"] = frozen(slot);
    return d;
  });
  cls.def("graph", [](const MonomialPropagator& self) {
    py::list layers;
    for (const ShardLayer& layer : self.graph()) {
      const DecodedLayer decoded = decode(layer);
      auto spelled = [](const std::vector<DecodedEntry>& entries, std::vector<std::uint32_t>& slots,
                        std::vector<std::int8_t>& signs) {
        for (const DecodedEntry& e : entries) {
          slots.insert(slots.end(), {e.a, e.b});
          signs.push_back(static_cast<std::int8_t>(e.sign));
        }
      };
      std::vector<std::uint32_t> pairs, halves;
      std::vector<std::int8_t> pair_signs, half_signs;
      spelled(decoded.pairs, pairs, pair_signs);
      spelled(decoded.halves, halves, half_signs);
      py::dict d;
      d["pairs"] = pairs_of(pairs);
      d["pair_signs"] = frozen(pair_signs);
      d["halves"] = pairs_of(halves);
      d["half_signs"] = frozen(half_signs);
      std::vector<std::uint32_t> cos_only = decoded.cos;  // lit, then dark (graph.h)
      cos_only.insert(cos_only.end(), decoded.dark.begin(), decoded.dark.end());
      d["cos_only"] = frozen(cos_only);
      layers.append(d);
    }
    return layers;
  });
  cls.def("graph_data", [](const MonomialPropagator& self) {
    const GraphData g = self.graph_data();
    py::dict d;
    d["parameter"] = frozen(g.parameter);
    d["gate"] = frozen(g.gate);
    d["frequency"] = frozen(g.frequency);
    return d;
  });
  cls.def(
      "save_state", [](const MonomialPropagator& self) { return arrays_of(self.save_state()); },
      "The whole propagator as named numpy arrays, for restore_engine.");
  cls.def("parameter_mapping", &MonomialPropagator::parameter_mapping);
  cls.def("layer_gates", &MonomialPropagator::layer_gates);
  cls.def("set_parameter_mapping", &MonomialPropagator::set_parameter_mapping, py::arg("mapping"));
  cls.def("memory", [](const MonomialPropagator& self) {
    const MemoryUsage u = self.memory();
    py::dict d;
    d["terms"] = u.terms;
    d["index"] = u.index;
    d["graph"] = u.graph;
    d["buffers"] = u.buffers;
    return d;
  });
  // truncation() refuses once the propagator is invalid.
  cls.def_property(
      "cutoff", [](MonomialPropagator& self) { return self.truncation().cutoff; },
      py::cpp_function(
          [](MonomialPropagator& self, std::int64_t v) {
            Truncation t = self.truncation();
            t.cutoff = v;
            self.set_truncation(t);
          },
          py::arg("self"), py::arg("value")));
  cls.def_property(
      "cutoff_type", [](MonomialPropagator& self) { return cutoff_type_name(self.truncation().type); },
      py::cpp_function(
          [](MonomialPropagator& self, const std::string& v) {
            Truncation t = self.truncation();
            t.type = parse_cutoff_type(v);
            self.set_truncation(t);
          },
          py::arg("self"), py::arg("value")));
  cls.def_property(
      "lower_atol", [](MonomialPropagator& self) { return self.truncation().lower_atol; },
      py::cpp_function(
          [](MonomialPropagator& self, std::optional<double> v) {
            Truncation t = self.truncation();
            t.lower_atol = v;
            self.set_truncation(t);
          },
          py::arg("self"), py::arg("value")));
  cls.def_property(
      "upper_atol", [](MonomialPropagator& self) { return self.truncation().upper_atol; },
      py::cpp_function(
          [](MonomialPropagator& self, std::optional<double> v) {
            Truncation t = self.truncation();
            t.upper_atol = v;
            self.set_truncation(t);
          },
          py::arg("self"), py::arg("value")));
  cls.def_property(
      "max_error", [](MonomialPropagator& self) { return self.truncation().max_error; },
      py::cpp_function(
          [](MonomialPropagator& self, std::optional<double> v) {
            Truncation t = self.truncation();
            t.max_error = v;
            self.set_truncation(t);
          },
          py::arg("self"), py::arg("value")));
  cls.def_property(
      "rigorous", [](MonomialPropagator& self) { return self.truncation().rigorous; },
      py::cpp_function(
          [](MonomialPropagator& self, bool v) {
            Truncation t = self.truncation();
            t.rigorous = v;
            self.set_truncation(t);
          },
          py::arg("self"), py::arg("value")));

  // After Engine, so that its signature names the class.
  m.def(
      "restore_engine",
      [](const py::dict& arrays, std::optional<std::uintptr_t> comm_handle, std::optional<int> threads,
         std::optional<std::uint64_t> memory_limit, bool truncate_to_fit) {
        const SavedState state = state_of(arrays);
        mpi::Comm comm;
        if (comm_handle) comm = mpi::Comm::from_handle(reinterpret_cast<const void*>(*comm_handle));
        auto engine = restore_propagator(state, std::move(comm), threads, memory_limit, truncate_to_fit);
        engine->set_interrupt_check(&python_signal_pending);
        return engine;
      },
      py::arg("arrays"), py::kw_only(), py::arg("comm_handle") = py::none(), py::arg("threads") = py::none(),
      py::arg("memory_limit") = py::none(), py::arg("truncate_to_fit") = false,
      "The engine that Engine.save_state() described, with ``threads`` shards, else this process's thread count, "
      "and the memory budget ``memory_limit`` (None: the environment's or the default) and ``truncate_to_fit``.");
}
