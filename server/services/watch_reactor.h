// SPDX-License-Identifier: Apache-2.0
// The server side of one WatchRun stream: replays the run's stored state
// and results, then relays live events from the WatchHub until the run
// ends or the client goes away. Writes go out one at a time from a queue,
// so a slow client never blocks the run manager; a client whose queue
// grows past the limits' buffer_events is ended with RESOURCE_EXHAUSTED
// ("too slow"). gRPC's callback API serves it: no thread waits on it.
#ifndef COLLBENCH_SERVER_SERVICES_WATCH_REACTOR_H_
#define COLLBENCH_SERVER_SERVICES_WATCH_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "collbench/v1/run.pb.h"
#include "server/core/run_manager.h"
#include "server/core/watch_hub.h"
#include "server/core/watcher_limits.h"

namespace collbench {

// gRPC owns the returned reactor and deletes it when the call is done;
// `slot` (the watcher's place in `limits`) goes with it.
grpc::ServerWriteReactor<v1::RunEvent>* NewWatchReactor(RunManager* manager, WatchHub* hub,
                                                        WatcherLimits* limits,
                                                        std::unique_ptr<WatcherSlot> slot,
                                                        const std::string& run);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_SERVICES_WATCH_REACTOR_H_
