// The replayer (replayer.h) on random graphs built as the engine builds them
// (tests/cpp/random_graph.h), lent as a ReplaySource with random starting
// coefficients, weights and parameters, against the textbook formulas of
// each entry (plain_replay): the value, what a bounded replay drops, the
// coefficients replay_all leaves, the gradient against central differences
// of the plain value; over the shards' own graph, a layout over the threads
// and a team replay; on two ranks of a world of threads
// (tests/cpp/ranks.h), whose remote entries are exchanged. A batch's every
// point must be bitwise its single replay, in every number of lanes.
#include "monoprop/replayer.h"

#include <cmath>
#include <cstdint>
#include <mutex>
#include <random>
#include <span>
#include <vector>

#include "cpp/check.h"
#include "cpp/random_graph.h"
#include "cpp/ranks.h"

using namespace monoprop;
using namespace monoprop_test;

namespace {

using LayoutUse = MonomialPropagator::LayoutUse;

// A random graph with what a propagator would lend with it: the layers'
// parameters and frequencies, each shard's starting coefficients and weights.
struct Problem {
  RandomGraph graph;
  std::vector<LayerInfo> layers;
  std::vector<Column<double>> bases;                                   // by global shard
  std::vector<std::vector<std::pair<std::uint32_t, double>>> weights;  // by global shard, ascending
  int parameters = 0;
  double core = 0.25;
};

Problem random_problem(std::mt19937& rng, int ranks, int shards, int parameters) {
  Problem p;
  p.graph = random_graph(rng, ranks, shards, 6, 16, 20, 1500);
  p.parameters = parameters;
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (std::size_t l = 0; l < p.graph.layers(); ++l) {
    LayerInfo info;
    info.parameter = static_cast<std::int32_t>(l % static_cast<std::size_t>(parameters));
    info.frequency = 0.5 + 0.5 * (unit(rng) + 1.0);
    p.layers.push_back(info);
  }
  for (const auto& keys : p.graph.keys) {
    Column<double> base;
    std::vector<std::pair<std::uint32_t, double>> weights;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      base.push_back(unit(rng));
      if (unit(rng) > 0.0) weights.emplace_back(static_cast<std::uint32_t>(i), unit(rng));
    }
    p.bases.push_back(std::move(base));
    p.weights.push_back(std::move(weights));
  }
  return p;
}

// Rank r's part of the problem as a propagator lends it.
ReplaySource source_of(Problem& p, int rank, const mpi::Comm& comm, Interrupts& interrupts, const MemoryBudget& budget,
                       LayoutUse use, std::size_t small_work) {
  ReplaySource source;
  source.graphs = p.graph.rank_graphs(rank);
  source.keys = p.graph.rank_keys(rank);
  std::vector<std::size_t> globals;
  for (std::size_t s = 0; s < source.graphs.size(); ++s) {
    const std::size_t g = p.graph.global(rank, s);
    globals.push_back(g);
    source.bases.push_back(&p.bases[g]);
    source.terms += p.bases[g].size();
    for (const ShardLayer& layer : *source.graphs[s]) source.entries += layer.n_cos() + layer.n_rotations();
  }
  source.layers = &p.layers;
  source.remote = &p.graph.remote[static_cast<std::size_t>(rank)];
  for (const RemoteLayer& layer : *source.remote) source.remote_entries += layer.entries;
  source.generation = 1;
  source.key_words = 1;
  source.slots = p.graph.positions;
  source.comm = &comm;
  source.interrupts = &interrupts;
  source.budget = &budget;
  source.small_work = small_work;
  source.layout_use = use;
  source.core = p.core;
  source.held = {0.125, 0.0625, 0.125, 0.0625};
  source.weigh = [&p, globals](std::size_t s, ReplaySource::Weights& out) { out = p.weights[globals[s]]; };
  return source;
}

// The plain replay at theta: the value, the sums a bounded replay drops (a
// lit cos entry's sine branch |sn c|, its square; dark ones are not counted)
// and the final coefficients.
struct Plain {
  double value = 0.0, sum = 0.0, squares = 0.0;
  std::vector<std::vector<double>> c;
};

Plain plain(Problem& p, const std::vector<double>& theta) {
  RandomGraph& g = p.graph;
  for (std::size_t l = 0; l < g.layers(); ++l) g.angles[l] = p.layers[l].frequency * theta[p.layers[l].parameter];
  Plain out;
  for (const Column<double>& base : p.bases) out.c.emplace_back(base.begin(), base.end());
  // The dropped sums need each cos entry's input: replay layer by layer.
  RandomGraph one = g;
  for (std::size_t l = 0; l < g.layers(); ++l) {
    const double sn = std::sin(g.angles[l]);
    for (const GraphEntry& e : g.entries[l])
      if (e.kind == GraphEntry::Cos) {
        const double x = sn * out.c[e.sa][e.a];
        out.sum += std::abs(x);
        out.squares += x * x;
      }
    one.generators = {g.generators[l]};
    one.angles = {g.angles[l]};
    one.entries = {g.entries[l]};
    plain_replay(one, out.c);
  }
  out.value = p.core;
  for (std::size_t s = 0; s < out.c.size(); ++s)
    for (const auto& [i, w] : p.weights[s]) out.value += w * out.c[s][i];
  return out;
}

bool close(double x, double y, double tolerance = 1e-11) { return std::abs(x - y) <= tolerance * (1.0 + std::abs(y)); }

std::vector<double> random_theta(std::mt19937& rng, int n) {
  std::uniform_real_distribution<double> angle(-1.5, 1.5);
  std::vector<double> theta(static_cast<std::size_t>(n));
  for (double& x : theta) x = angle(rng);
  return theta;
}

// One rank: every way of replaying against the plain one.
void check_one_rank(std::mt19937& rng, int shards, LayoutUse use, std::size_t small_work) {
  Problem p = random_problem(rng, 1, shards, 5);
  const mpi::Comm comm;
  Interrupts interrupts;
  const MemoryBudget budget(std::uint64_t{1} << 40);
  const Replayer replayer(static_cast<std::size_t>(shards));
  const ReplaySource source = source_of(p, 0, comm, interrupts, budget, use, small_work);
  const std::vector<double> theta = random_theta(rng, p.parameters);
  const Plain want = plain(p, theta);

  CHECK(close(replayer.value(source, theta, 0.0, nullptr, nullptr), want.value));
  Dropped total;
  CHECK(close(replayer.value(source, theta, 0.0, nullptr, &total), want.value));
  CHECK(close(total.sum, 0.125 + want.sum) && close(total.squares, 0.0625 + want.squares));
  if (use == LayoutUse::always && shards > 1) CHECK(replayer.blocks(source) == static_cast<std::size_t>(shards));
  if (use == LayoutUse::never) CHECK(replayer.blocks(source) == 0);

  replayer.replay_all(source, theta.data());
  bool same = true;
  for (std::size_t s = 0; s < want.c.size(); ++s)
    for (std::size_t i = 0; i < want.c[s].size(); ++i) same = same && close(replayer.replayed(s)[i], want.c[s][i]);
  CHECK(same);

  // The gradient against central differences of the plain value.
  std::vector<double> gradient(theta.size());
  CHECK(close(replayer.gradient(source, theta, gradient.data(), 0.0, nullptr, nullptr), want.value));
  const double h = 1e-6;
  bool matches = true;
  for (std::size_t k = 0; k < theta.size(); ++k) {
    std::vector<double> up = theta, down = theta;
    up[k] += h;
    down[k] -= h;
    const double difference = (plain(p, up).value - plain(p, down).value) / (2 * h);
    matches = matches && close(gradient[k], difference, 1e-6);
  }
  CHECK(matches);

  // A parameter mapping moves each layer onto another parameter.
  std::vector<std::int32_t> lp(p.layers.size());
  for (std::size_t l = 0; l < lp.size(); ++l) lp[l] = static_cast<std::int32_t>((l * 3 + 1) % 5);
  std::vector<LayerInfo> original = p.layers;
  for (std::size_t l = 0; l < lp.size(); ++l) p.layers[l].parameter = lp[l];
  const double mapped = plain(p, theta).value;
  p.layers = original;
  CHECK(close(replayer.value(source, theta, 0.0, lp.data(), nullptr), mapped));
}

// A batch against single replays, bitwise, in `lanes` lanes; the points
// differ only in the last parameters (the layers before them are shared).
void check_batch(std::mt19937& rng, int shards, int lanes, LayoutUse use) {
  Problem p = random_problem(rng, 1, shards, 6);
  for (std::size_t l = 0; l < p.layers.size(); ++l)  // later layers on later parameters
    p.layers[l].parameter = static_cast<std::int32_t>(l * 6 / p.layers.size());
  const mpi::Comm comm;
  Interrupts interrupts;
  const MemoryBudget budget(std::uint64_t{1} << 40);
  const Replayer replayer(static_cast<std::size_t>(shards));
  ReplaySource source = source_of(p, 0, comm, interrupts, budget, use, 0);
  source.point_lanes = lanes;
  const std::size_t K = 7, n = 6;
  std::vector<double> points = random_theta(rng, static_cast<int>(K * n));
  for (std::size_t k = 1; k < K; ++k)
    for (std::size_t i = 0; i < 3; ++i) points[k * n + i] = points[i];
  for (const bool gradient : {false, true}) {
    std::vector<double> values(K), gradients(gradient ? K * n : 0);
    CHECK(replayer.batch(source, points.data(), K, n, nullptr, values.data(), gradient ? gradients.data() : nullptr));
    bool bitwise = true;
    for (std::size_t k = 0; k < K; ++k) {
      const std::span<const double> row(points.data() + k * n, n);
      std::vector<double> g(n);
      const double value = gradient ? replayer.gradient(source, row, g.data(), 0.0, nullptr, nullptr)
                                    : replayer.value(source, row, 0.0, nullptr, nullptr);
      bitwise = bitwise && value == values[k];
      for (std::size_t i = 0; gradient && i < n; ++i) bitwise = bitwise && g[i] == gradients[k * n + i];
      bitwise = bitwise && close(value, plain(p, std::vector<double>(row.begin(), row.end())).value);
    }
    CHECK(bitwise);
  }
}

// Several ranks: each rank's value, gradient and bounded sums over the
// world against the plain replay of the whole graph.
void check_ranks(std::mt19937& rng, int ranks, int shards, LayoutUse use) {
  Problem p = random_problem(rng, ranks, shards, 4);
  const std::vector<double> theta = random_theta(rng, p.parameters);
  const Plain want = plain(p, theta);
  std::vector<double> up = theta;
  up[1] += 1e-6;
  std::vector<double> down = theta;
  down[1] -= 1e-6;
  const double difference = (plain(p, up).value - plain(p, down).value) / 2e-6;
  // plain() sets the graph's angles: every rank reads them only through its own replay.
  std::mutex lock;
  bool values = true, bounds = true, gradients = true;
  run_ranks(ranks, [&](const mpi::Comm& comm, int r) {
    Interrupts interrupts;
    const MemoryBudget budget(std::uint64_t{1} << 40);
    const Replayer replayer(static_cast<std::size_t>(shards));
    ReplaySource source;
    {
      const std::lock_guard<std::mutex> hold(lock);
      source = source_of(p, r, comm, interrupts, budget, use, 0);
      source.held = {};  // what a rank held dropped counts on every rank: none here
    }
    Dropped total;
    const double value = replayer.value(source, theta, 0.0, nullptr, &total);
    std::vector<double> gradient(theta.size());
    const double again = replayer.gradient(source, theta, gradient.data(), 0.0, nullptr, nullptr);
    const std::lock_guard<std::mutex> hold(lock);
    values = values && close(value, want.value) && close(again, want.value);
    bounds = bounds && close(total.sum, want.sum) && close(total.squares, want.squares);
    gradients = gradients && close(gradient[1], difference, 1e-6);
  });
  CHECK(values);
  CHECK(bounds);
  CHECK(gradients);
}

}  // namespace

TEST(one_rank_against_plain_replay) {
  std::mt19937 rng(42);
  for (const int shards : {1, 2, 3})
    for (const LayoutUse use : {LayoutUse::never, LayoutUse::always})
      for (const std::size_t small_work : {std::size_t{0}, std::size_t{1} << 30})
        check_one_rank(rng, shards, use, small_work);
}

TEST(batch_is_bitwise_its_single_replays) {
  std::mt19937 rng(7);
  for (const int shards : {1, 2})
    for (const int lanes : {1, 2, 4, 16})
      check_batch(rng, shards, lanes, shards > 1 ? LayoutUse::always : LayoutUse::never);
}

TEST(ranks_exchange_their_remote_entries) {
  std::mt19937 rng(3);
  // Two ranks: the world of threads meets every rank at an exchange, and
  // with more a layer may have remote entries on some ranks only.
  for (const LayoutUse use : {LayoutUse::never, LayoutUse::always}) check_ranks(rng, 2, 2, use);
}
