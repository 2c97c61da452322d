#include "clock.h"

#include <algorithm>

namespace cca {

namespace {
constexpr int kReplicates = 1001;  // PyTorch's count: the median is element 500
}

std::vector<ClockCalibration::Pair> ClockCalibration::measure_pairs(int count) {
  std::vector<Pair> pairs;
  pairs.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < 5; ++i) (void)clock_ticks();  // warm up the counter and the vDSO
  for (int i = 0; i < count; ++i) {
    const std::uint64_t a = clock_ticks();
    const auto wall = std::chrono::system_clock::now().time_since_epoch();
    const std::uint64_t b = clock_ticks();
    // The midpoint of the two tick reads stands for the wall-clock read between them.
    pairs.push_back(Pair{std::chrono::duration<double, std::micro>(wall).count(),
                         static_cast<double>(a) + static_cast<double>(b - a) / 2.0});
  }
  return pairs;
}

ClockCalibration::ClockCalibration() : start_(measure_pairs(kReplicates)) {}

TickConverter ClockCalibration::build() const {
  const std::vector<Pair> end = measure_pairs(kReplicates);
  std::vector<double> scales;
  scales.reserve(end.size());
  for (std::size_t i = 0; i < end.size(); ++i) {
    const double dt = end[i].ticks - start_[i].ticks;
    if (dt > 0) scales.push_back((end[i].wall_us - start_[i].wall_us) / dt);
  }
  TickConverter c;
  c.t0_ticks = start_[0].ticks;
  c.t0_us = start_[0].wall_us;
  if (scales.empty()) return c;  // no tick has passed: every time maps to t0
  std::nth_element(scales.begin(), scales.begin() + static_cast<long>(scales.size() / 2), scales.end());
  c.us_per_tick = scales[scales.size() / 2];
  // Correct t0 by the median offset of the start pairs from the fitted line (PyTorch takes
  // one unsorted element; the median is steadier against a preempted pair).
  std::vector<double> offsets;
  offsets.reserve(start_.size());
  for (const Pair& p : start_) offsets.push_back((p.wall_us - c.t0_us) - (p.ticks - c.t0_ticks) * c.us_per_tick);
  std::nth_element(offsets.begin(), offsets.begin() + static_cast<long>(offsets.size() / 2), offsets.end());
  c.t0_us += offsets[offsets.size() / 2];
  return c;
}

TickConverter ClockCalibration::converter(std::chrono::milliseconds max_age) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (!have_cached_ || now - cached_at_ > max_age) {
    cached_ = build();
    cached_at_ = now;
    have_cached_ = true;
    ++builds_;
  }
  return cached_;
}

std::uint64_t ClockCalibration::builds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return builds_;
}

ClockCalibration& process_clock() {
  static ClockCalibration clock;
  return clock;
}

}  // namespace cca
