// What an evaluation of a recorded graph reads and writes: K parameter
// points, the options of the replay, and where the results go. One call,
// MonomialPropagator::evaluate, serves a single vector (K = 1), a batch, a
// value or a value with its gradient, with or without the truncation error;
// the checks every caller gets (finite angles, the tolerances) live here.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "errors.h"

namespace monoprop {

// K points of n parameters each, row-major, borrowed from the caller (an
// evaluation copies none of them). `single`: one vector, as a caller passes
// it to a one-point call; it is replayed on its own, and its entries are
// named parameters[i] in messages (a batch's: parameters[k, i]).
struct Points {
  const double* data = nullptr;
  std::size_t count = 0, width = 0;
  bool single = false;

  static Points one(std::span<const double> parameters) { return {parameters.data(), 1, parameters.size(), true}; }
  static Points rows(const double* data, std::size_t count, std::size_t width) { return {data, count, width, false}; }
  std::span<const double> row(std::size_t k) const { return {data + k * width, width}; }

  // ArgumentError naming the first NaN or infinite angle (row-major order).
  void check_finite() const {
    for (std::size_t k = 0; k < count; ++k)
      for (std::size_t i = 0; i < width; ++i) {
        const double x = data[k * width + i];
        if (std::isfinite(x)) continue;
        const std::string at = single ? std::to_string(i) : std::to_string(k) + ", " + std::to_string(i);
        const char* value = std::isnan(x) ? "nan" : x > 0 ? "inf" : "-inf";
        throw ArgumentError("parameters[" + at + "]=" + value +
                            " is not a finite number; pass a finite angle for every parameter.");
      }
  }
};

// How to replay. `pare`: entries whose contribution is below it are skipped
// (0: none). `mapping` (per layer, circuit order) replaces the graph's own
// parameter mapping for this call, as a functional made before a relabelling
// does.
struct EvaluationRequest {
  bool gradient = false;
  bool with_error = false;
  double pare = 0.0;
  const std::vector<std::int32_t>* mapping = nullptr;

  void check() const {
    if (!(pare >= 0.0) || std::isinf(pare))
      throw ArgumentError("pare_threshold " + std::to_string(pare) +
                          " must be a finite number >= 0; pass 0 to replay every entry.");
  }
};

// Where the results of K points go: values[k]; with `gradient`,
// gradients[k * n + i]; with `with_error`, bounds[k] and estimates[k] (the
// bound on |exact - value| and the model's estimate of it).
struct EvaluationResults {
  double* values = nullptr;
  double* gradients = nullptr;
  double* bounds = nullptr;
  double* estimates = nullptr;
};

// A value with its truncation error (see Propagator::with_error).
struct ValueWithError {
  double value = 0.0, bound = 0.0, estimate = 0.0;
};

}  // namespace monoprop
