// A propagator as named, typed, flat arrays: what a save writes and a load
// reads. The core fills and reads one of these (propagator_save.h); putting
// it on disk is the caller's business (the Python package writes each array
// as a .npy file). A load trusts nothing: `get` checks each array's type and
// shape and throws ArgumentError naming the array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "errors.h"

namespace monoprop {

struct SavedArray {
  char kind = 'u';  // numpy's dtype kinds: 'u' unsigned, 'i' signed, 'f' floating
  int itemsize = 1;
  std::vector<std::size_t> shape;
  std::vector<std::uint8_t> bytes;  // C order, native (little-endian) byte order
};

class SavedState {
 public:
  template <typename T>
  static constexpr char kind_of() {
    if constexpr (std::is_floating_point_v<T>) return 'f';
    return std::is_signed_v<T> ? 'i' : 'u';
  }

  template <typename T>
  void put(const std::string& name, const T* data, std::vector<std::size_t> shape) {
    SavedArray& a = arrays[name];
    a.kind = kind_of<T>();
    a.itemsize = sizeof(T);
    std::size_t n = 1;
    for (const std::size_t d : shape) n *= d;
    a.shape = std::move(shape);
    a.bytes.resize(n * sizeof(T));
    if (n) std::memcpy(a.bytes.data(), data, n * sizeof(T));
  }
  template <typename T>
  void put(const std::string& name, const std::vector<T>& values) {
    put(name, values.data(), {values.size()});
  }
  template <typename T>
  void put_scalar(const std::string& name, T value) {
    put(name, &value, {});
  }

  // The array `name` as T, with `columns` entries a row (0: one-dimensional).
  template <typename T>
  std::vector<T> get(const std::string& name, std::size_t columns = 0) const {
    const SavedArray& a = find(name);
    std::size_t n = 1;
    for (const std::size_t d : a.shape) n *= d;
    const bool shaped = (columns == 0 ? a.shape.size() == 1 : a.shape.size() == 2 && a.shape[1] == columns) &&
                        a.bytes.size() == n * sizeof(T);
    if (a.kind != kind_of<T>() || a.itemsize != static_cast<int>(sizeof(T)) || !shaped)
      throw ArgumentError("saved array '" + name + "' has the wrong type or shape for this format; the save is " +
                          "damaged or was not written by monoprop.");
    std::vector<T> out(a.bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), a.bytes.data(), out.size() * sizeof(T));
    return out;
  }
  template <typename T>
  T scalar(const std::string& name) const {
    const SavedArray& a = find(name);
    if (a.kind != kind_of<T>() || a.itemsize != static_cast<int>(sizeof(T)) || !a.shape.empty() ||
        a.bytes.size() != sizeof(T))
      throw ArgumentError("saved value '" + name + "' has the wrong type or shape for this format; the save is " +
                          "damaged or was not written by monoprop.");
    T value;
    std::memcpy(&value, a.bytes.data(), sizeof(T));
    return value;
  }
  bool has(const std::string& name) const { return arrays.count(name) != 0; }

  std::map<std::string, SavedArray> arrays;

 private:
  const SavedArray& find(const std::string& name) const {
    const auto it = arrays.find(name);
    if (it == arrays.end())
      throw ArgumentError("the save lacks the array '" + name + "'; it is damaged or was not written by monoprop.");
    return it->second;
  }
};

}  // namespace monoprop
