// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/launch_shim.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "collbench/v1/agent.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "absl/time/clock.h"
#include "grpcpp/security/credentials.h"
#include "worker/agent/shell_words.h"
#include "worker/agent/agent_tls.h"

namespace collbench {
namespace {

// OpenSSH's options that take a value ("b:c:D:E:e:F:..." in its getopt
// string); every other letter is a flag.
constexpr absl::string_view kOptionsWithValue = "BbcDEeFIiJLlmOoPpQRSWw";
constexpr int kShimFailure = 255;

// Consumes the options at args[*index...]. Returns false when "--" ended
// the options. REQUIRES: *index < args.size().
bool SkipOptions(const std::vector<std::string>& args, size_t* index) {
  while (*index < args.size()) {
    const std::string& word = args[*index];
    if (word == "--") {
      ++*index;
      return false;
    }
    if (word.size() < 2 || word[0] != '-') return true;
    ++*index;
    // A cluster of flags may end with one option taking a value ("-xp22",
    // "-xp 22").
    for (size_t i = 1; i < word.size(); ++i) {
      if (kOptionsWithValue.find(word[i]) == absl::string_view::npos) continue;
      if (i + 1 == word.size()) ++*index;  // the value is the next word
      break;
    }
  }
  return true;
}

void WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reader went away; the remote side goes on
    data.remove_prefix(n);
  }
}

int Fail(absl::string_view message) {
  WriteAll(2, absl::StrCat(kShimErrorPrefix, message, "\n"));
  return kShimFailure;
}

sigset_t TeardownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

// Cancels `context` when one of TeardownSignals() arrives; they must be
// blocked in every thread (RunLaunchShim does that first).
class SignalWatcher {
 public:
  explicit SignalWatcher(grpc::ClientContext* context)
      : thread_([this, context] { Watch(context); }) {}
  ~SignalWatcher() {
    stop_ = true;
    thread_.join();
  }
  // The signal that cancelled the call, or 0.
  int signal() const { return signal_; }

 private:
  void Watch(grpc::ClientContext* context) {
    const sigset_t set = TeardownSignals();
    const timespec slice = {0, 100 * 1000 * 1000};
    while (!stop_) {
      const int sig = sigtimedwait(&set, nullptr, &slice);
      if (sig <= 0) continue;
      signal_ = sig;
      context->TryCancel();
      return;
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int> signal_{0};
  std::thread thread_;  // last: starts after the flags exist
};

v1::ExecRequest BuildRequest(const ShimEnvironment& env, std::vector<std::string> argv) {
  v1::ExecRequest request;
  request.set_run(env.run);
  request.set_token(env.token);
  for (std::string& word : argv) request.add_argv(std::move(word));
  return request;
}

constexpr size_t kMaxTokenFileBytes = 4096;

absl::StatusOr<std::string> ReadTokenFile(const char* path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::FailedPreconditionError(
        absl::StrCat(kRunTokenFileEnv, ": cannot read ", path));
  }
  std::string token(kMaxTokenFileBytes + 1, '\0');
  file.read(token.data(), token.size());
  token.resize(file.gcount());
  if (token.size() > kMaxTokenFileBytes) {
    return absl::FailedPreconditionError(absl::StrCat(kRunTokenFileEnv, ": ", path, " is too long"));
  }
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(kRunTokenFileEnv, ": ", path, " is empty"));
  }
  return token;
}

// Runs the call; returns the remote exit code or the shim's failure code.
// `*retryable` is set when the agent refused the call before anything ran
// with a code worth retrying (UNAVAILABLE: the peer has no token for the
// run yet; RESOURCE_EXHAUSTED: over its rate); no line is written then.
int Relay(v1::Agent::Stub* stub, grpc::ClientContext* context, const v1::ExecRequest& request,
          absl::string_view where, const SignalWatcher* watcher, bool* retryable) {
  std::unique_ptr<grpc::ClientReader<v1::ExecOutput>> reader = stub->Exec(context, request);
  v1::ExecOutput output;
  int exit_code = -1;
  bool any_output = false;
  while (reader->Read(&output)) {
    any_output = true;
    switch (output.output_case()) {
      case v1::ExecOutput::kStdout:
        WriteAll(1, output.stdout());
        break;
      case v1::ExecOutput::kStderr:
        WriteAll(2, output.stderr());
        break;
      case v1::ExecOutput::kExitCode:
        exit_code = output.exit_code();
        break;
      case v1::ExecOutput::OUTPUT_NOT_SET:
        break;
    }
  }
  const grpc::Status status = reader->Finish();
  if (watcher != nullptr && watcher->signal() != 0) return 128 + watcher->signal();
  if (!status.ok()) {
    *retryable = !any_output && (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                                 status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    if (*retryable) return kShimFailure;
    return Fail(absl::StrCat(where, ": Exec failed: ", status.error_message()));
  }
  if (exit_code < 0) return Fail(absl::StrCat(where, ": Exec ended without an exit code"));
  return exit_code;
}

// Exec, tried again with backoff while the agent refuses it as retryable
// before anything ran (Relay), for up to kExecRetryFor: the coordinator
// sends a run's token to its peers just before the launcher starts, so the
// first call can beat it; agents never hold a call waiting for a token.
int ExecWithRetry(v1::Agent::Stub* stub, const v1::ExecRequest& request, absl::string_view where,
                  bool watch_signals) {
  constexpr absl::Duration kExecRetryFor = absl::Seconds(15);
  const absl::Time give_up = absl::Now() + kExecRetryFor;
  absl::Duration backoff = absl::Milliseconds(20);
  while (true) {
    grpc::ClientContext context;
    bool retryable = false;
    int code;
    if (watch_signals) {
      SignalWatcher watcher(&context);
      code = Relay(stub, &context, request, where, &watcher, &retryable);
      if (watcher.signal() != 0) return code;
    } else {
      code = Relay(stub, &context, request, where, nullptr, &retryable);
    }
    if (!retryable) return code;
    if (absl::Now() + backoff > give_up) {
      return Fail(absl::StrCat(where, ": Exec still refused after ",
                               absl::FormatDuration(kExecRetryFor),
                               " (the agent holds no token for the run, or is busy)"));
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(500));
  }
}

int RunShimImpl(const std::vector<std::string>& args, const ShimEnvironment& env,
                const ShimOptions& options, bool watch_signals) {
  absl::StatusOr<ShimCommand> parsed = ParseShimArgs(args);
  if (!parsed.ok()) return Fail(parsed.status().message());
  auto it = env.host_map.find(parsed->host);
  if (it == env.host_map.end()) {
    return Fail(
        absl::StrCat("unknown host alias \"", parsed->host, "\" (not in ", kHostMapEnv, ")"));
  }
  const std::string where =
      absl::StrCat("host ", parsed->host, " (agent ", it->second, ", ", env.run, ")");
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      options.credentials != nullptr ? options.credentials : grpc::InsecureChannelCredentials();
  std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(it->second, credentials);
  if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + options.connect_timeout))) {
    return Fail(absl::StrCat("cannot reach the agent for ", where, " within ",
                             absl::FormatDuration(options.connect_timeout)));
  }
  std::unique_ptr<v1::Agent::Stub> stub = v1::Agent::NewStub(channel);
  absl::StatusOr<std::vector<std::string>> argv = SplitShellWords(StripProfileWrapper(parsed->command));
  if (!argv.ok()) return Fail(absl::StrCat(where, ": ", argv.status().message()));
  if (argv->empty()) return Fail(absl::StrCat(where, ": empty remote command"));
  const v1::ExecRequest request = BuildRequest(env, *std::move(argv));
  return ExecWithRetry(stub.get(), request, where, watch_signals);
}

}  // namespace

absl::StatusOr<ShimCommand> ParseShimArgs(const std::vector<std::string>& args) {
  size_t index = 0;
  bool options_open = SkipOptions(args, &index);
  if (index >= args.size()) {
    return absl::InvalidArgumentError(
        "no host given (usage: launch-shim [ssh options] HOST COMMAND...)");
  }
  ShimCommand result;
  result.host = args[index++];
  const size_t at = result.host.rfind('@');
  if (at != std::string::npos) result.host.erase(0, at + 1);
  if (options_open && index < args.size()) SkipOptions(args, &index);
  if (index >= args.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no command for host ", result.host, " (a login shell is not supported)"));
  }
  std::vector<std::string> words(args.begin() + index, args.end());
  result.command = absl::StrJoin(words, " ");
  return result;
}

absl::StatusOr<std::map<std::string, std::string>> ParseHostMap(absl::string_view text) {
  std::map<std::string, std::string> host_map;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(entry, absl::MaxSplits('=', 1));
    const absl::string_view alias = absl::StripAsciiWhitespace(parts.first);
    const absl::string_view address = absl::StripAsciiWhitespace(parts.second);
    if (!absl::StrContains(entry, '=') || alias.empty() || address.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("host map entry \"", entry, "\" is not alias=host:port"));
    }
    if (!host_map.emplace(std::string(alias), std::string(address)).second) {
      return absl::InvalidArgumentError(absl::StrCat("host map names alias \"", alias, "\" twice"));
    }
  }
  return host_map;
}

std::string FormatHostMap(const std::map<std::string, std::string>& host_map) {
  return absl::StrJoin(host_map, ",", absl::PairFormatter("="));
}

absl::StatusOr<ShimEnvironment> ReadShimEnvironment() {
  ShimEnvironment env;
  const char* run = std::getenv(kRunEnv);
  const char* token_file = std::getenv(kRunTokenFileEnv);
  const char* host_map = std::getenv(kHostMapEnv);
  for (auto [name, value] : {std::pair{kRunEnv, run}, std::pair{kRunTokenFileEnv, token_file},
                             std::pair{kHostMapEnv, host_map}}) {
    if (value == nullptr || *value == '\0') {
      return absl::FailedPreconditionError(
          absl::StrCat(name, " is not set (the launcher sets it for mpirun / mpiexec)"));
    }
  }
  env.run = run;
  absl::StatusOr<std::string> token = ReadTokenFile(token_file);
  if (!token.ok()) return token.status();
  env.token = *std::move(token);
  absl::StatusOr<std::map<std::string, std::string>> parsed = ParseHostMap(host_map);
  if (!parsed.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(kHostMapEnv, ": ", parsed.status().message()));
  }
  env.host_map = *std::move(parsed);
  return env;
}

int RunShim(const std::vector<std::string>& args, const ShimEnvironment& env,
            const ShimOptions& options) {
  return RunShimImpl(args, env, options, /*watch_signals=*/false);
}

int RunLaunchShim(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  absl::StatusOr<ShimEnvironment> env = ReadShimEnvironment();
  if (!env.ok()) return Fail(env.status().message());
  // Blocked before gRPC starts any thread, so only the watcher takes them;
  // restored for callers that go on (tests).
  const sigset_t teardown = TeardownSignals();
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &teardown, &previous);
  // Agent TLS settings come from file paths the launcher passes down.
  absl::StatusOr<ShimOptions> options = ShimOptionsFromEnv();
  if (!options.ok()) return Fail(options.status().message());
  const int exit_code = RunShimImpl(args, *env, *options, /*watch_signals=*/true);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return exit_code;
}

int LaunchShimMain(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "launch-shim") == 0) {
    return RunLaunchShim(argc - 1, argv + 1);
  }
  if (argc >= 1) {
    const absl::string_view self = argv[0];
    const size_t slash = self.rfind('/');
    if (self.substr(slash == absl::string_view::npos ? 0 : slash + 1) == kShimLinkName) {
      return RunLaunchShim(argc, argv);
    }
  }
  return -1;
}

}  // namespace collbench
