// How far the trace clock's converted times are from the wall clock over a long run, and
// that no time once converted changes. Every `--every` ms it reads a tick and the wall
// clock together, converts the tick the way a snapshot with traces does
// (process_clock().converter(), so recalibrations happen on the product's schedule), and
// converts every earlier sample again.
//   build-tests/cca_clock_accuracy [--seconds 600] [--every 250]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "common/clock.h"

int main(int argc, char** argv) {
  double seconds = 600;
  int every_ms = 250;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--every") == 0) every_ms = std::atoi(argv[i + 1]);
  }
  using clock = std::chrono::steady_clock;
  cca::ClockCalibration& cal = cca::process_clock();
  struct Sample {
    std::uint64_t ticks;
    double shown_us;
  };
  std::vector<Sample> samples;
  const auto start = clock::now();
  double worst = 0, worst_window = 0;
  std::uint64_t moved = 0;
  auto next_report = start + std::chrono::seconds(60);
  std::printf("%8s %10s %14s %14s %8s %6s\n", "elapsed", "samples", "max|err| 60s", "max|err| all", "builds", "moved");
  while (clock::now() - start < std::chrono::duration<double>(seconds)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(every_ms));
    const std::uint64_t t0 = cca::clock_ticks();
    const double wall = std::chrono::duration<double, std::micro>(std::chrono::system_clock::now().time_since_epoch()).count();
    const std::uint64_t t1 = cca::clock_ticks();
    const std::uint64_t t = t0 + (t1 - t0) / 2;
    const cca::TickConverter conv = cal.converter();
    for (const Sample& s : samples) moved += conv.to_unix_us(s.ticks) != s.shown_us;
    const double us = conv.to_unix_us(t);
    samples.push_back({t, us});
    const double err = std::fabs(us - wall);
    worst = std::max(worst, err);
    worst_window = std::max(worst_window, err);
    if (clock::now() >= next_report) {
      std::printf("%7.0fs %10zu %12.1fus %12.1fus %8llu %6llu\n",
                  std::chrono::duration<double>(clock::now() - start).count(), samples.size(), worst_window, worst,
                  static_cast<unsigned long long>(cal.builds()), static_cast<unsigned long long>(moved));
      std::fflush(stdout);
      worst_window = 0;
      next_report += std::chrono::seconds(60);
    }
  }
  std::printf("done: %zu samples over %.0f s, max |converted - wall| %.1f us, %llu calibrations, %llu times moved\n",
              samples.size(), seconds, worst, static_cast<unsigned long long>(cal.builds()),
              static_cast<unsigned long long>(moved));
  return moved == 0 ? 0 : 1;
}
