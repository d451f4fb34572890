// SPDX-License-Identifier: Apache-2.0
// What a handler of the method table (server/api/method_table.h) knows of
// its call besides the request message: who makes it. The adapters fill
// it after the call passed the one authorization check (Authorize(),
// server/api/authorize.h), the same way for gRPC and REST.
#ifndef COLLBENCH_SERVER_API_CALL_CONTEXT_H_
#define COLLBENCH_SERVER_API_CALL_CONTEXT_H_

#include <string>

namespace collbench {

struct CallContext {
  // Who makes the call, for per-caller limits (create rate, watchers):
  // Authorizer::CallerOf, "token N" or "peer HOST", never a token.
  std::string caller;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_CALL_CONTEXT_H_
