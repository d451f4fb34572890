#include "server/coordinator.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "server/core/watch_hub.h"
#include "server/services/coordinator_service.h"
#include "server/services/gateway_service.h"
#include "server/store/store.h"

namespace collbench {

struct Coordinator::Parts {
  std::unique_ptr<Store> store;
  scheduling::WorkerRegistry registry;
  WatchHub hub;
  GatewayService gateway;
  std::unique_ptr<CoordinatorService> service;
  std::unique_ptr<grpc::Server> server;
};

namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const CoordinatorOptions& options) {
  if (options.tls_cert.empty() && options.tls_key.empty()) {
    return grpc::InsecureServerCredentials();
  }
  if (options.tls_cert.empty() || options.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  grpc::SslServerCredentialsOptions ssl;
  ASSIGN_OR_RETURN(std::string cert, ReadFile(options.tls_cert));
  ASSIGN_OR_RETURN(std::string key, ReadFile(options.tls_key));
  ssl.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Start(const CoordinatorOptions& options) {
  std::unique_ptr<Coordinator> c(new Coordinator);
  c->parts_ = std::make_unique<Parts>();
  Parts& p = *c->parts_;
  if (options.store == ":memory:") {
    p.store = NewMemoryStore();
  } else {
    ASSIGN_OR_RETURN(p.store, OpenSqliteStore(options.store));
  }
  c->manager_ = std::make_unique<RunManager>(p.store.get(), &p.registry, &p.hub, &p.gateway,
                                             options.run_manager);
  RETURN_IF_ERROR(c->manager_->Recover(absl::Now()));
  p.gateway.SetManager(c->manager_.get());
  p.service = std::make_unique<CoordinatorService>(c->manager_.get(), &p.hub);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials, Credentials(options));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.grpc_listen, credentials, &c->grpc_port_);
  builder.RegisterService(p.service.get());
  builder.RegisterService(&p.gateway);
  p.server = builder.BuildAndStart();
  if (p.server == nullptr || c->grpc_port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.grpc_listen, " (in use, or not an address here)"));
  }
  RunManager* manager = c->manager_.get();
  absl::Notification* stop = &c->stop_;
  const absl::Duration interval = options.tick_interval;
  c->ticker_ = std::thread([manager, stop, interval] {
    while (!stop->WaitForNotificationWithTimeout(interval)) manager->Tick(absl::Now());
  });
  return c;
}

void Coordinator::Wait() { stop_.WaitForNotification(); }

void Coordinator::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (ticker_.joinable()) ticker_.join();
  parts_->hub.EndAll();
  parts_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

Coordinator::~Coordinator() {
  if (parts_ && parts_->server) Shutdown();
}

}  // namespace collbench
