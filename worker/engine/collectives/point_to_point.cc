// SPDX-License-Identifier: Apache-2.0
// Point-to-point operations, OSU style, generalised to pairs: rank r in the
// lower half pairs with r + n/2, so with ranks packed by host every pair
// crosses hosts. n must be even.
//
//  latency: ping-pong of one message; reported time is half the round trip.
//  bw:      the lower rank posts `window` sends, the upper rank `window`
//           receives, then returns a one-element ack (osu_bw).
//  bibw:    both ranks post `window` receives and `window` sends (osu_bibw).
#include <algorithm>
#include <array>

#include "worker/engine/backends/backend.h"
#include "worker/engine/collectives/collectives.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

using Dir = PeerTransfer::Direction;

bool IsInitiator(const OpContext& ctx) { return ctx.rank < ctx.nranks / 2; }
int PeerOf(const OpContext& ctx) {
  return IsInitiator(ctx) ? ctx.rank + ctx.nranks / 2 : ctx.rank - ctx.nranks / 2;
}

class PointToPoint : public Operation {
 public:
  using Operation::Operation;
  double BusFactor(int nranks) const override { return 1.0; }
  double InputValue(const OpContext& ctx, size_t i) const override {
    return MovedValue(ctx.dtype, ctx.rank, i);
  }
  std::optional<double> ExpectedValue(const OpContext& ctx, size_t i) const override {
    return MovedValue(ctx.dtype, PeerOf(ctx), i);
  }
};

class Latency final : public PointToPoint {
 public:
  Latency() : PointToPoint(OperationSpecNamed("latency")) {}
  double AlgBytes(const OpContext& ctx) const override {
    return static_cast<double>(ctx.count * ElementSize(ctx.dtype));
  }
  double TimeScale() const override { return 0.5; }
  absl::Status Run(Backend& backend, DeviceRuntime*, const OpContext& ctx, void* send,
                   void* recv) const override {
    const PeerTransfer out[] = {{Dir::kSend, send, ctx.count, PeerOf(ctx)}};
    const PeerTransfer in[] = {{Dir::kRecv, recv, ctx.count, PeerOf(ctx)}};
    if (IsInitiator(ctx)) {
      if (absl::Status s = backend.Exchange(out, ctx.dtype); !s.ok()) return s;
      return backend.Exchange(in, ctx.dtype);
    }
    if (absl::Status s = backend.Exchange(in, ctx.dtype); !s.ok()) return s;
    return backend.Exchange(out, ctx.dtype);
  }
};

class Bandwidth final : public PointToPoint {
 public:
  Bandwidth() : PointToPoint(OperationSpecNamed("bw")) {}
  double AlgBytes(const OpContext& ctx) const override {
    return static_cast<double>(ctx.count * ElementSize(ctx.dtype)) * ctx.window;
  }
  std::optional<double> ExpectedValue(const OpContext& ctx, size_t i) const override {
    // The initiator's receive buffer only ever gets the ack in element 0.
    if (IsInitiator(ctx) && i != 0) return std::nullopt;
    return MovedValue(ctx.dtype, PeerOf(ctx), i);
  }
  absl::Status Run(Backend& backend, DeviceRuntime*, const OpContext& ctx, void* send,
                   void* recv) const override {
    const int peer = PeerOf(ctx);
    const Dir bulk = IsInitiator(ctx) ? Dir::kSend : Dir::kRecv;
    std::array<PeerTransfer, kMaxWindow> window;
    std::fill_n(window.begin(), ctx.window,
                PeerTransfer{bulk, IsInitiator(ctx) ? send : recv, ctx.count, peer});
    if (absl::Status s = backend.Exchange(absl::MakeConstSpan(window.data(), ctx.window),
                                          ctx.dtype);
        !s.ok()) {
      return s;
    }
    const PeerTransfer ack[] = {
        {IsInitiator(ctx) ? Dir::kRecv : Dir::kSend, IsInitiator(ctx) ? recv : send, 1,
         peer}};
    return backend.Exchange(ack, ctx.dtype);
  }
};

class BidirectionalBandwidth final : public PointToPoint {
 public:
  BidirectionalBandwidth() : PointToPoint(OperationSpecNamed("bibw")) {}
  double AlgBytes(const OpContext& ctx) const override {
    return 2.0 * static_cast<double>(ctx.count * ElementSize(ctx.dtype)) * ctx.window;
  }
  absl::Status Run(Backend& backend, DeviceRuntime*, const OpContext& ctx, void* send,
                   void* recv) const override {
    const int peer = PeerOf(ctx);
    std::array<PeerTransfer, 2 * kMaxWindow> transfers;
    std::fill_n(transfers.begin(), ctx.window, PeerTransfer{Dir::kRecv, recv, ctx.count, peer});
    std::fill_n(transfers.begin() + ctx.window, ctx.window,
                PeerTransfer{Dir::kSend, send, ctx.count, peer});
    return backend.Exchange(absl::MakeConstSpan(transfers.data(), 2 * ctx.window),
                            ctx.dtype);
  }
};

}  // namespace

std::unique_ptr<Operation> NewLatencyOperation() { return std::make_unique<Latency>(); }
std::unique_ptr<Operation> NewBandwidthOperation() {
  return std::make_unique<Bandwidth>();
}
std::unique_ptr<Operation> NewBidirectionalBandwidthOperation() {
  return std::make_unique<BidirectionalBandwidth>();
}

}  // namespace collbench
