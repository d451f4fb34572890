// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/launcher.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/convert.h"
#include "common/records.h"
#include "flavors/registry.h"
#include "worker/agent/launch_shim.h"
#include "worker/agent/line_buffer.h"
#include "engine_spec/job_checks.h"
#include "engine_spec/options.h"

namespace collbench {

struct Launcher::RunState {
  v1::Assignment assignment;
  std::unique_ptr<Process> process;
  std::string run_dir;  // private: token file, shim link; removed at the end
  LineBuffer stdout_lines, stderr_lines;
  bool cut_logged = false;
  std::string spool_error;  // a result the spool refused
  std::deque<std::string> last_stderr;  // for the failure message
  // The launch shim's own first complaint (a peer that refused or could not
  // be reached): the failure's cause, which MPI's help text that follows
  // would otherwise push out of last_stderr.
  std::string shim_error;
  std::string engine_error;             // from an "error" record
  std::string cancel_reason;            // set by Cancel()
  int sizes_total = 0;
  bool started = false;  // RUNNING reported
  std::optional<EndRecord> end;  // the engine's end record, once written
  absl::Time end_at;             // when it arrived
  bool finalize_killed = false;  // ended for hanging after its end record
};

namespace {

constexpr size_t kStderrLinesKept = 5;
constexpr size_t kShimErrorKeptBytes = 1000;

// Size records the engine will report, for progress until its start record
// announces the total: sizes x (dtype, redop) combinations.
int CountSizes(const v1::RunSpec& spec) {
  absl::StatusOr<EngineOptions> options = ParseEngineArgs(EngineArgs(spec));
  return options.ok() ? static_cast<int>(PlannedSizeRecords(*options)) : 0;
}

// A private directory for the run under `work_dir`, holding the token file.
absl::StatusOr<std::string> MakeRunDir(const std::string& work_dir, const std::string& token) {
  std::string dir = absl::StrCat(work_dir, "/run-XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("cannot make a run directory under ", work_dir));
  }
  chmod(dir.c_str(), 0700);
  const std::string file = dir + "/token";
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && write(fd, token.data(), token.size()) == static_cast<ssize_t>(token.size());
  if (fd >= 0) ok = close(fd) == 0 && ok;
  if (!ok) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    return absl::InternalError(absl::StrCat("cannot write the run's token file in ", dir));
  }
  return dir;
}

void RemoveRunDir(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace

Launcher::Launcher(ProcessRunner* runner, ResultSpool* spool, ReportSink* sink,
                   LauncherOptions options)
    : runner_(runner), spool_(spool), sink_(sink), options_(std::move(options)) {}

Launcher::~Launcher() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [run, state] : runs_) {
      state->cancel_reason = "the worker is shutting down";
      if (state->process) state->process->Kill(options_.kill_grace);
    }
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

absl::Status Launcher::Start(const v1::Assignment& assignment) {
  absl::MutexLock lock(&mu_);
  if (runs_.count(assignment.run())) {
    return absl::AlreadyExistsError(absl::StrCat(assignment.run(), " is already running here"));
  }
  LaunchPaths paths = options_.paths;
  absl::StatusOr<std::string> run_dir = MakeRunDir(options_.work_dir, assignment.token());
  if (!run_dir.ok()) return run_dir.status();
  auto cleanup_on_error = [&](absl::Status status) {
    RemoveRunDir(*run_dir);
    return status;
  };
  if (FlavorFor(assignment.spec().mpi()).needs_shim_link()) {
    paths.shim_link = absl::StrCat(*run_dir, "/", kShimLinkName);
    if (absl::Status s = MakeShimLink(paths.shim_link, paths.self); !s.ok()) {
      return cleanup_on_error(s);
    }
  }
  const LaunchEnvironment environment{options_.base_env, absl::StrCat(*run_dir, "/token")};
  absl::StatusOr<LaunchCommand> command =
      BuildLaunchCommand(assignment, options_.self_worker, paths, environment);
  if (!command.ok()) return cleanup_on_error(command.status());
  auto state = std::make_shared<RunState>();
  state->assignment = assignment;
  state->run_dir = *run_dir;
  state->sizes_total = CountSizes(assignment.spec());
  ProcessOptions process_options;
  process_options.argv = std::move(command->argv);
  process_options.env = std::move(command->env);
  absl::StatusOr<std::unique_ptr<Process>> process = runner_->Start(process_options);
  if (!process.ok()) return cleanup_on_error(process.status());
  state->process = *std::move(process);
  runs_[assignment.run()] = state;
  threads_.emplace_back([this, state] { Drive(state); });
  return absl::OkStatus();
}

void Launcher::Cancel(const std::string& run, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run);
  if (it == runs_.end()) return;
  it->second->cancel_reason = reason;
  it->second->process->Kill(options_.kill_grace);
}

std::vector<std::string> Launcher::Active() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [run, state] : runs_) out.push_back(run);
  return out;
}

void Launcher::Report(RunState& state, v1::RunState run_state, const std::string& error) {
  v1::RunStatus status;
  status.set_state(run_state);
  status.set_error(error);
  status.set_sizes_total(state.sizes_total);
  v1::WorkerMessage message;
  *message.mutable_run_status() = spool_->SetStatus(state.assignment.run(), status);
  sink_->Send(message);
}

void Launcher::HandleLine(RunState& state, const std::string& line) {
  const std::string& run = state.assignment.run();
  absl::StatusOr<Record> record = ParseJsonLine(line);
  if (!record.ok()) {  // not the engine's: pass it on as output
    v1::WorkerMessage message;
    message.mutable_log()->set_run(run);
    message.mutable_log()->mutable_line()->set_stream("stdout");
    message.mutable_log()->mutable_line()->set_text(line);
    sink_->Send(message);
    return;
  }
  if (const auto* start = std::get_if<StartRecord>(&*record)) {
    if (start->sizes_total > 0) state.sizes_total = static_cast<int>(start->sizes_total);
    v1::RunStatus status;
    status.set_state(v1::RUNNING);
    status.set_sizes_total(state.sizes_total);
    status.set_mpi_version(start->mpi_version);
    status.set_nccl_version(start->nccl_version);
    status.set_environment_fingerprint(start->fingerprint);
    for (const std::string& host : start->hosts) status.add_rank_hosts(host);
    v1::WorkerMessage message;
    *message.mutable_run_status() = spool_->SetStatus(run, status);
    sink_->Send(message);
    state.started = true;
  } else if (const auto* size = std::get_if<SizeRecord>(&*record)) {
    absl::StatusOr<v1::RunResult> result = spool_->AddResult(run, SizeResultFromRecord(*size));
    if (!result.ok()) {  // the coordinator is not acknowledging: stop the run
      if (state.spool_error.empty()) {
        state.spool_error = std::string(result.status().message());
        state.process->Kill(options_.kill_grace);
      }
      return;
    }
    v1::WorkerMessage message;
    *message.mutable_result() = *std::move(result);
    sink_->Send(message);
  } else if (const auto* error = std::get_if<ErrorRecord>(&*record)) {
    state.engine_error = error->message;
  } else if (const auto* end = std::get_if<EndRecord>(&*record)) {
    state.end = *end;
    state.end_at = absl::Now();
  }
}

void Launcher::EndIfStuckInFinalize(RunState& state) {
  if (!state.end.has_value() || state.finalize_killed ||
      absl::Now() - state.end_at < options_.finalize_grace) {
    return;
  }
  state.finalize_killed = true;
  v1::WorkerMessage message;
  message.mutable_log()->set_run(state.assignment.run());
  message.mutable_log()->mutable_line()->set_stream("stderr");
  message.mutable_log()->mutable_line()->set_text(absl::StrCat(
      "collbench-worker: the engine wrote its end record ",
      absl::FormatDuration(options_.finalize_grace),
      " ago and the MPI launcher has not exited (stuck in MPI_Finalize); ending its processes"));
  sink_->Send(message);
  state.process->Kill(options_.kill_grace);
}

void Launcher::Log(RunState& state, const std::string& stream, const std::string& text) {
  v1::WorkerMessage message;
  message.mutable_log()->set_run(state.assignment.run());
  message.mutable_log()->mutable_line()->set_stream(stream);
  message.mutable_log()->mutable_line()->set_text(text);
  sink_->Send(message);
}

void Launcher::HandleOutput(RunState& state, const ProcessEvent& event) {
  if (event.kind == ProcessEvent::Kind::kStdout) {
    for (const std::string& line : state.stdout_lines.Add(event.data)) HandleLine(state, line);
  } else {
    for (const std::string& line : state.stderr_lines.Add(event.data)) {
      if (state.shim_error.empty() && absl::StartsWith(line, kShimErrorPrefix)) {
        state.shim_error = line.substr(0, kShimErrorKeptBytes);
      }
      state.last_stderr.push_back(line);
      if (state.last_stderr.size() > kStderrLinesKept) state.last_stderr.pop_front();
      Log(state, "stderr", line);
    }
  }
  if (!state.cut_logged && state.stdout_lines.cut_lines() + state.stderr_lines.cut_lines() > 0) {
    state.cut_logged = true;
    Log(state, "stderr",
        absl::StrCat("collbench-worker: an output line longer than ",
                     LineBuffer::kDefaultMaxLineBytes, " bytes was cut (later cuts are not logged)"));
  }
}

void Launcher::Drive(std::shared_ptr<RunState> state) {
  RunState& s = *state;
  const std::string run = s.assignment.run();
  Report(s, v1::SCHEDULED, "");
  int exit_code = -1;
  while (true) {
    absl::StatusOr<ProcessEvent> event = s.process->Next(absl::Seconds(1));
    if (!event.ok()) {
      s.engine_error = std::string(event.status().message());
      break;
    }
    EndIfStuckInFinalize(s);
    if (event->kind == ProcessEvent::Kind::kStdout ||
        event->kind == ProcessEvent::Kind::kStderr) {
      HandleOutput(s, *event);
    } else if (event->kind == ProcessEvent::Kind::kExit) {
      exit_code = event->exit_code;
      break;
    }
  }
  std::string cancel_reason;
  {
    absl::MutexLock lock(&mu_);
    cancel_reason = s.cancel_reason;
  }
  RemoveRunDir(s.run_dir);
  if (!s.spool_error.empty()) {
    Report(s, v1::FAILED, s.spool_error);
  } else if (!cancel_reason.empty()) {
    Report(s, v1::CANCELLED, cancel_reason);
  } else if (exit_code == 0 || (s.finalize_killed && s.end->status == "ok")) {
    Report(s, v1::SUCCEEDED, "");
  } else if (s.finalize_killed) {
    Report(s, v1::FAILED, absl::StrCat("the engine ended with status ", s.end->status,
                                       s.engine_error.empty() ? "" : ": ", s.engine_error));
  } else {
    std::string why = !s.engine_error.empty() ? s.engine_error
                      : !s.last_stderr.empty() ? absl::StrJoin(s.last_stderr, " | ")
                                               : "";
    if (!s.shim_error.empty() && why.find(s.shim_error) == std::string::npos) {
      why = why.empty() ? s.shim_error : absl::StrCat(s.shim_error, " | ", why);
    }
    // The library names hosts by the aliases this launcher gave them
    // ("node w1"): say which worker each is.
    for (const v1::Peer& peer : s.assignment.peers()) {
      if (peer.host_alias().empty()) continue;
      why = absl::StrReplaceAll(
          why, {{absl::StrCat("node ", peer.host_alias(), " "),
                 absl::StrCat("node ", peer.host_alias(), " (", peer.worker(), ") ")}});
    }
    Report(s, v1::FAILED, absl::StrCat("the MPI launcher exited with code ", exit_code,
                                       why.empty() ? "" : ": ", why));
  }
  absl::MutexLock lock(&mu_);
  runs_.erase(run);
}

}  // namespace collbench
