// The trace clock. Recording reads a raw tick counter (rdtsc on x86-64, cntvct_el0 on
// arm64, a monotonic clock elsewhere): a few ns, no syscall. Ticks become Unix
// microseconds only when traces are read, through a converter calibrated PyTorch's way:
// pairs of (ticks, wall clock, ticks) taken at start and again at conversion time; the
// scale is the median over the pairs of Δwall/Δticks, so it spans the whole interval.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace cca {

inline std::uint64_t clock_ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#elif defined(__aarch64__)
  std::uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// Converts ticks to Unix microseconds: us(t) = (t - t0_ticks) * scale + t0_us.
struct TickConverter {
  double t0_ticks = 0;
  double t0_us = 0;
  double us_per_tick = 0;
  double to_unix_us(std::uint64_t ticks) const {
    return static_cast<double>(static_cast<std::int64_t>(ticks - static_cast<std::uint64_t>(t0_ticks))) *
               us_per_tick + t0_us;
  }
};

class ClockCalibration {
 public:
  // Takes the start pairs (about 50 µs).
  ClockCalibration();
  // A converter valid now. Built at most once per `max_age` of real time: the scale comes
  // from the interval since the start pairs, so a recent converter is as good as a fresh
  // one, and snapshots in a tight loop do not recalibrate each time.
  TickConverter converter(std::chrono::milliseconds max_age = std::chrono::milliseconds(1000));
  // How many converters were built (tests check it is not one per snapshot).
  std::uint64_t builds() const;

 private:
  struct Pair {
    double wall_us;
    double ticks;
  };
  static std::vector<Pair> measure_pairs(int count);
  TickConverter build() const;

  std::vector<Pair> start_;
  mutable std::mutex mu_;
  TickConverter cached_;
  std::chrono::steady_clock::time_point cached_at_{};
  bool have_cached_ = false;
  std::uint64_t builds_ = 0;
};

// The process's calibration, started when the library loads.
ClockCalibration& process_clock();

}  // namespace cca
