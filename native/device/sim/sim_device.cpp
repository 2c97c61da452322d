#include "sim_device.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace cca {

namespace {
// Each device gets its own 1 TiB window of fake addresses, far from anything a host
// pointer could be, so a host pointer passed as a device pointer is always foreign.
constexpr DevicePtr kAddressBase = 0x7f0000000000ull;
// 16 TiB of addresses per device for at most 1 TiB of memory: an expandable segment
// reserves 9/8 of the device's memory per (stream, pool), as on a real GPU. 64 devices
// end below 2^53, so pointers stay exact as JS numbers.
constexpr DevicePtr kAddressWindow = 0x100000000000ull;
constexpr Bytes kMaxCapacity = Bytes{1} << 40;
// cudaMalloc returns 512-byte aligned memory at least; segments are 2 MiB multiples anyway.
constexpr Bytes kSimAlignment = 512;

thread_local std::string t_last_error;
}  // namespace

SimDevice::SimDevice(int index, Bytes capacity_bytes)
    : index_(index),
      capacity_(capacity_bytes),
      base_(kAddressBase + static_cast<DevicePtr>(index) * kAddressWindow) {
  if (capacity_bytes == 0 || capacity_bytes > kMaxCapacity) {
    throw std::invalid_argument("simulated capacity must be between 1 byte and 1 TiB");
  }
  free_ranges_.emplace(base_, kAddressWindow);
}

std::string SimDevice::name() const {
  return "Simulated GPU " + std::to_string(index_) + " (sim backend, " +
         std::to_string(capacity_ >> 20) + " MiB, no real memory)";
}

std::string SimDevice::last_error() const { return t_last_error; }

Status SimDevice::fail(Status s, std::string message) const {
  t_last_error = std::move(message);
  return s;
}

bool SimDevice::injected_failure_locked(Bytes size) {
  if (fail_mallocs_ == 0) return false;
  if (fail_after_bytes_ >= size) {
    fail_after_bytes_ -= size;
    return false;
  }
  fail_after_bytes_ = 0;
  --fail_mallocs_;
  return true;
}

Status SimDevice::malloc(DevicePtr* out, Bytes size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (injected_failure_locked(size)) return fail(Status::kOutOfMemory, "simulated cudaMalloc failure (fault injection)");
  Bytes aligned = (size + kSimAlignment - 1) / kSimAlignment * kSimAlignment;
  if (aligned < size || used_ + aligned > capacity_ || used_ + aligned < used_) {
    return fail(Status::kOutOfMemory, "simulated device is full");
  }
  const DevicePtr ptr = take_range_locked(aligned);
  if (ptr == 0) return fail(Status::kOutOfMemory, "simulated address space exhausted");
  live_.emplace(ptr, aligned);
  used_ += aligned;
  *out = ptr;
  return Status::kOk;
}

DevicePtr SimDevice::take_range_locked(Bytes size) {
  // First fit keeps addresses low and stable from run to run.
  for (auto it = free_ranges_.begin(); it != free_ranges_.end(); ++it) {
    if (it->second < size) continue;
    const DevicePtr ptr = it->first;
    const Bytes rest = it->second - size;
    free_ranges_.erase(it);
    if (rest > 0) free_ranges_.emplace(ptr + size, rest);
    return ptr;
  }
  return 0;
}

Status SimDevice::free(DevicePtr ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return fail(Status::kInvalidValue, "cudaFree of an unknown pointer");
  Bytes len = it->second;
  live_.erase(it);
  contents_.erase(ptr);
  used_ -= len;
  auto next = free_ranges_.lower_bound(ptr);
  if (next != free_ranges_.end() && next->first == ptr + len) {
    len += next->second;
    next = free_ranges_.erase(next);
  }
  if (next != free_ranges_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == ptr) {
      prev->second += len;
      return Status::kOk;
    }
  }
  free_ranges_.emplace(ptr, len);
  return Status::kOk;
}

unsigned char* SimDevice::backing_locked(DevicePtr base, Bytes len) {
  auto& store = contents_[base];
  if (store.empty()) store.assign(static_cast<std::size_t>(len), 0);  // a simulated buffer's contents are host memory
  return store.data();
}

template <class F>
bool SimDevice::for_each_piece_locked(DevicePtr ptr, Bytes bytes, F&& fn) {
  // First resolve every piece, so that a range with a hole does nothing at all.
  struct Piece {
    DevicePtr base;
    Bytes len;
    DevicePtr at;
    Bytes n;
  };
  std::vector<Piece> pieces;
  DevicePtr at = ptr;
  Bytes left = bytes;
  while (left > 0) {
    bool found = false;
    auto consider = [&](DevicePtr base, Bytes len) {
      if (found || at < base || at >= base + len) return;
      const Bytes n = std::min<Bytes>(left, base + len - at);
      pieces.push_back(Piece{base, len, at, n});
      at += n;
      left -= n;
      found = true;
    };
    for (const auto& [base, len] : live_) consider(base, len);
    for (const auto& [h, range] : mappings_) consider(range.first, range.second);
    if (!found) return false;
  }
  for (const Piece& p : pieces) fn(backing_locked(p.base, p.len) + (p.at - p.base), static_cast<std::size_t>(p.n));
  return true;
}

// A copy runs at once on a stream with nothing held (one walk of its ranges, which also
// checks them), or, behind held work, is checked now and queued: it lands when the stream
// completes, as a GPU's would. Host memory must stay valid until then (pinned blocks are
// kept until the copy's event completes, as on a GPU).
template <class Move>
Status SimDevice::copy_locked(StreamId stream, std::initializer_list<std::pair<DevicePtr, Bytes>> ranges,
                              Move&& move) {
  if (!stream_known_locked(stream)) return fail(Status::kInvalidValue, "copy on an unknown stream");
  if (!queued_behind_locked(stream)) {
    return move() ? Status::kOk : fail(Status::kInvalidValue, "copy outside device memory");
  }
  for (const auto& [at, bytes] : ranges) {
    if (!for_each_piece_locked(at, bytes, [](unsigned char*, Bytes) {})) {
      return fail(Status::kInvalidValue, "copy outside device memory");
    }
  }
  work_[stream].copies.emplace_back(std::forward<Move>(move));
  return Status::kOk;
}

Status SimDevice::memcpy_htod(DevicePtr dst, const void* src, Bytes bytes, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  return copy_locked(stream, {{dst, bytes}}, [this, dst, src, bytes] {
    const auto* from = static_cast<const unsigned char*>(src);
    return for_each_piece_locked(dst, bytes, [&](unsigned char* mem, std::size_t n) {
      std::memcpy(mem, from, n);
      from += n;
    });
  });
}

Status SimDevice::memcpy_dtoh(void* dst, DevicePtr src, Bytes bytes, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  return copy_locked(stream, {{src, bytes}}, [this, dst, src, bytes] {
    auto* to = static_cast<unsigned char*>(dst);
    return for_each_piece_locked(src, bytes, [&](unsigned char* mem, std::size_t n) {
      std::memcpy(to, mem, n);
      to += n;
    });
  });
}

Status SimDevice::memcpy_dtod(DevicePtr dst, DevicePtr src, Bytes bytes, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  return copy_locked(stream, {{src, bytes}, {dst, bytes}}, [this, dst, src, bytes] {
    std::vector<unsigned char> staged(static_cast<std::size_t>(bytes));  // the ranges may overlap
    auto* to = staged.data();
    const unsigned char* from = staged.data();
    return for_each_piece_locked(src, bytes, [&](unsigned char* mem, std::size_t n) {
             std::memcpy(to, mem, n);
             to += n;
           }) &&
           for_each_piece_locked(dst, bytes, [&](unsigned char* mem, std::size_t n) {
             std::memcpy(mem, from, n);
             from += n;
           });
  });
}

Status SimDevice::memset_d8(DevicePtr dst, unsigned char value, Bytes bytes, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  return copy_locked(stream, {{dst, bytes}}, [this, dst, value, bytes] {
    return for_each_piece_locked(dst, bytes, [&](unsigned char* mem, std::size_t n) { std::memset(mem, value, n); });
  });
}

Status SimDevice::host_alloc(void** out, Bytes bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_host_allocs_ > 0) {
      --fail_host_allocs_;
      return fail(Status::kOutOfMemory, "simulated cudaHostAlloc failure: out of page-locked memory (fault injection)");
    }
  }
  // More than this address space holds (a 32-bit host) is host memory exhausted, not a wrapped size.
  void* p = bytes > SIZE_MAX - 4095 ? nullptr : std::aligned_alloc(4096, static_cast<std::size_t>((bytes + 4095) / 4096 * 4096));
  if (p == nullptr) return fail(Status::kOutOfMemory, "host memory exhausted");
  std::lock_guard<std::mutex> lock(mu_);
  host_blocks_.insert(p);
  *out = p;
  return Status::kOk;
}

Status SimDevice::host_free(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!host_blocks_.erase(ptr)) return fail(Status::kInvalidValue, "free of unknown host memory");
  }
  std::free(ptr);
  return Status::kOk;
}

Bytes SimDevice::host_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return host_blocks_.size();
}

Status SimDevice::reserve_address(DevicePtr* out, Bytes size) {
  std::lock_guard<std::mutex> lock(mu_);
  // Address space only: capacity is taken when pages are mapped.
  const DevicePtr ptr = take_range_locked(size);
  if (ptr == 0) return fail(Status::kOutOfMemory, "simulated address space exhausted");
  reservations_.emplace(ptr, size);
  *out = ptr;
  return Status::kOk;
}

Status SimDevice::release_address(DevicePtr base, Bytes size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = reservations_.find(base);
  if (it == reservations_.end() || it->second != size) return fail(Status::kInvalidValue, "release of an unknown reservation");
  for (const auto& [h, range] : mappings_) {
    if (range.first >= base && range.first < base + size) return fail(Status::kInvalidValue, "release of a range still mapped");
  }
  reservations_.erase(it);
  free_ranges_.emplace(base, size);  // not coalesced: reservations are few
  return Status::kOk;
}

Status SimDevice::map_memory(DevicePtr at, Bytes size, std::uint64_t* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  if (injected_failure_locked(size)) return fail(Status::kOutOfMemory, "simulated cuMemCreate failure (fault injection)");
  if (used_ + size > capacity_) return fail(Status::kOutOfMemory, "simulated device is full");
  bool inside = false;
  for (const auto& [base, len] : reservations_) inside = inside || (at >= base && at + size <= base + len);
  if (!inside) return fail(Status::kInvalidValue, "map outside a reservation");
  for (const auto& [h, range] : mappings_) {
    if (at < range.first + range.second && range.first < at + size) return fail(Status::kInvalidValue, "map over a mapped range");
  }
  used_ += size;
  mapped_ += size;
  *handle = next_handle_++;
  mappings_.emplace(*handle, std::make_pair(at, size));
  return Status::kOk;
}

Status SimDevice::unmap_memory(DevicePtr at, Bytes size, std::uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = mappings_.find(handle);
  if (it == mappings_.end() || it->second.first != at || it->second.second != size) {
    return fail(Status::kInvalidValue, "unmap of an unknown mapping");
  }
  mappings_.erase(it);
  contents_.erase(at);
  used_ -= size;
  mapped_ -= size;
  return Status::kOk;
}

Bytes SimDevice::reservations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reservations_.size();
}

Bytes SimDevice::mapped_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mapped_;
}

Status SimDevice::mem_get_info(Bytes* free_bytes, Bytes* total_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  *free_bytes = capacity_ - used_;
  *total_bytes = capacity_;
  return Status::kOk;
}

void SimDevice::fail_next_mallocs(int n, Bytes after_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_mallocs_ = n < 0 ? 0 : n;
  fail_after_bytes_ = fail_mallocs_ == 0 ? 0 : after_bytes;
}

Bytes SimDevice::used_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

Bytes SimDevice::live_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size();
}

SimPlatform::SimPlatform(const SimOptions& options) {
  if (options.devices < 1 || options.devices > 64) {
    throw std::invalid_argument("simulated device count must be between 1 and 64");
  }
  for (int i = 0; i < options.devices; ++i) {
    devices_.push_back(std::make_unique<SimDevice>(i, options.capacity_bytes));
  }
}

}  // namespace cca

namespace cca {

void SimDevice::fail_next_host_allocs(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_host_allocs_ = n;
}

}  // namespace cca
