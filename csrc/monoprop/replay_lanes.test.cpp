// Replays in lanes (replay_lanes.h) against one-point replays (replay.h): K
// lanes, each at its own turn of every layer, must give each lane's
// coefficients, rewound states and d f / d phi bitwise as K one-point
// replays with their own tapes give them. The graphs are built as the engine
// builds them (tests/cpp/random_graph.h), and the turns include quarter turns
// (whose tapes keep inputs), turns by 0 (shrink 0: nothing kept) and the
// noise layers' scalings and transfers.
#include "monoprop/replay_lanes.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "cpp/check.h"
#include "cpp/random_graph.h"
#include "monoprop/noise.h"
#include "monoprop/replay.h"

using namespace monoprop;
using namespace monoprop_test;

namespace {

// Each layer's turn in each of `lanes` lanes: a layer is a rotation, a
// scaling (Damp) or a transfer, its number different in every lane.
std::vector<std::vector<Turn>> random_turns(std::mt19937& rng, std::size_t layers, int lanes) {
  std::uniform_real_distribution<double> u(-3.0, 3.0), rate(0.05, 0.95);
  std::vector<std::vector<Turn>> out(layers);
  for (auto& turns : out) {
    const unsigned kind = rng() % 7;
    for (int k = 0; k < lanes; ++k) {
      const unsigned pick = rng() % 6;
      if (kind == 5) {
        const double d = rate(rng);
        turns.push_back({d, 0.0, 1.0, 0.0});  // a scaling by d, along its rate
      } else if (kind == 6) {
        const double t = rate(rng);
        turns.push_back({1.0, t, 0.0, 1.0});  // a transfer of t
      } else {
        const double phi = pick == 0 ? 0.0 : pick == 1 ? 1.5707963267948966 + 1e-5 * u(rng) : u(rng);
        turns.push_back(rotation_turn(phi));
      }
    }
  }
  return out;
}

void lanes_against_points(std::mt19937& rng, int shards, int lanes) {
  const RandomGraph graph = random_graph(rng, 1, shards, 6, 18, 20, 2000);
  const auto S = static_cast<std::size_t>(shards), K = static_cast<std::size_t>(lanes);
  const std::size_t L = graph.layers();
  const auto turns = random_turns(rng, L, lanes);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  // Lane k of slot a starts at c0[k][s][a]; its lambda is w[k][s][a].
  std::vector<std::vector<std::vector<double>>> c0(K), w(K);
  for (std::size_t k = 0; k < K; ++k) {
    c0[k].resize(S);
    w[k].resize(S);
    for (std::size_t s = 0; s < S; ++s)
      for (std::size_t a = 0; a < graph.keys[s].size(); ++a) c0[k][s].push_back(u(rng)), w[k][s].push_back(u(rng));
  }

  // K one-point replays.
  std::vector<std::vector<std::vector<double>>> point_c = c0, point_state(K);
  std::vector<std::vector<double>> point_d(K, std::vector<double>(L * S));
  for (std::size_t k = 0; k < K; ++k) {
    std::vector<ReplayTape> tapes(S);
    std::vector<double*> c(S);
    for (std::size_t s = 0; s < S; ++s) {
      tapes[s].begin(graph.keys[s].size(), true);
      c[s] = point_c[k][s].data();
    }
    for (std::size_t l = 0; l < L; ++l)
      for (std::size_t s = 0; s < S; ++s)
        forward_layer(graph.graphs[s][l], turns[l][k].cs, turns[l][k].sn, c.data(), static_cast<int>(s), 0.0,
                      &tapes[s]);
    point_state[k].resize(S);
    for (std::size_t s = 0; s < S; ++s) {
      for (std::size_t a = 0; a < graph.keys[s].size(); ++a)
        point_state[k][s].insert(point_state[k][s].end(), {c[s][a], w[k][s][a]});
      c[s] = point_state[k][s].data();
    }
    for (std::size_t l = L; l-- > 0;)
      for (std::size_t s = 0; s < S; ++s)
        point_d[k][l * S + s] =
            adjoint_layer(graph.graphs[s][l], turns[l][k], c.data(), static_cast<int>(s), 0.0, &tapes[s]);
  }

  // The same K points side by side.
  std::vector<std::vector<double>> x(S);
  std::vector<double*> c(S);
  std::vector<LaneTape> tapes(S);
  bool filled = true;
  for (std::size_t s = 0; s < S; ++s) {
    const std::size_t n = graph.keys[s].size();
    x[s].resize(2 * n * K);  // room for the states
    fill_lanes(lanes, c0[0][s].data(), n, x[s].data());
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t k = 0; k < K; ++k) filled = filled && x[s][a * K + k] == c0[0][s][a];
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t k = 0; k < K; ++k) x[s][a * K + k] = c0[k][s][a];
    c[s] = x[s].data();
    tapes[s].begin(n, lanes);
  }
  CHECK(filled);
  for (std::size_t l = 0; l < L; ++l) {
    LaneTurns turn;
    for (int k = 0; k < lanes; ++k) turn.set(k, turns[l][static_cast<std::size_t>(k)], true);
    for (std::size_t s = 0; s < S; ++s)
      forward_lanes(lanes, graph.graphs[s][l], turn, c.data(), static_cast<int>(s), &tapes[s]);
  }
  bool forward = true;
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t a = 0; a < graph.keys[s].size(); ++a)
      for (std::size_t k = 0; k < K; ++k) forward = forward && x[s][a * K + k] == point_c[k][s][a];
  CHECK(forward);
  bool spread = true;
  for (std::size_t s = 0; s < S; ++s) {
    const std::vector<double> before(x[s].begin(),
                                     x[s].begin() + static_cast<std::ptrdiff_t>(graph.keys[s].size() * K));
    spread_lanes(lanes, x[s].data(), graph.keys[s].size());
    for (std::size_t i = 0; i < before.size(); ++i)
      spread = spread && x[s][2 * i] == before[i] && x[s][2 * i + 1] == 0.0;
    for (std::size_t a = 0; a < graph.keys[s].size(); ++a)
      for (std::size_t k = 0; k < K; ++k) x[s][2 * (a * K + k) + 1] = w[k][s][a];
  }
  CHECK(spread);
  bool gradient = true;
  for (std::size_t l = L; l-- > 0;) {
    LaneTurns turn;
    for (int k = 0; k < lanes; ++k) turn.set(k, turns[l][static_cast<std::size_t>(k)], true);
    for (std::size_t s = 0; s < S; ++s) {
      double d[kMostLanes];
      adjoint_lanes(lanes, graph.graphs[s][l], turn, c.data(), static_cast<int>(s), tapes[s], d);
      for (std::size_t k = 0; k < K; ++k) gradient = gradient && d[k] == point_d[k][l * S + s];
    }
  }
  CHECK(gradient);
  bool rewound = true;
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t a = 0; a < graph.keys[s].size(); ++a)
      for (std::size_t k = 0; k < K; ++k)
        rewound = rewound && x[s][2 * (a * K + k)] == point_state[k][s][2 * a] &&
                  x[s][2 * (a * K + k) + 1] == point_state[k][s][2 * a + 1];
  CHECK(rewound);
  // Every lane took back exactly what it kept, and the quarter turns made
  // some lane keep inputs (the tape's path was taken).
  bool drained = true, kept = false;
  for (const LaneTape& tape : tapes)
    for (const LaneTape::Lane& lane : tape.lanes) {
      drained = drained && lane.starts.empty();
      kept = kept || !lane.inputs.empty();
    }
  CHECK(drained);
  CHECK(kept);
}

}  // namespace

TEST(test_replay_lanes_against_points) {
  std::mt19937 rng(71);
  for (const int shards : {1, 3})
    for (const int lanes : {1, 2, 4, 8, 16}) lanes_against_points(rng, shards, lanes);
}

// Only 1, 2, 4, 8 and 16 lanes are compiled; any other count is refused.
TEST(test_replay_lanes_counts) {
  ShardLayer layer;
  SectionWriter writer;
  write_cos(writer, {0}, {}, layer.bytes, layer.cos);
  SectionWriter::finish(layer.bytes);
  double x[6] = {1, 2, 3, 0, 0, 0};
  double* c[] = {x};
  LaneTurns turn;
  for (int k = 0; k < 3; ++k) turn.set(k, rotation_turn(0.5), false);
  for (const int lanes : {0, 3, 5, 32}) {
    bool refused = false;
    try {
      forward_lanes(lanes, layer, turn, c, 0, nullptr);
    } catch (const std::logic_error&) {
      refused = true;
    }
    CHECK(refused);
  }
  bool refused = false;
  try {
    fill_lanes(3, x, 1, x + 3);
  } catch (const std::logic_error&) {
    refused = true;
  }
  CHECK(refused);
  CHECK(last_level_cache() > 0);
}
