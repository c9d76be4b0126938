// The propagation graph: what each generator layer did to the slots of a
// store, so that it can be replayed at any parameter vector with no hashing
// and no algebra. Each shard keeps its own graph; its layers line up with
// every other shard's.
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
// a is always a slot of the graph's own shard; b is one too, except in the
// cross entries, which name b's shard. Every slot of every shard appears at
// most once per layer, so the entries are independent: the threads of a team
// replay their shards' layers at once, each cross entry by exactly one of them.
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
  std::vector<std::uint32_t> cross_pairs;  // a0, shard0, b0, a1, shard1, b1, ...
  std::vector<std::int8_t> cross_pair_signs;
  std::vector<std::uint32_t> cross_halves;  // a0, shard0, b0, ...
  std::vector<std::int8_t> cross_half_signs;

  std::size_t n_rotations() const {
    return pair_signs.size() + half_signs.size() + cross_pair_signs.size() + cross_half_signs.size();
  }
  std::size_t bytes() const {
    return (pairs.capacity() + halves.capacity() + cos_only.capacity() + cross_pairs.capacity() +
            cross_halves.capacity()) *
               sizeof(std::uint32_t) +
           pair_signs.capacity() + half_signs.capacity() + cross_pair_signs.capacity() + cross_half_signs.capacity() +
           sizeof(GraphLayer);
  }
  void clear_entries() {
    for (auto* v : {&pairs, &halves, &cos_only, &cross_pairs, &cross_halves}) v->clear();
    for (auto* v : {&pair_signs, &half_signs, &cross_pair_signs, &cross_half_signs}) v->clear();
  }
  // The entries alone, sized to fit (the metadata is left as it is).
  void copy_entries_from(const GraphLayer& other);
};

using Graph = std::vector<GraphLayer>;

// Values the reverse sweep cannot recover from a layer's outputs, per layer
// of one shard's graph: the inputs of halves and cos-only entries, and with
// paring (pairs_too) the inputs of pairs as well.
std::size_t tape_length(const GraphLayer& layer, bool pairs_too);

// One layer of shard `self` forward at (cos, sin) = (cs, sn); c[s] is shard
// s's coefficient array. Writes the tape (when `tape` is not null) and
// returns its advanced end. Entries whose moved weight |sn| * max|c| is below
// `pare` are reduced to their cos scaling (an approximation; pare = 0 is exact;
// pare > 0 needs pairs taped).
double* forward_layer(const GraphLayer& layer, double cs, double sn, double* const* c, int self, double* tape,
                      double pare);

// The same layer backwards on interleaved states (c_0, lambda_0, c_1, ...):
// c enters as the layer's output and is rewound (reading the tape backwards
// from `tape`, which moves); lambda enters as d f / d c_out and leaves as
// d f / d c_in. Returns d f / d phi.
double adjoint_layer(const GraphLayer& layer, double cs, double sn, double* const* state, int self, const double*& tape,
                     double pare);

// Applies one layer at angle phi (exact): what a propagation does to its
// coefficients once it has classified the layer's entries.
void rotate_layer(const GraphLayer& layer, double phi, double* const* c, int self);

// One shard alone (no cross entries): the whole graph forward, and back.
// `parameters`, when given, overrides each layer's parameter index (graph order).
void replay_forward(const Graph& graph, const double* theta, std::vector<double>& c, std::vector<double>* tape,
                    double pare = 0.0, const std::int32_t* parameters = nullptr);
void replay_adjoint(const Graph& graph, const double* theta, const std::vector<double>& tape, double* state,
                    double* grad, double pare = 0.0, const std::int32_t* parameters = nullptr);

}  // namespace monoprop
