// A base and its amendments: each clause followed through the versions
// (contracts.h ClauseHistories).
#include <unordered_map>

#include "ellm/pipelines/contracts.h"

namespace ellm::pipelines {

bool ClauseHistory::Changed() const {
  for (size_t s = 0; s < changes.size(); ++s) {
    if (moved[s] || (changes[s] && *changes[s] != ClauseChange::kUnchanged)) return true;
  }
  return false;
}

std::vector<ClauseHistory> ClauseHistories(const std::vector<ContractComparison>& steps) {
  if (steps.empty()) return {};
  const size_t versions = steps.size() + 1;
  std::vector<ClauseHistory> out;
  auto fresh = [&] {
    ClauseHistory h;
    h.index.assign(versions, -1);
    h.changes.assign(steps.size(), std::nullopt);
    h.moved.assign(steps.size(), false);
    return h;
  };
  std::unordered_map<int, size_t> at;  // clause index in the current version -> history
  for (size_t i = 0; i < steps[0].a.size(); ++i) {
    out.push_back(fresh());
    out.back().index[0] = static_cast<int>(i);
    at[static_cast<int>(i)] = out.size() - 1;
  }
  for (size_t s = 0; s < steps.size(); ++s) {
    std::unordered_map<int, size_t> next;
    for (const AlignedClause& x : steps[s].aligned) {
      size_t h;
      if (x.a >= 0 && at.count(x.a)) {
        h = at[x.a];
      } else {
        out.push_back(fresh());  // added at this step (or a clause the chain lost)
        h = out.size() - 1;
      }
      out[h].changes[s] = x.change;
      out[h].moved[s] = x.moved;
      if (x.b >= 0) {
        out[h].index[s + 1] = x.b;
        next[x.b] = h;
      }
    }
    at = std::move(next);
  }
  return out;
}

}  // namespace ellm::pipelines
