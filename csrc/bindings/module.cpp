// pybind11 module monoprop._core: translates numpy arrays to the core's
// types and back, nothing else.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <complex>

#include "monoprop/monomial_propagator.h"

namespace py = pybind11;
using namespace monoprop;

namespace {

// Slots arrive as int64 and are range-checked here: a cast to uint32 would wrap.
using SlotArray = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using OffsetArray = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using RealArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IndexArray = py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>;

std::vector<Term> to_terms(const SlotArray& slots, const OffsetArray& offsets, const RealArray& coefficients) {
  const auto s = slots.unchecked<1>();
  const auto o = offsets.unchecked<1>();
  const auto c = coefficients.unchecked<1>();
  if (o.shape(0) < 1 || o.shape(0) != c.shape(0) + 1)
    throw std::invalid_argument("offsets must have one more entry than coefficients");
  std::vector<Term> terms(static_cast<std::size_t>(c.shape(0)));
  for (py::ssize_t t = 0; t < c.shape(0); ++t) {
    if (o(t) < 0 || o(t) > o(t + 1) || o(t + 1) > s.shape(0)) throw std::invalid_argument("bad offsets");
    for (auto k = o(t); k < o(t + 1); ++k) {
      if (s(k) < 0 || s(k) >= 2 * kMaxNumModes)
        throw std::invalid_argument("slot " + std::to_string(s(k)) + " is out of range 0.." +
                                    std::to_string(2 * kMaxNumModes - 1) + ".");
      terms[t].slots.push_back(static_cast<std::uint32_t>(s(k)));
    }
    terms[t].coefficient = c(t);
  }
  return terms;
}

CircuitSpec to_circuit(const SlotArray& slots, const OffsetArray& offsets, const RealArray& coefficients,
                       const IndexArray& parameters, const IndexArray& gates, std::int32_t n_parameters,
                       std::int32_t n_gates) {
  CircuitSpec circuit;
  const auto terms = to_terms(slots, offsets, coefficients);
  const auto p = parameters.unchecked<1>();
  const auto g = gates.unchecked<1>();
  if (p.shape(0) != static_cast<py::ssize_t>(terms.size()) || g.shape(0) != p.shape(0))
    throw std::invalid_argument("one parameter and one gate index per layer");
  for (std::size_t l = 0; l < terms.size(); ++l)
    circuit.layers.push_back({terms[l].slots, terms[l].coefficient, p(l), g(l)});
  circuit.n_parameters = n_parameters;
  circuit.n_gates = n_gates;
  return circuit;
}

py::array_t<double> to_numpy(std::vector<double> v) {
  auto* heap = new std::vector<double>(std::move(v));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<double>*>(p); });
  return py::array_t<double>(static_cast<py::ssize_t>(heap->size()), heap->data(), owner);
}

// A read-only snapshot of `n` values at `data` (shape `shape`, default flat).
template <typename T>
py::array frozen(const T* data, std::size_t n, std::vector<py::ssize_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<py::ssize_t>(n)};
  py::array_t<T> out(shape);
  if (n) std::copy(data, data + n, out.mutable_data());
  out.attr("setflags")(py::arg("write") = false);
  return std::move(out);
}
template <typename T>
py::array frozen(const std::vector<T>& v, std::vector<py::ssize_t> shape = {}) {
  return frozen(v.data(), v.size(), std::move(shape));
}
// Entry pairs (a, b) of a graph layer as an (m, 2) array.
py::array pairs_of(const std::vector<std::uint32_t>& flat) {
  return frozen(flat, {static_cast<py::ssize_t>(flat.size() / 2), 2});
}

const char* cutoff_type_name(CutoffType t) { return t == CutoffType::Length ? "length" : "support"; }

CutoffType parse_cutoff_type(const std::string& name) {
  if (name == "length") return CutoffType::Length;
  if (name == "support") return CutoffType::Support;
  throw std::invalid_argument("Unknown CutoffType string: '" + name + "'. Valid options are: 'length', 'support'.");
}

int pairs_mod4(std::size_t w) { return static_cast<int>((w * (w - 1) / 2) % 4); }

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
    }
  });
  m.attr("MAX_NUM_MODES") = kMaxNumModes;
  m.attr("has_mpi") = mpi::available();
  m.def("mpi_library_version", &mpi::library_version,
        "The MPI library this build links (empty without MPI), to compare with mpi4py's.");
  m.attr("__build_type__") = MONOPROP_BUILD_TYPE;
  m.def("thread_budget_from_environment", &thread_budget_from_environment,
        "The thread budget a propagator constructed now would take: monoprop_NUM_THREADS, parsed strictly, else "
        "the OpenMP default.");

  m.def(
      "is_antihermitian", [](const std::vector<py::object>& indices) { return (indices.size() % 4) >= 2; },
      py::arg("indices"),
      R"doc(True iff the bare product of ``len(indices)`` Majoranas is anti-Hermitian (w mod 4 in {2, 3}).

>>> from monoprop import is_antihermitian
>>> is_antihermitian([0, 1]), is_antihermitian([0, 1, 2, 3])
(True, False)
)doc");
  m.def(
      "antihermitian_generator_correction",
      [](const std::vector<py::object>& indices) {
        static const std::complex<double> powers[4] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
        const std::size_t w = indices.size();
        return powers[(pairs_mod4(w) + 1) % 4];
      },
      py::arg("indices"),
      R"doc(``i ** (C(w, 2) + 1)`` for ``w = len(indices)``.

>>> from monoprop import antihermitian_generator_correction
>>> antihermitian_generator_correction([0, 1])
(-1+0j)
)doc");

  py::class_<MonomialPropagator> cls(m, "Engine", "One propagator's compiled state (internal).");
  cls.def(py::init([](const std::string& family, int num_modes, const SlotArray& slots, const OffsetArray& offsets,
                      const RealArray& coefficients, std::vector<int> occupied, std::optional<int> schrodinger_slots,
                      std::int64_t cutoff, const std::string& cutoff_type, std::optional<double> lower,
                      std::optional<double> upper, std::optional<BasisChange> basis_change,
                      std::optional<std::uintptr_t> comm_handle) {
            Config config;
            config.family = family == "pauli" ? Family::Pauli : Family::Majorana;
            config.num_modes = num_modes;
            config.initial_operator = to_terms(slots, offsets, coefficients);
            config.occupied = std::move(occupied);
            config.schrodinger_cutoff = schrodinger_slots;
            config.truncation = {cutoff, parse_cutoff_type(cutoff_type), lower, upper};
            // The address of an mpi4py communicator's MPI_Comm (MPI._addressof).
            if (comm_handle) config.comm = mpi::Comm::from_handle(reinterpret_cast<const void*>(*comm_handle));
            return make_propagator(std::move(config), basis_change.value_or(BasisChange{}));
          }),
          py::arg("family"), py::arg("num_modes"), py::arg("slots"), py::arg("offsets"), py::arg("coefficients"),
          py::arg("occupied"), py::arg("schrodinger_slots"), py::arg("cutoff"), py::arg("cutoff_type"),
          py::arg("lower_atol"), py::arg("upper_atol"), py::arg("basis_change") = py::none(),
          py::arg("comm_handle") = py::none());

  cls.def_property_readonly("comm_rank", [](const MonomialPropagator& self) { return self.config().comm.rank(); });
  cls.def_property_readonly("comm_size", [](const MonomialPropagator& self) { return self.config().comm.size(); });
  cls.def_property_readonly("exchanged_bytes",
                            [](const MonomialPropagator& self) { return self.config().comm.bytes_sent(); });
  cls.def("clone", &MonomialPropagator::clone_, py::call_guard<py::gil_scoped_release>());
  cls.def("propagate", [](MonomialPropagator& self, const SlotArray& slots, const OffsetArray& offsets,
                          const RealArray& coefficients, const IndexArray& parameters, const IndexArray& gates,
                          std::int32_t n_parameters, std::int32_t n_gates, const std::vector<double>& values,
                          std::optional<int> k) {
    const CircuitSpec circuit = to_circuit(slots, offsets, coefficients, parameters, gates, n_parameters, n_gates);
    py::gil_scoped_release release;
    self.propagate(circuit, values, k);
  });
  cls.def("build_graph", [](MonomialPropagator& self, const SlotArray& slots, const OffsetArray& offsets,
                            const RealArray& coefficients, const IndexArray& parameters, const IndexArray& gates,
                            std::int32_t n_parameters, std::int32_t n_gates,
                            const std::optional<std::vector<double>>& seed, std::optional<int> k) {
    const CircuitSpec circuit = to_circuit(slots, offsets, coefficients, parameters, gates, n_parameters, n_gates);
    py::gil_scoped_release release;
    self.build_graph(circuit, seed, k);
  });
  cls.def(
      "expectation_value",
      [](const MonomialPropagator& self, const std::vector<double>& theta, double pare,
         const std::optional<std::vector<std::int32_t>>& mapping) {
        return self.expectation_value(theta, pare, mapping ? &*mapping : nullptr);
      },
      py::arg("parameters"), py::arg("pare") = 0.0, py::arg("mapping") = py::none(),
      py::call_guard<py::gil_scoped_release>());
  cls.def(
      "expectation_value_and_gradient",
      [](const MonomialPropagator& self, const std::vector<double>& theta, double pare,
         const std::optional<std::vector<std::int32_t>>& mapping) {
        std::vector<double> grad;
        double f;
        {
          py::gil_scoped_release release;
          f = self.expectation_value_and_gradient(theta, grad, pare, mapping ? &*mapping : nullptr);
        }
        return py::make_tuple(f, to_numpy(std::move(grad)));
      },
      py::arg("parameters"), py::arg("pare") = 0.0, py::arg("mapping") = py::none());
  cls.def("contract", [](MonomialPropagator& self, const std::vector<double>& theta, bool inplace) {
    std::vector<double> c;
    {
      py::gil_scoped_release release;
      c = self.contract(theta, inplace);
    }
    return to_numpy(std::move(c));
  });
  cls.def("evolved_terms", [](const MonomialPropagator& self, const std::vector<double>& theta, double atol) {
    TermList t;
    {
      py::gil_scoped_release release;
      t = self.evolved_terms(theta, atol);
    }
    py::array_t<std::uint32_t> slots(static_cast<py::ssize_t>(t.slots.size()), t.slots.data());
    py::array_t<std::uint64_t> offsets(static_cast<py::ssize_t>(t.offsets.size()), t.offsets.data());
    return py::make_tuple(slots, offsets, to_numpy(std::move(t.coefficients)));
  });
  cls.def("coefficients_of", [](const MonomialPropagator& self, const SlotArray& slots, const OffsetArray& offsets,
                                const std::vector<double>& theta) {
    RealArray zeros(offsets.size() - 1);
    std::fill(zeros.mutable_data(), zeros.mutable_data() + zeros.size(), 0.0);
    const std::vector<Term> terms = to_terms(slots, offsets, zeros);
    std::vector<double> out;
    {
      py::gil_scoped_release release;
      out = self.coefficients_of(terms, theta);
    }
    return to_numpy(std::move(out));
  });
  // Returns this rank's share of the update: how many of the terms its shards hold.
  cls.def("update_initial_operator", [](MonomialPropagator& self, const SlotArray& slots, const OffsetArray& offsets,
                                        const RealArray& coefficients) {
    const std::vector<Term> terms = to_terms(slots, offsets, coefficients);
    py::gil_scoped_release release;
    return self.update_initial_operator(terms);
  });
  cls.def("size", &MonomialPropagator::size);
  cls.def_property_readonly("valid", &MonomialPropagator::valid);
  cls.def("check_valid", &MonomialPropagator::check_valid);
  cls.def("_inject_fault", &MonomialPropagator::inject_fault, py::arg("where"));
  cls.def("_set_small_work", &MonomialPropagator::set_small_work, py::arg("entries"));
  cls.def("set_progress", [](MonomialPropagator& self, py::object callback) {
    if (callback.is_none()) return self.set_progress(nullptr);
    // Called from the core with the GIL released; take it back for Python.
    self.set_progress([callback](std::size_t done, std::size_t total, std::size_t terms) {
      py::gil_scoped_acquire acquire;
      callback(done, total, terms);
    });
  });
  cls.def("graph_size", &MonomialPropagator::graph_size);
  // Every member refuses once the propagator is invalid (seed: "Failed operations");
  // the core checks its own accessors, these two read plain configuration.
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
      d["cos_only"] = frozen(decoded.cos);
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
  cls.def("parameter_mapping", &MonomialPropagator::parameter_mapping);
  cls.def("layer_gates", &MonomialPropagator::layer_gates);
  cls.def("set_parameter_mapping", &MonomialPropagator::set_parameter_mapping);
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
      [](MonomialPropagator& self, std::int64_t v) { self.truncation().cutoff = v; });
  cls.def_property(
      "cutoff_type", [](MonomialPropagator& self) { return cutoff_type_name(self.truncation().type); },
      [](MonomialPropagator& self, const std::string& v) { self.truncation().type = parse_cutoff_type(v); });
  cls.def_property(
      "lower_atol", [](MonomialPropagator& self) { return self.truncation().lower_atol; },
      [](MonomialPropagator& self, std::optional<double> v) { self.truncation().lower_atol = v; });
  cls.def_property(
      "upper_atol", [](MonomialPropagator& self) { return self.truncation().upper_atol; },
      [](MonomialPropagator& self, std::optional<double> v) { self.truncation().upper_atol = v; });
}
