// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/memory_probe.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace collbench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMinBuffer = 1 << 20;
constexpr uint64_t kMinThreadBuffer = 8 << 20;
constexpr uint64_t kAllThreadsCap = uint64_t{1} << 30;

double Seconds(Clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

// A source and a destination buffer, both touched.
struct Buffers {
  std::unique_ptr<char[]> source;
  std::unique_ptr<char[]> destination;
  uint64_t bytes = 0;
};

bool Allocate(uint64_t bytes, Buffers* buffers) {
  buffers->source.reset(new (std::nothrow) char[bytes]);
  buffers->destination.reset(new (std::nothrow) char[bytes]);
  if (buffers->source == nullptr || buffers->destination == nullptr) return false;
  std::memset(buffers->source.get(), 1, bytes);
  std::memset(buffers->destination.get(), 0, bytes);
  buffers->bytes = bytes;
  return true;
}

// The copies one thread makes in `seconds`; `best` is its fastest copy's rate.
uint64_t CopyFor(const Buffers& buffers, double seconds, double* best) {
  uint64_t copies = 0;
  const Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                    std::chrono::duration<double>(seconds));
  do {
    const Clock::time_point start = Clock::now();
    std::memcpy(buffers.destination.get(), buffers.source.get(), buffers.bytes);
    const double took = Seconds(Clock::now() - start);
    if (took > 0) *best = std::max(*best, static_cast<double>(buffers.bytes) / took);
    ++copies;
  } while (Clock::now() < end);
  return copies;
}

}  // namespace

namespace {

struct Rates {
  double one = 0;  // the fastest single copy of one thread
  double all = 0;  // every thread's bytes over the phase's wall time
};

// One size: one thread, then `threads` at once.
absl::StatusOr<Rates> ProbeSize(int threads, uint64_t bytes, double seconds) {
  std::vector<Buffers> buffers(threads);
  for (Buffers& each : buffers) {
    if (!Allocate(bytes, &each)) {
      return absl::ResourceExhaustedError(
          absl::StrCat("memory probe: cannot allocate ", threads, " x 2 x ", bytes, " bytes"));
    }
  }
  Rates rates;
  CopyFor(buffers[0], seconds, &rates.one);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<uint64_t> copies(threads, 0);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int index = 0; index < threads; ++index) {
    workers.emplace_back([&, index] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      double ignored = 0;
      copies[index] = CopyFor(buffers[index], seconds, &ignored);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const Clock::time_point start = Clock::now();
  go.store(true);
  for (std::thread& worker : workers) worker.join();
  const double wall = Seconds(Clock::now() - start);
  uint64_t total = 0;
  for (uint64_t count : copies) total += count * bytes;
  rates.all = wall > 0 ? static_cast<double>(total) / wall : 0;
  return rates;
}

}  // namespace

absl::StatusOr<v1::MemoryBandwidth> ProbeMemoryBandwidth(const MemoryProbeOptions& options) {
  if (options.threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat("memory probe: threads ", options.threads, " < 1"));
  }
  if (options.buffer_bytes < kMinBuffer) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory probe: buffer of ", options.buffer_bytes, " bytes is under 1 MiB"));
  }
  if (options.cache_buffer_bytes < 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "memory probe: cache buffer of ", options.cache_buffer_bytes, " bytes is under 4 KiB"));
  }
  const Clock::time_point began = Clock::now();
  const int threads = options.threads;
  uint64_t per_thread = options.buffer_bytes;
  if (per_thread * 2 * threads > kAllThreadsCap) {
    per_thread = std::max(kMinThreadBuffer, kAllThreadsCap / (2 * static_cast<uint64_t>(threads)));
  }
  absl::StatusOr<Rates> cache =
      ProbeSize(threads, options.cache_buffer_bytes, options.seconds_per_phase);
  if (!cache.ok()) return cache.status();
  absl::StatusOr<Rates> memory = ProbeSize(threads, per_thread, options.seconds_per_phase);
  if (!memory.ok()) return memory.status();
  v1::MemoryBandwidth bandwidth;
  const bool cache_faster = cache->one >= memory->one;
  bandwidth.set_copy_bytes_per_s(std::max(cache->one, memory->one));
  bandwidth.set_copy_all_bytes_per_s(std::max(cache->all, memory->all));
  bandwidth.set_threads(threads);
  bandwidth.set_buffer_bytes(cache_faster ? options.cache_buffer_bytes : per_thread);
  bandwidth.set_seconds(Seconds(Clock::now() - began));
  return bandwidth;
}

}  // namespace collbench
