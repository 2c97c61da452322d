#include "clock.h"

#include <algorithm>
#include <cmath>

namespace cca {

namespace {
constexpr int kReplicates = 1001;  // PyTorch's count: the median is element 500
// Recalibrate at most this often once the process is old: the fit spans the whole
// interval since start, so only a drifting wall clock (NTP slewing it) needs more.
constexpr std::chrono::seconds kLongestInterval{60};
// A correction is spread over at least a second of ticks, and slews the scale by at most
// a quarter, so converted times never step and never run backwards.
constexpr double kSlewSeconds = 1.0;
constexpr double kMaxSlew = 0.25;
}  // namespace

std::size_t TickConverter::piece_of(std::uint64_t ticks) const {
  const ClockPiece* end = data_ + count_;
  const ClockPiece* after = std::upper_bound(data_, end, ticks,
                                             [](std::uint64_t t, const ClockPiece& p) { return t < p.from_ticks; });
  return after == data_ ? 0 : static_cast<std::size_t>(after - data_) - 1;
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

ClockCalibration::ClockCalibration() : start_(measure_pairs(kReplicates)), started_at_(std::chrono::steady_clock::now()) {}

// The line through the start pairs and a new set taken now. False when no tick has passed.
bool ClockCalibration::fit(Line& out) const {
  const std::vector<Pair> end = measure_pairs(kReplicates);
  std::vector<double> scales;
  scales.reserve(end.size());
  for (std::size_t i = 0; i < end.size(); ++i) {
    const double dt = end[i].ticks - start_[i].ticks;
    if (dt > 0) scales.push_back((end[i].wall_us - start_[i].wall_us) / dt);
  }
  if (scales.empty()) return false;
  std::nth_element(scales.begin(), scales.begin() + static_cast<long>(scales.size() / 2), scales.end());
  out.t0_ticks = start_[0].ticks;
  out.t0_us = start_[0].wall_us;
  out.us_per_tick = scales[scales.size() / 2];
  if (!(out.us_per_tick > 0)) return false;
  // Correct t0 by the median offset of the start pairs from the fitted line (PyTorch takes
  // one unsorted element; the median is steadier against a preempted pair).
  std::vector<double> offsets;
  offsets.reserve(start_.size());
  for (const Pair& p : start_) offsets.push_back(p.wall_us - out.at(p.ticks));
  std::nth_element(offsets.begin(), offsets.begin() + static_cast<long>(offsets.size() / 2), offsets.end());
  out.t0_us += offsets[offsets.size() / 2];
  return true;
}

void ClockCalibration::rebuild_locked() {
  // Every tick read before this one may already have been converted and shown: the
  // mapping is kept as it is up to here.
  const std::uint64_t now = clock_ticks();
  Line line;
  const bool fitted = fit(line);
  built_at_ = std::chrono::steady_clock::now();
  ++builds_;
  auto next = std::make_shared<std::vector<ClockPiece>>();
  if (!pieces_) {
    const auto first = static_cast<std::uint64_t>(start_[0].ticks);
    next->push_back(fitted ? ClockPiece{first, line.at(static_cast<double>(first)), line.us_per_tick}
                           : ClockPiece{first, start_[0].wall_us, 0});
    pieces_ = std::move(next);
    return;
  }
  if (!fitted) return;
  // Pieces that begin after now were a correction still to come: no tick of theirs has
  // been read, so the new correction replaces them.
  for (const ClockPiece& p : *pieces_) {
    if (p.from_ticks > now) break;
    next->push_back(p);
  }
  const double here = TickConverter(pieces_).to_unix_us(now);
  const double gap = line.at(static_cast<double>(now)) - here;  // how far the mapping is off the new fit
  const double b = line.us_per_tick;
  const double span = std::max(kSlewSeconds * 1e6 / b, std::fabs(gap) / (kMaxSlew * b));
  const double slewed = b + gap / span;
  const auto meet = now + static_cast<std::uint64_t>(span);
  next->push_back(ClockPiece{now, here, slewed});
  next->push_back(ClockPiece{meet, here + slewed * static_cast<double>(meet - now), b});
  pieces_ = std::move(next);
}

TickConverter ClockCalibration::converter(std::chrono::milliseconds max_age) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  const auto age = now - started_at_;
  const auto interval = std::max<std::chrono::steady_clock::duration>(
      max_age, std::min<std::chrono::steady_clock::duration>(age / 8, kLongestInterval));
  if (!pieces_ || now - built_at_ > interval) rebuild_locked();
  return TickConverter(pieces_);
}

TickConverter ClockCalibration::recalibrate() {
  std::lock_guard<std::mutex> lock(mu_);
  rebuild_locked();
  return TickConverter(pieces_);
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
