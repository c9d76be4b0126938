// How a replay layout splits the slots into blocks by a few bits of their
// terms (replay_layout.h, rank_layout.h): a rotation by G pairs P with P G,
// whose bits are P's xor G's, so the two fall in one block unless G flips a
// bit the split reads. The split is chosen from each slot's work and each
// layer's generator: blocks of even work, few layers crossing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph.h"

namespace monoprop {

// Bit p of a key.
inline bool key_bit(const std::uint64_t* key, int p) { return (key[p >> 6] >> (p & 63)) & 1u; }

// What the choice reads, summed over every slot the layout places.
struct SplitStats {
  int words = 1;
  std::vector<std::uint64_t> flips;   // by layer, `words` words each: what its generator flips (0: not known)
  std::vector<double> layer_cost;     // by layer: its rotating entries, and what crossing costs beyond them
  std::vector<double> position_work;  // by key position: the work of the slots whose term has that bit
  double total_work = 0.0;            // over all slots
};

// A shard's terms as the store holds them: `size` keys of `words` words each.
struct SlotKeys {
  const std::uint64_t* rows;
  std::size_t size;
};

// From the shards' graphs (graphs[s] of shard s, keys[s] its terms' keys):
// the work filed under each slot (work[s][i]: the entries whose a it is),
// each layer's generator as the bits its first rotating entry flips (the one
// of least a in the first shard that has one, whatever the order of the
// entries), and each layer's rotating entries, plus `crossing_cost` where it
// has any. position_work and total_work are left for add_work().
SplitStats split_stats(const std::vector<const Graph*>& graphs, const std::vector<SlotKeys>& keys, int words,
                       double crossing_cost, std::vector<std::vector<std::uint32_t>>& work);
// Adds the work of every slot to stats.position_work (sized `positions`) and total_work.
void add_work(SplitStats& stats, const std::vector<SlotKeys>& keys, int positions,
              const std::vector<std::vector<std::uint32_t>>& work);

class Split {
 public:
  // The positions the split reads: those on which the terms differ that the
  // generators flip least, weighed by the cost of the layers they would cross
  // (empty where the terms differ nowhere); a crossing entry is priced at
  // `handover` entries within a block.
  static std::vector<int> candidates(const SplitStats& stats, double handover);
  // The pattern of a key's bits at the candidates, an index into `work`.
  static std::uint32_t pattern(const std::vector<int>& candidates, const std::uint64_t* key);
  // The work of the slots of each pattern of the candidates' bits (work[s][i]
  // of slot i of shard s, keys[s] their keys, `words` words each).
  static std::vector<double> pattern_work(const std::vector<int>& candidates, const std::vector<SlotKeys>& keys,
                                          int words, const std::vector<std::vector<std::uint32_t>>& work);

  // The split of the slots onto `blocks` (2 to 256) blocks, given the work of
  // each pattern of the candidates' bits (work[pattern]). A crossing entry is
  // priced at `handover` entries within a block.
  Split(const SplitStats& stats, std::vector<int> candidates, const std::vector<double>& work, int blocks,
        double handover);

  // The block of a key.
  int block(const std::uint64_t* key) const { return block_of_class_[class_of_[pattern(candidates_, key)]]; }
  // Whether layer l's entries cross blocks.
  bool crosses(std::size_t l) const { return crossed_[l] != 0; }
  // The largest block's work over the mean.
  double uneven() const { return uneven_; }
  // The cost of the crossing layers, in entries.
  double crossing() const { return crossing_; }
  // The estimated replay time over the work of one block's share.
  double score() const { return score_; }

 private:
  std::vector<int> candidates_;
  std::vector<std::uint32_t> class_of_;  // by pattern
  std::vector<std::uint8_t> block_of_class_;
  std::vector<std::uint8_t> crossed_;  // by layer
  double uneven_ = 0.0, crossing_ = 0.0, score_ = 0.0;
};

}  // namespace monoprop
