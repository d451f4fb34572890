// SPDX-License-Identifier: Apache-2.0
// The run lifecycle without gRPC: an in-memory store, a fake link that
// records what workers would be sent, and simulated time.
#include "server/core/run_manager.h"

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "api/convert.h"
#include "common/secrets.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/core.h"
#include "server/store/forwarding_store.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class FakeLink final : public WorkerLink {
 public:
  bool Send(const std::string& worker, const v1::CoordinatorMessage& message) override {
    if (offline.count(worker)) return false;
    sent[worker].push_back(message);
    return true;
  }
  std::vector<v1::CoordinatorMessage> Take(const std::string& worker) {
    auto out = std::move(sent[worker]);
    sent[worker].clear();
    return out;
  }
  std::map<std::string, std::vector<v1::CoordinatorMessage>> sent;
  std::set<std::string> offline;
};

// The in-memory store, counting how worker rows are written: a fleet's
// state change must not cost one store transaction (one fsync on SQLite)
// per worker. While `full`, run writes fail as the SQLite store's do on a
// full disk.
class CountingStore final : public ForwardingStore {
 public:
  CountingStore() : ForwardingStore(NewMemoryStore()) {}

  absl::StatusOr<std::vector<WriteResult>> Commit(const std::vector<Write>& writes) override {
    bool results = false, workers = false, runs = false;
    for (const Write& w : writes) {
      results |= std::holds_alternative<AddResultsWrite>(w);
      workers |= std::holds_alternative<UpsertWorkersWrite>(w);
      runs |= std::holds_alternative<CreateRunWrite>(w) ||
              std::holds_alternative<UpdateRunWrite>(w) ||
              std::holds_alternative<SetWorkerSecretHashWrite>(w);
    }
    if (results) {
      absl::MutexLock lock(&gate_mu_);
      ++held_;
      gate_mu_.Await(absl::Condition(
          +[](bool* closed) { return !*closed; }, &closed_));
      --held_;
    }
    result_writes += results;
    worker_writes += workers;
    if ((results && results_fail) || (runs && full)) return Full();
    return ForwardingStore::Commit(writes);
  }

  // While closed, a transaction with results waits (the journal's batch is
  // held) until opened again.
  void CloseResults() {
    absl::MutexLock lock(&gate_mu_);
    closed_ = true;
  }
  void OpenResults() {
    absl::MutexLock lock(&gate_mu_);
    closed_ = false;
  }
  // Returns once a batch is held at the closed gate.
  void AwaitHeldBatch() {
    absl::MutexLock lock(&gate_mu_);
    gate_mu_.Await(absl::Condition(+[](int* held) { return *held > 0; }, &held_));
  }

  std::atomic<int> worker_writes = 0;  // transactions that wrote worker rows
  std::atomic<bool> full = false;
  std::atomic<int> result_writes = 0;       // transactions with results
  std::atomic<bool> results_fail = false;   // results fail as on a full disk

 private:
  static absl::Status Full() {
    return absl::ResourceExhaustedError("store test.db is full: no space left on its file system");
  }
  absl::Mutex gate_mu_;
  bool closed_ ABSL_GUARDED_BY(gate_mu_) = false;
  int held_ ABSL_GUARDED_BY(gate_mu_) = 0;
};

// An observer of the hub that keeps the names of deleted runs.
class DeletedRunsRecorder final : public RunEventSink {
 public:
  void OnEvent(const v1::RunEvent&) override {}
  void OnEnd() override {}
  void OnRunsDeleted(const std::vector<std::string>& runs) override {
    absl::MutexLock lock(&mu_);
    deleted_.insert(deleted_.end(), runs.begin(), runs.end());
  }
  std::vector<std::string> TakeDeleted() {
    absl::MutexLock lock(&mu_);
    return std::exchange(deleted_, {});
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> deleted_ ABSL_GUARDED_BY(mu_);
};

class RunManagerTest : public ::testing::Test {
 protected:
  void SetUp() override { Restart(); }

  // A new core over the same store: what a coordinator restart leaves.
  void Restart(CoreOptions options = {}) {
    core_.reset();
    core_ = std::make_unique<Core>(store_.get(), &hub_, &link_, std::move(options));
    manager_ = &core_->runs();
    fleet_ = &core_->fleet();
    ASSERT_TRUE(core_->Recover(now_).ok());
  }

  // No store call was made under a lock requests wait on.
  void TearDown() override { EXPECT_EQ(BlockingUnderLockCount(), 0); }

  uint64_t Register(const std::string& id, const std::string& host, int slots = 2,
                    std::vector<std::string> active = {},
                    const v1::ContainerFacts& container = {},
                    const std::map<std::string, std::string>& labels = {}) {
    v1::Register hello;
    *hello.mutable_inventory()->mutable_container() = container;
    hello.mutable_inventory()->mutable_labels()->insert(labels.begin(), labels.end());
    hello.set_worker_id(id);
    hello.set_slots(slots);
    hello.set_agent_address(id + ":7000");
    hello.mutable_inventory()->set_host_id(host);
    hello.mutable_inventory()->set_hostname(id);
    hello.mutable_inventory()->set_memory_bytes(uint64_t{8} << 30);
    for (const auto& run : active) hello.add_active_runs(run);
    // A worker presents the secret its name was issued, as collbench-worker
    // does from its state file.
    hello.set_worker_secret(secrets_[id]);
    auto registration = fleet_->OnRegister(hello, now_);
    EXPECT_TRUE(registration.ok()) << registration.status();
    if (registration.ok() && !registration->reply.worker_secret().empty()) {
      secrets_[id] = registration->reply.worker_secret();
    }
    return registration.ok() ? registration->session : 0;
  }

  v1::RunSpec Spec(int ranks, v1::PlacementPolicy policy = v1::PACK) {
    v1::RunSpec spec;
    spec.set_operation("allreduce");
    spec.set_ranks(ranks);
    spec.mutable_placement()->set_policy(policy);
    spec.add_sizes_bytes(8);
    spec.add_sizes_bytes(1024);
    return spec;
  }

  v1::Run Create(const v1::RunSpec& spec, const std::string& request_id = "") {
    auto run = manager_->CreateRun(spec, request_id, now_);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : v1::Run();
  }

  // The run as stored once every change so far is.
  v1::Run Get(const std::string& name) {
    manager_->FlushJournal();
    return *manager_->GetRun(name);
  }

  // The assignment the launcher received, if any.
  std::optional<v1::Assignment> AssignmentFor(const std::string& worker) {
    for (const auto& m : link_.Take(worker)) {
      if (m.has_assignment()) return m.assignment();
    }
    return std::nullopt;
  }

  void Status(const std::string& worker, const std::string& run, v1::RunState state,
              int64_t results_total = 0, const std::string& error = "") {
    v1::RunStatus status;
    status.set_run(run);
    status.set_state(state);
    status.set_results_total(results_total);
    status.set_sizes_total(2);
    status.set_error(error);
    manager_->OnRunStatus(worker, status, now_);
  }

  void Result(const std::string& worker, const std::string& run, int64_t sequence,
              uint64_t wrong = 0) {
    v1::RunResult result;
    result.set_run(run);
    result.mutable_result()->set_sequence(sequence);
    result.mutable_result()->set_bytes(8 << sequence);
    result.mutable_result()->set_wrong(wrong);
    manager_->OnResult(worker, result, now_);
    manager_->FlushJournal();  // stored and acknowledged before the test looks
  }

  // The sequences acknowledged to `worker` since the last Take.
  std::vector<int64_t> AckedSequences(const std::string& worker) {
    std::vector<int64_t> acked;
    for (const auto& m : link_.Take(worker)) {
      if (m.has_ack()) acked.push_back(m.ack().sequence());
    }
    return acked;
  }

  std::unique_ptr<CountingStore> store_ = std::make_unique<CountingStore>();
  WatchHub hub_;
  FakeLink link_;
  std::unique_ptr<Core> core_;
  RunManager* manager_ = nullptr;
  Fleet* fleet_ = nullptr;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  std::map<std::string, std::string> secrets_;  // worker id -> its secret
};

// A result is acknowledged only once its write is durable: a write that
// fails acknowledges nothing and counts nothing, and the launcher's
// re-send is stored and acknowledged.
TEST_F(RunManagerTest, ResultIsAcknowledgedOnlyOnceStored) {
  Register("a", "host-a");
  const v1::Run created = Create(Spec(2));
  Status("workers/a", created.name(), v1::RUNNING);
  link_.Take("workers/a");
  store_->results_fail = true;
  Result("workers/a", created.name(), 0);
  int acks = 0;
  for (const auto& m : link_.Take("workers/a")) acks += m.has_ack();
  EXPECT_EQ(acks, 0);
  EXPECT_TRUE(manager_->GetResults(created.name())->empty());
  EXPECT_EQ(Get(created.name()).sizes_done(), 0);
  store_->results_fail = false;
  Result("workers/a", created.name(), 0);
  EXPECT_EQ(AckedSequences("workers/a"), std::vector<int64_t>{0});
  EXPECT_EQ(Get(created.name()).sizes_done(), 1);
}

// A re-send of a result already stored is acknowledged without a write.
TEST_F(RunManagerTest, ResultStoredBeforeIsAcknowledgedWithoutAWrite) {
  Register("a", "host-a");
  const v1::Run created = Create(Spec(2));
  Status("workers/a", created.name(), v1::RUNNING);
  Result("workers/a", created.name(), 0);
  const int writes = store_->result_writes;
  link_.Take("workers/a");
  Result("workers/a", created.name(), 0);
  EXPECT_EQ(store_->result_writes, writes);
  EXPECT_EQ(AckedSequences("workers/a"), std::vector<int64_t>{0});
  EXPECT_EQ(Get(created.name()).sizes_done(), 1);
}

// What a run's ranks use for transport is stored with it once scheduled:
// the spec's when it names one; for AUTO, what the placement leaves the
// MPI library (one worker: shared memory; workers apart with no RDMA
// device: TCP), or AUTO where that cannot be known.
TEST_F(RunManagerTest, EffectiveTransportIsResolvedFromThePlacement) {
  Register("a", "host-a");
  Register("b", "host-b");
  const v1::Run packed = Create(Spec(2, v1::PACK));
  EXPECT_EQ(Get(packed.name()).effective_transport(), v1::SHM);
  EXPECT_EQ(Get(packed.name()).spec().transport(), v1::AUTO);  // the ask is kept
  Status(Get(packed.name()).launcher(), packed.name(), v1::SUCCEEDED, 0);

  v1::RunSpec spread = Spec(2, v1::SPREAD);
  const v1::Run apart = Create(spread);
  ASSERT_EQ(Get(apart.name()).state(), v1::SCHEDULED);
  EXPECT_EQ(Get(apart.name()).effective_transport(), v1::TCP);
  EXPECT_EQ(EffectiveTransport(Get(apart.name())), v1::TCP);
  Status(Get(apart.name()).launcher(), apart.name(), v1::SUCCEEDED, 0);

  v1::RunSpec nccl = Spec(2, v1::PACK);
  nccl.set_transport(v1::TCP);
  const v1::Run asked = Create(nccl);
  EXPECT_EQ(Get(asked.name()).effective_transport(), v1::TCP);
  Status(Get(asked.name()).launcher(), asked.name(), v1::SUCCEEDED, 0);

  // A worker with an RDMA device: the library may use it, so AUTO stays.
  v1::Register hello;
  hello.set_worker_id("c");
  hello.set_slots(2);
  hello.set_agent_address("c:7000");
  hello.mutable_inventory()->set_host_id("host-c");
  hello.mutable_inventory()->set_hostname("c");
  hello.mutable_inventory()->set_memory_bytes(uint64_t{8} << 30);
  hello.mutable_inventory()->add_rdma_devices("mlx5_0");
  ASSERT_TRUE(fleet_->OnRegister(hello, now_).ok());
  v1::RunSpec with_rdma = Spec(2, v1::EXPLICIT);
  with_rdma.mutable_placement()->add_workers("workers/a");
  with_rdma.mutable_placement()->add_workers("workers/c");
  with_rdma.mutable_placement()->set_ranks_per_worker(1);
  const v1::Run rdma = Create(with_rdma);
  ASSERT_EQ(Get(rdma.name()).state(), v1::SCHEDULED);
  EXPECT_EQ(Get(rdma.name()).effective_transport(), v1::AUTO);
}

TEST_F(RunManagerTest, RunGoesThroughItsLifecycle) {
  Register("a", "host-a");
  const v1::Run created = Create(Spec(2));
  EXPECT_EQ(created.state(), v1::SCHEDULED);
  EXPECT_EQ(created.launcher(), "workers/a");
  auto assignment = AssignmentFor("workers/a");
  ASSERT_TRUE(assignment.has_value());
  EXPECT_EQ(assignment->peers_size(), 1);
  EXPECT_EQ(assignment->peers(0).slots(), 2);
  EXPECT_FALSE(assignment->token().empty());

  Status("workers/a", created.name(), v1::RUNNING);
  EXPECT_EQ(Get(created.name()).state(), v1::RUNNING);
  Result("workers/a", created.name(), 0);
  Result("workers/a", created.name(), 0);  // a re-send after a reconnect
  Result("workers/a", created.name(), 1);
  Status("workers/a", created.name(), v1::SUCCEEDED, 2);
  const v1::Run done = Get(created.name());
  EXPECT_EQ(done.state(), v1::SUCCEEDED);
  EXPECT_EQ(done.sizes_done(), 2);
  EXPECT_EQ(manager_->GetResults(created.name())->size(), 2u);
  // Every result was acknowledged.
  int acks = 0;
  for (const auto& m : link_.Take("workers/a")) acks += m.has_ack();
  EXPECT_EQ(acks, 3);
}

TEST_F(RunManagerTest, FinishWaitsForResultsStillOnTheirWay) {
  Register("a", "host-a");
  const v1::Run run = Create(Spec(2));
  Status("workers/a", run.name(), v1::RUNNING);
  Result("workers/a", run.name(), 0);
  Status("workers/a", run.name(), v1::SUCCEEDED, 2);
  EXPECT_EQ(Get(run.name()).state(), v1::RUNNING);
  Result("workers/a", run.name(), 1);
  EXPECT_EQ(Get(run.name()).state(), v1::SUCCEEDED);
}

// After a reconnect the launcher's re-sends and its new results interleave:
// a result can arrive before an earlier one.
TEST_F(RunManagerTest, ResultsOutOfOrderStillFinishTheRun) {
  Register("a", "host-a");
  const v1::Run run = Create(Spec(2));
  Status("workers/a", run.name(), v1::RUNNING);
  Result("workers/a", run.name(), 1);
  Result("workers/a", run.name(), 0);
  Status("workers/a", run.name(), v1::SUCCEEDED, 2);
  EXPECT_EQ(Get(run.name()).state(), v1::SUCCEEDED);
  EXPECT_EQ(manager_->GetResults(run.name())->size(), 2u);
}

TEST_F(RunManagerTest, WrongElementsFailTheRun) {
  Register("a", "host-a");
  const v1::Run run = Create(Spec(2));
  Result("workers/a", run.name(), 0, /*wrong=*/3);
  Status("workers/a", run.name(), v1::SUCCEEDED, 1);
  EXPECT_EQ(Get(run.name()).state(), v1::FAILED);
  EXPECT_THAT(Get(run.name()).error(), HasSubstr("3 wrong elements"));
}

TEST_F(RunManagerTest, SecondRunWaitsWhileTheFirstHoldsTheWorkers) {
  Register("a", "host-a");
  Register("b", "host-b");
  const v1::Run first = Create(Spec(2, v1::SPREAD));
  const v1::Run second = Create(Spec(2, v1::SPREAD));
  EXPECT_EQ(first.state(), v1::SCHEDULED);
  EXPECT_EQ(second.state(), v1::QUEUED);
  EXPECT_EQ(manager_->queued_count(), 1);
  Status(first.launcher(), first.name(), v1::SUCCEEDED, 0);
  EXPECT_EQ(Get(first.name()).state(), v1::SUCCEEDED);
  EXPECT_EQ(Get(second.name()).state(), v1::SCHEDULED);
}

// What the registered workers can never run is refused at create time,
// naming the field, and nothing is queued: a named worker that is not
// registered, a backend or MPI implementation no worker offers.
TEST_F(RunManagerTest, WhatNoWorkerCanRunIsRefusedAtCreate) {
  v1::Register hello;
  hello.set_worker_id("a");
  hello.set_slots(2);
  hello.set_agent_address("a:7000");
  hello.mutable_inventory()->set_host_id("host-a");
  hello.mutable_inventory()->add_backends("mpi");
  hello.mutable_inventory()->add_mpi_implementations("openmpi");
  ASSERT_TRUE(fleet_->OnRegister(hello, now_).ok());

  v1::RunSpec named = Spec(2, v1::EXPLICIT);
  named.mutable_placement()->add_workers("nodeX");
  named.mutable_placement()->add_workers("nodeY");
  named.mutable_placement()->set_ranks_per_worker(1);
  absl::StatusOr<v1::Run> refused = manager_->CreateRun(named, "", now_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "spec.placement.workers: worker \"nodeX\" is not registered");

  v1::RunSpec nccl = Spec(2);
  nccl.set_backend("nccl");
  refused = manager_->CreateRun(nccl, "", now_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "spec.backend: no registered worker offers \"nccl\" (they offer mpi)");

  v1::RunSpec mpich = Spec(2);
  mpich.set_mpi(v1::MPICH);
  refused = manager_->CreateRun(mpich, "", now_);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), StartsWith("spec.mpi: "));

  EXPECT_EQ(manager_->queued_count(), 0);
  absl::StatusOr<Store::RunPage> page = manager_->ListRuns(10, "", v1::RUN_STATE_UNSPECIFIED);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->runs.empty()) << "nothing may be stored";
  EXPECT_EQ(Create(Spec(2)).state(), v1::SCHEDULED);  // what it offers runs
}

// A queued run says why it waits, in CreateRun's answer, GetRun and
// ListRuns, and stops saying it once it starts.
TEST_F(RunManagerTest, AQueuedRunSaysWhyItWaits) {
  Register("a", "host-a");
  Register("b", "host-b");
  ASSERT_TRUE(fleet_->DrainWorker("b").ok());
  v1::RunSpec spec = Spec(2, v1::EXPLICIT);
  spec.mutable_placement()->add_workers("a");
  spec.mutable_placement()->add_workers("b");
  spec.mutable_placement()->set_ranks_per_worker(1);
  const v1::Run queued = Create(spec);
  EXPECT_EQ(queued.state(), v1::QUEUED);
  EXPECT_EQ(queued.waiting_reason(), "waiting for workers/b (draining)");
  EXPECT_EQ(Get(queued.name()).waiting_reason(), "waiting for workers/b (draining)");
  absl::StatusOr<Store::RunPage> page = manager_->ListRuns(10, "", v1::QUEUED);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->runs.size(), 1u);
  EXPECT_EQ(page->runs[0].waiting_reason(), "waiting for workers/b (draining)");
  ASSERT_TRUE(manager_->CancelRun(queued.name(), now_).ok());
  EXPECT_EQ(Get(queued.name()).waiting_reason(), "");

  // Held by a running run, then started once it ends.
  v1::RunSpec on_a = Spec(1, v1::EXPLICIT);
  on_a.mutable_placement()->add_workers("a");
  on_a.mutable_placement()->set_ranks_per_worker(1);
  const v1::Run holder = Create(on_a);
  ASSERT_EQ(holder.state(), v1::SCHEDULED);
  const v1::Run second = Create(on_a);
  EXPECT_EQ(second.waiting_reason(),
            absl::StrCat("waiting for ", holder.name(), " to release workers"));
  Status(holder.launcher(), holder.name(), v1::SUCCEEDED, 0);
  const v1::Run started = Get(second.name());
  EXPECT_EQ(started.state(), v1::SCHEDULED);
  EXPECT_EQ(started.waiting_reason(), "");
}

TEST_F(RunManagerTest, SpreadTellsPeersTheTokenBeforeTheLauncherStarts) {
  Register("a", "host-a");
  Register("b", "host-b");
  const v1::Run run = Create(Spec(2, v1::SPREAD));
  const std::string peer = run.launcher() == "workers/a" ? "workers/b" : "workers/a";
  auto peer_messages = link_.Take(peer);
  ASSERT_EQ(peer_messages.size(), 1u);
  ASSERT_TRUE(peer_messages[0].has_run_token());
  auto assignment = AssignmentFor(run.launcher());
  ASSERT_TRUE(assignment.has_value());
  // The peer can check the launcher's token, not present it.
  EXPECT_EQ(peer_messages[0].run_token().token_sha256(), TokenDigest(assignment->token()));
  EXPECT_NE(peer_messages[0].run_token().token_sha256(), assignment->token());
  EXPECT_EQ(assignment->peers(1).agent_address(), peer.substr(8) + ":7000");
}

// --- The trusted launcher (docs/design/security.md#the-launcher) -----------

// A launcher registered with the pool, as collbench-launcher does.
uint64_t RegisterLauncherOn(Fleet* fleet, const std::string& id, absl::Time now,
                            const std::string& token = "") {
  v1::Register hello;
  hello.set_worker_id(id);
  hello.set_launcher(true);
  hello.set_join_token(token);
  auto registration = fleet->OnRegister(hello, now);
  EXPECT_TRUE(registration.ok()) << registration.status();
  return registration.ok() ? registration->session : 0;
}

// A run across workers is started by the launcher: no worker of it gets
// the assignment or the token, every one of them gets only its digest, and
// rank 0's worker is reached through the shim like the others.
TEST_F(RunManagerTest, LauncherStartsRunsAcrossWorkersAndNoWorkerHoldsTheToken) {
  // Named to sort first: SPREAD's order would once have made it the launcher.
  Register("0000-evil", "host-0");
  Register("a", "host-a");
  RegisterLauncherOn(fleet_, "l1", now_);
  link_.sent.clear();
  const v1::Run run = Create(Spec(2, v1::SPREAD));
  ASSERT_EQ(run.state(), v1::SCHEDULED) << run.error() << run.waiting_reason();
  EXPECT_EQ(run.launcher(), "launchers/l1");
  std::optional<v1::Assignment> assignment = AssignmentFor("launchers/l1");
  ASSERT_TRUE(assignment.has_value());
  ASSERT_EQ(assignment->peers_size(), 2);
  for (const v1::Peer& peer : assignment->peers()) EXPECT_NE(peer.host_alias(), "localhost");
  for (const char* worker : {"workers/0000-evil", "workers/a"}) {
    const std::vector<v1::CoordinatorMessage> messages = link_.Take(worker);
    ASSERT_EQ(messages.size(), 1u) << worker;
    ASSERT_TRUE(messages[0].has_run_token()) << worker;
    EXPECT_TRUE(messages[0].run_token().token_sha256() == TokenDigest(assignment->token()));
  }
  // The launcher reports as the launcher; the run's workers are released at
  // the end, and the launcher told to drop it.
  Status("launchers/l1", run.name(), v1::SUCCEEDED, 0);
  EXPECT_EQ(Get(run.name()).state(), v1::SUCCEEDED);
  bool launcher_released = false;
  for (const auto& m : link_.Take("launchers/l1")) launcher_released |= m.has_release();
  EXPECT_TRUE(launcher_released);
}

// Placement follows the order in which the coordinator first admitted the
// names, kept across reconnects and a restart, never the names or host ids
// workers report: a worker named and hosted to sort first (so that SPREAD
// would put it in every run, at rank 0) comes last.
TEST_F(RunManagerTest, PlacementFollowsAdmissionNotTheNamesAndHostsWorkersReport) {
  Register("b", "host-b");
  now_ += absl::Seconds(1);
  Register("c", "host-c");
  now_ += absl::Seconds(1);
  Register("0000-evil", "000");
  RegisterLauncherOn(fleet_, "l1", now_);
  auto placed = [&](const v1::Run& created) {
    std::vector<std::string> workers;
    const v1::Run run = Get(created.name());
    for (const auto& host : run.hosts()) workers.push_back(host.worker());
    return workers;
  };
  const v1::Run first = Create(Spec(2, v1::SPREAD));
  EXPECT_THAT(placed(first), ::testing::ElementsAre("workers/b", "workers/c"));
  Status("launchers/l1", first.name(), v1::SUCCEEDED, 0);

  // A restarted coordinator, the workers back in the opposite order.
  Restart();
  now_ += absl::Minutes(1);
  for (const char* id : {"0000-evil", "c", "b"}) {
    Register(id, id == std::string("0000-evil") ? "000" : absl::StrCat("host-", id));
    now_ += absl::Seconds(1);
  }
  RegisterLauncherOn(fleet_, "l1", now_);
  const v1::Run again = Create(Spec(2, v1::SPREAD));
  EXPECT_THAT(placed(again), ::testing::ElementsAre("workers/b", "workers/c"));
  Status("launchers/l1", again.name(), v1::SUCCEEDED, 0);
  const v1::Run one = Create(Spec(1, v1::PACK));
  EXPECT_THAT(placed(one), ::testing::ElementsAre("workers/b"));

  // The order is listed: each name's first admission.
  std::map<std::string, absl::Time> admitted;
  for (const v1::Worker& w : fleet_->ListWorkers()) {
    admitted[w.name()] = TimeFromTimestamp(w.admit_time());
  }
  const absl::Time start = absl::FromUnixSeconds(1'800'000'000);
  EXPECT_EQ(admitted["workers/b"], start);
  EXPECT_EQ(admitted["workers/c"], start + absl::Seconds(1));
  EXPECT_EQ(admitted["workers/0000-evil"], start + absl::Seconds(2));
}

// A run on one worker starts there, launcher or not: nobody else is in it.
TEST_F(RunManagerTest, OneWorkerRunLaunchesOnItsWorker) {
  Register("a", "host-a");
  RegisterLauncherOn(fleet_, "l1", now_);
  const v1::Run run = Create(Spec(2, v1::PACK));
  ASSERT_EQ(run.state(), v1::SCHEDULED);
  EXPECT_EQ(run.launcher(), "workers/a");
  EXPECT_FALSE(AssignmentFor("launchers/l1").has_value());
}

// Without the fallback, a run across workers waits for a launcher, and one
// that connects starts it; one that goes away leaves the run its grace.
TEST_F(RunManagerTest, WithoutFallbackARunAcrossWorkersWaitsForALauncher) {
  CoreOptions options;
  options.runs.worker_launch_fallback = false;
  Restart(options);
  Register("a", "host-a");
  Register("b", "host-b");
  const v1::Run queued = Create(Spec(2, v1::SPREAD));
  EXPECT_EQ(queued.state(), v1::QUEUED);
  EXPECT_THAT(Get(queued.name()).waiting_reason(), StartsWith("waiting for a launcher"));
  EXPECT_FALSE(AssignmentFor("workers/a").has_value());
  EXPECT_FALSE(AssignmentFor("workers/b").has_value());
  const uint64_t session = RegisterLauncherOn(fleet_, "l1", now_);
  const v1::Run started = Get(queued.name());
  EXPECT_EQ(started.state(), v1::SCHEDULED);
  EXPECT_EQ(started.launcher(), "launchers/l1");
  // Lost, and not back within the grace: the run fails naming it.
  fleet_->OnDisconnect("launchers/l1", session, now_);
  now_ += absl::Seconds(21);
  manager_->Tick(now_);
  const v1::Run failed = Get(queued.name());
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_THAT(failed.error(), HasSubstr("launchers/l1"));
}

// The least busy launcher takes the next run; a worker token is not a
// launcher's.
TEST_F(RunManagerTest, LaunchersShareRunsAndNeedALauncherToken) {
  CoreOptions options;
  absl::StatusOr<Authorizer> tokens = Authorizer::FromText("worker w-token\nlauncher l-token\n");
  ASSERT_TRUE(tokens.ok());
  options.workers.tokens = *tokens;
  Restart(options);
  for (const char* id : {"a", "b", "c", "d"}) {
    v1::Register hello;
    hello.set_worker_id(id);
    hello.set_slots(1);
    hello.set_join_token("w-token");
    hello.set_agent_address(absl::StrCat(id, ":7000"));
    hello.mutable_inventory()->set_host_id(absl::StrCat("host-", id));
    ASSERT_TRUE(fleet_->OnRegister(hello, now_).ok());
  }
  v1::Register impostor;
  impostor.set_worker_id("l0");
  impostor.set_launcher(true);
  impostor.set_join_token("w-token");
  absl::StatusOr<WorkerDirectory::Registration> refused = fleet_->OnRegister(impostor, now_);
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("launcher"));
  RegisterLauncherOn(fleet_, "l1", now_, "l-token");
  RegisterLauncherOn(fleet_, "l2", now_, "l-token");
  // Counted beside the workers' registrations (the metric's result label).
  const std::map<std::string, int64_t> counted = fleet_->worker_counts().registrations;
  EXPECT_EQ(counted.at("launcher"), 2);
  EXPECT_EQ(counted.at("launcher_refused_token"), 1);
  EXPECT_EQ(counted.at("new"), 4);
  v1::RunSpec spec = Spec(2, v1::SPREAD);
  spec.mutable_placement()->set_share_host(true);
  const v1::Run first = Create(spec);
  const v1::Run second = Create(spec);
  ASSERT_EQ(first.state(), v1::SCHEDULED);
  ASSERT_EQ(second.state(), v1::SCHEDULED);
  EXPECT_EQ(first.launcher(), "launchers/l1");
  EXPECT_EQ(second.launcher(), "launchers/l2");
}

// Peers' Exec starts only the daemon of the run's library, so the token
// says which library that is.
TEST_F(RunManagerTest, RunTokenCarriesTheRunsMpiImplementation) {
  Register("a", "host-a");
  Register("b", "host-b");
  for (v1::MpiImplementation mpi : {v1::OPENMPI, v1::MPICH}) {
    v1::RunSpec spec = Spec(2, v1::SPREAD);
    spec.set_mpi(mpi);
    const v1::Run run = Create(spec);
    ASSERT_EQ(run.state(), v1::SCHEDULED) << run.error();
    const std::string peer = run.launcher() == "workers/a" ? "workers/b" : "workers/a";
    auto peer_messages = link_.Take(peer);
    ASSERT_EQ(peer_messages.size(), 1u);
    ASSERT_TRUE(peer_messages[0].has_run_token());
    EXPECT_EQ(peer_messages[0].run_token().run(), run.name());
    EXPECT_EQ(peer_messages[0].run_token().mpi(), mpi);
    Status(run.launcher(), run.name(), v1::SUCCEEDED, 0);
    link_.Take("workers/a");  // the run's releases
    link_.Take("workers/b");
  }
}

// A podman container on host-a with these IPC and PID namespaces.
v1::ContainerFacts Podman(uint64_t ipc, uint64_t pid) {
  v1::ContainerFacts facts;
  facts.set_in_container(true);
  facts.set_runtime("podman");
  facts.set_confidence("high");
  v1::ContainerSignal* signal = facts.add_signals();
  signal->set_source("/run/.containerenv");
  signal->set_observed("engine=podman-4.3.1");
  facts.mutable_namespaces()->set_ipc(ipc);
  facts.mutable_namespaces()->set_pid(pid);
  facts.mutable_namespaces()->set_net(pid + 1);
  facts.mutable_cgroup()->set_cpu_limit(1.5);
  facts.mutable_cgroup()->set_memory_limit_bytes(uint64_t{2} << 30);
  return facts;
}

TEST_F(RunManagerTest, ShmAcrossWorkersSharingIpcIsRecordedWithEachWorkersFacts) {
  Register("a", "host-a", 1, {}, Podman(4026532300, 4026532301));
  Register("b", "host-a", 1, {}, Podman(4026532300, 4026532301));
  v1::RunSpec spec = Spec(2, v1::SPREAD);
  spec.set_transport(v1::SHM);
  spec.set_mpi(v1::MPICH);
  const v1::Run run = Create(spec);
  EXPECT_EQ(run.state(), v1::SCHEDULED);
  EXPECT_TRUE(run.shared_ipc());
  EXPECT_EQ(run.single_copy_mechanism(), "cma");  // one PID namespace
  ASSERT_EQ(run.hosts_size(), 2);
  for (const v1::RankHost& host : run.hosts()) {
    EXPECT_EQ(host.hostname(), host.worker().substr(8));
    EXPECT_EQ(host.container().runtime(), "podman");
    EXPECT_EQ(host.container().namespaces().ipc(), 4026532300u);
    EXPECT_DOUBLE_EQ(host.container().cgroup().cpu_limit(), 1.5);
    EXPECT_TRUE(host.container().signals().empty());  // the worker's record keeps them
  }
  auto assignment = AssignmentFor(run.launcher());
  ASSERT_TRUE(assignment.has_value());
  EXPECT_TRUE(assignment->shared_ipc());
  EXPECT_EQ(assignment->single_copy_mechanism(), "cma");
}

// The metrics' node pool of a run comes from its workers' labels as they
// were when it was scheduled, kept with the run for a restart.
TEST_F(RunManagerTest, WorkersLabelsAreRecordedWithTheRun) {
  Register("a", "host-a", 1, {}, {}, {{"pool", "h100-a"}});
  Register("b", "host-b", 1, {}, {}, {{"pool", "h100-b"}, {"link", "ib"}});
  const v1::Run run = Create(Spec(2, v1::SPREAD));
  ASSERT_EQ(run.state(), v1::SCHEDULED);
  absl::StatusOr<v1::Run> stored = store_->GetRun(run.name());
  ASSERT_TRUE(stored.ok()) << stored.status();
  std::map<std::string, std::map<std::string, std::string>> by_worker;
  for (const v1::RankHost& host : stored->hosts()) {
    by_worker[host.worker()] = {host.worker_labels().begin(), host.worker_labels().end()};
  }
  EXPECT_EQ(by_worker, (std::map<std::string, std::map<std::string, std::string>>{
                           {"workers/a", {{"pool", "h100-a"}}},
                           {"workers/b", {{"pool", "h100-b"}, {"link", "ib"}}}}));
}

TEST_F(RunManagerTest, ShmFailsAtStartWhenThePickedWorkersDoNotShareIpc) {
  // a and c share IPC when the run is validated; while it waits, c comes
  // back (a restarted container) with an IPC namespace of its own.
  Register("a", "host-a", 2, {}, Podman(4026532300, 4026532301));
  Register("c", "host-a", 1, {}, Podman(4026532300, 4026532301));
  v1::RunSpec first = Spec(1, v1::EXPLICIT);
  first.mutable_placement()->add_workers("a");
  first.mutable_placement()->set_ranks_per_worker(1);
  const v1::Run holder = Create(first);  // holds host-a whole
  ASSERT_EQ(holder.state(), v1::SCHEDULED);
  ASSERT_TRUE(AssignmentFor("workers/a").has_value());  // the holder's, taken
  v1::RunSpec spec = Spec(2, v1::EXPLICIT);
  spec.mutable_placement()->add_workers("a");
  spec.mutable_placement()->add_workers("c");
  spec.mutable_placement()->set_ranks_per_worker(1);
  spec.set_transport(v1::SHM);
  spec.set_mpi(v1::MPICH);
  const v1::Run queued = Create(spec);
  EXPECT_EQ(queued.state(), v1::QUEUED);
  Register("c", "host-a", 1, {}, Podman(4026532500, 4026532501));
  Status(holder.launcher(), holder.name(), v1::SUCCEEDED, 0);
  const v1::Run failed = Get(queued.name());
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_EQ(failed.error(),
            "spec.transport: SHM connects ranks on different workers only when they share one "
            "IPC namespace on one host: workers/c (host host-a, ipc:[4026532500]) does not "
            "share the IPC namespace of workers/a (host host-a, ipc:[4026532300])");
  EXPECT_FALSE(AssignmentFor("workers/a").has_value());
}

TEST_F(RunManagerTest, InvalidSpecIsRejectedAndNothingIsQueued) {
  Register("a", "host-a");
  v1::RunSpec spec = Spec(2);
  (*spec.mutable_env())["LD_PRELOAD"] = "x";
  auto run = manager_->CreateRun(spec, "", now_);
  ASSERT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(run.status().message()), HasSubstr("spec.env"));
  EXPECT_EQ(manager_->queued_count(), 0);
  EXPECT_TRUE(manager_->ListRuns(0, "", v1::RUN_STATE_UNSPECIFIED)->runs.empty());
}

// Worker labels (collbench-worker --label) travel in the inventory: listed,
// kept across a restart (the store), and refused at registration when a
// key or value breaks the rule the worker's flag checks.
TEST_F(RunManagerTest, WorkerLabelsAreListedKeptAndCheckedAtRegistration) {
  v1::Register hello;
  hello.set_worker_id("a");
  hello.set_slots(2);
  hello.set_agent_address("a:7000");
  hello.mutable_inventory()->set_host_id("host-a");
  (*hello.mutable_inventory()->mutable_labels())["link"] = "tbf-1gbit";
  (*hello.mutable_inventory()->mutable_labels())["hosts"] = "netns";
  ASSERT_TRUE(fleet_->OnRegister(hello, now_).ok());
  auto labels_of = [&] { return fleet_->GetWorker("workers/a")->inventory().labels(); };
  EXPECT_EQ(labels_of().at("link"), "tbf-1gbit");
  EXPECT_EQ(labels_of().at("hosts"), "netns");
  Restart();
  ASSERT_TRUE(fleet_->GetWorker("workers/a").ok());
  EXPECT_EQ(labels_of().at("link"), "tbf-1gbit");

  hello.set_worker_id("b");
  (*hello.mutable_inventory()->mutable_labels())["Link"] = "x y";
  auto refused = fleet_->OnRegister(hello, now_);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("register.inventory.labels: label key 'Link' must start with"));
  EXPECT_FALSE(fleet_->GetWorker("workers/b").ok());
}

TEST_F(RunManagerTest, RequestIdMakesCreateIdempotent) {
  Register("a", "host-a");
  const v1::Run one = Create(Spec(2), "req-1");
  const v1::Run two = Create(Spec(2), "req-1");
  EXPECT_EQ(one.name(), two.name());
  EXPECT_EQ(manager_->ListRuns(0, "", v1::RUN_STATE_UNSPECIFIED)->runs.size(), 1u);
}

TEST_F(RunManagerTest, CancelQueuedAndRunning) {
  Register("a", "host-a");
  const v1::Run running = Create(Spec(2));
  const v1::Run queued = Create(Spec(2));
  EXPECT_EQ(manager_->CancelRun(queued.name(), now_)->state(), v1::CANCELLED);
  EXPECT_EQ(manager_->CancelRun(running.name(), now_)->state(), v1::CANCELLED);
  bool told = false;
  for (const auto& m : link_.Take("workers/a")) told |= m.has_cancel();
  EXPECT_TRUE(told);
  EXPECT_EQ(manager_->CancelRun(running.name(), now_).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // The worker is freed once the launcher confirms the kill.
  const v1::Run next = Create(Spec(2));
  EXPECT_EQ(next.state(), v1::QUEUED);
  Status("workers/a", running.name(), v1::CANCELLED);
  EXPECT_EQ(Get(next.name()).state(), v1::SCHEDULED);
}

TEST_F(RunManagerTest, FullStoreRefusesCreateAndCancelOfAQueuedRunWhichStaysQueued) {
  Register("a", "host-a");
  const v1::Run running = Create(Spec(2));
  const v1::Run queued = Create(Spec(2));
  link_.Take("workers/a");
  store_->full = true;
  absl::StatusOr<v1::Run> created = manager_->CreateRun(Spec(2), "", now_);
  EXPECT_TRUE(absl::IsResourceExhausted(created.status())) << created.status();
  EXPECT_EQ(manager_->queued_count(), 1);
  absl::StatusOr<v1::Run> cancelled = manager_->CancelRun(queued.name(), now_);
  EXPECT_TRUE(absl::IsResourceExhausted(cancelled.status())) << cancelled.status();
  EXPECT_THAT(std::string(cancelled.status().message()), HasSubstr("store test.db is full"));
  EXPECT_EQ(manager_->queued_count(), 1);
  EXPECT_EQ(Get(queued.name()).state(), v1::QUEUED);
  // A running run is stopped all the same, and the answer says the cancel
  // is not recorded.
  absl::StatusOr<v1::Run> stopped = manager_->CancelRun(running.name(), now_);
  EXPECT_TRUE(absl::IsResourceExhausted(stopped.status())) << stopped.status();
  EXPECT_THAT(std::string(stopped.status().message()),
              HasSubstr(running.name() + " is being stopped, but the cancel is not recorded"));
  bool told = false;
  for (const auto& m : link_.Take("workers/a")) told |= m.has_cancel();
  EXPECT_TRUE(told);
  // Space returns: the queued run is cancelled, and stays so after a restart.
  store_->full = false;
  EXPECT_EQ(manager_->CancelRun(queued.name(), now_)->state(), v1::CANCELLED);
  Restart();
  EXPECT_EQ(Get(queued.name()).state(), v1::CANCELLED);
  EXPECT_EQ(manager_->queued_count(), 0);
}

TEST_F(RunManagerTest, LostPeerFailsTheRunNamingIt) {
  Register("a", "host-a");
  const uint64_t session_b = Register("b", "host-b");
  const v1::Run run = Create(Spec(2, v1::SPREAD));
  const std::string peer = run.launcher() == "workers/a" ? "workers/b" : "workers/a";
  Status(run.launcher(), run.name(), v1::RUNNING);
  fleet_->OnDisconnect(peer, peer == "workers/b" ? session_b : 1, now_);
  const v1::Run failed = Get(run.name());
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_THAT(failed.error(), HasSubstr(peer));
}

TEST_F(RunManagerTest, SilentWorkerIsLostAfterTheHeartbeatTimeout) {
  Register("a", "host-a");
  Register("b", "host-b");
  const v1::Run run = Create(Spec(2, v1::SPREAD));
  const std::string peer = run.launcher() == "workers/a" ? "workers/b" : "workers/a";
  now_ += absl::Seconds(3);
  fleet_->OnHeartbeat(run.launcher(), 1, now_);
  fleet_->Tick(now_);
  EXPECT_EQ(Get(run.name()).state(), v1::SCHEDULED);
  now_ += absl::Seconds(4);  // the peer has been silent for 7 s > 6 s
  fleet_->Tick(now_);
  EXPECT_EQ(Get(run.name()).state(), v1::FAILED);
  EXPECT_THAT(Get(run.name()).error(), HasSubstr(peer));
}

TEST_F(RunManagerTest, RestartReadoptsTheRunAndKeepsEveryResultOnce) {
  Register("a", "host-a");
  const v1::Run run = Create(Spec(2));
  Status("workers/a", run.name(), v1::RUNNING);
  Result("workers/a", run.name(), 0);
  Restart();
  EXPECT_EQ(Get(run.name()).state(), v1::RUNNING);
  // The launcher comes back and re-sends what it was not sure of.
  Register("a", "host-a", 2, {run.name()});
  Result("workers/a", run.name(), 0);
  Result("workers/a", run.name(), 1);
  Status("workers/a", run.name(), v1::SUCCEEDED, 2);
  EXPECT_EQ(Get(run.name()).state(), v1::SUCCEEDED);
  auto results = manager_->GetResults(run.name());
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[0].sequence(), 0);
  EXPECT_EQ((*results)[1].sequence(), 1);
}

// The same across a restart for a run the launcher started: the launcher
// comes back with the run in its hello and finishes it; its workers, back
// too, are held by it until then.
TEST_F(RunManagerTest, RestartReadoptsARunTheLauncherStarted) {
  Register("a", "host-a");
  Register("b", "host-b");
  RegisterLauncherOn(fleet_, "l1", now_);
  const v1::Run run = Create(Spec(2, v1::SPREAD));
  ASSERT_EQ(run.launcher(), "launchers/l1");
  Status("launchers/l1", run.name(), v1::RUNNING);
  Result("launchers/l1", run.name(), 0);
  Restart();
  EXPECT_EQ(Get(run.name()).state(), v1::RUNNING);
  const uint64_t session_a = Register("a", "host-a");
  const uint64_t session_b = Register("b", "host-b");
  v1::Register hello;
  hello.set_worker_id("l1");
  hello.set_launcher(true);
  hello.add_active_runs(run.name());
  auto launcher = fleet_->OnRegister(hello, now_);
  ASSERT_TRUE(launcher.ok()) << launcher.status();
  now_ += absl::Seconds(25);  // past the grace a launcher that never returns gets
  fleet_->OnHeartbeat("workers/a", session_a, now_);
  fleet_->OnHeartbeat("workers/b", session_b, now_);
  fleet_->OnHeartbeat("launchers/l1", launcher->session, now_);
  fleet_->Tick(now_);
  EXPECT_EQ(Get(run.name()).state(), v1::RUNNING) << Get(run.name()).error();
  // Its workers are held: a run that needs one waits.
  const v1::Run other = Create(Spec(1, v1::PACK));
  EXPECT_EQ(Get(other.name()).state(), v1::QUEUED);
  Result("launchers/l1", run.name(), 0);
  Result("launchers/l1", run.name(), 1);
  Status("launchers/l1", run.name(), v1::SUCCEEDED, 2);
  EXPECT_EQ(Get(run.name()).state(), v1::SUCCEEDED);
  EXPECT_EQ(manager_->GetResults(run.name())->size(), 2u);
  EXPECT_NE(Get(other.name()).state(), v1::QUEUED);
}

TEST_F(RunManagerTest, RestartFailsARunWhoseLauncherNeverReturns) {
  Register("a", "host-a");
  const v1::Run run = Create(Spec(2));
  Restart();
  now_ += absl::Seconds(25);
  fleet_->Tick(now_);
  EXPECT_EQ(Get(run.name()).state(), v1::FAILED);
  EXPECT_THAT(Get(run.name()).error(), HasSubstr("did not come back"));
}

TEST_F(RunManagerTest, RunTimesOut) {
  Register("a", "host-a");
  v1::RunSpec spec = Spec(2);
  spec.mutable_timeout()->set_seconds(30);
  const v1::Run run = Create(spec);
  now_ += absl::Seconds(31);
  fleet_->OnHeartbeat("workers/a", 1, now_);
  fleet_->Tick(now_);
  EXPECT_EQ(Get(run.name()).state(), v1::FAILED);
  EXPECT_THAT(Get(run.name()).error(), HasSubstr("timed out"));
}

TEST_F(RunManagerTest, WorkerPagesFollowTheFullListingAcrossARestart) {
  Register("a", "host-a");
  Register("b", "host-b");
  Register("c", "host-c");
  Restart();  // a, b and c are known from the store, LOST until they return
  Register("b", "host-b");
  Register("d", "host-d");
  std::vector<std::string> all;
  for (const v1::Worker& w : fleet_->ListWorkers()) {
    all.push_back(w.name() + " " + v1::WorkerState_Name(w.state()));
  }
  EXPECT_THAT(all, ::testing::ElementsAre("workers/a LOST", "workers/b READY", "workers/c LOST",
                                          "workers/d READY"));
  auto names = [](const WorkerDirectory::Page& page) {
    std::vector<std::string> out;
    for (const v1::Worker& w : page.workers) out.push_back(w.name());
    return out;
  };
  const WorkerDirectory::Page middle = fleet_->ListWorkers(1, 2);
  EXPECT_THAT(names(middle), ::testing::ElementsAre("workers/b", "workers/c"));
  EXPECT_EQ(middle.total, 4u);
  EXPECT_EQ(middle.workers[0].state(), v1::READY);  // the registered entry wins
  EXPECT_THAT(names(fleet_->ListWorkers(3, 10)), ::testing::ElementsAre("workers/d"));
  EXPECT_TRUE(fleet_->ListWorkers(4, 10).workers.empty());

  // Once every worker from before the restart is back, pages come from the
  // registry alone: the same listing.
  Register("a", "host-a");
  Register("c", "host-c");
  const WorkerDirectory::Page back = fleet_->ListWorkers(1, 2);
  EXPECT_THAT(names(back), ::testing::ElementsAre("workers/b", "workers/c"));
  EXPECT_EQ(back.total, 4u);
  EXPECT_EQ(back.workers[1].state(), v1::READY);
  EXPECT_EQ(back.workers[1].agent_address(), "c:7000");
  EXPECT_EQ(fleet_->ListWorkers(0, 10).workers.size(), 4u);
}

// --- Admission (docs/design/security.md#admission-and-fairness) -------------

TEST_F(RunManagerTest, FullQueueRefusesCreateWithRetryAfterAndStoresNothing) {
  CoreOptions options;
  options.runs.max_queued_runs = 3;
  options.runs.queue_full_retry_after = absl::Seconds(5);
  Restart(options);
  Register("a", "host-a");
  Create(Spec(2));  // takes the worker
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Create(Spec(2)).state(), v1::QUEUED);
  ASSERT_EQ(manager_->queued_count(), 3);

  auto refused = manager_->CreateRun(Spec(2), "req-over", now_);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("queue limit"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("--max-queued-runs 3"));
  EXPECT_EQ(RetryAfterSeconds(refused.status()), 5);
  // Nothing half-created: not queued, not stored, its request id still free.
  EXPECT_EQ(manager_->queued_count(), 3);
  EXPECT_EQ(manager_->ListRuns(0, "", v1::RUN_STATE_UNSPECIFIED)->runs.size(), 4u);
  EXPECT_TRUE(absl::IsNotFound(store_->FindRunByRequestId("req-over").status()));
  EXPECT_EQ(manager_->admission_rejections().queue_full, 1);

  // Once the queue moves, the same request goes through.
  ASSERT_TRUE(
      manager_->CancelRun(manager_->ListRuns(0, "", v1::QUEUED)->runs.back().name(), now_).ok());
  EXPECT_EQ(Create(Spec(2), "req-over").state(), v1::QUEUED);
}

TEST_F(RunManagerTest, KnownRequestIdReturnsItsRunPastEveryLimit) {
  CoreOptions options;
  options.runs.max_queued_runs = 1;
  options.runs.create_rate = {/*per_second=*/1, /*burst=*/2};
  Restart(options);
  const v1::Run queued = Create(Spec(2), "req-1");  // no workers: it waits
  ASSERT_EQ(queued.state(), v1::QUEUED);
  ASSERT_EQ(manager_->CreateRun(Spec(2), "req-2", now_).status().code(),
            absl::StatusCode::kResourceExhausted);  // queue full
  ASSERT_EQ(manager_->CreateRun(Spec(2), "req-3", now_).status().code(),
            absl::StatusCode::kResourceExhausted);  // rate spent
  // A retry of the first create still answers with its run.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Create(Spec(2), "req-1").name(), queued.name());
}

TEST_F(RunManagerTest, CreateRateIsPerCallerWithRetryAfter) {
  CoreOptions options;
  options.runs.create_rate = {/*per_second=*/0.5, /*burst=*/2};
  Restart(options);
  Register("a", "host-a");
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(manager_->CreateRun(Spec(2), "", now_, "token 0").ok());
  auto refused = manager_->CreateRun(Spec(2), "", now_, "token 0");
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("create rate limit"));
  // One token comes back every 2 s.
  EXPECT_EQ(RetryAfterSeconds(refused.status()), 2);
  EXPECT_EQ(manager_->admission_rejections().rate_limited, 1);
  EXPECT_EQ(manager_->ListRuns(0, "", v1::RUN_STATE_UNSPECIFIED)->runs.size(), 2u);
  // Another caller is not slowed down by the first.
  EXPECT_TRUE(manager_->CreateRun(Spec(2), "", now_, "token 1").ok());
  // After the refill the first caller may create again.
  now_ += absl::Seconds(2);
  EXPECT_TRUE(manager_->CreateRun(Spec(2), "", now_, "token 0").ok());
}

// --- Losing many workers at once ---------------------------------------------

class ManyWorkersTest : public RunManagerTest {
 protected:
  static constexpr int kWorkers = 5000;
  static constexpr int kRuns = 100;

  // kWorkers workers on their own hosts, and kRuns two-rank runs spread
  // over the first 2 * kRuns of them. Returns the sessions by worker.
  std::map<std::string, uint64_t> Fleet() {
    CoreOptions options;
    options.runs.create_rate.per_second = 0;    // kRuns creates at once
    options.workers.register_rate.per_second = 0;  // kWorkers new names from one test
    Restart(options);
    std::map<std::string, uint64_t> sessions;
    for (int i = 0; i < kWorkers; ++i) {
      const std::string id = absl::StrCat("w", i);
      sessions["workers/" + id] = Register(id, "host-" + id, /*slots=*/1);
    }
    for (int i = 0; i < kRuns; ++i) {
      v1::RunSpec spec = Spec(2, v1::SPREAD);
      runs_.push_back(Create(spec));
      EXPECT_EQ(runs_.back().state(), v1::SCHEDULED);
    }
    fleet_->Tick(now_);  // the registrations' rows are written
    manager_->FlushJournal();
    return sessions;
  }

  int Lost() {
    int lost = 0;
    for (const v1::Worker& w : fleet_->ListWorkers()) lost += w.state() == v1::LOST;
    return lost;
  }

  void ExpectEveryRunFailedNamingAPeer() {
    for (const v1::Run& created : runs_) {
      const v1::Run run = Get(created.name());
      ASSERT_EQ(run.state(), v1::FAILED) << run.name();
      std::string peer;
      for (const v1::RankHost& host : run.hosts()) {
        if (host.worker() != run.launcher()) peer = host.worker();
      }
      EXPECT_THAT(run.error(), HasSubstr(peer)) << run.name();
    }
  }

  std::vector<v1::Run> runs_;
};

TEST_F(ManyWorkersTest, StreamsThatAllCloseAreLostAtOnceWithOneStoreWrite) {
  std::map<std::string, uint64_t> sessions = Fleet();
  const int writes_before = store_->worker_writes;
  for (const auto& [worker, session] : sessions) fleet_->OnDisconnect(worker, session, now_);
  // Every worker is LOST as soon as its stream ends, before any tick.
  EXPECT_EQ(Lost(), kWorkers);
  ExpectEveryRunFailedNamingAPeer();
  // Their rows reach the store in one transaction at the next tick.
  EXPECT_EQ(store_->worker_writes, writes_before);
  fleet_->Tick(now_);
  manager_->FlushJournal();
  EXPECT_EQ(store_->worker_writes, writes_before + 1);
  int stored_lost = 0;
  // Held in a variable: a range-for over *ListWorkers() iterates a vector
  // the temporary StatusOr takes with it (ASan: stack-use-after-scope).
  const absl::StatusOr<std::vector<v1::Worker>> stored = store_->ListWorkers();
  ASSERT_TRUE(stored.ok()) << stored.status();
  for (const v1::Worker& w : *stored) stored_lost += w.state() == v1::LOST;
  EXPECT_EQ(stored_lost, kWorkers);

  // They come back cleanly: READY again, and new runs are placed on them.
  for (int i = 0; i < kWorkers; ++i) {
    const std::string id = absl::StrCat("w", i);
    Register(id, "host-" + id, /*slots=*/1);
  }
  EXPECT_EQ(Lost(), 0);
  const v1::Run again = Create(Spec(2, v1::SPREAD));
  EXPECT_EQ(again.state(), v1::SCHEDULED);
}

TEST_F(ManyWorkersTest, SilentWorkersAreLostAtTheFirstTickPastTheTimeout) {
  std::map<std::string, uint64_t> sessions = Fleet();
  const int writes_before = store_->worker_writes;
  // Everyone heartbeats for a while, then goes silent at once.
  now_ += absl::Seconds(3);
  for (const auto& [worker, session] : sessions) fleet_->OnHeartbeat(worker, session, now_);
  now_ += absl::Seconds(6);  // exactly the timeout: not yet
  fleet_->Tick(now_);
  EXPECT_EQ(Lost(), 0);
  now_ += absl::Milliseconds(250);  // the next tick
  fleet_->Tick(now_);
  EXPECT_EQ(Lost(), kWorkers);
  ExpectEveryRunFailedNamingAPeer();
  EXPECT_EQ(store_->worker_writes, writes_before + 1);
  // A worker that heartbeats again on its session is back.
  fleet_->OnHeartbeat("workers/w7", sessions["workers/w7"], now_);
  EXPECT_EQ(Lost(), kWorkers - 1);
}

TEST_F(RunManagerTest, DisconnectOfASupersededSessionLosesNothing) {
  const uint64_t old_session = Register("a", "host-a");
  Register("a", "host-a");  // reconnected: a new stream, a new session
  const v1::Run run = Create(Spec(2));
  fleet_->OnDisconnect("workers/a", old_session, now_);  // the old stream ends late
  EXPECT_EQ(fleet_->GetWorker("a")->state(), v1::BUSY);
  EXPECT_EQ(Get(run.name()).state(), v1::SCHEDULED);
}

// --- Worker and run lifecycle: drain, undrain, delete, retention ----------

// Drain is the operator's decision about the worker: a restart of the
// worker keeps it, and only undrain ends it, after which queued runs are
// scheduled on the worker at once.
TEST_F(RunManagerTest, DrainHoldsAcrossAWorkerRestartUntilUndrained) {
  const uint64_t session = Register("a", "host-a");
  absl::StatusOr<v1::Worker> drained = fleet_->DrainWorker("a");
  ASSERT_TRUE(drained.ok()) << drained.status();
  EXPECT_EQ(drained->state(), v1::DRAINING);
  EXPECT_TRUE(drained->draining());
  fleet_->OnDisconnect("workers/a", session, now_);
  EXPECT_EQ(fleet_->GetWorker("a")->state(), v1::LOST);
  EXPECT_TRUE(fleet_->GetWorker("a")->draining());
  Register("a", "host-a");  // the worker process restarted
  EXPECT_EQ(fleet_->GetWorker("a")->state(), v1::DRAINING);
  const v1::Run run = Create(Spec(2));
  EXPECT_EQ(run.state(), v1::QUEUED);
  EXPECT_THAT(run.waiting_reason(), HasSubstr("draining"));
  absl::StatusOr<v1::Worker> undrained = fleet_->UndrainWorker("workers/a", now_);
  ASSERT_TRUE(undrained.ok()) << undrained.status();
  EXPECT_FALSE(undrained->draining());
  EXPECT_EQ(Get(run.name()).state(), v1::SCHEDULED);
  EXPECT_TRUE(AssignmentFor("workers/a").has_value());
  EXPECT_EQ(fleet_->UndrainWorker("nobody", now_).status().code(), absl::StatusCode::kNotFound);
}

// The drain is kept in the worker's row, so a coordinator restart keeps it
// too: listed while the worker is away, applied when it comes back.
TEST_F(RunManagerTest, DrainHoldsAcrossACoordinatorRestart) {
  Register("a", "host-a");
  Register("b", "host-b");
  ASSERT_TRUE(fleet_->DrainWorker("a").ok());
  fleet_->Tick(now_);  // worker rows reach the store
  Restart();
  const std::vector<v1::Worker> listed = fleet_->ListWorkers();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].state(), v1::LOST);
  EXPECT_TRUE(listed[0].draining());
  EXPECT_FALSE(listed[1].draining());
  // Undrained and drained again while it is away: the last word holds.
  ASSERT_TRUE(fleet_->UndrainWorker("a", now_).ok());
  ASSERT_TRUE(fleet_->DrainWorker("a").ok());
  Register("a", "host-a");
  Register("b", "host-b");
  EXPECT_EQ(fleet_->GetWorker("a")->state(), v1::DRAINING);
  EXPECT_EQ(fleet_->GetWorker("b")->state(), v1::READY);
  ASSERT_TRUE(fleet_->UndrainWorker("a", now_).ok());
  EXPECT_EQ(fleet_->GetWorker("a")->state(), v1::READY);
}

// A finished run and its results go; a queued or running run is refused
// and stays, results and all.
TEST_F(RunManagerTest, DeleteRunRemovesOnlyFinishedRuns) {
  auto observer = std::make_shared<DeletedRunsRecorder>();
  hub_.AddObserver(observer);
  Register("a", "host-a");
  const v1::Run done = Create(Spec(2));
  Status("workers/a", done.name(), v1::RUNNING);
  Result("workers/a", done.name(), 0);
  Status("workers/a", done.name(), v1::SUCCEEDED, 1);
  const v1::Run running = Create(Spec(2));
  Status("workers/a", running.name(), v1::RUNNING);
  Result("workers/a", running.name(), 0);
  const v1::Run queued = Create(Spec(2));
  ASSERT_EQ(Get(queued.name()).state(), v1::QUEUED);

  ASSERT_TRUE(manager_->DeleteRun(done.name()).ok());
  EXPECT_EQ(observer->TakeDeleted(), (std::vector<std::string>{done.name()}));
  EXPECT_EQ(manager_->GetRun(done.name()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(manager_->GetResults(done.name()).status().code(), absl::StatusCode::kNotFound);
  for (const v1::Run& active : {running, queued}) {
    absl::Status refused = manager_->DeleteRun(active.name());
    EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << active.name();
    EXPECT_THAT(refused.message(), HasSubstr("cancel it first"));
  }
  EXPECT_EQ(Get(running.name()).state(), v1::RUNNING);
  EXPECT_EQ(manager_->GetResults(running.name())->size(), 1u);
  EXPECT_EQ(Get(queued.name()).state(), v1::QUEUED);
  EXPECT_EQ(manager_->queued_count(), 1);
  // Cancelled, but the launcher has not confirmed the kill: not yet.
  ASSERT_TRUE(manager_->CancelRun(running.name(), now_).ok());
  EXPECT_THAT(manager_->DeleteRun(running.name()).message(), HasSubstr("not yet confirmed"));
  Status("workers/a", running.name(), v1::CANCELLED);
  EXPECT_TRUE(manager_->DeleteRun(running.name()).ok());
  EXPECT_EQ(manager_->DeleteRun("runs/nope").code(), absl::StatusCode::kNotFound);
  // The observers (metrics) hear of each run deleted, and of nothing refused.
  EXPECT_EQ(observer->TakeDeleted(), (std::vector<std::string>{running.name()}));
}

// Results submitted while a run was live may still wait for the writer
// when the run ends (here: cancelled with its launcher unreachable). A
// delete writes them first: the batch holding them is not broken by a run
// gone from under it, so the results of the other runs in it are stored.
TEST_F(RunManagerTest, DeleteRunWaitsForItsResultsOnTheirWay) {
  Register("a", "host-a");
  Register("b", "host-b");
  const v1::Run doomed = Create(Spec(1));
  const v1::Run other = Create(Spec(1));
  ASSERT_NE(doomed.launcher(), other.launcher());
  Status(doomed.launcher(), doomed.name(), v1::RUNNING);
  Status(other.launcher(), other.name(), v1::RUNNING);
  store_->CloseResults();
  v1::RunResult result;
  result.set_run(doomed.name());
  result.mutable_result()->set_sequence(0);
  result.mutable_result()->set_bytes(8);
  manager_->OnResult(doomed.launcher(), result, now_);
  store_->AwaitHeldBatch();
  result.set_run(other.name());
  manager_->OnResult(other.launcher(), result, now_);
  link_.offline.insert(doomed.launcher());
  // The cancel's write queues behind the held batch: it returns once both
  // are written.
  absl::StatusOr<v1::Run> cancelled = absl::UnknownError("not returned");
  const uint64_t appended_before = core_->journal().last_appended();
  std::thread canceller([&] { cancelled = manager_->CancelRun(doomed.name(), now_); });
  // The delete comes once the cancel is made (its write appended): before
  // that the run is RUNNING and a delete is refused.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (core_->journal().last_appended() == appended_before && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_GT(core_->journal().last_appended(), appended_before) << "the cancel appended nothing";
  absl::Status deleted = absl::UnknownError("not returned");
  std::thread deleter([&] { deleted = manager_->DeleteRun(doomed.name()); });
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_TRUE(manager_->GetRun(doomed.name()).ok()) << "deleted with a result on its way";
  store_->OpenResults();
  canceller.join();
  deleter.join();
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::CANCELLED);
  EXPECT_TRUE(deleted.ok()) << deleted;
  EXPECT_EQ(manager_->GetRun(doomed.name()).status().code(), absl::StatusCode::kNotFound);
  manager_->FlushJournal();
  EXPECT_EQ(core_->journal().stats().failed_batches, 0);
  EXPECT_EQ(manager_->GetResults(other.name())->size(), 1u);
  // A late re-send of the deleted run's result is acknowledged (the
  // launcher may drop it) and stores nothing.
  link_.offline.clear();
  link_.Take(doomed.launcher());
  result.set_run(doomed.name());
  manager_->OnResult(doomed.launcher(), result, now_);
  manager_->FlushJournal();
  EXPECT_EQ(AckedSequences(doomed.launcher()), std::vector<int64_t>{0});
  EXPECT_EQ(manager_->GetRun(doomed.name()).status().code(), absl::StatusCode::kNotFound);
}

// A worker that is gone can be deleted; a connected one is refused naming
// why. Runs that ran on it keep naming it.
TEST_F(RunManagerTest, DeleteWorkerOnlyOnceItIsGone) {
  const uint64_t session = Register("a", "host-a");
  const v1::Run run = Create(Spec(2));
  Status("workers/a", run.name(), v1::SUCCEEDED, 0);
  absl::Status refused = fleet_->ForgetWorker("a");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("is connected (READY)"));
  EXPECT_THAT(refused.message(), HasSubstr("drain it, stop it, then delete it"));
  EXPECT_TRUE(fleet_->GetWorker("a").ok());
  fleet_->OnDisconnect("workers/a", session, now_);
  fleet_->Tick(now_);
  ASSERT_TRUE(fleet_->ForgetWorker("workers/a").ok());
  EXPECT_EQ(fleet_->GetWorker("a").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->ListWorkers()->empty());
  fleet_->Tick(now_);  // no pending row brings it back
  Restart();
  EXPECT_TRUE(fleet_->ListWorkers().empty());
  EXPECT_EQ(Get(run.name()).launcher(), "workers/a");
}

// After a restart, a run waiting for its launcher holds the worker before
// the registry knows it again: the worker may not be deleted under it.
TEST_F(RunManagerTest, DeleteWorkerIsRefusedWhileARecoveredRunHoldsIt) {
  Register("a", "host-a");
  const v1::Run run = Create(Spec(2));
  Status("workers/a", run.name(), v1::RUNNING);
  fleet_->Tick(now_);
  Restart();
  absl::Status refused = fleet_->ForgetWorker("a");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr(run.name()));
}

v1::Run StoredRun(const std::string& id, v1::RunState state, absl::Time created,
                  absl::Time ended = absl::InfinitePast()) {
  v1::Run run;
  run.set_name("runs/" + id);
  run.set_state(state);
  *run.mutable_create_time() = TimestampFromTime(created);
  if (ended != absl::InfinitePast()) *run.mutable_end_time() = TimestampFromTime(ended);
  run.mutable_spec()->set_operation("allreduce");
  run.mutable_spec()->set_ranks(2);
  run.mutable_spec()->add_sizes_bytes(8);
  return run;
}

// --retain-runs 4 --retain-for 1h: the finished runs beyond the newest four
// and those that ended over an hour ago go, oldest first, with their
// results; a queued and a running run stay however old they are, and a run
// created long ago that ended recently is kept by its end time.
TEST_F(RunManagerTest, RetentionDeletesExactlyTheFinishedRunsPastThePolicy) {
  const absl::Time t = now_;
  for (const v1::Run& run : {
           StoredRun("f1", v1::SUCCEEDED, t - absl::Hours(5), t - absl::Hours(5)),
           StoredRun("f2", v1::FAILED, t - absl::Hours(4), t - absl::Minutes(30)),
           StoredRun("f3", v1::CANCELLED, t - absl::Hours(3), t - absl::Hours(2)),
           StoredRun("f4", v1::SUCCEEDED, t - absl::Minutes(10), t - absl::Minutes(5)),
           StoredRun("f5", v1::SUCCEEDED, t - absl::Minutes(1)),
           StoredRun("q", v1::QUEUED, t - absl::Hours(10)),
           StoredRun("r", v1::RUNNING, t - absl::Hours(9)),
       }) {
    ASSERT_TRUE(store_->CreateRun(run).ok()) << run.name();
  }
  ASSERT_TRUE(store_->AddResults({{"runs/f1", {}}, {"runs/f2", {}}}).ok());
  CoreOptions options;
  options.retention.keep_runs = 4;
  options.retention.keep_for = absl::Hours(1);
  Restart(options);
  auto observer = std::make_shared<DeletedRunsRecorder>();
  hub_.AddObserver(observer);
  EXPECT_EQ(core_->retention().Sweep(now_), (std::vector<std::string>{"runs/f1", "runs/f3"}));
  EXPECT_EQ(observer->TakeDeleted(), (std::vector<std::string>{"runs/f1", "runs/f3"}));
  const Store::RunPage page = manager_->ListRuns(100, "", v1::RUN_STATE_UNSPECIFIED).value();
  std::vector<std::string> left;
  for (const v1::Run& run : page.runs) left.push_back(run.name());
  EXPECT_EQ(left, (std::vector<std::string>{"runs/f5", "runs/f4", "runs/f2", "runs/r", "runs/q"}));
  EXPECT_EQ(manager_->GetResults("runs/f1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(manager_->GetResults("runs/f2")->size(), 1u);
  EXPECT_TRUE(core_->retention().Sweep(now_).empty());
  // Time passes: f2 and f4 age out; q and r never do.
  now_ += absl::Hours(100);
  EXPECT_EQ(core_->retention().Sweep(now_),
            (std::vector<std::string>{"runs/f2", "runs/f4", "runs/f5"}));
  EXPECT_EQ(manager_->ListRuns(100, "", v1::RUN_STATE_UNSPECIFIED)->runs.size(), 2u);
}

TEST_F(RunManagerTest, NoRetentionPolicyDeletesNothing) {
  ASSERT_TRUE(store_->CreateRun(StoredRun("old", v1::SUCCEEDED, absl::UnixEpoch())).ok());
  EXPECT_TRUE(core_->retention().Sweep(now_).empty());
  EXPECT_TRUE(manager_->GetRun("runs/old").ok());
}

TEST(RetentionTest, EitherLimitDeletesAndTheRestStays) {
  const absl::Time now = absl::FromUnixSeconds(1'000'000);
  auto ns = [&](absl::Duration ago) { return absl::ToUnixNanos(now - ago); };
  const std::vector<Store::FinishedRun> finished = {
      {"runs/new", ns(absl::Minutes(1)), 0},
      {"runs/mid", ns(absl::Hours(2)), ns(absl::Minutes(2))},
      {"runs/old", ns(absl::Hours(3)), ns(absl::Hours(3))},
  };
  EXPECT_TRUE(RunsPastRetention(finished, {}, now).empty());
  EXPECT_EQ(RunsPastRetention(finished, {/*keep_runs=*/1}, now),
            (std::vector<std::string>{"runs/mid", "runs/old"}));
  EXPECT_EQ(RunsPastRetention(finished, {0, absl::Hours(1)}, now),
            (std::vector<std::string>{"runs/old"}));
  EXPECT_EQ(RunsPastRetention(finished, {3, absl::Hours(4)}, now), std::vector<std::string>{});
  EXPECT_EQ(DescribeRetention({3, absl::Hours(720)}), "--retain-runs 3 --retain-for 720h");
}

}  // namespace
}  // namespace collbench


namespace collbench {
namespace {

// A scheduled check's run (labelled schedule=) queued first still starts
// after a user's run queued later: it never delays one (docs/design/workflows.md#schedules).
TEST_F(RunManagerTest, AScheduledRunWaitsBehindAUserRunQueuedAfterIt) {
  Register("a", "host-a");
  Register("b", "host-b");
  const v1::Run holder = Create(Spec(2, v1::SPREAD));  // holds both workers
  v1::RunSpec background = Spec(2, v1::SPREAD);
  (*background.mutable_labels())[kScheduleLabel] = "nightly";
  const v1::Run scheduled = Create(background);
  const v1::Run user = Create(Spec(2, v1::SPREAD));
  EXPECT_EQ(scheduled.state(), v1::QUEUED);
  EXPECT_EQ(user.state(), v1::QUEUED);
  EXPECT_FALSE(manager_->WorkersIdle("").ok());
  Status(holder.launcher(), holder.name(), v1::SUCCEEDED, 0);
  EXPECT_EQ(Get(user.name()).state(), v1::SCHEDULED);
  EXPECT_EQ(Get(scheduled.name()).state(), v1::QUEUED);
  const v1::Run started = Get(user.name());
  Status(started.launcher(), started.name(), v1::SUCCEEDED, 0);
  EXPECT_EQ(Get(scheduled.name()).state(), v1::SCHEDULED);
}

// A worker selector (RunSpec.workers) keeps a run to the workers it names
// or whose labels it lists, and refuses one no worker satisfies.
// A group (a hunt's round) is admitted with one token of the caller's
// rate and placed once: its runs on disjoint workers all start at once; a
// bad spec is refused alone; past the queue limit the rest are refused and
// nothing of them is stored; a retry answers with the runs made.
TEST_F(RunManagerTest, AGroupIsAdmittedTogetherAndItsDisjointRunsStartAtOnce) {
  CoreOptions options;
  options.runs.create_rate = {/*per_second=*/0.001, /*burst=*/1};
  options.runs.max_queued_runs = 1;
  Restart(options);
  for (const std::string id : {"a", "b", "c", "d"}) Register(id, "host-" + id, 1);
  auto pair = [this](const std::string& x, const std::string& y) {
    v1::RunSpec spec = Spec(2, v1::EXPLICIT);
    spec.mutable_placement()->set_ranks_per_worker(1);
    spec.mutable_placement()->add_workers(x);
    spec.mutable_placement()->add_workers(y);
    return spec;
  };
  v1::RunSpec bad = pair("workers/a", "workers/c");
  bad.set_ranks(0);
  std::vector<RunManager::RunRequest> round = {{pair("workers/a", "workers/b"), "hunt/0"},
                                               {bad, "hunt/1"},
                                               {pair("workers/c", "workers/d"), "hunt/2"}};
  std::vector<absl::StatusOr<v1::Run>> created = manager_->CreateRuns(round, now_, "hunt");
  ASSERT_EQ(created.size(), 3u);
  ASSERT_TRUE(created[0].ok()) << created[0].status();
  ASSERT_TRUE(created[2].ok()) << created[2].status();
  EXPECT_EQ(created[1].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(created[1].status().message()), HasSubstr("ranks"));
  EXPECT_NE(created[0]->state(), v1::QUEUED);  // both placed by the one pass
  EXPECT_NE(created[2]->state(), v1::QUEUED);
  EXPECT_EQ(manager_->queued_count(), 0);
  EXPECT_TRUE(absl::IsNotFound(store_->FindRunByRequestId("hunt/1").status()));
  // The one token is spent: the caller's next create is refused.
  EXPECT_EQ(manager_->CreateRun(Spec(1), "", now_, "hunt").status().code(),
            absl::StatusCode::kResourceExhausted);
  // A retry of the round answers with the runs it made, past the rate.
  round.erase(round.begin() + 1);
  std::vector<absl::StatusOr<v1::Run>> again = manager_->CreateRuns(round, now_, "hunt");
  ASSERT_TRUE(again[0].ok() && again[1].ok());
  EXPECT_EQ(again[0]->name(), created[0]->name());
  EXPECT_EQ(again[1]->name(), created[2]->name());

  // Every worker is held: a group of three waits, and only one fits the
  // queue; the other two are refused with a retry-after and not stored.
  std::vector<RunManager::RunRequest> next = {{pair("workers/a", "workers/c"), "next/0"},
                                              {pair("workers/b", "workers/d"), "next/1"},
                                              {pair("workers/a", "workers/d"), "next/2"}};
  created = manager_->CreateRuns(next, now_, "another caller");
  ASSERT_TRUE(created[0].ok()) << created[0].status();
  EXPECT_EQ(created[0]->state(), v1::QUEUED);
  for (const int i : {1, 2}) {
    EXPECT_EQ(created[i].status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(std::string(created[i].status().message()), HasSubstr("queue limit"));
    EXPECT_TRUE(absl::IsNotFound(store_->FindRunByRequestId(next[i].request_id).status()));
  }
  EXPECT_EQ(manager_->queued_count(), 1);
  // A refused rate refuses the whole group and stores nothing.
  created = manager_->CreateRuns({{pair("workers/b", "workers/c"), "late/0"}}, now_, "hunt");
  EXPECT_EQ(created[0].status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::IsNotFound(store_->FindRunByRequestId("late/0").status()));
}

TEST_F(RunManagerTest, AWorkerSelectorPicksTheWorkers) {
  Register("a", "host-a", 2, {}, {}, {{"pool", "blue"}});
  Register("b", "host-b", 2, {}, {}, {{"pool", "green"}});
  v1::RunSpec by_label = Spec(1);
  by_label.set_workers("pool=green");
  const v1::Run green = Create(by_label);
  EXPECT_EQ(green.launcher(), "workers/b");
  EXPECT_TRUE(manager_->WorkersIdle("pool=blue").ok());  // only b is held
  EXPECT_FALSE(manager_->WorkersIdle("pool=green").ok());
  EXPECT_FALSE(manager_->WorkersIdle("workers/b").ok());
  EXPECT_TRUE(manager_->WorkersIdle("a").ok());
  Status(green.launcher(), green.name(), v1::SUCCEEDED, 0);
  v1::RunSpec by_name = Spec(1);
  by_name.set_workers("workers/a");
  EXPECT_EQ(Create(by_name).launcher(), "workers/a");
  v1::RunSpec nobody = Spec(1);
  nobody.set_workers("pool=red");
  absl::StatusOr<v1::Run> refused = manager_->CreateRun(nobody, "", now_);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("workers"));
  nobody.set_workers("not a name!");
  EXPECT_EQ(manager_->CreateRun(nobody, "", now_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Quarantine (docs/design/workflows.md#hunts): a SUSPECT worker gets only runs that
// name it; the reason is shown with it; it holds across a worker and a
// coordinator restart; an operator's clear ends it and queued runs start.
TEST_F(RunManagerTest, ASuspectWorkerGetsOnlyRunsThatNameItUntilCleared) {
  const uint64_t session = Register("a", "host-a", 1);
  Register("b", "host-b", 1);
  v1::WorkerSuspicion why;
  why.set_reason("CONFIRMED_BAD: 0.2 of the fleet median");
  why.set_hunt("workflows/hunt-1");
  why.add_runs("runs/r1");
  absl::StatusOr<v1::Worker> marked = fleet_->SuspectWorker("a", why);
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_EQ(marked->state(), v1::SUSPECT);
  EXPECT_EQ(marked->suspect().reason(), why.reason());
  const std::vector<v1::Worker> listed = fleet_->ListWorkers();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].state(), v1::SUSPECT);
  EXPECT_EQ(listed[0].suspect().hunt(), "workflows/hunt-1");
  // An ordinary run avoids it; one that names it may use it.
  const v1::Run first = Create(Spec(1));
  EXPECT_EQ(first.launcher(), "workers/b");
  const v1::Run waits = Create(Spec(1));
  EXPECT_EQ(waits.state(), v1::QUEUED);
  EXPECT_THAT(Get(waits.name()).waiting_reason(), HasSubstr(first.name()));
  v1::RunSpec named = Spec(1);
  named.set_workers("workers/a");
  const v1::Run on_a = Create(named);
  EXPECT_EQ(on_a.launcher(), "workers/a");
  Status("workers/a", on_a.name(), v1::SUCCEEDED, 0);
  // It holds while the worker restarts and across a coordinator restart.
  fleet_->OnDisconnect("workers/a", session, now_);
  Register("a", "host-a", 1);
  EXPECT_EQ(fleet_->GetWorker("a")->suspect().reason(), why.reason());
  fleet_->Tick(now_);
  Restart();
  EXPECT_TRUE(fleet_->ListWorkers()[0].has_suspect());
  Register("a", "host-a", 1);
  Register("b", "host-b", 1);
  EXPECT_EQ(fleet_->GetWorker("a")->state(), v1::SUSPECT);
  EXPECT_EQ(fleet_->ClearWorker("b", "test", now_).status().code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<v1::Worker> cleared = fleet_->ClearWorker("workers/a", "test", now_);
  ASSERT_TRUE(cleared.ok()) << cleared.status();
  EXPECT_EQ(cleared->state(), v1::READY);
  EXPECT_FALSE(cleared->has_suspect());
  EXPECT_EQ(fleet_->ClearWorker("nobody", "test", now_).status().code(),
            absl::StatusCode::kNotFound);
}

// Hang attribution (docs/design/run-lifecycle.md#hang-attribution): the ranks'
// progress relayed by their workers is kept on the run; no rank advancing for
// the hang timeout (30 s by default) fails the run naming the rank whose
// process stopped, its host, and where the others wait; a rank that moves keeps
// the run alive.
TEST_F(RunManagerTest, ARunWhoseRanksStandStillFailsNamingTheStoppedRank) {
  const uint64_t session_a = Register("a", "host-a", 2);
  const uint64_t session_b = Register("b", "host-b", 2);
  v1::RunSpec spec = Spec(4);
  spec.set_workers("a,b");
  const v1::Run run = Create(spec);
  ASSERT_EQ(run.state(), v1::SCHEDULED);
  Status(run.launcher(), run.name(), v1::RUNNING);
  // The placement: ranks 0, 1 on one worker, 2, 3 on the other.
  const v1::Run placed = Get(run.name());
  ASSERT_EQ(placed.hosts_size(), 2);
  auto report = [&](const std::string& worker, int first, int64_t iteration,
                    const std::string& process, double cpu) {
    v1::RankProgressReport r;
    r.set_run(run.name());
    for (int rank = first; rank < first + 2; ++rank) {
      v1::RankProgress* p = r.add_ranks();
      p->set_rank(rank);
      p->set_host(worker == "workers/a" ? "host-a" : "host-b");
      p->set_operation("allreduce");
      p->set_bytes(1024);
      p->set_size_index(1);
      p->set_iteration(iteration);
      p->set_iterations(1000);
      p->set_phase("measure");
      p->set_process(rank == 2 ? process : "running");
      p->set_cpu_seconds(cpu);
    }
    manager_->OnRankProgress(worker, r, now_);
  };
  const std::string w0 = placed.hosts(0).worker(), w1 = placed.hosts(1).worker();
  report(w0, 0, 411, "running", 1);
  report(w1, 2, 411, "running", 1);
  now_ += absl::Seconds(1);
  report(w0, 0, 412, "running", 2);
  report(w1, 2, 412, "running", 2);
  EXPECT_EQ(Get(run.name()).rank_progress_size(), 4);
  // A worker speaks only for its own ranks: another's, or one the run does
  // not have, is ignored.
  v1::RankProgressReport forged;
  forged.set_run(run.name());
  for (const int rank : {2, 3, 4, -1}) {
    v1::RankProgress* p = forged.add_ranks();
    p->set_rank(rank);
    p->set_iteration(999);
    p->set_phase("done");
  }
  manager_->OnRankProgress(w0, forged, now_);
  const v1::Run after_forged = Get(run.name());
  ASSERT_EQ(after_forged.rank_progress_size(), 4);
  for (const v1::RankProgress& r : after_forged.rank_progress()) {
    EXPECT_EQ(r.iteration(), 412) << "rank " << r.rank();
  }
  // Rank 2 stops inside iteration 412; the others wait in it, spinning.
  auto beat = [&] {
    fleet_->OnHeartbeat("workers/a", session_a, now_);
    fleet_->OnHeartbeat("workers/b", session_b, now_);
  };
  for (int s = 0; s < 29; ++s) {
    now_ += absl::Seconds(1);
    beat();
    report(w0, 0, 412, "running", 3 + s);
    report(w1, 2, 412, "stopped", 3 + s);
    fleet_->Tick(now_);
  }
  EXPECT_EQ(Get(run.name()).state(), v1::RUNNING) << "ended before the hang timeout";
  now_ += absl::Seconds(2);
  beat();
  fleet_->Tick(now_);
  const v1::Run failed = Get(run.name());
  ASSERT_EQ(failed.state(), v1::FAILED);
  const std::string host2 = w1 == "workers/b" ? "host-b" : "host-a";
  EXPECT_THAT(failed.error(), HasSubstr("rank 2 on " + host2));
  EXPECT_THAT(failed.error(), HasSubstr("stopped in allreduce 1K iteration 412/1000"));
  EXPECT_THAT(failed.error(), HasSubstr("3 ranks wait in allreduce 1K iteration 412/1000"));
  int behind = -1;
  for (const v1::RankProgress& r : failed.rank_progress()) {
    if (r.behind()) behind = r.rank();
  }
  EXPECT_EQ(behind, 2);
}

TEST_F(RunManagerTest, RanksThatKeepMovingAreNeverAHang) {
  const uint64_t session = Register("a", "host-a", 2);
  const v1::Run run = Create(Spec(2));
  Status(run.launcher(), run.name(), v1::RUNNING);
  for (int s = 0; s < 120; ++s) {
    v1::RankProgressReport r;
    r.set_run(run.name());
    for (int rank = 0; rank < 2; ++rank) {
      v1::RankProgress* p = r.add_ranks();
      p->set_rank(rank);
      p->set_operation("allreduce");
      p->set_phase("measure");
      p->set_iteration(s);
    }
    manager_->OnRankProgress(run.launcher(), r, now_);
    now_ += absl::Seconds(1);
    fleet_->OnHeartbeat("workers/a", session, now_);
    fleet_->Tick(now_);
  }
  EXPECT_EQ(Get(run.name()).state(), v1::RUNNING);
  // A worker that is not the run's may not report for it.
  Register("x", "host-x", 2);
  v1::RankProgressReport stranger;
  stranger.set_run(run.name());
  stranger.add_ranks()->set_rank(0);
  manager_->OnRankProgress("workers/x", stranger, now_);
  EXPECT_EQ(Get(run.name()).rank_progress(0).iteration(), 119);
}

}  // namespace
}  // namespace collbench

namespace collbench {
namespace {

// The lock-order check of this binary's main (tests/unit/support) is live:
// two mutexes taken in both orders end the test, even on one thread and
// with no deadlock happening.
TEST(LockOrderCheckTest, TwoMutexesTakenInBothOrdersAbort) {
  EXPECT_DEATH(
      {
        absl::Mutex first;
        absl::Mutex second;
        {
          absl::MutexLock a(&first);
          absl::MutexLock b(&second);
        }
        absl::MutexLock b(&second);
        absl::MutexLock a(&first);
      },
      "Potential Mutex deadlock");
}

}  // namespace
}  // namespace collbench
