// SPDX-License-Identifier: Apache-2.0
// A direct Agent.Exec call, as an attacker holding a valid run token would
// make it (tests/security/launch_test.py):
//   exec_probe AGENT_ADDRESS RUN TOKEN_FILE ARGV...
// Prints the remote output and "status: CODE MESSAGE" on stderr; exits 0
// when the call was refused with INVALID_ARGUMENT or PERMISSION_DENIED, 1
// when it ran anything (an exit code came back), 2 on bad usage or any
// other failure.
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "collbench/v1/agent.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: exec_probe AGENT_ADDRESS RUN TOKEN_FILE ARGV...\n";
    return 2;
  }
  std::ifstream token_file(argv[3]);
  std::string token((std::istreambuf_iterator<char>(token_file)), {});
  collbench::v1::ExecRequest request;
  request.set_run(argv[2]);
  request.set_token(token);
  for (int i = 4; i < argc; ++i) request.add_argv(argv[i]);
  auto stub = collbench::v1::Agent::NewStub(
      grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto reader = stub->Exec(&context, request);
  collbench::v1::ExecOutput output;
  bool ran = false;
  while (reader->Read(&output)) {
    if (output.has_stdout()) std::cout << output.stdout();
    if (output.has_stderr()) std::cerr << output.stderr();
    if (output.has_exit_code()) ran = true;
  }
  const grpc::Status status = reader->Finish();
  std::cerr << "status: " << status.error_code() << " " << status.error_message() << "\n";
  if (ran) return 1;
  return status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
                 status.error_code() == grpc::StatusCode::PERMISSION_DENIED
             ? 0
             : 2;
}
