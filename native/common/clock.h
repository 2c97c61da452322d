// The trace clock. Recording reads a raw tick counter (rdtsc on x86-64, cntvct_el0 on
// arm64, a monotonic clock elsewhere): a few ns, no syscall. Ticks become Unix
// microseconds only when traces are read, through a converter calibrated PyTorch's way:
// pairs of (ticks, wall clock, ticks) taken at start and again at conversion time; the
// scale is the median over the pairs of Δwall/Δticks, so it spans the whole interval.
//
// A time once shown never changes: two snapshots of one process give an event the same
// microseconds however far apart they are. So a recalibration never refits the ticks
// already recorded; it appends pieces from the current tick on, continuous with the
// mapping so far, that steer toward the new fit (the way NTP slews a clock rather than
// stepping it). The mapping is piecewise linear and each tick has exactly one piece.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
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

// From `from_ticks` on (until the next piece): us(t) = (t - from_ticks) * us_per_tick + from_us.
struct ClockPiece {
  std::uint64_t from_ticks;
  double from_us;
  double us_per_tick;
};

// Converts ticks to Unix microseconds by the pieces the calibration had when it was made.
// Entries are read in recording order, so the piece of the previous tick is tried first:
// one compare and one multiply-add per entry. Not shared between threads (it keeps that
// cursor); copies are cheap (the pieces are shared and never change).
class TickConverter {
 public:
  TickConverter() = default;
  explicit TickConverter(std::shared_ptr<const std::vector<ClockPiece>> pieces)
      : pieces_(std::move(pieces)), data_(pieces_->data()), count_(pieces_->size()) {}

  double to_unix_us(std::uint64_t ticks) const {
    if (count_ == 0) return 0;
    if (ticks < data_[at_].from_ticks || (at_ + 1 < count_ && ticks >= data_[at_ + 1].from_ticks)) at_ = piece_of(ticks);
    const ClockPiece& p = data_[at_];
    return static_cast<double>(static_cast<std::int64_t>(ticks - p.from_ticks)) * p.us_per_tick + p.from_us;
  }
  std::size_t pieces() const { return count_; }
  // The last piece's scale (tests check the calibration found one).
  double us_per_tick() const { return count_ == 0 ? 0 : data_[count_ - 1].us_per_tick; }

 private:
  std::size_t piece_of(std::uint64_t ticks) const;

  std::shared_ptr<const std::vector<ClockPiece>> pieces_;
  const ClockPiece* data_ = nullptr;
  std::size_t count_ = 0;
  mutable std::size_t at_ = 0;
};

class ClockCalibration {
 public:
  // Takes the start pairs (about 50 µs).
  ClockCalibration();
  // A converter valid now. Recalibrates at most once per `max_age` of real time, and less
  // often as the process ages (every eighth of its age, up to once a minute): the scale
  // comes from the interval since the start pairs, so an old calibration is nearly as good
  // as a fresh one, and snapshots in a tight loop do not recalibrate each time. Each
  // recalibration adds at most two pieces.
  TickConverter converter(std::chrono::milliseconds max_age = std::chrono::milliseconds(1000));
  // Recalibrates now, whatever the age (tests, through the binding's clockRecalibrate).
  TickConverter recalibrate();
  // How many calibrations were made (tests check it is not one per snapshot).
  std::uint64_t builds() const;

 private:
  struct Pair {
    double wall_us;
    double ticks;
  };
  struct Line {
    double t0_ticks, t0_us, us_per_tick;
    double at(double ticks) const { return (ticks - t0_ticks) * us_per_tick + t0_us; }
  };
  static std::vector<Pair> measure_pairs(int count);
  bool fit(Line& out) const;
  void rebuild_locked();

  std::vector<Pair> start_;
  std::chrono::steady_clock::time_point started_at_;
  mutable std::mutex mu_;
  std::shared_ptr<const std::vector<ClockPiece>> pieces_;
  std::chrono::steady_clock::time_point built_at_{};
  std::uint64_t builds_ = 0;
};

// The process's calibration, started when the library loads.
ClockCalibration& process_clock();

}  // namespace cca
