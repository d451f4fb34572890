// SPDX-License-Identifier: Apache-2.0
// A WorkerLink that delivers every message and keeps none: the fake for
// tests whose runs never need a worker's answer.
#ifndef COLLBENCH_TESTS_UNIT_FAKES_ACCEPTING_LINK_H_
#define COLLBENCH_TESTS_UNIT_FAKES_ACCEPTING_LINK_H_

#include <string>

#include "server/core/worker_link.h"

namespace collbench {

class AcceptingLink final : public WorkerLink {
 public:
  bool Send(const std::string&, const v1::CoordinatorMessage&) override { return true; }
};

}  // namespace collbench

#endif  // COLLBENCH_TESTS_UNIT_FAKES_ACCEPTING_LINK_H_
