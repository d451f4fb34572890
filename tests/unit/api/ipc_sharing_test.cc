// SPDX-License-Identifier: Apache-2.0
// Shared memory across workers (api/ipc_sharing.h and its use in
// validation): allowed when every worker the placement may use shares one
// IPC namespace on one host, refused naming the workers that do not.
#include "api/ipc_sharing.h"

#include <string>
#include <vector>

#include "api/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

constexpr uint64_t kHostIpc = 4026531839;  // the initial IPC namespace
constexpr uint64_t kHostPid = 4026531836;

// On host n1: podman containers a and b (b started with --ipc and --pid
// container:a), e sharing only a's IPC namespace, c with its own; on n2:
// d, whose namespace inodes happen to equal a's.
const WorkerIpc kA{"workers/a", "n1", 4026532300, 4026532301};
const WorkerIpc kB{"workers/b", "n1", 4026532300, 4026532301};
const WorkerIpc kE{"workers/e", "n1", 4026532300, 4026532401};
const WorkerIpc kC{"workers/c", "n1", 4026532500, 4026532501};
const WorkerIpc kD{"workers/d", "n2", 4026532300, 4026532301};

TEST(IpcSharingTest, ContainersSharingIpcAndPidNamespacesShareMemoryWithCma) {
  const IpcSharing sharing = DecideIpcSharing({kA, kB});
  EXPECT_TRUE(sharing.shared);
  EXPECT_EQ(sharing.single_copy_mechanism, "cma");
  EXPECT_EQ(sharing.reason, "");
  EXPECT_EQ(sharing.pid_reason, "");
}

TEST(IpcSharingTest, SharingOnlyTheIpcNamespaceGivesNoSingleCopyAndSaysWhy) {
  const IpcSharing sharing = DecideIpcSharing({kA, kB, kE});
  EXPECT_TRUE(sharing.shared);
  EXPECT_EQ(sharing.single_copy_mechanism, "none");
  EXPECT_EQ(sharing.pid_reason,
            "workers/e (pid:[4026532401]) is not in the PID namespace of workers/a "
            "(pid:[4026532301])");
}

TEST(IpcSharingTest, ProcessesOnOneHostCanUseCrossMemoryAttach) {
  const WorkerIpc host1{"workers/h1", "n1", kHostIpc, kHostPid};
  const WorkerIpc host2{"workers/h2", "n1", kHostIpc, kHostPid};
  const IpcSharing sharing = DecideIpcSharing({host1, host2});
  EXPECT_TRUE(sharing.shared);
  EXPECT_EQ(sharing.single_copy_mechanism, "cma");
}

TEST(IpcSharingTest, APrivateIpcNamespaceIsNamed) {
  const IpcSharing sharing = DecideIpcSharing({kA, kB, kC});
  EXPECT_FALSE(sharing.shared);
  EXPECT_EQ(sharing.single_copy_mechanism, "none");
  EXPECT_EQ(sharing.reason,
            "workers/c (host n1, ipc:[4026532500]) does not share the IPC namespace of "
            "workers/a (host n1, ipc:[4026532300])");
}

TEST(IpcSharingTest, EqualInodesOnAnotherHostAreAnotherNamespace) {
  const IpcSharing sharing = DecideIpcSharing({kA, kD});
  EXPECT_FALSE(sharing.shared);
  EXPECT_THAT(sharing.reason, ::testing::StartsWith("workers/d (host n2, ipc:[4026532300])"));
}

TEST(IpcSharingTest, AWorkerWithoutNamespaceFactsSharesNothing) {
  const WorkerIpc old{"workers/old", "n1", 0, 0};
  EXPECT_EQ(DecideIpcSharing({old, kA}).reason,
            "workers/old (host n1, IPC namespace unknown) reports no IPC namespace");
  EXPECT_EQ(DecideIpcSharing({kA, old}).reason,
            "workers/old (host n1, IPC namespace unknown) does not share the IPC namespace of "
            "workers/a (host n1, ipc:[4026532300])");
}

// --- validation -------------------------------------------------------------

ValidationLimits Workers(std::vector<WorkerIpc> workers) {
  ValidationLimits limits;
  limits.worker_count = static_cast<int>(workers.size());
  limits.max_total_slots = 2 * limits.worker_count.value();
  limits.max_worker_slots = 2;
  limits.worker_ipc = std::move(workers);
  return limits;
}

v1::RunSpec ShmRun(v1::PlacementPolicy policy, int ranks) {
  v1::RunSpec spec;
  spec.set_operation("allreduce");
  spec.set_ranks(ranks);
  spec.set_transport(v1::SHM);
  spec.set_mpi(v1::MPICH);
  spec.mutable_placement()->set_policy(policy);
  return spec;
}

TEST(SharedIpcValidationTest, SpreadOverWorkersSharingIpcIsAllowed) {
  EXPECT_TRUE(ValidateRunSpec(ShmRun(v1::SPREAD, 2), Workers({kA, kB})).ok());
}

TEST(SharedIpcValidationTest, SharingIpcWithoutThePidNamespaceIsRefusedNamingTheWorker) {
  const absl::Status status = ValidateRunSpec(ShmRun(v1::SPREAD, 2), Workers({kA, kE}));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "spec.transport: SHM between workers needs them in one PID namespace as well as one "
            "IPC namespace: workers/e (pid:[4026532401]) is not in the PID namespace of "
            "workers/a (pid:[4026532301]) (UCX's shared memory, which carries SHM between "
            "workers, times out between PID namespaces); share the PID namespace (podman --pid "
            "container:NAME, Kubernetes hostPID) or use TCP");
}

TEST(SharedIpcValidationTest, SpreadIsRefusedWhenAnyWorkerItMayUseHasItsOwnIpc) {
  const absl::Status status = ValidateRunSpec(ShmRun(v1::SPREAD, 2), Workers({kA, kB, kC}));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "spec.transport: SHM connects ranks on different workers only when they share one "
            "IPC namespace on one host: workers/c (host n1, ipc:[4026532500]) does not share "
            "the IPC namespace of workers/a (host n1, ipc:[4026532300]); use TCP or UCX, PACK "
            "placement, or EXPLICIT workers that share IPC");
}

TEST(SharedIpcValidationTest, ExplicitIsJudgedOnTheListedWorkersOnly) {
  v1::RunSpec spec = ShmRun(v1::EXPLICIT, 2);
  spec.mutable_placement()->add_workers("a");
  spec.mutable_placement()->add_workers("workers/b");
  spec.mutable_placement()->set_ranks_per_worker(1);
  EXPECT_TRUE(ValidateRunSpec(spec, Workers({kA, kB, kC})).ok());
  spec.mutable_placement()->set_workers(1, "c");
  const absl::Status status = ValidateRunSpec(spec, Workers({kA, kB, kC}));
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("workers/c (host n1, ipc:[4026532500]) does not share"));
}

TEST(SharedIpcValidationTest, PackNeedsSharedIpcOnlyWhenItSpillsOverOneWorker) {
  EXPECT_TRUE(ValidateRunSpec(ShmRun(v1::PACK, 2), Workers({kA, kC})).ok());  // 2 slots each
  EXPECT_FALSE(ValidateRunSpec(ShmRun(v1::PACK, 3), Workers({kA, kC})).ok());
  EXPECT_TRUE(ValidateRunSpec(ShmRun(v1::PACK, 3), Workers({kA, kB})).ok());
}

TEST(SharedIpcValidationTest, OpenMpiIsRefusedEvenWhenTheWorkersShareIpc) {
  v1::RunSpec spec = ShmRun(v1::SPREAD, 2);
  spec.set_mpi(v1::OPENMPI);
  const absl::Status status = ValidateRunSpec(spec, Workers({kA, kB}));
  EXPECT_THAT(std::string(status.message()),
              ::testing::StartsWith("spec.transport: Open MPI cannot use SHM between ranks of "
                                    "different workers"));
  EXPECT_FALSE(ValidateRunSpec(spec, ValidationLimits{}).ok()) << "known without the workers";
  EXPECT_TRUE(ValidateRunSpec(ShmRun(v1::PACK, 2), Workers({kA, kB})).ok());  // one worker
}

TEST(SharedIpcValidationTest, TcpAcrossPrivateIpcIsFine) {
  v1::RunSpec spec = ShmRun(v1::SPREAD, 2);
  spec.set_transport(v1::TCP);
  EXPECT_TRUE(ValidateRunSpec(spec, Workers({kA, kC})).ok());
}

TEST(SharedIpcValidationTest, WithoutWorkerFactsTheCoordinatorDecides) {
  EXPECT_TRUE(ValidateRunSpec(ShmRun(v1::SPREAD, 2), ValidationLimits{}).ok());
}

}  // namespace
}  // namespace collbench
