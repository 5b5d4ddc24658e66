// Phase clocks: where a kernel's step spends its time, without a profiler. At marked points of
// each step, lane 0 of each warp of the first `blocks` blocks stores the SM's cycle counter
// (clock64) into a buffer that the host reads after the launch. The differences between
// consecutive marks of one warp are the cycles its phases took, on the path the step really ran
// (a profiler's stall samples say why warps wait, not which phase of a step the wait belongs to).
// clock64 counts per SM, so only marks of one block compare. Off (at == nullptr, the default) a
// mark costs one uniform branch. The marks are phase_mark's (core/phase_clock.cuh, device code);
// this header is the layout and the host's reading of it.
//
// Spans, beside the marks: thread 0 of every block (up to span_blocks) stores the SM it runs on
// and the device's global timer (nanoseconds, one clock for all SMs, unlike clock64) where its
// work starts and ends. What one cluster's marks cannot say: whether every cluster had its SMs to
// itself. A launch lasts as long as its slowest cluster, and blocks that share an SM share its
// schedulers (cluster_spans).
#pragma once
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/host_device.h"
#include "core/median.h"

namespace grpo {

enum SpanField : unsigned { kSpanSm, kSpanStart, kSpanEnd, kSpanFields };

struct PhaseClocks {
  long long* at = nullptr;  // [blocks][steps][marks][warps]
  unsigned blocks = 0, steps = 0, marks = 0, warps = 0;
  long long* spans = nullptr;  // [span_blocks][kSpanFields]
  unsigned span_blocks = 0;
  GRPO_HD size_t index(unsigned block, unsigned step, unsigned mark, unsigned warp) const {
    return ((size_t(block) * steps + step) * marks + mark) * warps + warp;
  }
  GRPO_HD size_t size() const { return size_t(blocks) * steps * marks * warps; }
  GRPO_HD size_t spans_size() const { return size_t(span_blocks) * kSpanFields; }
};

// What the host fills the buffer with before a launch: a mark that holds it was never reached.
constexpr long long kUnmarked = LLONG_MIN;

// Where a step's last phase ends: at the next step's first mark (a kernel that runs all the
// steps), or at the step's own last mark (a launch a step, whose next step's blocks may run on
// other SMs, with counters that do not compare).
enum class PhaseEnd { NextStep, LastMark };

// One warp's phases (phase k of a step runs from its mark k to mark k + 1; with NextStep the last
// one to the next step's mark 0, with LastMark there is none past the last mark): for each phase
// the median of its cycles over the steps whose marks are all there (and, with NextStep, are
// followed by a marked step), and the median of those steps' cycles; `steps` says how many steps
// that was (0: no medians).
struct PhaseMedians {
  std::vector<double> phase;
  double step = 0;
  size_t steps = 0;
};

inline PhaseMedians phase_medians(const std::vector<long long>& at, const PhaseClocks& c, unsigned block, unsigned warp,
                                  PhaseEnd end = PhaseEnd::NextStep) {
  PhaseMedians out;
  const bool next = end == PhaseEnd::NextStep;
  const unsigned phases = next ? c.marks : (c.marks > 0 ? c.marks - 1 : 0);  // marks m[0..phases]
  out.phase.assign(phases, 0.0);
  if (phases == 0 || at.size() < c.size()) return out;
  std::vector<std::vector<double>> cycles(phases);
  std::vector<double> steps;
  for (unsigned t = 0; t + (next ? 1 : 0) < c.steps; ++t) {
    std::vector<long long> m(phases + 1);
    for (unsigned k = 0; k <= phases; ++k)
      m[k] = k < c.marks ? at[c.index(block, t, k, warp)] : at[c.index(block, t + 1, 0, warp)];
    if (std::count(m.begin(), m.end(), kUnmarked) > 0) continue;
    for (unsigned k = 0; k < phases; ++k) cycles[k].push_back(double(m[k + 1] - m[k]));
    steps.push_back(double(m[phases] - m[0]));
  }
  for (unsigned k = 0; k < phases; ++k) out.phase[k] = median(cycles[k]);
  out.step = median(steps);
  out.steps = steps.size();
  return out;
}

// A launch's spans read by cluster of `cluster_blocks` consecutive blocks: which blocks marked
// both ends, on how many SMs, and each cluster's span (its blocks' last end less their first
// start, over the clusters whose blocks all marked) and whether one of its blocks ran on an SM
// at the same time as another block (their spans overlap).
struct ClusterSpans {
  size_t blocks = 0, sms = 0, shared_sms = 0;  // blocks that marked; the SMs they ran on; those that ran two at once
  std::vector<double> ns;                      // a cluster's span
  std::vector<bool> shares;                    // whether it shared an SM
};

inline ClusterSpans cluster_spans(const std::vector<long long>& spans, unsigned cluster_blocks) {
  ClusterSpans out;
  const size_t n = spans.size() / kSpanFields;
  const auto field = [&](size_t b, unsigned f) { return spans[b * kSpanFields + f]; };
  const auto marked = [&](size_t b) {
    return field(b, kSpanSm) != kUnmarked && field(b, kSpanStart) != kUnmarked && field(b, kSpanEnd) != kUnmarked;
  };
  std::vector<bool> shares(n, false);
  std::vector<long long> sms, shared;
  for (size_t b = 0; b < n; ++b) {
    if (!marked(b)) continue;
    ++out.blocks;
    sms.push_back(field(b, kSpanSm));
    for (size_t o = 0; o < n; ++o)
      if (o != b && marked(o) && field(o, kSpanSm) == field(b, kSpanSm) && field(o, kSpanStart) < field(b, kSpanEnd) &&
          field(b, kSpanStart) < field(o, kSpanEnd))
        shares[b] = true;
    if (shares[b]) shared.push_back(field(b, kSpanSm));
  }
  const auto distinct = [](std::vector<long long> v) {
    std::sort(v.begin(), v.end());
    return size_t(std::unique(v.begin(), v.end()) - v.begin());
  };
  out.sms = distinct(sms), out.shared_sms = distinct(shared);
  for (size_t c0 = 0; cluster_blocks > 0 && c0 + cluster_blocks <= n; c0 += cluster_blocks) {
    long long first = LLONG_MAX, last = LLONG_MIN;
    bool all = true, share = false;
    for (size_t b = c0; b < c0 + cluster_blocks && all; ++b) {
      all = marked(b);
      first = std::min(first, field(b, kSpanStart));
      last = std::max(last, field(b, kSpanEnd));
      share = share || shares[b];
    }
    if (!all) continue;
    out.ns.push_back(double(last - first));
    out.shares.push_back(share);
  }
  return out;
}

}  // namespace grpo
