// SPDX-License-Identifier: Apache-2.0
// The Scheduler's rules as docs/design/run-lifecycle.md#scheduler states them:
// placement policies, whole host holding, FIFO with backfill, and runs that can
// never start.
#include "server/scheduling/scheduler.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench::scheduling {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

WorkerInfo Worker(const std::string& id, const std::string& host, int slots = 1,
                  bool schedulable = true) {
  return {"workers/" + id, host, slots, schedulable, schedulable ? "" : "draining", nullptr};
}

PendingRun Pack(const std::string& id, int ranks, bool share_host = false) {
  PendingRun run;
  run.name = "runs/" + id;
  run.ranks = ranks;
  run.policy = PlacementPolicy::kPack;
  run.share_host = share_host;
  return run;
}

PendingRun Spread(const std::string& id, int ranks, bool share_host = false) {
  PendingRun run = Pack(id, ranks, share_host);
  run.policy = PlacementPolicy::kSpread;
  return run;
}

PendingRun Explicit(const std::string& id, std::vector<std::string> workers,
                    int ranks_per_worker) {
  PendingRun run =
      Pack(id, static_cast<int>(workers.size()) * ranks_per_worker);
  run.policy = PlacementPolicy::kExplicit;
  run.workers = std::move(workers);
  run.ranks_per_worker = ranks_per_worker;
  return run;
}

PlacedWorker On(const std::string& id, const std::string& host, int ranks) {
  return {"workers/" + id, host, ranks};
}

ScheduleResult Schedule(std::vector<WorkerInfo> workers,
                        std::vector<PendingRun> queue,
                        std::vector<ActiveRun> active = {}) {
  return Scheduler().Schedule(
      {std::move(workers), std::move(active), std::move(queue)});
}

std::vector<std::string> StartedRuns(const ScheduleResult& result) {
  std::vector<std::string> names;
  for (const Assignment& started : result.started) names.push_back(started.run);
  return names;
}

TEST(PackTest, FillsOneWorkerBeforeTheNext) {
  ScheduleResult result =
      Schedule({Worker("a", "h1", 4), Worker("b", "h1", 4)}, {Pack("r", 6)});
  ASSERT_EQ(result.started.size(), 1);
  EXPECT_THAT(result.started[0].placement,
              ElementsAre(On("a", "h1", 4), On("b", "h1", 2)));
  EXPECT_EQ(result.started[0].launcher(), "workers/a");
}

TEST(PackTest, UsesTheFewestWorkers) {
  ScheduleResult result =
      Schedule({Worker("a", "h1", 2), Worker("b", "h1", 4)}, {Pack("r", 3)});
  ASSERT_EQ(result.started.size(), 1);
  EXPECT_THAT(result.started[0].placement, ElementsAre(On("b", "h1", 3)));
}

TEST(PackTest, StaysOnTheSmallestHostThatFits) {
  ScheduleResult result = Schedule(
      {Worker("a", "h1", 4), Worker("b", "h1", 4), Worker("c", "h2", 4)},
      {Pack("r", 4)});
  ASSERT_EQ(result.started.size(), 1);
  EXPECT_THAT(result.started[0].placement, ElementsAre(On("c", "h2", 4)));
  EXPECT_THAT(result.started[0].held_workers, ElementsAre("workers/c"));
}

TEST(PackTest, CrossesHostsMostFreeSlotsFirst) {
  ScheduleResult result =
      Schedule({Worker("a", "h1", 2), Worker("b", "h2", 4)}, {Pack("r", 5)});
  ASSERT_EQ(result.started.size(), 1);
  EXPECT_THAT(result.started[0].placement,
              ElementsAre(On("b", "h2", 4), On("a", "h1", 1)));
}

TEST(SpreadTest, OneRankPerWorkerOnDistinctHostsFirst) {
  std::vector<WorkerInfo> workers = {
      Worker("a1", "h1", 4), Worker("a2", "h1", 4), Worker("b1", "h2", 4),
      Worker("b2", "h2", 4)};
  ScheduleResult two = Schedule(workers, {Spread("r", 2)});
  ASSERT_EQ(two.started.size(), 1);
  EXPECT_THAT(two.started[0].placement,
              ElementsAre(On("a1", "h1", 1), On("b1", "h2", 1)));

  ScheduleResult three = Schedule(workers, {Spread("r", 3)});
  ASSERT_EQ(three.started.size(), 1);
  EXPECT_THAT(
      three.started[0].placement,
      ElementsAre(On("a1", "h1", 1), On("b1", "h2", 1), On("a2", "h1", 1)));
}

TEST(SpreadTest, PrefersHostsWithFewerWorkersSoItHoldsLess) {
  ScheduleResult result =
      Schedule({Worker("a1", "h1"), Worker("a2", "h1"), Worker("a3", "h1"),
                Worker("b", "h2"), Worker("c", "h3")},
               {Spread("r", 2)});
  ASSERT_EQ(result.started.size(), 1);
  EXPECT_THAT(result.started[0].placement,
              ElementsAre(On("b", "h2", 1), On("c", "h3", 1)));
  EXPECT_THAT(result.started[0].held_workers,
              ElementsAre("workers/b", "workers/c"));
}

// Workers and hosts are taken in the fleet's order (when the coordinator
// first admitted each name), not by the names and host ids they report: a
// late worker named and hosted to sort first is not put first, nor into
// runs that do not need it.
TEST(OrderTest, WorkersAndHostsGoInAdmissionOrderNotByWhatTheyReport) {
  const absl::Time start = absl::FromUnixSeconds(1'800'000'000);
  auto admitted = [&](WorkerInfo worker, int second) {
    worker.admit_time = start + absl::Seconds(second);
    return worker;
  };
  const std::vector<WorkerInfo> workers = {
      admitted(Worker("0000-evil", "000", 2), 3), admitted(Worker("c", "host-c", 2), 2),
      admitted(Worker("b", "host-b", 2), 1), admitted(Worker("a2", "host-a", 2), 0),
      admitted(Worker("a1", "host-a", 2), 4)};
  // SPREAD: the hosts with fewer workers first, among them admitted first;
  // on a host, its workers admitted first.
  ScheduleResult spread = Schedule(workers, {Spread("r", 3)});
  ASSERT_EQ(spread.started.size(), 1);
  EXPECT_THAT(spread.started[0].placement,
              ElementsAre(On("b", "host-b", 1), On("c", "host-c", 1), On("0000-evil", "000", 1)));
  ScheduleResult whole = Schedule(workers, {Spread("r", 5)});
  ASSERT_EQ(whole.started.size(), 1);
  EXPECT_THAT(whole.started[0].placement,
              ElementsAre(On("b", "host-b", 1), On("c", "host-c", 1), On("0000-evil", "000", 1),
                          On("a2", "host-a", 1), On("a1", "host-a", 1)));
  // PACK on one host: of equal fits, the host admitted first.
  ScheduleResult pack = Schedule(workers, {Pack("r", 2)});
  ASSERT_EQ(pack.started.size(), 1);
  EXPECT_THAT(pack.started[0].placement, ElementsAre(On("b", "host-b", 2)));
  // PACK across hosts: most free slots first, then admitted first; on a
  // host, its workers admitted first.
  ScheduleResult across = Schedule(workers, {Pack("r", 8)});
  ASSERT_EQ(across.started.size(), 1);
  EXPECT_THAT(across.started[0].placement, ElementsAre(On("a2", "host-a", 2), On("a1", "host-a", 2),
                                                       On("b", "host-b", 2), On("c", "host-c", 2)));
  // Unknown admission (a worker the coordinator has no record of) comes
  // after every known one.
  std::vector<WorkerInfo> with_unknown = workers;
  with_unknown.push_back(Worker("00-unknown", "00"));
  ScheduleResult four = Schedule(with_unknown, {Spread("r", 4)});
  ASSERT_EQ(four.started.size(), 1);
  EXPECT_THAT(four.started[0].placement,
              ElementsAre(On("b", "host-b", 1), On("c", "host-c", 1), On("0000-evil", "000", 1),
                          On("00-unknown", "00", 1)));
}

TEST(ExplicitTest, UsesExactlyTheListedWorkersInOrder) {
  ScheduleResult result = Schedule(
      {Worker("a", "h1", 4), Worker("b", "h2", 4), Worker("c", "h3", 4)},
      {Explicit("r", {"workers/c", "a"}, 2)});
  ASSERT_EQ(result.started.size(), 1);
  EXPECT_THAT(result.started[0].placement,
              ElementsAre(On("c", "h3", 2), On("a", "h1", 2)));
  EXPECT_EQ(result.started[0].launcher(), "workers/c");
}

TEST(ExplicitTest, WaitsForABusyListedWorker) {
  ScheduleResult result = Schedule({Worker("a", "h1"), Worker("b", "h2")},
                                   {Explicit("r", {"a", "b"}, 1)},
                                   {{"runs/other", {"workers/b"}, false}});
  EXPECT_THAT(result.started, IsEmpty());
  EXPECT_THAT(result.unsatisfiable, IsEmpty());
}

TEST(QueueTest, SecondRunWaitsWhileTheFirstHoldsTheWorkers) {
  std::vector<WorkerInfo> workers = {Worker("a", "h1"), Worker("b", "h2")};
  ScheduleResult result = Schedule(workers, {Spread("r1", 2), Spread("r2", 2)});
  EXPECT_THAT(StartedRuns(result), ElementsAre("runs/r1"));

  ActiveRun r1{"runs/r1", result.started[0].held_workers, false};
  EXPECT_THAT(Schedule(workers, {Spread("r2", 2)}, {r1}).started, IsEmpty());
  EXPECT_THAT(StartedRuns(Schedule(workers, {Spread("r2", 2)})),
              ElementsAre("runs/r2"));
}

TEST(HostTest, ARunHoldsEveryWorkerOnTheHostsItTouches) {
  ScheduleResult result = Schedule({Worker("a", "h1"), Worker("b", "h1")},
                                   {Pack("r1", 1), Pack("r2", 1)});
  EXPECT_THAT(StartedRuns(result), ElementsAre("runs/r1"));
  EXPECT_THAT(result.started[0].placement, ElementsAre(On("a", "h1", 1)));
  EXPECT_THAT(result.started[0].held_workers,
              ElementsAre("workers/a", "workers/b"));
}

TEST(HostTest, ARunWithoutShareHostNeedsTheWholeHostFree) {
  ScheduleResult result =
      Schedule({Worker("a", "h1"), Worker("b", "h1")}, {Pack("r", 1)},
               {{"runs/shared", {"workers/a"}, true}});
  EXPECT_THAT(result.started, IsEmpty());
}

TEST(HostTest, ShareHostRunsCoexistOnAHost) {
  ScheduleResult result = Schedule({Worker("a", "h1"), Worker("b", "h1")},
                                   {Pack("r1", 1, true), Pack("r2", 1, true)});
  EXPECT_THAT(StartedRuns(result), ElementsAre("runs/r1", "runs/r2"));
  EXPECT_THAT(result.started[0].held_workers, ElementsAre("workers/a"));
  EXPECT_THAT(result.started[1].held_workers, ElementsAre("workers/b"));
}

TEST(HostTest, ShareHostRunCannotUseAHostHeldWhole) {
  // workers/b registered after runs/r0 took host h1 whole.
  ScheduleResult result =
      Schedule({Worker("a", "h1"), Worker("b", "h1")}, {Pack("r", 1, true)},
               {{"runs/r0", {"workers/a"}, false}});
  EXPECT_THAT(result.started, IsEmpty());
}

TEST(BackfillTest, SmallRunStartsOnWorkersTheBlockedHeadDoesNotNeed) {
  std::vector<WorkerInfo> workers = {Worker("a", "h1"), Worker("b", "h2"),
                                     Worker("c", "h3"), Worker("d", "h4"),
                                     Worker("e", "h5")};
  ActiveRun busy{"runs/busy", {"workers/a", "workers/b"}, false};
  ScheduleResult result =
      Schedule(workers, {Spread("head", 4), Spread("small", 1)}, {busy});
  EXPECT_THAT(StartedRuns(result), ElementsAre("runs/small"));
  EXPECT_THAT(result.started[0].placement, ElementsAre(On("e", "h5", 1)));
  EXPECT_THAT(result.reserved_workers,
              ElementsAre("workers/a", "workers/b", "workers/c", "workers/d"));
}

TEST(BackfillTest, SmallRunMayNotTakeWorkersTheBlockedHeadNeeds) {
  std::vector<WorkerInfo> workers = {Worker("a", "h1"), Worker("b", "h2"),
                                     Worker("c", "h3"), Worker("d", "h4")};
  ActiveRun busy{"runs/busy", {"workers/a"}, false};
  ScheduleResult result =
      Schedule(workers, {Spread("head", 4), Pack("small", 1)}, {busy});
  EXPECT_THAT(result.started, IsEmpty());
}

TEST(BackfillTest, ReservationsCoverTheWholeHostsTheHeadWillHold) {
  // The head will use workers/a and so hold host h1 whole: workers/b is idle
  // but must stay free for it too.
  std::vector<WorkerInfo> workers = {Worker("a", "h1"), Worker("b", "h1"),
                                     Worker("c", "h2"), Worker("d", "h3")};
  ActiveRun busy{"runs/busy", {"workers/c"}, false};
  ScheduleResult result = Schedule(
      workers, {Explicit("head", {"a", "c"}, 1), Pack("small", 1, true)},
      {busy});
  EXPECT_THAT(StartedRuns(result), ElementsAre("runs/small"));
  EXPECT_THAT(result.started[0].placement, ElementsAre(On("d", "h3", 1)));
  EXPECT_THAT(result.reserved_workers,
              ElementsAre("workers/a", "workers/b", "workers/c"));
}

TEST(BackfillTest, StrictFifoStartsNothingBehindAWaitingRun) {
  std::vector<WorkerInfo> workers = {Worker("a", "h1"), Worker("b", "h2"),
                                     Worker("c", "h3")};
  ActiveRun busy{"runs/busy", {"workers/a"}, false};
  ScheduleResult result =
      Scheduler({.backfill = false})
          .Schedule({workers,
                     {busy},
                     {Spread("head", 3), Pack("small", 1), Pack("bad", 99)}});
  EXPECT_THAT(result.started, IsEmpty());
  ASSERT_EQ(result.unsatisfiable.size(), 1);
  EXPECT_EQ(result.unsatisfiable[0].run, "runs/bad");
}

TEST(AvailabilityTest, DrainingAndLostWorkersAreNotScheduled) {
  ScheduleResult result = Schedule({Worker("a", "h1", 1, /*schedulable=*/false),
                                    Worker("b", "h2"), Worker("c", "h3")},
                                   {Spread("r", 2)});
  ASSERT_EQ(result.started.size(), 1);
  EXPECT_THAT(result.started[0].placement,
              ElementsAre(On("b", "h2", 1), On("c", "h3", 1)));
}

TEST(AvailabilityTest, ARunNeedingAnUnavailableWorkerWaitsWithoutReserving) {
  ScheduleResult result =
      Schedule({Worker("a", "h1", 1, /*schedulable=*/false), Worker("b", "h2")},
               {Spread("head", 2), Pack("small", 1)});
  EXPECT_THAT(result.unsatisfiable, IsEmpty());
  EXPECT_THAT(StartedRuns(result), ElementsAre("runs/small"));
  EXPECT_THAT(result.reserved_workers, IsEmpty());
}

// The reason of an unsatisfiable run names the field to fix.
void ExpectUnsatisfiable(const PendingRun& run,
                         const std::vector<WorkerInfo>& workers,
                         const std::string& field) {
  absl::Status status = CheckSatisfiable(run, workers);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_TRUE(absl::StartsWith(status.message(), field + ": ")) << status;
}

TEST(SatisfiableTest, ReasonsNameTheField) {
  std::vector<WorkerInfo> workers = {Worker("a", "h1", 2),
                                     Worker("b", "h2", 2)};
  EXPECT_TRUE(CheckSatisfiable(Pack("r", 4), workers).ok());
  ExpectUnsatisfiable(Pack("r", 5), workers, "ranks");
  ExpectUnsatisfiable(Pack("r", 0), workers, "ranks");
  ExpectUnsatisfiable(Spread("r", 3), workers, "ranks");
  ExpectUnsatisfiable(Explicit("r", {"a", "zz"}, 1), workers,
                      "placement.workers");
  ExpectUnsatisfiable(Explicit("r", {"a", "workers/a"}, 1), workers,
                      "placement.workers");
  PendingRun no_workers = Explicit("r", {}, 1);
  no_workers.ranks = 1;
  ExpectUnsatisfiable(no_workers, workers, "placement.workers");
  ExpectUnsatisfiable(Explicit("r", {"a"}, 3), workers,
                      "placement.ranks_per_worker");
  PendingRun no_ranks_per_worker = Explicit("r", {"a"}, 0);
  no_ranks_per_worker.ranks = 1;
  ExpectUnsatisfiable(no_ranks_per_worker, workers,
                      "placement.ranks_per_worker");
  PendingRun mismatch = Explicit("r", {"a", "b"}, 2);
  mismatch.ranks = 3;
  ExpectUnsatisfiable(mismatch, workers, "ranks");
  PendingRun pack_with_list = Pack("r", 1);
  pack_with_list.workers = {"a"};
  ExpectUnsatisfiable(pack_with_list, workers, "placement.workers");
}

// A need no worker offers names its field and what the workers do offer;
// only the workers that offer every need count, and only they get ranks.
TEST(SatisfiableTest, NeedsOnlyTheWorkersThatOfferThemCount) {
  WorkerInfo cpu = Worker("cpu", "h1", 4);
  cpu.offers = std::make_shared<const std::vector<std::string>>(
      std::vector<std::string>{"backend=mpi", "mpi=openmpi"});
  WorkerInfo gpu = Worker("gpu", "h2", 2);
  gpu.offers = std::make_shared<const std::vector<std::string>>(
      std::vector<std::string>{"backend=mpi", "backend=nccl", "mpi=openmpi"});
  const std::vector<WorkerInfo> workers = {cpu, gpu};
  PendingRun nccl = Pack("r", 2);
  nccl.needs = {"backend=nccl", "mpi=openmpi"};
  EXPECT_TRUE(CheckSatisfiable(nccl, workers).ok());
  nccl.ranks = 3;  // 3 ranks, but the one nccl worker has 2 slots
  ExpectUnsatisfiable(nccl, workers, "ranks");
  EXPECT_THAT(std::string(CheckSatisfiable(nccl, workers).message()),
              ::testing::HasSubstr("registered workers that offer backend=nccl"));
  PendingRun mpich = Pack("r", 1);
  mpich.needs = {"backend=mpi", "mpi=mpich"};
  ExpectUnsatisfiable(mpich, workers, "mpi");
  EXPECT_EQ(CheckSatisfiable(mpich, workers).message(),
            "mpi: no registered worker offers \"mpich\" (they offer openmpi)");
  PendingRun named = Explicit("r", {"cpu"}, 1);
  named.needs = {"backend=nccl"};
  ExpectUnsatisfiable(named, workers, "placement.workers");
  // Placed on the worker that offers the needs, although the other has
  // more slots.
  nccl.ranks = 2;
  ScheduleResult result = Schedule(workers, {nccl});
  ASSERT_EQ(result.started.size(), 1u);
  EXPECT_THAT(result.started[0].placement, ElementsAre(PlacedWorker{"workers/gpu", "h2", 2}));
  // A worker that reports no list is not judged on it.
  WorkerInfo quiet = Worker("quiet", "h3", 1);
  quiet.offers = std::make_shared<const std::vector<std::string>>(
      std::vector<std::string>{"backend=*", "mpi=*"});
  EXPECT_TRUE(CheckSatisfiable(mpich, {quiet}).ok());
}

// A run that fits but cannot start says why: the workers it needs take no
// work now, running runs hold them, or earlier runs have them reserved.
TEST(WaitingTest, EveryWaitingRunSaysWhy) {
  const std::vector<WorkerInfo> workers = {Worker("a", "h1"), Worker("b", "h2", 1, false),
                                           Worker("c", "h3")};
  ScheduleResult result = Schedule(workers, {Explicit("named", {"a", "b"}, 1)});
  ASSERT_EQ(result.waiting.size(), 1u);
  EXPECT_EQ(result.waiting[0].run, "runs/named");
  EXPECT_EQ(result.waiting[0].reason, "waiting for workers/b (draining)");

  result = Schedule(workers, {Spread("two", 2), Spread("more", 2)},
                    {ActiveRun{"runs/holder", {"workers/a"}, false}});
  ASSERT_EQ(result.waiting.size(), 2u);
  EXPECT_EQ(result.waiting[0].reason, "waiting for runs/holder to release workers");
  // The second waits for the same workers, which the first keeps.
  EXPECT_EQ(result.waiting[1].run, "runs/more");
  EXPECT_EQ(result.waiting[1].reason, "waiting for runs/holder to release workers");

  result = Schedule({Worker("a", "h1"), Worker("c", "h3")}, {Spread("first", 2), Pack("small", 1)},
                    {ActiveRun{"runs/holder", {"workers/a"}, false}});
  // "small" fits on c, but c is kept for "first", queued before it.
  ASSERT_EQ(result.waiting.size(), 2u);
  EXPECT_EQ(result.waiting[1].run, "runs/small");
  EXPECT_THAT(result.waiting[1].reason, ::testing::StartsWith("waiting behind runs queued earlier"));
}

TEST(SatisfiableTest, UnavailableWorkersStillCount) {
  std::vector<WorkerInfo> workers = {Worker("a", "h1", 2, false)};
  EXPECT_TRUE(CheckSatisfiable(Pack("r", 2), workers).ok());
}

TEST(SatisfiableTest, UnsatisfiableRunsAreReportedAndBlockNothing) {
  ScheduleResult result =
      Schedule({Worker("a", "h1", 2)}, {Pack("huge", 3), Pack("fits", 2)});
  EXPECT_THAT(StartedRuns(result), ElementsAre("runs/fits"));
  ASSERT_EQ(result.unsatisfiable.size(), 1);
  EXPECT_EQ(result.unsatisfiable[0].run, "runs/huge");
  EXPECT_TRUE(
      absl::StartsWith(result.unsatisfiable[0].reason.message(), "ranks: "));
  EXPECT_THAT(result.reserved_workers, IsEmpty());
}

TEST(WorkerNameTest, BareIdsMatch) {
  EXPECT_TRUE(WorkerNameMatches("x", "workers/x"));
  EXPECT_TRUE(WorkerNameMatches("workers/x", "workers/x"));
  EXPECT_FALSE(WorkerNameMatches("y", "workers/x"));
  EXPECT_FALSE(WorkerNameMatches("", "workers/x"));
}

}  // namespace
}  // namespace collbench::scheduling
