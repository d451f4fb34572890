// SPDX-License-Identifier: Apache-2.0
#include "common/grpc_health.h"

#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/generic/generic_stub.h"

namespace collbench {
namespace {

constexpr char kCheckMethod[] = "/grpc.health.v1.Health/Check";

// HealthCheckRequest{service}: field 1, length-delimited (names are short,
// so one length byte is enough; longer ones are refused).
absl::StatusOr<std::string> EncodeRequest(const std::string& service) {
  if (service.empty()) return std::string();
  if (service.size() > 127) {
    return absl::InvalidArgumentError(
        absl::StrCat("health: service name of ", service.size(), " bytes (at most 127)"));
  }
  return absl::StrCat("\x0a", std::string(1, static_cast<char>(service.size())), service);
}

std::string StatusName(int value) {
  switch (value) {
    case 0: return "UNKNOWN";
    case 1: return "SERVING";
    case 2: return "NOT_SERVING";
    case 3: return "SERVICE_UNKNOWN";
    default: return absl::StrCat("status ", value);
  }
}

}  // namespace

absl::StatusOr<std::string> CheckGrpcHealth(const std::shared_ptr<grpc::Channel>& channel,
                                            const std::string& service,
                                            absl::Duration timeout) {
  absl::StatusOr<std::string> encoded = EncodeRequest(service);
  if (!encoded.ok()) return encoded.status();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  grpc::Slice request_slice(*encoded);
  const grpc::ByteBuffer request(&request_slice, 1);
  grpc::ByteBuffer response;
  grpc::Status status;
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue queue;
  auto call = stub.PrepareUnaryCall(&context, kCheckMethod, request, &queue);
  call->StartCall();
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  const bool answered = queue.Next(&tag, &ok) && ok;
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  if (!answered) return absl::UnavailableError("health: the call did not complete");
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("health: ", status.error_message()));
  }
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return absl::DataLossError("health: unreadable answer");
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  // An empty answer is status 0 (proto3 leaves defaults out); otherwise
  // field 1 as a one-byte varint (the statuses are 0 to 3).
  if (bytes.empty()) return StatusName(0);
  if (bytes.size() == 2 && bytes[0] == '\x08' && (bytes[1] & 0x80) == 0) {
    return StatusName(bytes[1]);
  }
  return absl::DataLossError(
      absl::StrCat("health: unexpected answer of ", bytes.size(), " bytes"));
}

}  // namespace collbench
