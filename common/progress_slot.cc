// SPDX-License-Identifier: Apache-2.0
#include "common/progress_slot.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

namespace collbench {

struct ProgressRecord {
  uint32_t magic;
  uint32_t version;
  std::atomic<uint64_t> generation;  // odd while the fields below change
  int32_t rank;
  int32_t pid;
  int32_t size_index;
  int32_t phase;
  uint64_t bytes;
  std::atomic<int64_t> iteration;
  int64_t iterations;
  char operation[32];
  char host[64];
};

namespace {

constexpr uint32_t kMagic = 0x43425052;  // "CBPR"
constexpr uint32_t kVersion = 1;
constexpr size_t kSlotBytes = 256;
static_assert(sizeof(std::atomic<int64_t>) == 8 && sizeof(std::atomic<uint64_t>) == 8);

void CopyText(char* to, size_t size, const std::string& text) {
  const size_t n = std::min(size - 1, text.size());
  std::memcpy(to, text.data(), n);
  to[n] = '\0';
}

// What is wrong with `st` as a private folder of this user ("" if nothing).
std::string NotPrivate(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "is a symbolic link";
  if (!S_ISDIR(st.st_mode)) return "is not a folder";
  if (st.st_uid != geteuid()) {
    return "is owned by uid " + std::to_string(st.st_uid) + ", not this process's uid " +
           std::to_string(geteuid());
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return std::string("has mode ") + mode + ", open to group or others (it must be 0700)";
  }
  return "";
}

// Opens `dir` as this user's private folder, creating it 0700 if missing
// (not its parent); -1 with `*why` set when it is not one.
int OpenPrivateDir(const std::string& dir, std::string* why) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *why = std::string("cannot be created: ") + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    *why = std::string("cannot be read: ") + std::strerror(errno);
    return -1;
  }
  if (std::string wrong = NotPrivate(st); !wrong.empty()) {
    *why = std::move(wrong);
    return -1;
  }
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *why = std::string("cannot be opened: ") + std::strerror(errno);
    return -1;
  }
  // The folder opened is the one checked (not swapped for another since).
  if (fstat(fd, &st) != 0 || !NotPrivate(st).empty()) {
    close(fd);
    *why = "changed while it was checked";
    return -1;
  }
  return fd;
}

// The open folder `dir` if it exists and is this user's private folder
// (never created); -1 otherwise.
int OpenExistingPrivateDir(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !NotPrivate(st).empty()) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

const char* RankPhaseName(RankPhase phase) {
  switch (phase) {
    case RankPhase::kInit:
      return "init";
    case RankPhase::kMeasure:
      return "measure";
    case RankPhase::kCheck:
      return "check";
    case RankPhase::kSummarize:
      return "summarize";
    case RankPhase::kDone:
      return "done";
  }
  return "?";
}

absl::Status PrepareProgressRoot(const std::string& root) {
  std::string why;
  const int fd = OpenPrivateDir(root, &why);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        "progress folder " + root + " " + why +
        "; the ranks' progress must be private to this worker: remove it, choose another "
        "--progress-dir, or run without hang diagnosis (--progress-dir '')");
  }
  close(fd);
  return absl::OkStatus();
}

std::unique_ptr<ProgressSlot> ProgressSlot::Open(const std::string& dir, int rank,
                                                 const std::string& operation) {
  static_assert(sizeof(ProgressRecord) <= kSlotBytes);
  if (dir.empty() || rank < 0) return nullptr;
  std::string why;
  const int folder = OpenPrivateDir(dir, &why);
  if (folder < 0) return nullptr;
  const std::string name = "rank-" + std::to_string(rank);
  constexpr int kCreate = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(folder, name.c_str(), kCreate, 0600);
  if (fd < 0 && errno == EEXIST) {
    // A slot of an earlier attempt, or something planted: replaced, never
    // opened (a link is removed, not followed).
    unlinkat(folder, name.c_str(), 0);
    fd = openat(folder, name.c_str(), kCreate, 0600);
  }
  close(folder);
  if (fd < 0) return nullptr;
  if (ftruncate(fd, kSlotBytes) != 0) {
    close(fd);
    return nullptr;
  }
  void* mapped = mmap(nullptr, kSlotBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (mapped == MAP_FAILED) return nullptr;
  auto* record = new (mapped) ProgressRecord();
  record->generation.store(1, std::memory_order_relaxed);
  record->rank = rank;
  record->pid = static_cast<int32_t>(getpid());
  char host[64] = {};
  gethostname(host, sizeof(host) - 1);
  CopyText(record->host, sizeof(record->host), host);
  CopyText(record->operation, sizeof(record->operation), operation);
  record->version = kVersion;
  record->generation.store(2, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_release);
  record->magic = kMagic;
  return std::unique_ptr<ProgressSlot>(new ProgressSlot(record));
}

ProgressSlot::ProgressSlot(ProgressRecord* record) : record_(record), iteration_(&record->iteration) {}

ProgressSlot::~ProgressSlot() { munmap(record_, kSlotBytes); }

void ProgressSlot::Update(int index, uint64_t bytes, int64_t iterations, RankPhase phase) {
  const uint64_t g = record_->generation.load(std::memory_order_relaxed);
  record_->generation.store(g + 1, std::memory_order_relaxed);  // odd: changing
  std::atomic_thread_fence(std::memory_order_release);
  record_->size_index = index;
  record_->bytes = bytes;
  record_->iterations = iterations;
  record_->phase = static_cast<int32_t>(phase);
  record_->generation.store(g + 2, std::memory_order_release);
}

void ProgressSlot::BeginSize(int index, uint64_t bytes, int64_t iterations) {
  Update(index, bytes, iterations, RankPhase::kMeasure);
  iteration_->store(0, std::memory_order_relaxed);
}

void ProgressSlot::SetPhase(RankPhase phase) {
  Update(record_->size_index, record_->bytes, record_->iterations, phase);
}

std::string ProgressDirOf(const std::string& root, const std::string& run) {
  std::string id = run.rfind("runs/", 0) == 0 ? run.substr(5) : run;
  if (root.empty() || id.empty() || id == "." || id == "..") return "";
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return "";
  }
  return root + "/" + id;
}

void RemoveProgressDir(const std::string& dir) {
  if (dir.empty()) return;
  const int fd = OpenExistingPrivateDir(dir);
  if (fd < 0) return;
  if (DIR* folder = fdopendir(fd)) {
    while (const dirent* entry = readdir(folder)) {
      if (std::strncmp(entry->d_name, "rank-", 5) == 0) unlinkat(fd, entry->d_name, 0);
    }
    closedir(folder);  // closes fd
  } else {
    close(fd);
  }
  rmdir(dir.c_str());
}

ProcessFacts ProcessFactsOf(int pid) {
  ProcessFacts facts;
  facts.state = "exited";
  if (pid <= 0) return facts;
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return facts;
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return facts;
  buf[n] = '\0';
  // Fields after the command's closing parenthesis: state, then 11 more
  // before utime and stime (fields 14 and 15).
  const char* close_paren = std::strrchr(buf, ')');
  if (close_paren == nullptr || close_paren[1] == '\0') return facts;
  const char state = close_paren[2];
  switch (state) {
    case 'R':
      facts.state = "running";
      break;
    case 'S':
    case 'D':
    case 'I':
      facts.state = "sleeping";
      break;
    case 'T':
    case 't':
      facts.state = "stopped";
      break;
    case 'Z':
    case 'X':
      facts.state = "zombie";
      break;
    default:
      facts.state = std::string(1, state);
  }
  const char* field = close_paren + 2;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i < 14 && field != nullptr; ++i) {
    field = std::strchr(field, ' ');
    if (field != nullptr) ++field;
  }
  if (field != nullptr && std::sscanf(field, "%llu %llu", &utime, &stime) == 2) {
    facts.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return facts;
}

std::vector<RankSlot> ReadProgressSlots(const std::string& dir) {
  std::vector<RankSlot> slots;
  const int folder_fd = OpenExistingPrivateDir(dir);
  if (folder_fd < 0) return slots;
  DIR* folder = fdopendir(folder_fd);
  if (folder == nullptr) {
    close(folder_fd);
    return slots;
  }
  while (const dirent* entry = readdir(folder)) {
    if (std::strncmp(entry->d_name, "rank-", 5) != 0) continue;
    const int fd =
        openat(folder_fd, entry->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    // Mapped only as a whole slot of this user's: a shorter file would
    // raise SIGBUS on the first read past its end.
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        st.st_size != static_cast<off_t>(kSlotBytes)) {
      close(fd);
      continue;
    }
    void* mapped = mmap(nullptr, kSlotBytes, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (mapped == MAP_FAILED) continue;
    const auto* record = static_cast<const ProgressRecord*>(mapped);
    for (int attempt = 0; attempt < 3; ++attempt) {
      const uint64_t before = record->generation.load(std::memory_order_acquire);
      if (record->magic != kMagic || record->version != kVersion || before % 2 == 1) continue;
      RankSlot slot;
      slot.rank = record->rank;
      slot.pid = record->pid;
      slot.size_index = record->size_index;
      slot.bytes = record->bytes;
      slot.iteration = record->iteration.load(std::memory_order_relaxed);
      slot.iterations = record->iterations;
      slot.phase = RankPhaseName(static_cast<RankPhase>(record->phase));
      slot.host.assign(record->host, strnlen(record->host, sizeof(record->host)));
      slot.operation.assign(record->operation,
                            strnlen(record->operation, sizeof(record->operation)));
      std::atomic_thread_fence(std::memory_order_acquire);
      if (record->generation.load(std::memory_order_relaxed) != before) continue;
      slots.push_back(std::move(slot));
      break;
    }
    munmap(mapped, kSlotBytes);
  }
  closedir(folder);
  std::sort(slots.begin(), slots.end(),
            [](const RankSlot& a, const RankSlot& b) { return a.rank < b.rank; });
  return slots;
}

}  // namespace collbench
