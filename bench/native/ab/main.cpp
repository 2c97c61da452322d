// The core A/B: the old core (a git revision's native/, built with its namespace renamed)
// against the current one in one program, runs interleaved (old, new, new, old, ...) so
// that drift in the machine's speed lands on both. Prints medians per side and the ratio
// new / old for the cached pair, the split+merge pair and the pair with history on, at
// 16, 1k and 100k cached blocks, and for what a metrics scrape reads. Built and run by bench/core-ab.mjs.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define DECLARE_SIDE(ns)                              \
  namespace ns {                                      \
  void* setup(std::size_t n);                         \
  void teardown(void* s);                             \
  bool valid(void* s);                                \
  double pair_ns(void* s, std::size_t iters);         \
  double split_ns(void* s, std::size_t iters);        \
  double traced_ns(void* s, std::size_t iters);       \
  double sample_ns(void* s, std::size_t iters);       \
  }
DECLARE_SIDE(ab_old)
DECLARE_SIDE(ab_new)

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Figures {
  std::vector<double> pair, split, traced, sample;
};

}  // namespace

// `core_ab one SIDE FIGURE BLOCKS ITERS`: one figure of one side, once, for counting
// instructions under callgrind (the script's --instructions).
int one(const std::string& side, const std::string& figure, std::size_t blocks, std::size_t iters) {
  const bool old_side = side == "old";
  void* s = old_side ? ab_old::setup(blocks) : ab_new::setup(blocks);
  double ns = 0;
  if (figure == "pair") ns = old_side ? ab_old::pair_ns(s, iters) : ab_new::pair_ns(s, iters);
  if (figure == "split") ns = old_side ? ab_old::split_ns(s, iters) : ab_new::split_ns(s, iters);
  if (figure == "history") ns = old_side ? ab_old::traced_ns(s, iters) : ab_new::traced_ns(s, iters);
  if (figure == "sample") ns = old_side ? ab_old::sample_ns(s, iters) : ab_new::sample_ns(s, iters);
  std::printf("%.1f\n", ns);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 6 && std::string(argv[1]) == "one") {
    return one(argv[2], argv[3], std::strtoull(argv[4], nullptr, 10), std::strtoull(argv[5], nullptr, 10));
  }
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 11;
  const std::size_t iters = 1000000;
  std::printf("%-9s %-13s %10s %10s %8s\n", "blocks", "figure", "old (ns)", "new (ns)", "new/old");
  for (std::size_t n : {16u, 1000u, 100000u}) {
    void* old_side = ab_old::setup(n);
    void* new_side = ab_new::setup(n);
    Figures old_f, new_f;
    // Warm both before timing.
    ab_old::pair_ns(old_side, iters);
    ab_new::pair_ns(new_side, iters);
    for (int r = 0; r < rounds; ++r) {
      const bool old_first = r % 2 == 0;
      for (int k = 0; k < 2; ++k) {
        const bool run_old = (k == 0) == old_first;
        void* s = run_old ? old_side : new_side;
        Figures& f = run_old ? old_f : new_f;
        f.pair.push_back(run_old ? ab_old::pair_ns(s, iters) : ab_new::pair_ns(s, iters));
        f.split.push_back(run_old ? ab_old::split_ns(s, iters) : ab_new::split_ns(s, iters));
        f.traced.push_back(run_old ? ab_old::traced_ns(s, iters) : ab_new::traced_ns(s, iters));
        f.sample.push_back(run_old ? ab_old::sample_ns(s, iters / 10) : ab_new::sample_ns(s, iters / 10));
      }
    }
    if (!ab_old::valid(old_side) || !ab_new::valid(new_side)) {
      std::printf("validator failed\n");
      return 1;
    }
    const auto row = [n](const char* what, const std::vector<double>& o, const std::vector<double>& w) {
      std::printf("%-9zu %-13s %10.1f %10.1f %8.3f\n", n, what, median(o), median(w), median(w) / median(o));
    };
    row("pair", old_f.pair, new_f.pair);
    row("split+merge", old_f.split, new_f.split);
    row("history on", old_f.traced, new_f.traced);
    row("stats sample", old_f.sample, new_f.sample);
    ab_old::teardown(old_side);
    ab_new::teardown(new_side);
  }
  return 0;
}
