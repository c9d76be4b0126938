// The propagation graph: what each generator layer did to the slots of a
// store, so that it can be replayed at any parameter vector with no hashing
// and no algebra.
//
// A layer with generator G, parameter index p and frequency f acts at angle
// phi = f * theta[p] (f = 2h for a Heisenberg layer exp(+i theta h G), -2h in
// the Schrodinger picture) on the slots' coefficients:
//   pair (a, b, s):  both held terms rotate into each other
//                      c_a <- cos c_a - s sin c_b,  c_b <- cos c_b + s sin c_a
//                    (a term born in the layer is a pair whose b starts at 0)
//   half (a, b, s):  only a rotates; b receives its sine branch
//                      c_b <- c_b + s sin c_a,      c_a <- cos c_a
//                    (b is too long to rotate: only_rotate_len_k)
//   cos (a):         a's sine partner was truncated: c_a <- cos c_a
// Every slot appears at most once per layer, so the entries are independent.
#pragma once

#include <cstdint>
#include <vector>

namespace monoprop {

struct GraphLayer {
  std::int32_t parameter = 0;
  std::int32_t gate = 0;  // authoring gate, for per-gate parameter mappings
  double frequency = 0.0;
  std::vector<std::uint32_t> pairs;  // a0, b0, a1, b1, ...
  std::vector<std::int8_t> pair_signs;
  std::vector<std::uint32_t> halves;  // a0, b0, a1, b1, ...
  std::vector<std::int8_t> half_signs;
  std::vector<std::uint32_t> cos_only;

  std::size_t n_rotations() const { return pair_signs.size() + half_signs.size(); }
  std::size_t bytes() const {
    return (pairs.capacity() + halves.capacity() + cos_only.capacity()) * sizeof(std::uint32_t) +
           pair_signs.capacity() + half_signs.capacity() + sizeof(GraphLayer);
  }
  void clear_entries() {
    pairs.clear();
    pair_signs.clear();
    halves.clear();
    half_signs.clear();
    cos_only.clear();
  }
};

using Graph = std::vector<GraphLayer>;

// Applies one layer at angle phi to `c` (exact): what a propagation does to
// its coefficients once it has classified the layer's entries.
void rotate_layer(const GraphLayer& layer, double phi, std::vector<double>& c);

// Runs the layers forward on `c` (indexed by slot). When `tape` is given, it
// receives what the reverse sweep cannot recover from the outputs (the input
// of each half and cos-only entry; rotations are inverted instead).
// Entries whose moved weight |sin(phi)| * max|c| is below `pare` are reduced
// to their cos scaling (an approximation; pare = 0 replays exactly).
// `parameters`, when given, overrides each layer's parameter index (graph order).
void replay_forward(const Graph& graph, const double* theta, std::vector<double>& c, std::vector<double>* tape,
                    double pare = 0.0, const std::int32_t* parameters = nullptr);

// Reverse (adjoint) sweep over interleaved `state` = (c_0, lambda_0, c_1,
// lambda_1, ...): c enters as the forward sweep's output and is rewound;
// lambda enters as d f / d c_final and leaves as d f / d c_initial. d f / d theta
// is added into `grad`. `tape` is the one the forward sweep at the same theta
// (and the same pare) wrote.
void replay_adjoint(const Graph& graph, const double* theta, const std::vector<double>& tape, double* state,
                    double* grad, double pare = 0.0, const std::int32_t* parameters = nullptr);

}  // namespace monoprop
