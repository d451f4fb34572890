// SPDX-License-Identifier: Apache-2.0
// Worker identity and what workers may send (docs/design/security.md#worker-identity): per-worker
// secrets, no takeover of a known name, registration caps, the agent
// address grammar, messages only from a run's launcher, and results bounded
// by the spec. The manager is driven directly, as the gateway drives it.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "api/result_bounds.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/core.h"
#include "server/core/worker_credentials.h"
#include "tests/unit/server/gated_store.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class RecordingLink final : public WorkerLink {
 public:
  bool Send(const std::string& worker, const v1::CoordinatorMessage& message) override {
    sent[worker].push_back(message);
    return true;
  }
  int Count(const std::string& worker, v1::CoordinatorMessage::MessageCase kind) {
    int n = 0;
    for (const auto& m : sent[worker]) n += m.message_case() == kind;
    return n;
  }
  std::map<std::string, std::vector<v1::CoordinatorMessage>> sent;
};

class RecordingSink final : public RunEventSink {
 public:
  void OnEvent(const v1::RunEvent& event) override { events.push_back(event); }
  void OnEnd() override {}
  std::vector<v1::RunEvent> events;
};

class WorkerIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    hub_.AddObserver(sink_);
    Restart();
  }

  void Restart(CoreOptions options = {}) {
    core_.reset();
    core_ = std::make_unique<Core>(store_.get(), &hub_, &link_, std::move(options));
    manager_ = &core_->runs();
    fleet_ = &core_->fleet();
    registry_ = &core_->registry();
    ASSERT_TRUE(core_->Recover(now_).ok());
  }

  void TearDown() override { EXPECT_EQ(BlockingUnderLockCount(), 0); }

  static v1::Register Hello(const std::string& id, const std::string& address,
                            const std::string& secret = "") {
    v1::Register hello;
    hello.set_worker_id(id);
    hello.set_slots(1);
    hello.set_agent_address(address);
    hello.set_worker_secret(secret);
    hello.mutable_inventory()->set_host_id("host-" + id);
    hello.mutable_inventory()->set_memory_bytes(uint64_t{8} << 30);
    return hello;
  }

  // Registers a new name (or a known one with its secret); returns the
  // session, remembering the secret issued.
  uint64_t Join(const std::string& id, const std::string& peer = "ipv4:10.0.0.1:4000") {
    auto registration = fleet_->OnRegister(Hello(id, id + ":7000", secrets_[id]), now_, peer);
    EXPECT_TRUE(registration.ok()) << registration.status();
    if (!registration.ok()) return 0;
    if (!registration->reply.worker_secret().empty()) {
      secrets_[id] = registration->reply.worker_secret();
    }
    return registration->session;
  }

  v1::RunSpec Spec(int ranks) {
    v1::RunSpec spec;
    spec.set_operation("allreduce");
    spec.set_ranks(ranks);
    spec.mutable_placement()->set_policy(v1::SPREAD);
    spec.add_sizes_bytes(8);
    spec.add_sizes_bytes(1024);
    return spec;
  }

  std::unique_ptr<Store> store_ = NewMemoryStore();
  WatchHub hub_;
  std::shared_ptr<RecordingSink> sink_ = std::make_shared<RecordingSink>();
  RecordingLink link_;
  std::unique_ptr<Core> core_;
  RunManager* manager_ = nullptr;
  Fleet* fleet_ = nullptr;
  scheduling::WorkerRegistry* registry_ = nullptr;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  std::map<std::string, std::string> secrets_;
};

TEST(WorkerCredentialsTest, SecretsAreRandom256BitAndOnlyTheirHashMatches) {
  const std::string a = *NewWorkerSecret();
  const std::string b = *NewWorkerSecret();
  EXPECT_EQ(a.size(), 64u);  // 32 bytes in hex
  EXPECT_NE(a, b);
  const std::string hash = HashWorkerSecret(a);
  EXPECT_THAT(hash, Not(HasSubstr(a)));
  EXPECT_TRUE(WorkerSecretMatches(a, hash));
  EXPECT_FALSE(WorkerSecretMatches(b, hash));
  EXPECT_FALSE(WorkerSecretMatches("", HashWorkerSecret("")));
  EXPECT_FALSE(WorkerSecretMatches(a, hash.substr(1)));
}

// The engine reports one result per size and (dtype, redop) combination:
// the bound covers every combination `all` can ask for.
TEST(ResultBoundsTest, BoundsAreNeverBelowWhatTheEngineCanReport) {
  v1::RunSpec spec;
  spec.set_operation("allreduce");
  spec.set_ranks(2);
  spec.add_sizes_bytes(8);
  spec.add_sizes_bytes(1024);
  ResultBounds one = BoundsOfSpec(spec);
  EXPECT_GE(one.max_results, 2);
  EXPECT_LT(one.max_results, 100);
  EXPECT_EQ(one.sizes.count(8), 1u);
  EXPECT_EQ(one.sizes.count(1024), 1u);
  EXPECT_EQ(one.sizes.count(4096), 0u);
  spec.set_dtype("all");
  spec.set_redop("all");
  ResultBounds all = BoundsOfSpec(spec);
  EXPECT_GE(all.max_results, 2 * 7 * 4);  // sizes x dtypes x redops
  EXPECT_GE(all.max_distinct_sizes, 2);
}

TEST_F(WorkerIdentityTest, FirstRegistrationIssuesASecretAndStoresOnlyItsHash) {
  Join("a");
  ASSERT_EQ(secrets_["a"].size(), 64u);
  auto hashes = store_->ListWorkerCredentials();
  ASSERT_TRUE(hashes.ok());
  ASSERT_EQ(hashes->count("workers/a"), 1u);
  EXPECT_THAT(hashes->at("workers/a").secret_hash, Not(HasSubstr(secrets_["a"])));
  EXPECT_TRUE(WorkerSecretMatches(secrets_["a"], hashes->at("workers/a").secret_hash));
  // A reconnect with the secret is issued none.
  auto again = fleet_->OnRegister(Hello("a", "a:7000", secrets_["a"]), now_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->reply.worker_secret().empty());
  EXPECT_EQ(fleet_->worker_counts().registrations["new"], 1);
  EXPECT_EQ(fleet_->worker_counts().registrations["reconnected"], 1);
}

// A gated store (tests/unit/server/gated_store.h), to see when a new
// worker is answered.
class WorkerIdentityGatedTest : public WorkerIdentityTest {
 protected:
  void SetUp() override {
    auto gated = std::make_unique<GatedStore>();
    gated_ = gated.get();
    store_ = std::move(gated);
    WorkerIdentityTest::SetUp();
  }
  GatedStore* gated_ = nullptr;
};

// A new worker's secret is handed out only once its hash is durable, and
// no thread waits meanwhile: the answer comes when the commit returns.
TEST_F(WorkerIdentityGatedTest, ANewNameIsAnsweredOnlyOnceItsCredentialIsDurable) {
  gated_->Hold();
  const int before = gated_->entered();
  absl::Notification answered;
  absl::StatusOr<WorkerDirectory::Registration> outcome;
  fleet_->OnRegisterAsync(Hello("a", "a:7000"), now_, "ipv4:10.0.0.1:4000",
                          [&](absl::StatusOr<WorkerDirectory::Registration> r) {
                            outcome = std::move(r);
                            answered.Notify();
                          });
  gated_->AwaitEntered(before + 1);  // the hash's transaction has begun
  EXPECT_FALSE(answered.HasBeenNotified());
  EXPECT_FALSE(registry_->Get("workers/a").ok());  // not joined either
  // The same name meanwhile is refused as busy, not issued a second secret.
  auto busy = fleet_->OnRegister(Hello("a", "a:7000"), now_, "ipv4:10.0.0.1:4000");
  EXPECT_EQ(busy.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(busy.status().message(), HasSubstr("being registered"));
  gated_->Release();
  answered.WaitForNotification();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->reply.worker_secret().size(), 64u);
  auto hashes = store_->ListWorkerCredentials();
  ASSERT_TRUE(hashes.ok());
  ASSERT_EQ(hashes->count("workers/a"), 1u);
  EXPECT_TRUE(
      WorkerSecretMatches(outcome->reply.worker_secret(), hashes->at("workers/a").secret_hash));
  EXPECT_TRUE(registry_->Get("workers/a").ok());
}

// A credential the store could not keep is never handed out: the worker is
// refused, naming why, and the name stays new (nothing was kept of it).
TEST_F(WorkerIdentityGatedTest, ACredentialTheStoreRefusedIsNotHandedOut) {
  gated_->SetFail(true);
  auto refused = fleet_->OnRegister(Hello("a", "a:7000"), now_, "ipv4:10.0.0.1:4000");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("cannot record workers/a's credential"));
  EXPECT_FALSE(registry_->Get("workers/a").ok());
  EXPECT_EQ(fleet_->worker_counts().registrations["refused_store"], 1);
  gated_->SetFail(false);
  Join("a");  // as a new name again, with no secret
  EXPECT_EQ(secrets_["a"].size(), 64u);
}

// The takeover that worked before: a second registration under a live name
// with the join token replaced the entry, and the next run went to it.
TEST_F(WorkerIdentityTest, SecondRegistrationUnderALiveNameIsRefusedAndChangesNothing) {
  CoreOptions options;
  options.workers.tokens.Add(Role::kWorker, "join-1");
  Restart(options);
  v1::Register real = Hello("a", "a:7000");
  real.set_join_token("join-1");
  auto first = fleet_->OnRegister(real, now_);
  ASSERT_TRUE(first.ok()) << first.status();
  const uint64_t session = first->session;
  const std::string secret = first->reply.worker_secret();

  for (const std::string& presented : {std::string(), std::string("0123abcd"), secret + "0"}) {
    v1::Register impostor = Hello("a", "evil.example:6666", presented);
    impostor.set_join_token("join-1");
    auto refused = fleet_->OnRegister(impostor, now_, "ipv4:10.9.9.9:5555");
    ASSERT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied) << presented;
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr("register.worker_secret"));
    EXPECT_THAT(std::string(refused.status().message()), Not(HasSubstr(secret)));
  }
  EXPECT_EQ(fleet_->worker_counts().registrations["refused_secret"], 3);
  // The real worker keeps its address, state and session.
  auto worker = fleet_->GetWorker("workers/a");
  ASSERT_TRUE(worker.ok());
  EXPECT_EQ(worker->agent_address(), "a:7000");
  EXPECT_EQ(worker->state(), v1::READY);
  EXPECT_TRUE(registry_->Heartbeat("workers/a", session, now_).ok());
  // The next run goes to the real worker, at its real address.
  auto run = manager_->CreateRun(Spec(1), "", now_);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->launcher(), "workers/a");
  ASSERT_EQ(link_.Count("workers/a", v1::CoordinatorMessage::kAssignment), 1);
  for (const auto& m : link_.sent["workers/a"]) {
    if (!m.has_assignment()) continue;
    ASSERT_EQ(m.assignment().peers_size(), 1);
    EXPECT_EQ(m.assignment().peers(0).agent_address(), "a:7000");
  }
}

TEST_F(WorkerIdentityTest, KnownLostNameComesBackOnlyWithItsSecret) {
  const uint64_t session = Join("a");
  fleet_->OnDisconnect("workers/a", session, now_);
  ASSERT_EQ(fleet_->GetWorker("workers/a")->state(), v1::LOST);
  auto refused = fleet_->OnRegister(Hello("a", "evil:1"), now_);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(fleet_->GetWorker("workers/a")->state(), v1::LOST);
  EXPECT_EQ(fleet_->GetWorker("workers/a")->agent_address(), "a:7000");
  Join("a");
  EXPECT_EQ(fleet_->GetWorker("workers/a")->state(), v1::READY);
}

TEST_F(WorkerIdentityTest, SecretStillAdmitsAfterACoordinatorRestartOnSqlite) {
  char pattern[] = "/tmp/collbench-identity-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  {
    auto sqlite = OpenSqliteStore(dir + "/store.db");
    ASSERT_TRUE(sqlite.ok()) << sqlite.status();
    store_ = *std::move(sqlite);
    Restart();
    Join("a");
    fleet_->Tick(now_);
    core_.reset();
    store_.reset();
  }
  auto reopened = OpenSqliteStore(dir + "/store.db");
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  store_ = *std::move(reopened);
  Restart();
  EXPECT_EQ(fleet_->OnRegister(Hello("a", "evil:1"), now_).status().code(),
            absl::StatusCode::kPermissionDenied);
  Join("a");
  EXPECT_EQ(fleet_->GetWorker("workers/a")->state(), v1::READY);
  core_.reset();
  store_.reset();
  std::filesystem::remove_all(dir);
}

TEST_F(WorkerIdentityTest, ForgottenNameJoinsAnewButNotWhileConnected) {
  const uint64_t session = Join("a");
  EXPECT_EQ(fleet_->ForgetWorker("workers/a").code(), absl::StatusCode::kFailedPrecondition);
  fleet_->OnDisconnect("workers/a", session, now_);
  ASSERT_TRUE(fleet_->ForgetWorker("a").ok());
  EXPECT_FALSE(fleet_->GetWorker("workers/a").ok());
  EXPECT_EQ(store_->ListWorkerCredentials()->count("workers/a"), 0u);
  secrets_.erase("a");
  Join("a");  // with the join token alone, issued a new secret
  EXPECT_EQ(secrets_["a"].size(), 64u);
  EXPECT_EQ(fleet_->ForgetWorker("workers/nobody").code(), absl::StatusCode::kNotFound);
}

TEST_F(WorkerIdentityTest, TotalWorkersAreCapped) {
  CoreOptions options;
  options.workers.max_workers = 2;
  Restart(options);
  Join("a");
  Join("b");
  auto refused = fleet_->OnRegister(Hello("c", "c:1"), now_);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(fleet_->GetWorker("workers/c").ok());
  Join("a");  // a known name with its secret still comes back
  EXPECT_EQ(fleet_->worker_counts().registrations["refused_max_workers"], 1);
}

TEST_F(WorkerIdentityTest, NewNamesPerSourceAddressAreRateLimited) {
  CoreOptions options;
  options.workers.register_rate = {/*per_second=*/1, /*burst=*/2};
  Restart(options);
  Join("a", "ipv4:10.0.0.1:1000");
  Join("b", "ipv4:10.0.0.1:1001");
  // Another port of the same address shares its bucket.
  EXPECT_EQ(fleet_->OnRegister(Hello("c", "c:1"), now_, "ipv4:10.0.0.1:1002").status().code(),
            absl::StatusCode::kResourceExhausted);
  Join("d", "ipv4:10.0.0.2:1000");  // another source
  Join("a", "ipv4:10.0.0.1:1003");  // a known name is not a new one
  now_ += absl::Seconds(1);
  Join("c", "ipv4:10.0.0.1:1004");
  EXPECT_EQ(fleet_->worker_counts().registrations["refused_rate"], 1);
}

TEST_F(WorkerIdentityTest, AgentAddressAndWorkerIdFollowTheirGrammar) {
  for (const std::string& bad :
       {"", "node1", "node1:0", "node1:70000", "0.0.0.0:7000", "[::]:7000", "a b:1", "a;id:1",
        "-a:1", "$(id):1", "a..b:1", "[fe80::1%eth0]:1", "::1:7000"}) {
    auto refused = fleet_->OnRegister(Hello("w", bad), now_);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr("register.agent_address"));
  }
  for (const std::string& good :
       {"node-1.example.org:50052", "10.0.0.5:1", "[::1]:7000", "[fe80::1]:7000", "host_1:65535"}) {
    v1::Register hello = Hello("w", good, secrets_["w"]);
    auto admitted = fleet_->OnRegister(hello, now_);
    EXPECT_TRUE(admitted.ok()) << good << ": " << admitted.status();
    if (admitted.ok() && !admitted->reply.worker_secret().empty()) {
      secrets_["w"] = admitted->reply.worker_secret();
    }
  }
  for (const std::string& bad :
       std::vector<std::string>{"../x", "a/b", ".hidden", "-x", "a b", std::string(129, 'a')}) {
    auto refused = fleet_->OnRegister(Hello(bad, "ok:1"), now_);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr("register.worker_id"));
  }
  // A refused registration leaves no credential behind.
  EXPECT_EQ(store_->ListWorkerCredentials()->size(), 1u);
}

// A name gone for longer than forget_after is forgotten: it no longer
// counts against max_workers, and its secret is gone; a name connected, or
// gone for less, stays.
TEST_F(WorkerIdentityTest, NamesGoneLongerThanTheWindowAreForgottenAndFreeTheirPlace) {
  CoreOptions options;
  options.workers.max_workers = 2;
  options.workers.forget_after = absl::Hours(24);
  Restart(std::move(options));
  const uint64_t old_session = Join("old");
  Join("live");
  fleet_->OnDisconnect("workers/old", old_session, now_);
  auto refused = fleet_->OnRegister(Hello("new", "new:7000"), now_);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  now_ += absl::Hours(23);
  EXPECT_TRUE(fleet_->ForgetGoneWorkers(now_).empty());
  now_ += absl::Hours(2);
  EXPECT_EQ(fleet_->ForgetGoneWorkers(now_), std::vector<std::string>{"workers/old"});
  EXPECT_FALSE(store_->ListWorkerCredentials()->count("workers/old"));
  EXPECT_TRUE(store_->ListWorkerCredentials()->count("workers/live"));
  EXPECT_TRUE(fleet_->OnRegister(Hello("new", "new:7000"), now_).ok());
}

// An inventory a worker cannot honestly have (the review's 12,000 labels,
// an endless kernel string) is refused whole: no name, no credential, and
// nothing of it listed or kept.
TEST_F(WorkerIdentityTest, InventoriesBeyondTheirBoundsAreRefusedAndNothingIsKept) {
  v1::Register labels = Hello("fat", "fat:7000");
  for (int i = 0; i < 12000; ++i) {
    (*labels.mutable_inventory()->mutable_labels())["k" + std::to_string(i)] = "v";
  }
  auto refused = fleet_->OnRegister(labels, now_);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("register.inventory.labels: 12000 entries, at most 64"));
  v1::Register kernel = Hello("long", "long:7000");
  kernel.mutable_inventory()->set_kernel(std::string(100000, 'k'));
  refused = fleet_->OnRegister(kernel, now_);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("register.inventory"));
  EXPECT_TRUE(fleet_->ListWorkers().empty());
  EXPECT_TRUE(store_->ListWorkerCredentials()->empty());
  EXPECT_TRUE(store_->ListWorkers()->empty());
}

// A registered worker that is not a run's launcher cannot report for it.
TEST_F(WorkerIdentityTest, ForeignStatusResultAndLogAreNotApplied) {
  Join("a");
  Join("b");
  Join("mallory");
  (void)fleet_->DrainWorker("workers/mallory");
  auto run = manager_->CreateRun(Spec(2), "", now_);
  ASSERT_TRUE(run.ok()) << run.status();
  const std::string launcher = run->launcher();
  const std::string peer = launcher == "workers/a" ? "workers/b" : "workers/a";
  sink_->events.clear();
  for (const std::string& foreign : {peer, std::string("workers/mallory")}) {
    v1::RunLog log;
    log.set_run(run->name());
    log.mutable_line()->set_text("INJECTED");
    manager_->OnLog(foreign, log, now_);
    v1::RunResult result;
    result.set_run(run->name());
    result.mutable_result()->set_sequence(0);
    result.mutable_result()->set_bytes(8);
    result.mutable_result()->set_operation("INJECTED");
    manager_->OnResult(foreign, result, now_);
    v1::RunStatus status;
    status.set_run(run->name());
    status.set_state(v1::FAILED);
    status.set_error("INJECTED");
    manager_->OnRunStatus(foreign, status, now_);
    EXPECT_EQ(link_.Count(foreign, v1::CoordinatorMessage::kAck), 0);
  }
  EXPECT_TRUE(manager_->GetResults(run->name())->empty());
  EXPECT_EQ(manager_->GetRun(run->name())->state(), v1::SCHEDULED);
  EXPECT_TRUE(sink_->events.empty());
  WorkerCounts counts = fleet_->worker_counts();
  EXPECT_EQ(counts.refused_messages["log_not_launcher"], 2);
  EXPECT_EQ(counts.refused_messages["result_not_launcher"], 2);
  EXPECT_EQ(counts.refused_messages["status_not_launcher"], 2);
  // The launcher's own log is applied.
  v1::RunLog log;
  log.set_run(run->name());
  log.mutable_line()->set_text("from the launcher");
  manager_->OnLog(launcher, log, now_);
  ASSERT_EQ(sink_->events.size(), 1u);
  EXPECT_EQ(sink_->events[0].log().text(), "from the launcher");
}

TEST_F(WorkerIdentityTest, ResultsBeyondWhatTheSpecCanProduceAreRefused) {
  Join("a");
  auto run = manager_->CreateRun(Spec(1), "", now_);
  ASSERT_TRUE(run.ok()) << run.status();
  auto send = [&](int64_t sequence) {
    v1::RunResult result;
    result.set_run(run->name());
    result.mutable_result()->set_sequence(sequence);
    result.mutable_result()->set_bytes(8);
    manager_->OnResult("workers/a", result, now_);
    manager_->FlushJournal();
  };
  send(0);
  send(1);
  // Two sizes, one dtype and redop: no real run reports a thousandth.
  send(1000);
  send(-1);
  EXPECT_EQ(manager_->GetResults(run->name())->size(), 2u);
  EXPECT_EQ(link_.Count("workers/a", v1::CoordinatorMessage::kAck), 2);
  EXPECT_EQ(fleet_->worker_counts().refused_messages["results_beyond_spec"], 2);
}

}  // namespace
}  // namespace collbench
