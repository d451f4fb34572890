// SPDX-License-Identifier: Apache-2.0
// The worker table: registration, heartbeat expiry, reconnects, draining and
// holding, with time passed in explicitly.
#include "server/scheduling/worker_registry.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/scheduling/scheduler.h"

namespace collbench::scheduling {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr absl::Duration kTimeout = absl::Seconds(10);

const absl::Time kStart = absl::FromUnixSeconds(1700000000);

WorkerRegistration Registration(const std::string& id,
                                const std::string& host = "h1", int slots = 1) {
  return {"workers/" + id, host, slots, id + ":7070",
          std::make_shared<const std::vector<std::string>>(
              std::vector<std::string>{"backend=" + id})};
}

class WorkerRegistryTest : public ::testing::Test {
 protected:
  uint64_t MustRegister(const std::string& id, absl::Time now = kStart,
                        const std::string& host = "h1") {
    absl::StatusOr<uint64_t> session =
        registry_.Register(Registration(id, host), now);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.value_or(0);
  }
  WorkerState StateOf(const std::string& name) {
    absl::StatusOr<WorkerSnapshot> worker = registry_.Get(name);
    EXPECT_TRUE(worker.ok()) << worker.status();
    return worker.ok() ? worker->state : WorkerState::kLost;
  }

  WorkerRegistry registry_;
};

TEST_F(WorkerRegistryTest, RegisteredWorkerIsReadyWithWhatItReported) {
  MustRegister("b");
  MustRegister("a");
  std::vector<WorkerSnapshot> workers = registry_.List();
  ASSERT_EQ(workers.size(), 2);
  EXPECT_EQ(workers[0].name, "workers/a");
  EXPECT_EQ(workers[0].state, WorkerState::kReady);
  EXPECT_EQ(workers[0].agent_address, "a:7070");
  ASSERT_NE(workers[0].offers, nullptr);
  EXPECT_THAT(*workers[0].offers, ElementsAre("backend=a"));
  EXPECT_EQ(workers[0].register_time, kStart);
  EXPECT_EQ(workers[1].name, "workers/b");
  ASSERT_TRUE(registry_.Get("a").ok());  // the bare id finds it too
  EXPECT_EQ(registry_.Get("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(WorkerRegistryTest, ListPageIsTheSameSliceOfTheSortedList) {
  for (const char* id : {"d", "b", "e", "a", "c"}) MustRegister(id);
  WorkerRegistry::Page middle = registry_.ListPage(1, 3);
  EXPECT_EQ(middle.total, 5);
  ASSERT_EQ(middle.workers.size(), 3);
  EXPECT_EQ(middle.workers[0].name, "workers/b");
  EXPECT_EQ(middle.workers[2].name, "workers/d");
  ASSERT_NE(middle.workers[2].offers, nullptr);
  EXPECT_THAT(*middle.workers[2].offers, ElementsAre("backend=d"));
  WorkerRegistry::Page last = registry_.ListPage(4, 3);
  ASSERT_EQ(last.workers.size(), 1);
  EXPECT_EQ(last.workers[0].name, "workers/e");
  WorkerRegistry::Page past = registry_.ListPage(9, 3);
  EXPECT_THAT(past.workers, IsEmpty());
  EXPECT_EQ(past.total, 5);
}

TEST_F(WorkerRegistryTest, RegistrationNamesTheMissingField) {
  WorkerRegistration no_slots = Registration("a");
  no_slots.slots = 0;
  absl::Status status = registry_.Register(no_slots, kStart).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(status.message(), "slots: ")) << status;

  WorkerRegistration no_host = Registration("a");
  no_host.host_id.clear();
  status = registry_.Register(no_host, kStart).status();
  EXPECT_TRUE(absl::StartsWith(status.message(), "host_id: ")) << status;
  EXPECT_THAT(registry_.List(), IsEmpty());
}

TEST_F(WorkerRegistryTest, MarkedLostAfterTheTimeoutAndNotBefore) {
  MustRegister("a");
  EXPECT_THAT(registry_.ExpireStale(kStart + kTimeout, kTimeout), IsEmpty());
  EXPECT_EQ(StateOf("workers/a"), WorkerState::kReady);

  std::vector<WorkerSnapshot> lost = registry_.ExpireStale(
      kStart + kTimeout + absl::Milliseconds(1), kTimeout);
  ASSERT_EQ(lost.size(), 1);
  EXPECT_EQ(lost[0].name, "workers/a");
  EXPECT_EQ(lost[0].state, WorkerState::kLost);
  EXPECT_THAT(lost[0].lost_reason,
              HasSubstr("worker workers/a stopped heartbeating"));
  // Reported once: later sweeps do not return it again.
  EXPECT_THAT(registry_.ExpireStale(kStart + 2 * kTimeout, kTimeout),
              IsEmpty());
}

TEST_F(WorkerRegistryTest, HeartbeatsKeepAWorkerAlive) {
  uint64_t session = MustRegister("a");
  ASSERT_TRUE(
      registry_.Heartbeat("workers/a", session, kStart + absl::Seconds(8))
          .ok());
  EXPECT_THAT(registry_.ExpireStale(kStart + absl::Seconds(15), kTimeout),
              IsEmpty());
  EXPECT_EQ(registry_.Heartbeat("workers/zz", session, kStart).code(),
            absl::StatusCode::kNotFound);
}

TEST_F(WorkerRegistryTest, LostWorkerReportsTheRunItHolds) {
  MustRegister("a");
  ASSERT_TRUE(registry_.Hold("runs/r", {"workers/a"}, false).ok());
  std::vector<WorkerSnapshot> lost =
      registry_.ExpireStale(kStart + 2 * kTimeout, kTimeout);
  ASSERT_EQ(lost.size(), 1);
  EXPECT_EQ(lost[0].current_run, "runs/r");
}

TEST_F(WorkerRegistryTest, LostWorkerThatReconnectsIsReadyAgain) {
  uint64_t old_session = MustRegister("a");
  registry_.ExpireStale(kStart + 2 * kTimeout, kTimeout);
  ASSERT_EQ(StateOf("workers/a"), WorkerState::kLost);

  uint64_t new_session = MustRegister("a", kStart + 3 * kTimeout);
  EXPECT_NE(new_session, old_session);
  EXPECT_EQ(StateOf("workers/a"), WorkerState::kReady);
  EXPECT_EQ(registry_.Get("workers/a")->lost_reason, "");
  EXPECT_EQ(registry_.Get("workers/a")->register_time, kStart);
  // The replaced stream can neither keep it alive nor mark it lost.
  EXPECT_EQ(registry_.Heartbeat("workers/a", old_session, kStart).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(registry_.Disconnect("workers/a", old_session));
  EXPECT_EQ(StateOf("workers/a"), WorkerState::kReady);
}

TEST_F(WorkerRegistryTest, ReconnectingWorkerStillHoldingARunIsBusy) {
  uint64_t session = MustRegister("a");
  ASSERT_TRUE(registry_.Hold("runs/r", {"workers/a"}, false).ok());
  EXPECT_EQ(StateOf("workers/a"), WorkerState::kBusy);
  EXPECT_TRUE(registry_.Disconnect("workers/a", session));
  EXPECT_FALSE(registry_.Disconnect("workers/a", session));  // once
  EXPECT_EQ(registry_.Get("workers/a")->lost_reason,
            "worker workers/a disconnected");

  MustRegister("a", kStart + absl::Seconds(1));
  EXPECT_EQ(StateOf("workers/a"), WorkerState::kBusy);
  EXPECT_THAT(registry_.Release("runs/r"), ElementsAre("workers/a"));
  EXPECT_EQ(StateOf("workers/a"), WorkerState::kReady);
}

TEST_F(WorkerRegistryTest, DrainingWorkerTakesNothingNew) {
  MustRegister("a");
  MustRegister("b");
  ASSERT_TRUE(registry_.Hold("runs/r", {"workers/b"}, false).ok());
  ASSERT_TRUE(registry_.Drain("a").ok());
  ASSERT_TRUE(registry_.Drain("workers/b").ok());
  EXPECT_EQ(StateOf("workers/a"), WorkerState::kDraining);
  EXPECT_EQ(StateOf("workers/b"), WorkerState::kDraining);  // finishing runs/r
  EXPECT_EQ(registry_.Drain("zz").code(), absl::StatusCode::kNotFound);

  for (const WorkerInfo& info : registry_.SchedulerWorkers()) {
    EXPECT_FALSE(info.schedulable) << info.name;
  }
  MustRegister("a", kStart + absl::Seconds(1));  // a reconnect keeps the drain
  EXPECT_EQ(StateOf("workers/a"), WorkerState::kDraining);
  ASSERT_TRUE(registry_.Undrain("workers/a").ok());
  EXPECT_EQ(StateOf("workers/a"), WorkerState::kReady);
}

TEST_F(WorkerRegistryTest, LostWorkersAreNotSchedulable) {
  MustRegister("a");
  MustRegister("b", kStart + kTimeout);
  registry_.ExpireStale(kStart + kTimeout + absl::Seconds(1), kTimeout);
  std::vector<WorkerInfo> infos = registry_.SchedulerWorkers();
  ASSERT_EQ(infos.size(), 2);
  EXPECT_FALSE(infos[0].schedulable);  // workers/a, silent too long
  EXPECT_TRUE(infos[1].schedulable);
}

TEST_F(WorkerRegistryTest, HoldIsAllOrNothing) {
  MustRegister("a");
  MustRegister("b");
  ASSERT_TRUE(registry_.Hold("runs/r1", {"workers/a"}, false).ok());
  EXPECT_EQ(registry_.Hold("runs/r2", {"workers/b", "workers/a"}, false).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      registry_.Hold("runs/r2", {"workers/b", "workers/zz"}, false).code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(StateOf("workers/b"), WorkerState::kReady);
  EXPECT_EQ(registry_.Remove("workers/a").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(registry_.Remove("workers/b").ok());
  EXPECT_THAT(registry_.Release("runs/none"), IsEmpty());
}

TEST_F(WorkerRegistryTest, FeedsTheScheduler) {
  // Two containers on one host: the first run holds both, the second waits
  // until the first is released.
  MustRegister("a", kStart, "h1");
  MustRegister("b", kStart, "h1");
  PendingRun first{"runs/1", 1, PlacementPolicy::kPack, {}, 0, false, {}};
  PendingRun second{"runs/2", 1, PlacementPolicy::kPack, {}, 0, false, {}};
  Scheduler scheduler;

  ScheduleResult result = scheduler.Schedule(
      {registry_.SchedulerWorkers(), registry_.ActiveRuns(), {first, second}});
  ASSERT_EQ(result.started.size(), 1);
  const Assignment& started = result.started[0];
  ASSERT_TRUE(
      registry_.Hold(started.run, started.held_workers, started.share_host)
          .ok());
  EXPECT_EQ(StateOf("workers/b"), WorkerState::kBusy);
  std::vector<ActiveRun> active = registry_.ActiveRuns();
  ASSERT_EQ(active.size(), 1);
  EXPECT_THAT(active[0].held_workers, ElementsAre("workers/a", "workers/b"));

  EXPECT_THAT(
      scheduler
          .Schedule(
              {registry_.SchedulerWorkers(), registry_.ActiveRuns(), {second}})
          .started,
      IsEmpty());
  registry_.Release("runs/1");
  EXPECT_EQ(
      scheduler
          .Schedule(
              {registry_.SchedulerWorkers(), registry_.ActiveRuns(), {second}})
          .started.size(),
      1);
}

// A fleet that goes away at once (a network partition): half the streams
// end, half go silent. Every worker is LOST within one sweep past the
// timeout, with no cap per sweep, and every one comes back.
TEST_F(WorkerRegistryTest, WholeFleetIsLostInOneSweepAndComesBack) {
  constexpr int kWorkers = 10'000;
  std::vector<uint64_t> sessions;
  for (int i = 0; i < kWorkers; ++i) {
    sessions.push_back(MustRegister("w" + std::to_string(i), kStart, "h" + std::to_string(i)));
  }
  int disconnected = 0;
  for (int i = 0; i < kWorkers; i += 2) {
    disconnected += registry_.Disconnect("workers/w" + std::to_string(i), sessions[i]);
  }
  EXPECT_EQ(disconnected, kWorkers / 2);
  EXPECT_THAT(registry_.ExpireStale(kStart + kTimeout, kTimeout), IsEmpty());
  const std::vector<WorkerSnapshot> expired =
      registry_.ExpireStale(kStart + kTimeout + absl::Milliseconds(250), kTimeout);
  EXPECT_EQ(expired.size(), kWorkers / 2);  // the silent half, all of it
  int lost = 0;
  for (const WorkerSnapshot& w : registry_.List()) lost += w.state == WorkerState::kLost;
  EXPECT_EQ(lost, kWorkers);
  for (int i = 0; i < kWorkers; ++i) {
    MustRegister("w" + std::to_string(i), kStart + absl::Seconds(30), "h" + std::to_string(i));
  }
  for (const WorkerSnapshot& w : registry_.List()) EXPECT_EQ(w.state, WorkerState::kReady);
}

TEST(WorkerStateNameTest, MatchesTheProtoEnum) {
  EXPECT_EQ(WorkerStateName(WorkerState::kReady), "READY");
  EXPECT_EQ(WorkerStateName(WorkerState::kBusy), "BUSY");
  EXPECT_EQ(WorkerStateName(WorkerState::kDraining), "DRAINING");
  EXPECT_EQ(WorkerStateName(WorkerState::kLost), "LOST");
}

}  // namespace
}  // namespace collbench::scheduling
