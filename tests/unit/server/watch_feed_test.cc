// SPDX-License-Identifier: Apache-2.0
// The order and deduplication every run watcher relies on (gRPC WatchRun
// and the REST event stream share WatchFeed).
#include "server/core/watch_feed.h"

#include <gtest/gtest.h>

#include <vector>

namespace collbench {
namespace {

v1::RunEvent State(v1::RunState state) {
  v1::RunEvent event;
  event.set_run("runs/1");
  event.mutable_state_change()->set_state(state);
  return event;
}

v1::RunEvent Result(int64_t sequence) {
  v1::RunEvent event;
  event.set_run("runs/1");
  event.mutable_result()->set_sequence(sequence);
  return event;
}

// "R0", "S3", ... for what is queued.
std::vector<std::string> Queued(WatchFeed& feed) {
  std::vector<std::string> out;
  for (const v1::RunEvent& e : feed.queue()) {
    out.push_back(e.has_result() ? "R" + std::to_string(e.result().sequence())
                                 : "S" + std::to_string(e.state_change().state()));
  }
  return out;
}

TEST(WatchFeed, DropsRepeatedResultsAndStatesButKeepsResultsOutOfOrder) {
  WatchFeed feed;
  feed.Add(State(v1::RUNNING));
  feed.Add(State(v1::RUNNING));
  feed.Add(Result(0));
  feed.Add(Result(2));
  feed.Add(Result(0));
  feed.Add(Result(1));  // arrived after 2 (a re-send after a reconnect)
  feed.Add(Result(2));
  EXPECT_EQ(Queued(feed), (std::vector<std::string>{"S3", "R0", "R2", "R1"}));
  EXPECT_FALSE(feed.ended());
}

TEST(WatchFeed, NothingFollowsAFinalState) {
  WatchFeed feed;
  feed.Add(Result(0));
  feed.Add(State(v1::SUCCEEDED));
  feed.Add(Result(1));
  feed.Add(State(v1::FAILED));
  EXPECT_TRUE(feed.ended());
  EXPECT_EQ(Queued(feed), (std::vector<std::string>{"R0", "S4"}));
}

TEST(WatchFeed, EndStopsQueueing) {
  WatchFeed feed;
  feed.End();
  feed.Add(Result(0));
  EXPECT_TRUE(feed.ended());
  EXPECT_TRUE(feed.empty());
}

}  // namespace
}  // namespace collbench
