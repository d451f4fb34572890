// SPDX-License-Identifier: Apache-2.0
// Where a rank is, readable without MPI (docs/design/run-lifecycle.md#hang-attribution).
// Each rank of a run maps a small file of its own, DIR/rank-N, and writes
// its position into it as it goes: the size it measures, the iteration it
// is in, its phase. The rank's worker reads every slot of the run's folder
// once a second (ReadProgressSlots) and relays them to the coordinator,
// which ends a run in which no rank advances and names the ranks behind.
//
// The folder is the launcher's choice, handed to every rank in the
// environment (kProgressDirEnv); a rank without it writes nothing. Writing
// is a relaxed store into shared memory: no system call in the timed loop.
// A reader may see a slot mid-update; the generation counter (odd while a
// writer changes more than the iteration) makes it retry or skip.
//
// Other local users must not reach the slots (docs/operations/security.md):
// the root is the worker's own (PrepareProgressRoot: 0700, its user's, no
// symbolic link), and so is every run's folder in it. A slot is created
// with O_EXCL|O_NOFOLLOW (a link planted in its place is removed, never
// written through), and read with a non-blocking O_NOFOLLOW open and
// mapped only once fstat says it is a regular file of this user of exactly
// a slot's size: a short file cannot raise SIGBUS in the reader, a FIFO
// cannot block it.
//
// Thread safety: one writer per slot (its rank's thread); any number of
// readers in other processes.
#ifndef COLLBENCH_COMMON_PROGRESS_SLOT_H_
#define COLLBENCH_COMMON_PROGRESS_SLOT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace collbench {

struct ProgressRecord;  // the slot's layout (progress_slot.cc)

// The environment variable naming a run's progress folder.
inline constexpr char kProgressDirEnv[] = "COLLBENCH_PROGRESS_DIR";

// What a rank is doing.
enum class RankPhase : int32_t { kInit = 0, kMeasure = 1, kCheck = 2, kSummarize = 3, kDone = 4 };
// "init", "measure", "check", "summarize", "done".
const char* RankPhaseName(RankPhase phase);

// Makes `root` this process's private folder for progress: created 0700
// when missing (its parent must exist). An existing one is taken only as a
// real folder (not a symbolic link) owned by this process's user, with no
// permission for group or others. FailedPrecondition naming the path and
// what is wrong with it (its owner, its mode) otherwise.
absl::Status PrepareProgressRoot(const std::string& root);

class ProgressSlot {
 public:
  // Creates the run's folder DIR if needed (its parent, the root, must
  // exist; DIR is checked as PrepareProgressRoot checks a root) and
  // DIR/rank-RANK afresh; null when that fails (progress is best effort: a
  // run goes on without it).
  static std::unique_ptr<ProgressSlot> Open(const std::string& dir, int rank,
                                            const std::string& operation);
  ~ProgressSlot();
  ProgressSlot(const ProgressSlot&) = delete;
  ProgressSlot& operator=(const ProgressSlot&) = delete;

  // A new size: its index in the sweep, bytes, and the iterations it will
  // run (warm-up included; 0 when a time budget decides). Iteration 0.
  void BeginSize(int index, uint64_t bytes, int64_t iterations);
  void SetPhase(RankPhase phase);
  // The iteration this rank is now in, from 1.
  void Iteration(int64_t iteration) {
    iteration_->store(iteration, std::memory_order_relaxed);
  }

 private:
  explicit ProgressSlot(ProgressRecord* record);
  void Update(int index, uint64_t bytes, int64_t iterations, RankPhase phase);

  ProgressRecord* record_;
  std::atomic<int64_t>* iteration_;
};

// One slot as a reader sees it.
struct RankSlot {
  int rank = 0;
  int pid = 0;
  std::string host;
  std::string operation;
  int size_index = 0;
  uint64_t bytes = 0;
  int64_t iteration = 0;
  int64_t iterations = 0;
  std::string phase;
};

// Every readable slot in `dir`, by rank. A folder that is missing, not
// private to this user, or a link: none. Anything in it that is not a
// slot (a link, a FIFO, a short or foreign file) is skipped.
std::vector<RankSlot> ReadProgressSlots(const std::string& dir);

// The run's folder under `root`: ROOT/ID for run "runs/ID"; "" when the
// id holds anything but letters, digits, '-', '_' and '.'.
std::string ProgressDirOf(const std::string& root, const std::string& run);

// Removes a run's folder and its slots (when the run is over); "" or a
// missing folder: nothing.
void RemoveProgressDir(const std::string& dir);

// What /proc says of process `pid`: its state (running, sleeping, stopped,
// zombie, or exited when there is no such process) and CPU seconds used.
struct ProcessFacts {
  std::string state;
  double cpu_seconds = 0;
};
ProcessFacts ProcessFactsOf(int pid);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_PROGRESS_SLOT_H_
