// SPDX-License-Identifier: Apache-2.0
// The coordinator's send queue to one worker is bounded
// (docs/design/security.md#bounds): a worker that stops reading has its stream
// ended with RESOURCE_EXHAUSTED once the queue overflows, the overflow is
// counted, and the worker can connect again (it re-syncs by re-registering). A
// real gRPC server on 127.0.0.1 with the gateway over the core.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/api/gateway_service.h"
#include "server/api/worker_streams.h"
#include "server/core/core.h"

namespace collbench {
namespace {

v1::WorkerMessage Hello(const std::string& secret) {
  v1::WorkerMessage hello;
  v1::Register* reg = hello.mutable_register_();
  reg->set_worker_id("slow");
  reg->set_agent_address("slow.example:7000");
  reg->set_slots(1);
  reg->set_worker_secret(secret);
  reg->mutable_inventory()->set_host_id("host-slow");
  return hello;
}

TEST(GatewayQueueTest, AWorkerThatStopsReadingIsEndedOnceItsQueueOverflows) {
  std::unique_ptr<Store> store = NewMemoryStore();
  WatchHub hub;
  WorkerStreams streams({/*max_queued=*/8});
  Core core(store.get(), &hub, &streams, CoreOptions{});
  ASSERT_TRUE(core.Recover(absl::Now()).ok());
  GatewayService gateway(&core.fleet(), &streams, RealClock());
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&gateway);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = v1::WorkerGateway::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));

  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
  auto stream = stub->Connect(&context);
  ASSERT_TRUE(stream->Write(Hello("")));
  v1::CoordinatorMessage reply;
  ASSERT_TRUE(stream->Read(&reply));
  ASSERT_TRUE(reply.has_registered());
  const std::string secret = reply.registered().worker_secret();

  // The worker reads nothing more: flow control stops the writes, and the
  // queue behind them overflows.
  v1::CoordinatorMessage big;
  big.mutable_cancel()->set_run("runs/x");
  big.mutable_cancel()->set_reason(std::string(256 << 10, 'x'));
  int accepted = 0;
  for (int i = 0; i < 200; ++i) accepted += streams.Send("workers/slow", big);
  EXPECT_LT(accepted, 200);
  EXPECT_EQ(streams.send_queue_overflows(), 1);
  EXPECT_FALSE(streams.Send("workers/slow", big));  // dropped, not queued

  // Its next message ends the stream.
  v1::WorkerMessage beat;
  beat.mutable_heartbeat()->set_sequence(1);
  stream->Write(beat);
  v1::CoordinatorMessage message;
  while (stream->Read(&message)) {
  }
  const grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << ended.error_message();
  EXPECT_EQ(streams.connected(), 0u);

  // It comes back with its secret.
  grpc::ClientContext again_context;
  again_context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  auto again = stub->Connect(&again_context);
  ASSERT_TRUE(again->Write(Hello(secret)));
  ASSERT_TRUE(again->Read(&reply));
  EXPECT_TRUE(reply.has_registered());
  again_context.TryCancel();
  (void)again->Finish();
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
}

// Streams that never register are capped per source address: the next one
// is refused at once and counted; a slot frees when a stream registers.
TEST(GatewayQueueTest, UnregisteredStreamsPerSourceAreCapped) {
  std::unique_ptr<Store> store = NewMemoryStore();
  WatchHub hub;
  WorkerStreams streams({.max_unregistered_per_source = 2});
  Core core(store.get(), &hub, &streams, CoreOptions{});
  ASSERT_TRUE(core.Recover(absl::Now()).ok());
  GatewayService gateway(&core.fleet(), &streams, RealClock());
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&gateway);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = v1::WorkerGateway::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  struct Open {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream;
  };
  auto open = [&] {
    auto o = std::make_unique<Open>();
    o->context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    o->stream = stub->Connect(&o->context);
    return o;
  };
  auto first = open();
  auto second = open();
  // Both are held by the gateway before the third arrives.
  absl::SleepFor(absl::Milliseconds(300));
  auto third = open();
  v1::CoordinatorMessage message;
  EXPECT_FALSE(third->stream->Read(&message));
  EXPECT_EQ(third->stream->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(core.fleet().worker_counts().registrations["refused_concurrent"], 1);
  // The first registers: its slot is free again.
  ASSERT_TRUE(first->stream->Write(Hello("")));
  ASSERT_TRUE(first->stream->Read(&message));
  EXPECT_TRUE(message.has_registered());
  auto fourth = open();
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(core.fleet().worker_counts().registrations["refused_concurrent"], 1);
  for (Open* o : {first.get(), second.get(), fourth.get()}) {
    o->context.TryCancel();
    (void)o->stream->Finish();
  }
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
}

}  // namespace
}  // namespace collbench
