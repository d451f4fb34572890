// SPDX-License-Identifier: Apache-2.0
// How the run manager reaches connected workers: the gateway service
// implements it over each worker's Connect stream; tests use a recording
// fake.
#ifndef COLLBENCH_SERVER_CORE_WORKER_LINK_H_
#define COLLBENCH_SERVER_CORE_WORKER_LINK_H_

#include <string>

#include "collbench/v1/gateway.pb.h"

namespace collbench {

class WorkerLink {
 public:
  virtual ~WorkerLink() = default;
  // Queues `message` for the worker's stream without blocking. False when
  // the worker has no open stream now.
  virtual bool Send(const std::string& worker, const v1::CoordinatorMessage& message) = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_WORKER_LINK_H_
