// collbench-worker: serves the Agent (Exec) service, registers with the
// coordinator and launches runs. `collbench-worker launch-shim ...` is the
// remote-shell agent mpirun / mpiexec call (launch_shim.h).
#include <dirent.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/flag_parser.h"
#include "common/host_port.h"
#include "common/tls_channel.h"
#include "common/worker_labels.h"
#include "worker/agent/exec_service.h"
#include "worker/agent/inventory.h"
#include "worker/agent/launch_shim.h"
#include "worker/agent/launcher.h"
#include "worker/agent/worker_agent.h"

namespace collbench {
namespace {

constexpr char kUsage[] =
    "usage: collbench-worker --coordinator HOST:PORT [--listen HOST:PORT] [--name NAME]\n"
    "                        [--slots N] [--join-token T] [--advertise HOST:PORT]\n"
    "                        [--mpi-interface IFACE|CIDR] [--tls-ca FILE [--tls-server-name NAME]]\n"
    "                        [--label KEY=VALUE]...\n"
    "       collbench-worker launch-shim HOST COMMAND...   (used by mpirun / mpiexec)\n";

struct Flags {
  std::string coordinator;
  std::string listen = "0.0.0.0:0";
  std::string advertise;
  std::string name;
  int slots = 0;
  std::string join_token;
  std::string work_dir;
  std::string mpi_interface;
  std::map<std::string, std::string> labels;  // --label, validated when parsed
  ClientTlsOptions tls;
};

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

// Peers must reach the Agent service: a wildcard listen address is
// advertised under this machine's host name.
std::string AdvertiseAddress(const Flags& flags, int port) {
  if (!flags.advertise.empty()) return flags.advertise;
  std::string host = HostOf(flags.listen);
  if (IsWildcardHost(host)) host = HostName();
  return JoinHostPort(host, port);
}

// Open MPI names a rank's shared-memory segment after the host name, the
// job and the rank's index on its node. Two workers on one machine are two
// "nodes" to mpirun, with the same host name and the same local indexes, so
// their ranks would create, and unlink, each other's segments (a crash or a
// silent mix-up). Each worker's ranks therefore get their own folder,
// removed with what killed ranks left in it when the worker exits.
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

int Serve(const Flags& flags) {
  absl::StatusOr<ChannelSetup> channel = MakeChannelSetup(flags.tls);
  if (!channel.ok()) {
    absl::FPrintF(stderr, "collbench-worker: %s\n", channel.status().message());
    return 2;
  }
  std::unique_ptr<ProcessRunner> runner = NewPosixProcessRunner();
  const SegmentDir segment_dir;
  ExecManagerOptions exec_options;
  if (!segment_dir.path().empty()) {
    exec_options.default_env["OMPI_MCA_btl_vader_backing_directory"] = segment_dir.path();
  }
  ExecManager exec(runner.get(), exec_options);
  ExecService exec_service(&exec);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(flags.listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&exec_service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    absl::FPrintF(stderr, "collbench-worker: cannot listen on %s\n", flags.listen);
    return 1;
  }
  // Ready (gRPC health SERVING) only while registered with the coordinator.
  std::function<void(bool)> report_registration = ReportRegistrationAsHealth(server.get());
  absl::StatusOr<v1::Inventory> inventory = DiscoverInventory();
  if (!inventory.ok()) {
    absl::FPrintF(stderr, "collbench-worker: inventory: %s\n", inventory.status().message());
    return 1;
  }
  for (const auto& [key, value] : flags.labels) (*inventory->mutable_labels())[key] = value;
  WorkerAgentOptions options;
  options.coordinator = flags.coordinator;
  options.credentials = channel->credentials;
  options.channel_arguments = channel->arguments;
  options.worker_id = flags.name.empty() ? HostName() : flags.name;
  options.display_name = options.worker_id;
  options.agent_address = AdvertiseAddress(flags, port);
  options.slots = flags.slots > 0 ? flags.slots : std::max(1, inventory->cpus());
  options.join_token = flags.join_token;
  options.inventory = *inventory;
  options.on_registration = std::move(report_registration);
  ResultSpool spool;
  WorkerAgent agent(options, &exec, &spool);
  LauncherOptions launcher_options;
  const std::string self = SelfPath();
  const std::string bin_dir = self.substr(0, self.rfind('/'));
  launcher_options.paths = {self, FromPath("mpirun.openmpi"), FromPath("mpiexec.mpich"),
                            bin_dir + "/collbench-rank", bin_dir + "/collbench-rank-mpich", "",
                            flags.mpi_interface};
  launcher_options.self_worker = absl::StrCat("workers/", options.worker_id);
  launcher_options.work_dir =
      flags.work_dir.empty() ? absl::StrCat("/tmp/collbench-worker-", options.worker_id)
                             : flags.work_dir;
  mkdir(launcher_options.work_dir.c_str(), 0755);
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
  absl::FPrintF(stderr, "collbench-worker %s: agent on %s, coordinator %s, %d slots\n",
                options.worker_id, options.agent_address, options.coordinator, options.slots);
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
  if (argc >= 2 && std::string(argv[1]) == "launch-shim") {
    return collbench::RunLaunchShim(argc - 1, argv + 1);
  }
  // Stop signals are taken by one thread in Serve(); block them everywhere.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  collbench::Flags flags;
  collbench::FlagParser parser;
  parser.String("coordinator", &flags.coordinator, "coordinator gRPC address HOST:PORT");
  parser.String("listen", &flags.listen, "Agent service address (default 0.0.0.0:0)");
  parser.String("advertise", &flags.advertise, "address peers use for the Agent service");
  parser.String("name", &flags.name, "worker name (default: host name)");
  parser.Int("slots", &flags.slots, "ranks this worker may host (default: CPUs)");
  parser.String("join-token", &flags.join_token, "token the coordinator requires");
  // Transitional: the join token from a file (the identity work replaces
  // this flag handling and removes --join-token).
  parser.Custom(
      "join-token-file", "FILE",
      [&flags](absl::string_view path) -> absl::Status {
        std::ifstream in{std::string(path)};
        std::string line;
        if (!in || !std::getline(in, line) || absl::StripAsciiWhitespace(line).empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--join-token-file: cannot read '", path, "'"));
        }
        flags.join_token = std::string(absl::StripAsciiWhitespace(line));
        return absl::OkStatus();
      },
      "a file whose first line is the token the coordinator requires");
  parser.String("work-dir", &flags.work_dir, "folder for per-run files");
  parser.String("mpi-interface", &flags.mpi_interface,
                "network for MPI's TCP traffic between hosts when this worker launches a run:"
                " an interface (eth0) or a CIDR (10.0.0.0/16); Open MPI gets it as"
                " oob_tcp_if_include and btl_tcp_if_include, MPICH an interface name as"
                " UCX_NET_DEVICES (default: MPI's choice)");
  parser.Custom(
      "label", "KEY=VALUE",
      [&flags](absl::string_view text) -> absl::Status {
        absl::StatusOr<std::pair<std::string, std::string>> label =
            collbench::ParseWorkerLabel(text);
        if (!label.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("--label: ", label.status().message()));
        }
        flags.labels[label->first] = label->second;
        return absl::OkStatus();
      },
      "a fact about this worker that suites match (e.g. link=tbf-1gbit); repeatable. Keys:"
      " lower-case letters, digits, '.', '_', '-'; values: letters, digits, '.', '_', '-'");
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
  if (!parsed.ok() || !parser.rest().empty() || flags.coordinator.empty()) {
    absl::FPrintF(stderr, "collbench-worker: %s\n",
                  !parsed.ok()               ? std::string(parsed.message())
                  : !parser.rest().empty() ? "unexpected argument '" + parser.rest()[0] + "'"
                                           : std::string("--coordinator HOST:PORT is required"));
    return 2;
  }
  return collbench::Serve(flags);
}
