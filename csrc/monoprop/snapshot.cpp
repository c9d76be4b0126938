// The graph's part of a save, and the re-sharding of a load (snapshot.h).
#include "snapshot.h"

#include <algorithm>

namespace monoprop {

namespace state_io {

void agree(const mpi::Comm& comm, std::exception_ptr error) {
  if (comm.distributed()) {
    const auto ranks = static_cast<std::uint64_t>(comm.size());
    std::uint64_t lowest = error ? ranks - static_cast<std::uint64_t>(comm.rank()) : 0;  // max: the lowest rank
    comm.max(&lowest, 1);
    if (lowest && !error)
      throw ArgumentError("the save's part for rank " + std::to_string(ranks - lowest) +
                          " could not be loaded (that rank says why); nothing was loaded.");
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace state_io

using state_io::damaged;
using state_io::shard_name;

namespace {

// Words of a saved Section (count, offset, length, partners, base, width)
// and of a saved Part (shard, then births, pairs and halves).
constexpr std::size_t kSectionWords = 6, kPartWords = 1 + 3 * kSectionWords;

// Checks that a section's entries decode inside their bytes, in ascending a
// below `own`, with partners below `other`: `kind` 0 for cos entries, 1 for
// births (partners base, base + 1, ...), 2 for pairs and halves.
void check_section(const ShardLayer& layer, const Section& s, int kind, std::size_t own, std::size_t other,
                   const std::string& where) {
  const std::size_t end = layer.bytes.size() - kPadding;
  const std::size_t stop = std::size_t{s.offset} + s.length;
  if (s.offset > s.partners || s.partners > stop || stop > end) damaged(where + " has a section outside its bytes");
  if (s.width > 4 || (kind == 2 && s.count > 0 && s.width == 0)) damaged(where + " has a partner width above 4");
  if (std::size_t{s.width} * s.count != stop - s.partners) damaged(where + " has partners that do not fit");
  if (kind == 1 && std::size_t{s.base} + s.count > other) damaged(where + " has births past the partner shard");
  std::size_t p = s.offset;
  std::uint32_t a = 0;  // wraps like SectionReader's: entries need not ascend
  for (std::uint32_t k = 0; k < s.count; ++k) {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (p >= s.partners || shift > 35) damaged(where + " has an entry that does not decode");
      const std::uint8_t byte = layer.bytes[p++];
      v |= std::uint64_t{byte & 0x7fu} << shift;
      if (byte < 0x80) break;
    }
    a += static_cast<std::uint32_t>(kind == 0 ? v : v >> 1);
    if (a >= own) damaged(where + " names a slot its shard does not hold");
    if (kind == 2) {
      std::uint32_t b = 0;
      for (int i = 0; i < s.width; ++i)
        b |= std::uint32_t{layer.bytes[s.partners + std::size_t{s.width} * k + static_cast<std::size_t>(i)]} << (8 * i);
      if (b >= other) damaged(where + " names a partner its shard does not hold");
    }
  }
  if (p != s.partners) damaged(where + " has bytes its entries do not account for");
}

}  // namespace

void save_graph(SavedState& out, std::size_t s, const Graph& graph) {
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint64_t> byte_ends, part_ends;
  std::vector<std::uint32_t> cos, parts;
  auto section = [](std::vector<std::uint32_t>& to, const Section& x) {
    to.insert(to.end(), {x.count, x.offset, x.length, x.partners, x.base, std::uint32_t{x.width}});
  };
  for (const ShardLayer& layer : graph) {
    bytes.insert(bytes.end(), layer.bytes.begin(), layer.bytes.end());
    byte_ends.push_back(bytes.size());
    section(cos, layer.cos);
    for (const Part& part : layer.parts) {
      parts.push_back(part.shard);
      section(parts, part.births);
      section(parts, part.pairs);
      section(parts, part.halves);
    }
    part_ends.push_back(parts.size() / kPartWords);
  }
  out.put(shard_name(s, "graph_bytes"), bytes);
  out.put(shard_name(s, "graph_byte_ends"), byte_ends);
  out.put(shard_name(s, "graph_cos"), cos.data(), {graph.size(), kSectionWords});
  out.put(shard_name(s, "graph_part_ends"), part_ends);
  out.put(shard_name(s, "graph_parts"), parts.data(), {parts.size() / kPartWords, kPartWords});
}

Graph restore_graph(const SavedState& state, std::size_t s, const std::vector<std::size_t>& sizes, std::size_t layers) {
  Graph graph;
  const std::string where = "shard " + std::to_string(s);
  const auto bytes = state.get<std::uint8_t>(shard_name(s, "graph_bytes"));
  const auto byte_ends = state.get<std::uint64_t>(shard_name(s, "graph_byte_ends"));
  const auto cos = state.get<std::uint32_t>(shard_name(s, "graph_cos"), kSectionWords);
  const auto part_ends = state.get<std::uint64_t>(shard_name(s, "graph_part_ends"));
  const auto parts = state.get<std::uint32_t>(shard_name(s, "graph_parts"), kPartWords);
  const std::size_t L = layers;
  if (byte_ends.size() != L || part_ends.size() != L || cos.size() != L * kSectionWords)
    damaged(where + " has another number of graph layers than the graph");
  auto section = [](const std::uint32_t* x) {
    Section out;
    out.count = x[0];
    out.offset = x[1];
    out.length = x[2];
    out.partners = x[3];
    out.base = x[4];
    out.width = static_cast<std::uint8_t>(std::min<std::uint32_t>(x[5], 255));  // above 4: refused
    return out;
  };
  std::uint64_t byte = 0, part = 0;
  for (std::size_t l = 0; l < L; ++l) {
    const std::string at = where + " layer " + std::to_string(l);
    if (byte_ends[l] < byte || byte_ends[l] > bytes.size() || byte_ends[l] - byte < kPadding || part_ends[l] < part ||
        part_ends[l] * kPartWords > parts.size())
      damaged(at + " lies outside the saved graph");
    ShardLayer layer;
    layer.bytes.assign(bytes.begin() + static_cast<std::ptrdiff_t>(byte),
                       bytes.begin() + static_cast<std::ptrdiff_t>(byte_ends[l]));
    for (std::size_t k = layer.bytes.size() - kPadding; k < layer.bytes.size(); ++k)
      if (layer.bytes[k] != 0) damaged(at + " lacks its padding");
    layer.cos = section(&cos[l * kSectionWords]);
    check_section(layer, layer.cos, 0, sizes[s], 0, at);
    if (layer.cos.base > layer.cos.count) damaged(at + " has more dark cos entries than cos entries");
    for (; part < part_ends[l]; ++part) {
      const std::uint32_t* x = &parts[part * kPartWords];
      if (x[0] >= sizes.size()) damaged(at + " names a shard past the last");
      Part p;
      p.shard = x[0];
      p.births = section(x + 1);
      p.pairs = section(x + 1 + kSectionWords);
      p.halves = section(x + 1 + 2 * kSectionWords);
      const std::size_t other = sizes[p.shard];
      check_section(layer, p.births, 1, sizes[s], other, at);
      check_section(layer, p.pairs, 2, sizes[s], other, at);
      check_section(layer, p.halves, 2, sizes[s], other, at);
      layer.parts.push_back(p);
    }
    byte = byte_ends[l];
    graph.push_back(std::move(layer));
  }
  if (byte != bytes.size() || part * kPartWords != parts.size())
    damaged(where + " has graph bytes past its last layer");
  return graph;
}

void save_remote(SavedState& out, const std::vector<RemoteLayer>& remote) {
  // Per layer its blocks' end; per block its peer, whether this rank counts
  // it, and its entries' end; per entry its shard, slot and code.
  std::vector<std::uint64_t> layer_blocks, entry_ends;
  std::vector<std::int32_t> peers;
  std::vector<std::uint8_t> counts;
  std::vector<std::uint32_t> remote_shards, remote_slots;
  std::vector<std::int8_t> codes;
  for (const RemoteLayer& layer : remote) {
    for (const RemoteBlock& b : layer.blocks) {
      peers.push_back(b.peer);
      counts.push_back(b.counts);
      remote_shards.insert(remote_shards.end(), b.shards.begin(), b.shards.end());
      remote_slots.insert(remote_slots.end(), b.slots.begin(), b.slots.end());
      codes.insert(codes.end(), b.codes.begin(), b.codes.end());
      entry_ends.push_back(codes.size());
    }
    layer_blocks.push_back(peers.size());
  }
  out.put("remote.layer_block_ends", layer_blocks);
  out.put("remote.block_peer", peers);
  out.put("remote.block_counts", counts);
  out.put("remote.block_entry_ends", entry_ends);
  out.put("remote.shards", remote_shards);
  out.put("remote.slots", remote_slots);
  out.put("remote.codes", codes);
}

std::vector<RemoteLayer> restore_remote(const SavedState& state, const std::vector<std::size_t>& sizes,
                                        const Moves& moved, std::size_t layers, int rank, int ranks) {
  const auto layer_blocks = state.get<std::uint64_t>("remote.layer_block_ends");
  const auto peers = state.get<std::int32_t>("remote.block_peer");
  const auto counts = state.get<std::uint8_t>("remote.block_counts");
  const auto entry_ends = state.get<std::uint64_t>("remote.block_entry_ends");
  const auto shards = state.get<std::uint32_t>("remote.shards");
  const auto slots = state.get<std::uint32_t>("remote.slots");
  const auto codes = state.get<std::int8_t>("remote.codes");
  const std::size_t B = peers.size(), E = codes.size();
  if (layer_blocks.size() != layers || counts.size() != B || entry_ends.size() != B || shards.size() != E ||
      slots.size() != E || (B ? entry_ends.back() : 0) != E || (layers == 0 ? 0 : layer_blocks.back()) != B)
    damaged("the entries shared with other ranks do not fit together");
  std::vector<RemoteLayer> remote(layers);
  std::uint64_t block = 0, entry = 0, offset = 0;
  for (std::size_t l = 0; l < layers; ++l) {
    RemoteLayer& layer = remote[l];
    int last_peer = -1;
    if (layer_blocks[l] < block || layer_blocks[l] > B)
      damaged("the entries shared with other ranks do not fit together");
    for (; block < layer_blocks[l]; ++block) {
      const int peer = peers[block];
      if (peer <= last_peer || peer == rank || peer >= ranks || counts[block] != (rank < peer) ||
          entry_ends[block] <= entry || entry_ends[block] > E)
        damaged("layer " + std::to_string(l) + " shares entries with ranks out of order");
      last_peer = peer;
      RemoteBlock b;
      b.peer = peer;
      b.counts = counts[block] != 0;
      b.start = layer.entries;
      for (; entry < entry_ends[block]; ++entry) {
        const int code = codes[entry];
        if (shards[entry] >= sizes.size() || slots[entry] >= sizes[shards[entry]] || code == 0 || code < -3 || code > 3)
          damaged("layer " + std::to_string(l) + " shares an entry this rank does not hold");
        const auto [shard, slot] = moved[shards[entry]][slots[entry]];
        b.shards.push_back(shard);
        b.slots.push_back(slot);
        b.codes.push_back(static_cast<std::int8_t>(code));
      }
      layer.entries += b.size();
      layer.blocks.push_back(std::move(b));
    }
    layer.offset = offset;
    offset += layer.entries;
  }
  return remote;
}

void check_remote_peers(const mpi::Comm& comm, const std::vector<RemoteLayer>& remote) {
  const auto R = static_cast<std::size_t>(comm.size()), L = remote.size();
  const int rank = comm.rank();
  std::vector<std::uint64_t> mine(R * L, 0), theirs(R * L, 0);
  for (std::size_t l = 0; l < L; ++l)
    for (const RemoteBlock& b : remote[l].blocks) mine[static_cast<std::size_t>(b.peer) * L + l] = b.size();
  std::vector<mpi::Parcel> parcels;
  for (std::size_t p = 0; p < R; ++p)
    if (static_cast<int>(p) != rank) parcels.push_back({static_cast<int>(p), &mine[p * L], L, &theirs[p * L], L});
  comm.exchange(parcels, sizeof(std::uint64_t));
  std::exception_ptr error;
  if (mine != theirs)
    error = std::make_exception_ptr(
        ArgumentError("the save is damaged: rank " + std::to_string(rank) +
                      " and a peer disagree on the graph entries they share; its parts are not of one save."));
  state_io::agree(comm, error);
}

// Layer l of the saved shards' graphs, re-encoded between the slots `moved`
// gives (births become pairs: their partners are no longer consecutive).
std::vector<ShardLayer> reshard_layer(const std::vector<Graph>& graphs, std::size_t l, const Moves& moved,
                                      const std::vector<std::size_t>& sizes) {
  struct Entry {
    std::uint32_t a, b;
    int sign;
  };
  const std::size_t T = sizes.size();
  std::vector<ShardLayer> out;
  std::vector<std::vector<std::uint32_t>> cos(T), dark(T);
  std::vector<std::vector<std::vector<Entry>>> pairs(T, std::vector<std::vector<Entry>>(T)), halves = pairs;
  for (std::size_t s = 0; s < graphs.size(); ++s) {
    const DecodedLayer decoded = decode(graphs[s][l]);
    for (const std::uint32_t a : decoded.cos) cos[moved[s][a].first].push_back(moved[s][a].second);
    for (const std::uint32_t a : decoded.dark) dark[moved[s][a].first].push_back(moved[s][a].second);
    for (const bool half : {false, true})
      for (const DecodedEntry& e : half ? decoded.halves : decoded.pairs) {
        const auto [ta, a] = moved[s][e.a];
        const auto [tb, b] = moved[e.other][e.b];
        (half ? halves : pairs)[ta][tb].push_back({a, b, e.sign});
      }
  }
  SectionWriter writer;
  for (std::size_t t = 0; t < T; ++t) {
    ShardLayer layer;
    std::sort(cos[t].begin(), cos[t].end());
    std::sort(dark[t].begin(), dark[t].end());
    write_cos(writer, cos[t], dark[t], layer.bytes, layer.cos);
    for (std::size_t o = 0; o < T; ++o) {
      if (pairs[t][o].empty() && halves[t][o].empty()) continue;
      Part part;
      part.shard = static_cast<std::uint32_t>(o);
      writer.start();
      writer.append_to(layer.bytes, part.births);
      for (const bool half : {false, true}) {
        std::vector<Entry>& entries = (half ? halves : pairs)[t][o];
        std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) { return x.a < y.a; });
        writer.start(slot_width(sizes[o]));
        for (const Entry& e : entries) writer.pair(e.a, e.b, e.sign);
        writer.append_to(layer.bytes, half ? part.halves : part.pairs);
      }
      layer.parts.push_back(part);
    }
    SectionWriter::finish(layer.bytes);
    out.push_back(std::move(layer));
  }
  return out;
}

}  // namespace monoprop
