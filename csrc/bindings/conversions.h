// The module's translations between Python values (numpy arrays, the
// monoprop.core_arrays structures, saved states as dicts of arrays) and the
// core's types. Included by module.cpp only.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "monoprop/monomial_propagator.h"

namespace py = pybind11;
using namespace monoprop;

namespace {

// Slots arrive as int64 and are range-checked here: a cast to uint32 would wrap.
using SlotArray = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using OffsetArray = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using RealArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IndexArray = py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>;

// monoprop.core_arrays.TermArrays, field by field: term t is the product of
// the generators at slots[offsets[t] .. offsets[t+1]) times coefficients[t].
struct TermArrays {
  SlotArray slots;
  OffsetArray offsets;
  RealArray coefficients;
};

// monoprop.core_arrays.LayerArrays: layer l applies exp(+i theta h G) with G, h
// term l of `terms` and theta = parameter vector[parameters[l]], or, where
// quarter_turns[l] = q is not 0, the Clifford layer exp(+i q pi/4 G).
using TurnArray = py::array_t<std::int8_t, py::array::c_style | py::array::forcecast>;
// monoprop.core_arrays.NoiseArrays: per layer, the noise layer (noise.h) it
// is, kind 0 for a rotation or Clifford layer.
struct NoiseArrays {
  TurnArray kinds, forms;
  IndexArray patterns;
  RealArray alpha, beta, lowest, highest;
};
struct LayerArrays {
  TermArrays terms;
  IndexArray parameters;
  IndexArray gates;
  std::int32_t n_parameters = 0;
  std::int32_t n_gates = 0;
  TurnArray quarter_turns;
  std::optional<NoiseArrays> noise;
};

// A saved state's arrays as numpy arrays (copies), by name.
py::dict arrays_of(const SavedState& state) {
  py::dict out;
  for (const auto& [name, a] : state.arrays) {
    const py::dtype dtype(std::string("<") + a.kind + std::to_string(a.itemsize));
    std::vector<py::ssize_t> shape(a.shape.begin(), a.shape.end());
    py::array array(dtype, shape);
    if (!a.bytes.empty()) std::memcpy(array.mutable_data(), a.bytes.data(), a.bytes.size());
    out[py::str(name)] = array;
  }
  return out;
}

// The reverse: numeric arrays only, in their own dtype and C order.
SavedState state_of(const py::dict& arrays) {
  SavedState state;
  for (const auto& [key, value] : arrays) {
    const auto name = key.cast<std::string>();
    const py::array array = py::array::ensure(value, py::array::c_style);
    const char kind = array ? array.dtype().kind() : '?';
    if (!array || (kind != 'u' && kind != 'i' && kind != 'f') ||
        (array.itemsize() > 1 && array.dtype().byteorder() == '>'))
      throw ArgumentError("saved array '" + name + "' is not a little-endian numeric array.");
    SavedArray& a = state.arrays[name];
    a.kind = kind;
    a.itemsize = static_cast<int>(array.itemsize());
    for (py::ssize_t d = 0; d < array.ndim(); ++d) a.shape.push_back(static_cast<std::size_t>(array.shape(d)));
    a.bytes.resize(static_cast<std::size_t>(array.nbytes()));
    if (!a.bytes.empty()) std::memcpy(a.bytes.data(), array.data(), a.bytes.size());
  }
  return state;
}

}  // namespace

// The two structures are Python dataclasses, which check their invariants when
// constructed; these casters accept only instances of them and read their fields.
namespace pybind11::detail {
template <>
struct type_caster<TermArrays> {
  PYBIND11_TYPE_CASTER(TermArrays, const_name("monoprop.core_arrays.TermArrays"));
  bool load(handle src, bool) {
    if (!isinstance(src, module_::import("monoprop.core_arrays").attr("TermArrays"))) return false;
    value.slots = src.attr("slots").cast<SlotArray>();
    value.offsets = src.attr("offsets").cast<OffsetArray>();
    value.coefficients = src.attr("coefficients").cast<RealArray>();
    return true;
  }
};
template <>
struct type_caster<LayerArrays> {
  PYBIND11_TYPE_CASTER(LayerArrays, const_name("monoprop.core_arrays.LayerArrays"));
  bool load(handle src, bool) {
    if (!isinstance(src, module_::import("monoprop.core_arrays").attr("LayerArrays"))) return false;
    value.terms = src.attr("terms").cast<TermArrays>();
    value.parameters = src.attr("parameters").cast<IndexArray>();
    value.gates = src.attr("gates").cast<IndexArray>();
    value.n_parameters = src.attr("n_parameters").cast<std::int32_t>();
    value.n_gates = src.attr("n_gates").cast<std::int32_t>();
    value.quarter_turns = src.attr("quarter_turns").cast<TurnArray>();
    if (const py::object noise = src.attr("noise"); !noise.is_none())
      value.noise = NoiseArrays{noise.attr("kinds").cast<TurnArray>(),     noise.attr("forms").cast<TurnArray>(),
                                noise.attr("patterns").cast<IndexArray>(), noise.attr("alpha").cast<RealArray>(),
                                noise.attr("beta").cast<RealArray>(),      noise.attr("lowest").cast<RealArray>(),
                                noise.attr("highest").cast<RealArray>()};
    return true;
  }
};
}  // namespace pybind11::detail

namespace {

// The Python side checked these invariants already; this is the backstop that
// keeps a bad array from reading out of bounds or wrapping a slot.
std::vector<Term> to_terms(const TermArrays& arrays) {
  const auto s = arrays.slots.unchecked<1>();
  const auto o = arrays.offsets.unchecked<1>();
  const auto c = arrays.coefficients.unchecked<1>();
  if (o.shape(0) != c.shape(0) + 1)
    throw std::invalid_argument("offsets has " + std::to_string(o.shape(0)) + " entries but coefficients has " +
                                std::to_string(c.shape(0)) + "; offsets needs one more.");
  if (o(0) != 0) throw std::invalid_argument("offsets[0] = " + std::to_string(o(0)) + "; the first term starts at 0.");
  if (o(c.shape(0)) != s.shape(0))
    throw std::invalid_argument("offsets[" + std::to_string(c.shape(0)) + "] = " + std::to_string(o(c.shape(0))) +
                                " but len(slots) = " + std::to_string(s.shape(0)) + ".");
  std::vector<Term> terms(static_cast<std::size_t>(c.shape(0)));
  for (py::ssize_t t = 0; t < c.shape(0); ++t) {
    if (o(t + 1) < o(t) || o(t + 1) > s.shape(0))
      throw std::invalid_argument("offsets[" + std::to_string(t + 1) + "] = " + std::to_string(o(t + 1)) +
                                  " is outside offsets[" + std::to_string(t) + "] = " + std::to_string(o(t)) +
                                  " .. len(slots) = " + std::to_string(s.shape(0)) + ".");
    for (auto k = o(t); k < o(t + 1); ++k) {
      if (s(k) < 0 || s(k) >= 2 * kMaxNumModes)
        throw std::invalid_argument("slots[" + std::to_string(k) + "] = " + std::to_string(s(k)) +
                                    " is out of range 0.." + std::to_string(2 * kMaxNumModes - 1) + ".");
      terms[t].slots.push_back(static_cast<std::uint32_t>(s(k)));
    }
    terms[t].coefficient = c(t);
  }
  return terms;
}

CircuitSpec to_circuit(const LayerArrays& arrays) {
  CircuitSpec circuit;
  const auto terms = to_terms(arrays.terms);
  const auto p = arrays.parameters.unchecked<1>();
  const auto g = arrays.gates.unchecked<1>();
  const auto q = arrays.quarter_turns.unchecked<1>();
  const auto n = static_cast<py::ssize_t>(terms.size());
  if (p.shape(0) != n || g.shape(0) != n || q.shape(0) != n)
    throw std::invalid_argument("parameters has " + std::to_string(p.shape(0)) + " entries, gates " +
                                std::to_string(g.shape(0)) + " and quarter_turns " + std::to_string(q.shape(0)) +
                                " but terms has " + std::to_string(n) + "; give one per layer.");
  for (std::size_t l = 0; l < terms.size(); ++l)
    circuit.layers.push_back({terms[l].slots, terms[l].coefficient, p(l), g(l), q(l), {}});
  if (arrays.noise) {
    const NoiseArrays& noise = *arrays.noise;
    const auto kinds = noise.kinds.unchecked<1>(), forms = noise.forms.unchecked<1>();
    const auto patterns = noise.patterns.unchecked<1>();
    const auto alpha = noise.alpha.unchecked<1>(), beta = noise.beta.unchecked<1>();
    const auto lowest = noise.lowest.unchecked<1>(), highest = noise.highest.unchecked<1>();
    for (const auto size : {kinds.shape(0), forms.shape(0), patterns.shape(0), alpha.shape(0), beta.shape(0),
                            lowest.shape(0), highest.shape(0)})
      if (size != n)
        throw std::invalid_argument("noise has a field of " + std::to_string(size) + " entries but terms has " +
                                    std::to_string(n) + "; give one per layer.");
    for (py::ssize_t l = 0; l < n; ++l) {
      if (kinds(l) < 0 || kinds(l) > 3 || forms(l) < 0 || forms(l) > 2 || patterns(l) < 0 || patterns(l) > 0xffff)
        throw std::invalid_argument("noise layer " + std::to_string(l) + " has kind " + std::to_string(kinds(l)) +
                                    ", form " + std::to_string(forms(l)) + " and patterns " +
                                    std::to_string(patterns(l)) + "; kinds are 0..3, forms 0..2, patterns 16 bits.");
      Noise& out = circuit.layers[static_cast<std::size_t>(l)].noise;
      out.kind = static_cast<LayerKind>(kinds(l));
      out.form = static_cast<RateForm>(forms(l));
      out.patterns = static_cast<std::uint16_t>(patterns(l));
      out.alpha = alpha(l);
      out.beta = beta(l);
      out.lowest = lowest(l);
      out.highest = highest(l);
    }
  }
  circuit.n_parameters = arrays.n_parameters;
  circuit.n_gates = arrays.n_gates;
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

}  // namespace
