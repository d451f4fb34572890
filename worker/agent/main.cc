// SPDX-License-Identifier: Apache-2.0
// collbench-worker: serves the Agent (Exec) service, registers with the
// coordinator and launches runs. `collbench-worker launch-shim ...` is the
// remote-shell agent mpirun / mpiexec call (launch_shim.h).
//
// Called as collbench-launcher (a link to this binary), it is the trusted
// launcher instead (docs/design/security.md#the-launcher): it registers as
// launchers/NAME with a launcher token, serves no Exec, hosts no ranks, and
// starts the runs that span workers, reaching every one of their workers
// through the shim.
#include <dirent.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/flag_parser.h"
#include "common/grpc_log.h"
#include "common/host_port.h"
#include "common/log.h"
#include "common/log_flags.h"
#include "common/progress_slot.h"
#include "common/tls_channel.h"
#include "common/units.h"
#include "common/worker_labels.h"
#include "flavors/registry.h"
#include "kube/kube_client.h"
#include "kube/kube_config.h"
#include "kube/node_labels.h"
#include "worker/agent/agent_tls.h"
#include "worker/agent/clean_env.h"
#include "worker/agent/daemon_command.h"
#include "worker/agent/exec_service.h"
#include "worker/agent/inventory.h"
#include "worker/agent/launch_shim.h"
#include "worker/agent/launcher.h"
#include "worker/agent/memory_probe.h"
#include "worker/agent/tuning_files.h"
#include "worker/agent/worker_agent.h"
#include "worker/agent/worker_state.h"

namespace collbench {
namespace {

// The largest Exec request the Agent port reads.
constexpr int kMaxExecRequestBytes = 1 << 20;

constexpr char kUsage[] =
    "usage: collbench-worker --coordinator HOST:PORT [--listen HOST:PORT] [--name NAME]\n"
    "                        [--slots N] [--join-token-file F] [--advertise HOST:PORT]\n"
    "                        [--state-dir DIR] [--mpi-interface IFACE|CIDR]\n"
    "                        [--tuning-dir DIR]\n"
    "                        [--tls-ca FILE [--tls-server-name NAME]]\n"
    "                        [--tls-cert F --tls-key F [--tls-client-ca F]]\n"
    "                        [--label KEY=VALUE]... [--log-format auto|json|text]\n"
    "                        [--log-level debug|info|warn|error]\n"
    "       collbench-worker launch-shim HOST COMMAND...   (used by mpirun / mpiexec)\n"
    "       collbench-launcher --coordinator HOST:PORT --advertise HOST:0 [--name NAME]\n"
    "                          [--join-token-file F]   (F: a launcher token; the\n"
    "                          trusted launcher of runs that span workers)\n";

struct Flags {
  std::string coordinator;
  std::string listen = "0.0.0.0:0";
  std::string advertise;
  std::string name;
  int slots = 0;
  std::string join_token_file;
  bool join_token_in_argv = false;  // --join-token VALUE: refused
  std::string work_dir;
  std::string state_dir;
  std::string mpi_interface;
  std::string tuning_dir;
  // One per user: workers of different users on one machine (host IPC, a
  // shared /dev/shm) never share a folder, which each refuses if not its own.
  std::string progress_dir = "/dev/shm/collbench-progress-" + std::to_string(geteuid());
  std::map<std::string, std::string> labels;  // --label, validated when parsed
  std::string node_name;                      // --node-name; "" the environment's (inventory.h)
  std::vector<std::string> node_labels;       // --node-labels: keys to copy from its Node
  std::string kubeconfig;                     // --kubeconfig; "" in-cluster
  bool no_memory_probe = false;
  ClientTlsOptions tls;
  AgentTlsOptions agent_tls;
  bool launcher = false;  // called as collbench-launcher
};

// The name this program was called by (argv[0]'s last component).
absl::string_view CalledAs(const char* argv0) {
  absl::string_view called = argv0 == nullptr ? "" : argv0;
  if (const size_t slash = called.rfind('/'); slash != absl::string_view::npos) {
    called.remove_prefix(slash + 1);
  }
  return called;
}

std::string SelfPath() {
  char path[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, n) : "collbench-worker";
}

std::string HostName() {
  char name[256] = {0};
  gethostname(name, sizeof name - 1);
  return name;
}

// A program from PATH, or `name` itself when not found.
std::string FromPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin", ':')) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return name;
}

// --label link-rate=RATE: the operator's word for this worker's link
// (a rate sysfs does not know, or a shaped one), ahead of what sysfs says.
// --node-labels: the named labels of this worker's Node, read once with the
// pod's service account (or --kubeconfig), as labels of its own where
// --label did not set them. A failure is logged and the worker goes on
// without them (a hunt then takes its host for a rack of its own).
void AddNodeLabels(const Flags& flags, v1::Inventory* inventory) {
  if (flags.node_labels.empty()) return;
  auto warn = [](const std::string& why) {
    LogWarn("worker.node_labels", absl::StrCat("--node-labels: ", why, "; going on without them"));
  };
  if (inventory->node_name().empty()) {
    return warn("no node name (--node-name, or NODE_NAME from the downward API)");
  }
  absl::StatusOr<kube::KubeConfig> config =
      flags.kubeconfig.empty() ? kube::InClusterConfig() : kube::LoadKubeconfig(flags.kubeconfig);
  if (!config.ok()) return warn(std::string(config.status().message()));
  kube::KubeClient client(*config, kube::KubeClientOptions{0, 1}, RealClock());
  absl::StatusOr<std::map<std::string, std::string>> labels =
      kube::NodeLabels(client, inventory->node_name(), flags.node_labels);
  if (!labels.ok()) return warn(std::string(labels.status().message()));
  std::vector<std::string> taken;
  for (const auto& [key, value] : *labels) {
    if (flags.labels.count(key)) continue;  // --label says otherwise
    if (absl::Status valid = ValidateWorkerLabel(key, value); !valid.ok()) {
      warn(std::string(valid.message()));
      continue;
    }
    (*inventory->mutable_labels())[key] = value;
    taken.push_back(absl::StrCat(key, "=", value));
  }
  LogInfo("worker.node_labels",
          absl::StrCat("from node ", inventory->node_name(), ": ",
                       taken.empty() ? "none of the labels named" : absl::StrJoin(taken, ",")));
}

void AddDeclaredLinkRate(const std::map<std::string, std::string>& labels,
                         v1::Inventory* inventory) {
  const auto declared = labels.find(std::string(kLinkRateLabel));
  if (declared == labels.end()) return;
  absl::StatusOr<double> rate = collbench::ParseBitRate(declared->second);
  if (!rate.ok()) return;  // refused when the flag was parsed
  v1::NetworkLink link;
  link.set_name("label");
  link.set_bits_per_s(*rate);
  link.set_source("label");
  inventory->mutable_links()->Add(std::move(link));
}

// The memory bandwidth the roofline of the shared-memory path starts from,
// measured once (a few hundred milliseconds) with as many threads as the
// worker may use.
void ProbeMemory(v1::Inventory* inventory) {
  collbench::MemoryProbeOptions probe;
  probe.threads = std::max(1, inventory->cpus());
  absl::StatusOr<v1::MemoryBandwidth> bandwidth = collbench::ProbeMemoryBandwidth(probe);
  if (!bandwidth.ok()) {
    LogWarn("worker.memory_probe", absl::StrCat("memory bandwidth probe: ",
                                                   bandwidth.status().message(),
                                                   "; results will show no % of limit for shm"));
    return;
  }
  LogInfo("worker.memory_probe",
          absl::StrFormat("memory copy bandwidth %.1f GB/s on one thread, %.1f GB/s on %d",
                          bandwidth->copy_bytes_per_s() / 1e9,
                          bandwidth->copy_all_bytes_per_s() / 1e9, bandwidth->threads()))
      .Double("copy_bytes_per_s", bandwidth->copy_bytes_per_s())
      .Double("copy_all_bytes_per_s", bandwidth->copy_all_bytes_per_s())
      .Int("threads", bandwidth->threads());
  *inventory->mutable_memory_bandwidth() = *bandwidth;
}

// Peers must reach the Agent service: a wildcard listen address is
// advertised under this machine's host name.
std::string AdvertiseAddress(const Flags& flags, int port) {
  if (!flags.advertise.empty()) return flags.advertise;
  std::string host = HostOf(flags.listen);
  if (IsWildcardHost(host)) host = HostName();
  return JoinHostPort(host, port);
}

// An MPI library may name a rank's shared-memory segment after the host
// name, the job and the rank's index on its node. Two workers on one
// machine are two "nodes" to the launcher, with the same host name and the
// same local indexes, so their ranks would create, and unlink, each other's
// segments (a crash or a silent mix-up). Each worker's ranks therefore get
// their own folder (handed over as MpiFlavor::SegmentDirEnv), removed with
// what killed ranks left in it when the worker exits.
class SegmentDir {
 public:
  SegmentDir() {
    struct stat shm;
    parent_ = stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) ? "/dev/shm" : "/tmp";
    RemoveStale();
    std::string pattern = absl::StrCat(parent_, "/", kPrefix, getpid(), "-XXXXXX");
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~SegmentDir() {
    if (!path_.empty()) RemoveTree(path_);
  }
  const std::string& path() const { return path_; }

 private:
  static constexpr char kPrefix[] = "collbench-segments-";

  // Folders of workers that were killed (named after their pid).
  void RemoveStale() const {
    DIR* dir = opendir(parent_.c_str());
    if (dir == nullptr) return;
    while (dirent* entry = readdir(dir)) {
      absl::string_view name = entry->d_name;
      if (!absl::ConsumePrefix(&name, kPrefix)) continue;
      int pid = 0;
      if (!absl::SimpleAtoi(name.substr(0, name.find('-')), &pid) || pid <= 0) continue;
      if (kill(pid, 0) != 0 && errno == ESRCH) RemoveTree(parent_ + "/" + entry->d_name);
    }
    closedir(dir);
  }

  static void RemoveTree(const std::string& path) {
    if (DIR* dir = opendir(path.c_str())) {
      while (dirent* entry = readdir(dir)) {
        const std::string name = entry->d_name;
        if (name != "." && name != "..") unlink((path + "/" + name).c_str());
      }
      closedir(dir);
    }
    rmdir(path.c_str());
  }

  std::string parent_;
  std::string path_;  // empty when it could not be made
};

// Ends and collects adopted orphans (EndStrayOrphans, ReapAdoptedOrphans)
// twice a second while it lives.
class OrphanReaper {
 public:
  OrphanReaper() : thread_([this] { Loop(); }) {}
  ~OrphanReaper() {
    stop_ = true;
    thread_.join();
  }

 private:
  void Loop() {
    while (!stop_) {
      EndStrayOrphans();
      ReapAdoptedOrphans();
      absl::SleepFor(absl::Milliseconds(500));
    }
  }
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts after stop_ exists
};

// Logs why the worker does not start; returns `exit_code`.
int StartFailed(const absl::Status& status, int exit_code) {
  LogError("worker.start_failed", std::string(status.message())).Error(status);
  return exit_code;
}

int Serve(const Flags& flags) {
  absl::StatusOr<ChannelSetup> channel = MakeChannelSetup(flags.tls);
  if (!channel.ok()) return StartFailed(channel.status(), 2);
  // Orphans of what runs start come back to this process (containment, see
  // process.h); a thread collects them once they are killed.
  if (!EnableChildSubreaper()) {
    LogWarn("worker.no_subreaper", "cannot become a child subreaper; orphans of runs are still "
                                   "swept by their containment id");
  }
  const OrphanReaper reaper;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> agent_credentials =
      AgentServerCredentials(flags.agent_tls);
  if (!agent_credentials.ok()) return StartFailed(agent_credentials.status(), 2);
  // Read once; COLLBENCH_JOIN_TOKEN leaves the environment here, before any
  // child could inherit it.
  absl::StatusOr<std::string> join_token = ReadJoinToken(flags.join_token_file);
  if (!join_token.ok()) return StartFailed(join_token.status(), 2);
  // Where the operator installs tuning files runs may name (tuning_files.h).
  std::string tuning_dir;
  if (!flags.tuning_dir.empty()) {
    absl::StatusOr<std::string> canonical = CanonicalTuningDir(flags.tuning_dir);
    if (!canonical.ok()) return StartFailed(canonical.status(), 2);
    tuning_dir = *canonical;
  }
  std::unique_ptr<ProcessRunner> runner = NewPosixProcessRunner();
  const SegmentDir segment_dir;
  const std::string self = SelfPath();
  const std::string bin_dir = self.substr(0, self.rfind('/'));
  // Each MPI flavour's launcher (from PATH) and rank binary (beside this one).
  std::map<std::string, FlavorPaths, std::less<>> flavor_paths;
  std::map<std::string, std::string> launchers;
  for (const MpiFlavor* flavor : Flavors().List()) {
    const std::string name(flavor->name());
    launchers[name] = FromPath(std::string(flavor->launcher_program()));
    flavor_paths[name] = {launchers[name], absl::StrCat(bin_dir, "/", flavor->rank_binary())};
  }
  // What children start from: an allow-list of this process' environment,
  // taken once (clean_env.h).
  const std::map<std::string, std::string> base_env = AllowedOwnEnvironment();
  ExecManagerOptions exec_options;
  exec_options.daemons = ResolveDaemonPaths(launchers);
  exec_options.base_env = base_env;
  exec_options.tuning_dir = tuning_dir;
  for (const MpiFlavor* flavor : Flavors().List()) {
    for (const auto& [key, value] : flavor->SegmentDirEnv(segment_dir.path())) {
      exec_options.default_env[key] = value;
    }
  }
  ExecManager exec(runner.get(), exec_options);
  ExecService exec_service(&exec);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  int port = 0;
  grpc::ServerBuilder builder;
  // An Exec request is a daemon's argv, its environment and a token: far
  // under this; gRPC's own default would be 4 MiB.
  builder.SetMaxReceiveMessageSize(kMaxExecRequestBytes);
  builder.AddListeningPort(flags.listen, *agent_credentials, &port);
  // A launcher hosts no ranks: it starts no daemon for anyone.
  if (!flags.launcher) builder.RegisterService(&exec_service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return StartFailed(absl::UnavailableError(absl::StrCat("cannot listen on ", flags.listen)), 1);
  }
  // The ranks' progress slots: a folder of this worker's own, or none.
  if (!flags.progress_dir.empty() && !flags.launcher) {
    if (absl::Status root = PrepareProgressRoot(flags.progress_dir); !root.ok()) {
      return StartFailed(root, 2);
    }
  }
  // Ready (gRPC health SERVING) only while registered with the coordinator.
  std::function<void(bool)> report_registration = ReportRegistrationAsHealth(server.get());
  absl::StatusOr<v1::Inventory> inventory = DiscoverInventory();
  if (!inventory.ok()) {
    return StartFailed(absl::Status(inventory.status().code(),
                                    absl::StrCat("inventory: ", inventory.status().message())),
                       1);
  }
  for (const auto& [key, value] : flags.labels) (*inventory->mutable_labels())[key] = value;
  if (!flags.node_name.empty()) inventory->set_node_name(flags.node_name);
  AddNodeLabels(flags, &*inventory);
  AddDeclaredLinkRate(flags.labels, &*inventory);
  if (!flags.no_memory_probe && !flags.launcher) ProbeMemory(&*inventory);
  WorkerAgentOptions options;
  options.coordinator = flags.coordinator;
  options.credentials = channel->credentials;
  options.channel_arguments = channel->arguments;
  options.worker_id = flags.name.empty() ? HostName() : flags.name;
  options.display_name = options.worker_id;
  options.agent_address = AdvertiseAddress(flags, port);
  options.slots = flags.launcher    ? 0
                  : flags.slots > 0 ? flags.slots
                                    : std::max(1, inventory->cpus());
  options.join_token = *join_token;
  options.launcher = flags.launcher;
  options.inventory = *inventory;
  options.on_registration = std::move(report_registration);
  // Its ranks' progress: a launcher's runs have their ranks on workers,
  // which relay it.
  options.progress_root = flags.launcher ? "" : flags.progress_dir;
  const std::string work_dir = flags.work_dir.empty()
                                   ? absl::StrCat("/tmp/collbench-worker-", options.worker_id)
                                   : flags.work_dir;
  // The secret the coordinator issues this worker's name (worker_state.h).
  options.secret_file = absl::StrCat(
      flags.state_dir.empty() ? work_dir + "/state" : flags.state_dir, "/", kWorkerSecretFile);
  ResultSpool spool;
  WorkerAgent agent(options, &exec, &spool);
  LauncherOptions launcher_options;
  launcher_options.paths.self = self;
  launcher_options.paths.flavors = flavor_paths;
  launcher_options.paths.mpi_interface = flags.mpi_interface;
  launcher_options.base_env = base_env;
  launcher_options.self_worker =
      absl::StrCat(flags.launcher ? kLauncherNamePrefix : "workers/", options.worker_id);
  if (flags.launcher) launcher_options.paths.launcher_host = HostOf(options.agent_address);
  launcher_options.work_dir = work_dir;
  mkdir(launcher_options.work_dir.c_str(), 0700);
  launcher_options.paths.shim_env = ShimTlsEnv(flags.agent_tls);
  launcher_options.paths.tuning_dir = tuning_dir;
  launcher_options.paths.progress_root = flags.progress_dir;

  Launcher launcher(runner.get(), &spool, &agent, launcher_options);
  agent.SetLauncher(&launcher);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    agent.Stop();
  });
  LogInfo(flags.launcher ? "launcher.serving" : "worker.serving",
          flags.launcher
              ? absl::StrFormat("collbench-launcher %s: at %s, coordinator %s", options.worker_id,
                                options.agent_address, options.coordinator)
              : absl::StrFormat("collbench-worker %s: agent on %s, coordinator %s, %d slots",
                                options.worker_id, options.agent_address, options.coordinator,
                                options.slots))
      .Str("worker", options.worker_id)
      .Str("agent_address", options.agent_address)
      .Str("coordinator", options.coordinator)
      .Int("slots", options.slots)
      .Bool("tls", !flags.tls.ca_file.empty())
      .Bool("agent_tls", !flags.agent_tls.cert_file.empty());
  agent.Run();
  exec.KillAll(absl::Seconds(5));
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  pthread_kill(waiter.native_handle(), SIGTERM);  // wake the waiter if Run ended by itself
  waiter.join();
  return 0;
}

}  // namespace
}  // namespace collbench

int main(int argc, char** argv) {
  if (const int shim_exit = collbench::LaunchShimMain(argc, argv); shim_exit >= 0) {
    return shim_exit;
  }
  // Stop signals are taken by one thread in Serve(); block them everywhere.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  collbench::Flags flags;
  flags.launcher = collbench::CalledAs(argc > 0 ? argv[0] : nullptr) == "collbench-launcher";
  collbench::FlagParser parser;
  parser.String("coordinator", &flags.coordinator, "coordinator gRPC address HOST:PORT");
  parser.String("listen", &flags.listen, "Agent service address (default 0.0.0.0:0)");
  parser.String("advertise", &flags.advertise, "address peers use for the Agent service");
  parser.String("name", &flags.name, "worker name (default: host name)");
  parser.Int("slots", &flags.slots, "ranks this worker may host (default: CPUs)");
  parser.Bool("no-memory-probe", &flags.no_memory_probe,
              "skip the memory copy bandwidth probe at start (a fraction of a second); without"
              " it results on this worker show no % of limit");
  parser.Custom(
      "join-token", "T",
      [&flags](absl::string_view) {
        flags.join_token_in_argv = true;
        return absl::OkStatus();
      },
      "refused: a token in argv is visible to every local user; use --join-token-file");
  parser.String("join-token-file", &flags.join_token_file,
                "file whose first line is the worker join token the coordinator requires,"
                " or as collbench-launcher its launcher token (default: the"
                " COLLBENCH_JOIN_TOKEN variable, read once and removed)");
  parser.String("state-dir", &flags.state_dir,
                "folder for what the worker keeps across restarts: the secret the coordinator"
                " issues its name (default: WORK_DIR/state)");
  parser.String("tls-cert", &flags.agent_tls.cert_file,
                "PEM certificate chain: serve the Agent over TLS (with --tls-key); also the"
                " client certificate presented to the coordinator when dialling it with"
                " --tls-ca");
  parser.String("tls-key", &flags.agent_tls.key_file, "PEM private key for --tls-cert");
  parser.String("tls-client-ca", &flags.agent_tls.client_ca_file,
                "PEM CA certificate(s): Agent callers must present a certificate from it"
                " (mutual TLS); also verifies peers' Agents when this worker launches");
  parser.String("work-dir", &flags.work_dir, "folder for per-run files");
  parser.String("mpi-interface", &flags.mpi_interface,
                "network for MPI's TCP traffic between hosts when this worker launches a run:"
                " an interface (eth0) or a CIDR (10.0.0.0/16); Open MPI gets it as"
                " oob_tcp_if_include and btl_tcp_if_include, MPICH an interface name as"
                " UCX_NET_DEVICES (default: MPI's choice)");
  parser.String("progress-dir", &flags.progress_dir,
                "where the ranks of a run publish their progress (a folder per run), which"
                " this worker relays to the coordinator for hang diagnosis; every worker of a"
                " run, and the launcher, must use the same path (the launcher tells the ranks"
                " it). The worker creates it 0700 and refuses to start"
                " when it exists as another user's, with group or other permissions, or as a"
                " symbolic link (default /dev/shm/collbench-progress-UID, UID this worker's"
                " user id; empty: none)");
  parser.String("tuning-dir", &flags.tuning_dir,
                "folder of tuning files the operator installs (Open MPI coll_tuned dynamic"
                " rules, MPICH JSON collective selection); a run names one by its bare file name,"
                " e.g. --env OMPI_MCA_coll_tuned_dynamic_rules_filename=rules.conf (default:"
                " none, and runs naming a tuning file fail here)");
  parser.Custom(
      "label", "KEY=VALUE",
      [&flags](absl::string_view text) -> absl::Status {
        absl::StatusOr<std::pair<std::string, std::string>> label =
            collbench::ParseWorkerLabel(text);
        if (!label.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("--label: ", label.status().message()));
        }
        if (label->first == collbench::kLinkRateLabel) {
          absl::StatusOr<double> rate = collbench::ParseBitRate(label->second);
          if (!rate.ok()) {
            return absl::InvalidArgumentError(absl::StrCat("--label: ", rate.status().message()));
          }
        }
        flags.labels[label->first] = label->second;
        return absl::OkStatus();
      },
      "a fact about this worker that suites match (e.g. link=tbf-1gbit), or its rack for"
      " topology hunts (collbench.io/rack=r07); repeatable. Keys: lower-case letters, digits,"
      " '.', '_', '-', optionally after a DNS prefix and '/'; values: letters, digits, '.', '_',"
      " '-'");
  parser.Custom(
      "node-labels", "K1,K2,...",
      [&flags](absl::string_view text) -> absl::Status {
        for (absl::string_view key : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
          key = absl::StripAsciiWhitespace(key);
          if (absl::Status valid = collbench::ValidateWorkerLabel(key, "x"); !valid.ok()) {
            return absl::InvalidArgumentError(absl::StrCat("--node-labels: ", valid.message()));
          }
          flags.node_labels.emplace_back(key);
        }
        return absl::OkStatus();
      },
      "copy these labels of the worker's Kubernetes node (read once at start with the pod's"
      " service account, or --kubeconfig) into its own labels, e.g. its rack and zone for"
      " topology hunts; --label wins over a node's label");
  parser.String("kubeconfig", &flags.kubeconfig,
                "--node-labels outside a pod: the kubeconfig to read the node with");
  parser.String("node-name", &flags.node_name,
                "the Kubernetes node this worker runs on, where collbench-kube writes its"
                " verdicts (default: NODE_NAME or KUBERNETES_NODE_NAME, as the downward API"
                " sets them)");
  collbench::LogFlags log_flags;
  collbench::AddLogFlags(parser, &log_flags);
  parser.String("tls-ca", &flags.tls.ca_file,
                "PEM CA certificate(s): dial the coordinator over TLS and verify it");
  parser.String("tls-server-name", &flags.tls.server_name,
                "the name the coordinator's certificate must carry, when it is not the host"
                " in --coordinator");
  const absl::Status parsed = parser.Parse(std::vector<std::string>(argv + 1, argv + argc));
  if (parser.help()) {
    std::fputs(collbench::kUsage, stdout);
    std::fputs(parser.Usage().c_str(), stdout);
    return 0;
  }
  if (parsed.ok() && flags.join_token_in_argv) {
    absl::FPrintF(stderr,
                  "collbench-worker: --join-token is refused (a token on the command line is "
                  "visible to every local user); put it in a file and pass --join-token-file "
                  "FILE, or set COLLBENCH_JOIN_TOKEN\n");
    return 2;
  }
  flags.agent_tls.peer_ca_file =
      !flags.agent_tls.client_ca_file.empty() ? flags.agent_tls.client_ca_file : flags.tls.ca_file;
  // The coordinator channel presents the Agent's certificate (--tls-cert,
  // --tls-key) when it dials TLS, for a coordinator that requires client
  // certificates (--tls-client-ca). One certificate is this worker's one
  // identity: the launch shim already presents it to peers' Agents as a
  // client certificate, so it must allow client authentication anyway, and
  // a second pair of flags would only be a second file to issue and rotate
  // per node. Over a plaintext coordinator channel there is nothing to
  // present it with.
  if (!flags.tls.ca_file.empty()) {
    flags.tls.cert_file = flags.agent_tls.cert_file;
    flags.tls.key_file = flags.agent_tls.key_file;
  }
  if (!parsed.ok() || !parser.rest().empty() || flags.coordinator.empty()) {
    absl::FPrintF(stderr, "collbench-worker: %s\n",
                  !parsed.ok()               ? std::string(parsed.message())
                  : !parser.rest().empty() ? "unexpected argument '" + parser.rest()[0] + "'"
                                           : std::string("--coordinator HOST:PORT is required"));
    return 2;
  }
  if (absl::Status logging = collbench::ApplyLogFlags(log_flags); !logging.ok()) {
    absl::FPrintF(stderr, "collbench-worker: %s\n", logging.message());
    return 2;
  }
  collbench::RouteGrpcLogsToLog();
  return collbench::Serve(flags);
}
