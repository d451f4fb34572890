// SPDX-License-Identifier: Apache-2.0
// A WorkerGateway for tests of the worker's side of the stream: it keeps
// each registered stream open until DropStreams() ends it (the worker then
// reconnects) and records the secret each registration presented. With
// issue_secrets it behaves as the coordinator does for one name: a secret
// at the first registration, PERMISSION_DENIED afterwards without it.
// Thread safety: as gRPC requires; DropStreams() and presented() from any
// thread.
#ifndef COLLBENCH_TESTS_UNIT_AGENT_FAKE_GATEWAY_H_
#define COLLBENCH_TESTS_UNIT_AGENT_FAKE_GATEWAY_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collbench/v1/gateway.grpc.pb.h"

namespace collbench::testing {

class FakeGateway final : public v1::WorkerGateway::Service {
 public:
  explicit FakeGateway(bool issue_secrets = false) : issue_secrets_(issue_secrets) {}

  grpc::Status Connect(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) override {
    v1::WorkerMessage hello;
    if (!stream->Read(&hello) || !hello.has_register_()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "register first");
    }
    v1::CoordinatorMessage reply;
    {
      absl::MutexLock lock(&mu_);
      presented_.push_back(hello.register_().worker_secret());
      if (issue_secrets_ && issued_.empty()) {
        issued_ = "secret-" + std::to_string(presented_.size());
        reply.mutable_registered()->set_worker_secret(issued_);
      } else if (issue_secrets_ && hello.register_().worker_secret() != issued_) {
        return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not your name");
      }
    }
    reply.mutable_registered()->set_name("workers/" + hello.register_().worker_id());
    reply.mutable_registered()->set_heartbeat_interval_ms(100);
    stream->Write(reply);
    absl::MutexLock lock(&mu_);
    const int generation = generation_;
    auto dropped = [this, generation]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return generation_ != generation;
    };
    while (!mu_.AwaitWithTimeout(absl::Condition(&dropped), absl::Milliseconds(50))) {
      if (context->IsCancelled()) break;
    }
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "dropped by the test");
  }

  void DropStreams() {
    absl::MutexLock lock(&mu_);
    ++generation_;
  }

  // The worker_secret of every registration so far, in order.
  std::vector<std::string> presented() {
    absl::MutexLock lock(&mu_);
    return presented_;
  }

 private:
  const bool issue_secrets_;
  absl::Mutex mu_;
  int generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::string issued_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> presented_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench::testing

#endif  // COLLBENCH_TESTS_UNIT_AGENT_FAKE_GATEWAY_H_
