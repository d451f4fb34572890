// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/inventory.h"

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine_spec/backends.h"
#include "flavors/registry.h"
#include "worker/agent/cgroup_limits.h"
#include "worker/agent/container_facts.h"
#include "worker/agent/host_facts_io.h"
#include "worker/engine/cuda/device_runtime.h"
#include "worker/engine/memory/memory_kind.h"

#ifndef COLLBENCH_VERSION
#define COLLBENCH_VERSION "unknown"
#endif

namespace collbench {
namespace {

std::string HostId(const InventoryOptions& options, const std::string& hostname) {
  for (const char* name : {kHostIdEnv, kNodeNameEnv, kKubernetesNodeNameEnv}) {
    std::optional<std::string> value = LookupEnv(options.get_env, name);
    if (value.has_value() && !absl::StripAsciiWhitespace(*value).empty()) {
      return std::string(absl::StripAsciiWhitespace(*value));
    }
  }
  std::optional<std::string> boot_id =
      ReadWholeFile(options.proc_root + "/sys/kernel/random/boot_id");
  if (boot_id.has_value() && !absl::StripAsciiWhitespace(*boot_id).empty()) {
    return std::string(absl::StripAsciiWhitespace(*boot_id));
  }
  return hostname;
}

void AddContainerFacts(const InventoryOptions& options, v1::Inventory* inventory) {
  ContainerProbe probe;
  probe.root = options.root;
  probe.proc_root = options.proc_root;
  probe.get_env = options.get_env;
  v1::ContainerFacts facts = DetectContainer(probe);
  *facts.mutable_namespaces() = ReadNamespaces(options.proc_root);
  facts.set_dev_shm_bytes(FileSystemBytes(options.root + "/dev/shm"));
  *facts.mutable_cgroup() = ReadCgroupLimits(options.root, options.proc_root);
  inventory->set_in_container(facts.in_container());
  inventory->set_container_runtime(facts.runtime());
  *inventory->mutable_container() = std::move(facts);
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

// Every entry of /sys/class/infiniband: the RDMA devices (InfiniBand HCAs,
// RoCE NICs, EFA) the kernel has, by name, sorted.
void AddRdmaDevices(const InventoryOptions& options, v1::Inventory* inventory) {
  DIR* handle = opendir((options.sys_root + "/class/infiniband").c_str());
  if (handle == nullptr) return;
  std::vector<std::string> names;
  while (dirent* entry = readdir(handle)) {
    if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
  }
  closedir(handle);
  std::sort(names.begin(), names.end());
  for (std::string& name : names) inventory->add_rdma_devices(std::move(name));
}

// The network interfaces that are up, with the rate the kernel reports
// (/sys/class/net/IF/speed, Mbit/s), by name; loopback and interfaces
// without a rate (-1, unreadable: most virtual ones but veth) are left out.
void AddNetworkLinks(const InventoryOptions& options, v1::Inventory* inventory) {
  const std::string dir = options.sys_root + "/class/net";
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) return;
  std::vector<std::string> names;
  while (dirent* entry = readdir(handle)) {
    if (entry->d_name[0] != '.' && std::string(entry->d_name) != "lo") names.emplace_back(entry->d_name);
  }
  closedir(handle);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string state = std::string(absl::StripAsciiWhitespace(
        ReadWholeFile(dir + "/" + name + "/operstate").value_or("")));
    if (state != "up") continue;
    int64_t megabits = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(
                              ReadWholeFile(dir + "/" + name + "/speed").value_or("")),
                          &megabits) ||
        megabits <= 0) {
      continue;
    }
    v1::NetworkLink* link = inventory->add_links();
    link->set_name(name);
    link->set_bits_per_s(static_cast<double>(megabits) * 1e6);
    link->set_source("sysfs");
  }
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
    node->set_memory_bytes(
        MeminfoBytes(ReadWholeFile(node_dir + "/meminfo").value_or(""), "MemTotal:"));
    for (int cpu : ParseCpuList(ReadWholeFile(node_dir + "/cpulist").value_or(""))) {
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
  const std::string path = options.search_path.has_value()
                               ? *options.search_path
                               : LookupEnv(options.get_env, "PATH").value_or("");
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    if (IsExecutable(absl::StrCat(dir, "/", name))) return true;
  }
  return false;
}

void AddSoftware(const InventoryOptions& options, v1::Inventory* inventory) {
  // engine_spec's backend table; the CUDA ones where this build has CUDA
  // and the host a GPU.
#ifdef COLLBENCH_WITH_CUDA
  const bool cuda = inventory->gpus_size() > 0;
#else
  const bool cuda = false;
#endif
  for (const BackendSpec& backend : BackendSpecs()) {
    if (!backend.needs_cuda || cuda) inventory->add_backends(backend.name);
  }
  for (const MpiFlavor* flavor : Flavors().List()) {
    if (FindBinary(options, std::string(flavor->rank_binary())) &&
        FindBinary(options, std::string(flavor->launcher_program()))) {
      inventory->add_mpi_implementations(std::string(flavor->name()));
    }
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
  for (const char* name : {kNodeNameEnv, kKubernetesNodeNameEnv}) {
    std::optional<std::string> node = LookupEnv(options.get_env, name);
    if (node.has_value() && !absl::StripAsciiWhitespace(*node).empty()) {
      inventory.set_node_name(std::string(absl::StripAsciiWhitespace(*node)));
      break;
    }
  }
  AddContainerFacts(options, &inventory);
  // A container cannot use more than its cgroup allows: the limits replace
  // the host's figures, which are kept beside them.
  const v1::CgroupLimits& limits = inventory.container().cgroup();
  inventory.set_host_cpus(CountCpus());
  inventory.set_cpus(CappedCpus(inventory.host_cpus(), limits.cpu_limit()));
  inventory.set_host_memory_bytes(
      MeminfoBytes(ReadWholeFile(options.proc_root + "/meminfo").value_or(""), "MemTotal:"));
  uint64_t memory = inventory.host_memory_bytes();
  if (limits.memory_limit_bytes() > 0 && (memory == 0 || limits.memory_limit_bytes() < memory)) {
    memory = limits.memory_limit_bytes();
  }
  inventory.set_memory_bytes(memory);
  AddNumaNodes(options, &inventory);
  AddRdmaDevices(options, &inventory);
  AddNetworkLinks(options, &inventory);
  std::unique_ptr<DeviceRuntime> device = AddGpus(options, &inventory);
  AddMemoryKinds(inventory, device.get(), &inventory);
  AddSoftware(options, &inventory);
  return inventory;
}

}  // namespace collbench
