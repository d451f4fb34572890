#include "worker/agent/inventory.h"

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "worker/engine/cuda/device_runtime.h"
#include "worker/engine/memory/memory_kind.h"

#ifndef COLLBENCH_VERSION
#define COLLBENCH_VERSION "unknown"
#endif

namespace collbench {
namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

bool Exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

std::optional<std::string> GetEnv(const InventoryOptions& options, const std::string& name) {
  if (options.get_env) return options.get_env(name);
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::string HostId(const InventoryOptions& options, const std::string& hostname) {
  for (const char* name : {kHostIdEnv, kNodeNameEnv, kKubernetesNodeNameEnv}) {
    std::optional<std::string> value = GetEnv(options, name);
    if (value.has_value() && !absl::StripAsciiWhitespace(*value).empty()) {
      return std::string(absl::StripAsciiWhitespace(*value));
    }
  }
  std::optional<std::string> boot_id = ReadFile(options.proc_root + "/sys/kernel/random/boot_id");
  if (boot_id.has_value() && !absl::StripAsciiWhitespace(*boot_id).empty()) {
    return std::string(absl::StripAsciiWhitespace(*boot_id));
  }
  return hostname;
}

// The runtime named by PID 1's cgroup paths, or "".
std::string RuntimeFromCgroup(const std::string& cgroup) {
  const std::pair<const char*, const char*> markers[] = {{"kubepods", "kubernetes"},
                                                         {"libpod", "podman"},
                                                         {"docker", "docker"},
                                                         {"containerd", "containerd"},
                                                         {"lxc", "lxc"}};
  for (const auto& [marker, runtime] : markers) {
    if (absl::StrContains(cgroup, marker)) return runtime;
  }
  return "";
}

void DetectContainer(const InventoryOptions& options, v1::Inventory* inventory) {
  std::string runtime;
  if (GetEnv(options, "KUBERNETES_SERVICE_HOST").has_value()) runtime = "kubernetes";
  if (runtime.empty()) {
    runtime = RuntimeFromCgroup(ReadFile(options.proc_root + "/1/cgroup").value_or(""));
  }
  if (runtime.empty() && Exists("/run/.containerenv")) runtime = "podman";
  if (runtime.empty() && Exists("/.dockerenv")) runtime = "docker";
  if (runtime.empty()) {
    // systemd-nspawn, podman and others set $container for PID 1's tree.
    runtime = GetEnv(options, "container").value_or("");
  }
  inventory->set_in_container(!runtime.empty());
  inventory->set_container_runtime(runtime);
}

int CountCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

// "MemTotal:  16318412 kB" style line of a meminfo file, in bytes.
uint64_t MeminfoBytes(const std::string& text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t at = line.find(key);
    if (at == absl::string_view::npos) continue;
    std::vector<absl::string_view> words =
        absl::StrSplit(line.substr(at + key.size()), ' ', absl::SkipWhitespace());
    uint64_t kib = 0;
    if (!words.empty() && absl::SimpleAtoi(words[0], &kib)) return kib * 1024;
  }
  return 0;
}

uint64_t MemoryBytes(const InventoryOptions& options) {
  uint64_t bytes = MeminfoBytes(ReadFile(options.proc_root + "/meminfo").value_or(""), "MemTotal:");
  // A container's limit (cgroup v2, then v1); "max" or a huge v1 value
  // means none.
  for (const char* file : {"/fs/cgroup/memory.max", "/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::optional<std::string> text = ReadFile(options.sys_root + file);
    uint64_t limit = 0;
    if (text.has_value() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &limit) &&
        limit > 0 && (bytes == 0 || limit < bytes)) {
      bytes = limit;
    }
  }
  return bytes;
}

// "0-3,8,10-11" → {0,1,2,3,8,10,11}.
std::vector<int> ParseCpuList(absl::string_view text) {
  std::vector<int> cpus;
  for (absl::string_view range :
       absl::StrSplit(absl::StripAsciiWhitespace(text), ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> ends = absl::StrSplit(range, '-');
    int first = 0;
    int last = 0;
    if (!absl::SimpleAtoi(ends.first, &first)) continue;
    if (ends.second.empty()) {
      last = first;
    } else if (!absl::SimpleAtoi(ends.second, &last)) {
      continue;
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

void AddNumaNodes(const InventoryOptions& options, v1::Inventory* inventory) {
  const std::string dir = options.sys_root + "/devices/system/node";
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) return;
  std::vector<int> ids;
  while (dirent* entry = readdir(handle)) {
    absl::string_view name = entry->d_name;
    int id = 0;
    if (absl::ConsumePrefix(&name, "node") && absl::SimpleAtoi(name, &id)) ids.push_back(id);
  }
  closedir(handle);
  std::sort(ids.begin(), ids.end());
  for (int id : ids) {
    const std::string node_dir = absl::StrCat(dir, "/node", id);
    v1::NumaNode* node = inventory->add_numa_nodes();
    node->set_id(id);
    node->set_memory_bytes(MeminfoBytes(ReadFile(node_dir + "/meminfo").value_or(""), "MemTotal:"));
    for (int cpu : ParseCpuList(ReadFile(node_dir + "/cpulist").value_or(""))) {
      node->add_cpus(cpu);
    }
  }
}

// Describe() of an initialised runtime: "NAME (device I of N, driver ...)".
std::string GpuName(const std::string& description) {
  const size_t at = description.rfind(" (device ");
  return at == std::string::npos ? description : description.substr(0, at);
}

int GpuCount(const std::string& description) {
  const size_t at = description.rfind(" of ");
  int count = 0;
  if (at == std::string::npos) return 1;
  const std::string rest = description.substr(at + 4);
  if (!absl::SimpleAtoi(rest.substr(0, rest.find_first_of(",)")), &count)) return 1;
  return std::max(count, 1);
}

// Adds the GPUs; returns the runtime of device 0 for the memory kinds
// (initialised only when there is a GPU).
std::unique_ptr<DeviceRuntime> AddGpus(const InventoryOptions& options, v1::Inventory* inventory) {
  std::unique_ptr<DeviceRuntime> first = NewDeviceRuntime();
  if (!options.probe_gpus || !first->Init(0).ok()) return first;
  const int count = GpuCount(first->Describe());
  for (int index = 0; index < count; ++index) {
    std::unique_ptr<DeviceRuntime> other;
    DeviceRuntime* device = first.get();
    if (index > 0) {
      other = NewDeviceRuntime();
      if (!other->Init(index).ok()) continue;
      device = other.get();
    }
    v1::Gpu* gpu = inventory->add_gpus();
    gpu->set_index(index);
    gpu->set_name(GpuName(device->Describe()));
    absl::StatusOr<std::pair<size_t, size_t>> memory = device->MemoryInfo();
    if (memory.ok()) gpu->set_memory_bytes(memory->second);
  }
  return first;
}

void AddMemoryKinds(const v1::Inventory& inventory, DeviceRuntime* device, v1::Inventory* out) {
  MemoryKindRegistry registry;
  RegisterBuiltinMemoryKinds(&registry);
  for (const std::string& name : registry.Names()) {
    std::vector<std::string> texts;
    const size_t colon = name.find(':');
    if (colon == std::string::npos) {
      texts.push_back(name);
    } else {
      for (const v1::NumaNode& node : inventory.numa_nodes()) {
        texts.push_back(absl::StrCat(name.substr(0, colon), ":", node.id()));
      }
    }
    for (const std::string& text : texts) {
      absl::StatusOr<std::unique_ptr<MemoryKind>> kind = registry.Create(text, device);
      if (kind.ok() && (*kind)->CheckAvailable().ok()) out->add_memory_kinds(text);
    }
  }
}

bool IsExecutable(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string SelfDirectory() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  const std::string exe(path, n);
  return exe.substr(0, exe.rfind('/'));
}

bool FindBinary(const InventoryOptions& options, const std::string& name) {
  const std::string first = options.binary_dir.empty() ? SelfDirectory() : options.binary_dir;
  if (!first.empty() && IsExecutable(first + "/" + name)) return true;
  const std::string path =
      options.search_path.has_value() ? *options.search_path : GetEnv(options, "PATH").value_or("");
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    if (IsExecutable(absl::StrCat(dir, "/", name))) return true;
  }
  return false;
}

void AddSoftware(const InventoryOptions& options, v1::Inventory* inventory) {
  inventory->add_backends("mpi");
#ifdef COLLBENCH_WITH_CUDA
  if (inventory->gpus_size() > 0) {
    for (const char* backend : {"mpi-staged", "mpi-cuda", "nccl"}) {
      inventory->add_backends(backend);
    }
  }
#endif
  if (FindBinary(options, "collbench-rank") && FindBinary(options, "mpirun.openmpi")) {
    inventory->add_mpi_implementations("openmpi");
  }
  if (FindBinary(options, "collbench-rank-mpich") && FindBinary(options, "mpiexec.mpich")) {
    inventory->add_mpi_implementations("mpich");
  }
  inventory->set_collbench_version(COLLBENCH_VERSION);
  utsname names;
  if (uname(&names) == 0) inventory->set_kernel(names.release);
}

}  // namespace

absl::StatusOr<v1::Inventory> DiscoverInventory(const InventoryOptions& options) {
  v1::Inventory inventory;
  char hostname[HOST_NAME_MAX + 1] = {};
  if (gethostname(hostname, sizeof(hostname) - 1) != 0 || hostname[0] == '\0') {
    return absl::InternalError("gethostname failed: this worker has no name to report");
  }
  inventory.set_hostname(hostname);
  inventory.set_host_id(HostId(options, hostname));
  DetectContainer(options, &inventory);
  inventory.set_cpus(CountCpus());
  inventory.set_memory_bytes(MemoryBytes(options));
  AddNumaNodes(options, &inventory);
  std::unique_ptr<DeviceRuntime> device = AddGpus(options, &inventory);
  AddMemoryKinds(inventory, device.get(), &inventory);
  AddSoftware(options, &inventory);
  return inventory;
}

}  // namespace collbench
