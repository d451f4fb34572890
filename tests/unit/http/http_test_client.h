// SPDX-License-Identifier: Apache-2.0
// A small blocking HTTP(S) client for the tests of the coordinator's HTTP
// listener, on libcurl: the calls the tests make (GET, POST with a body,
// a chunked body or none, DELETE; headers; a streamed response read as it
// arrives; TLS with or without a client certificate), answered as a
// Result that is false when no HTTP response came at all.
//
// Thread safety: a Client serves one request at a time; stop() may be
// called from any thread and ends the request in progress (within about
// a second) and every later one.
#ifndef COLLBENCH_TESTS_UNIT_REST_HTTP_TEST_CLIENT_H_
#define COLLBENCH_TESTS_UNIT_REST_HTTP_TEST_CLIENT_H_

#include <atomic>
#include <cstddef>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace collbench::test_http {

// Header names compare without case, as in HTTP.
struct CaseInsensitiveLess {
  bool operator()(const std::string& a, const std::string& b) const;
};
using Headers = std::multimap<std::string, std::string, CaseInsensitiveLess>;

struct Response {
  int status = -1;
  Headers headers;
  std::string body;
  // The first value of header `name`, "" when it is absent.
  std::string get_header_value(const std::string& name) const;
  bool has_header(const std::string& name) const { return headers.count(name) > 0; }
};

enum class Error { kSuccess, kConnection, kTls, kRead, kWrite, kTimeout, kCanceled, kOther };
std::string to_string(Error error);

// What a request gave: a response, or why there is none.
class Result {
 public:
  Result(std::unique_ptr<Response> response, Error error, std::string detail)
      : response_(std::move(response)), error_(error), detail_(std::move(detail)) {}
  explicit operator bool() const { return response_ != nullptr; }
  const Response* operator->() const { return response_.get(); }
  const Response& operator*() const { return *response_; }
  Error error() const { return error_; }
  // libcurl's message, when there is no response.
  const std::string& detail() const { return detail_; }

 private:
  std::unique_ptr<Response> response_;
  Error error_;
  std::string detail_;
};

// Where a chunked request body is written (see Client::Post).
class DataSink {
 public:
  std::function<bool(const char* data, size_t size)> write;
  std::function<void()> done;
};
using ContentProvider = std::function<bool(size_t offset, DataSink& sink)>;
// Called with the status and headers before the body; false cancels.
using ResponseHandler = std::function<bool(const Response& response)>;
// Called with each piece of the body as it arrives; false cancels.
using ContentReceiver = std::function<bool(const char* data, size_t size)>;

class Client {
 public:
  // "http://HOST:PORT" or "https://HOST:PORT".
  explicit Client(const std::string& scheme_host_port);
  // Plain HTTP to host:port.
  Client(const std::string& host, int port);
  virtual ~Client() = default;

  // Seconds without a byte received before a request is given up (5).
  void set_read_timeout(time_t seconds, time_t microseconds = 0);
  void set_connection_timeout(time_t seconds, time_t microseconds = 0);
  // Keep the connection for the next request (closed after each by default).
  void set_keep_alive(bool keep_alive) { keep_alive_ = keep_alive; }
  // HTTPS: check the server's certificate (and name) against the CA.
  void enable_server_certificate_verification(bool verify) { verify_ = verify; }
  void set_ca_cert_path(const std::string& path) { ca_path_ = path; }
  void stop() { stopped_ = true; }

  Result Get(const std::string& path, const Headers& headers = {});
  // The body goes to `receiver` as it arrives (the Result's body stays "").
  Result Get(const std::string& path, const Headers& headers, ResponseHandler on_response,
             ContentReceiver receiver);
  Result Post(const std::string& path, const std::string& body, const std::string& content_type);
  Result Post(const std::string& path, const Headers& headers, const std::string& body,
              const std::string& content_type);
  // No body at all (Content-Length: 0).
  Result Post(const std::string& path, const Headers& headers);
  // A body of unknown length, sent with chunked transfer coding.
  Result Post(const std::string& path, const Headers& headers, ContentProvider provider,
              const std::string& content_type);
  Result Delete(const std::string& path, const Headers& headers = {});

 // One request while it runs (http_test_client.cc).
  struct Request;

 protected:
  void set_client_certificate(const std::string& cert, const std::string& key) {
    cert_path_ = cert;
    key_path_ = key;
  }

 private:
  Result Send(Request& request);

  std::string base_url_;
  long read_timeout_s_ = 5;
  long connect_timeout_ms_ = 10000;
  bool keep_alive_ = false;
  bool verify_ = true;
  std::string ca_path_, cert_path_, key_path_;
  std::atomic<bool> stopped_{false};
  std::shared_ptr<void> kept_;  // the libcurl handle kept with keep-alive
};

// HTTPS to host:port, with a client certificate when `cert` is given.
class SSLClient : public Client {
 public:
  SSLClient(const std::string& host, int port);
  SSLClient(const std::string& host, int port, const std::string& cert, const std::string& key);
};

}  // namespace collbench::test_http

#endif  // COLLBENCH_TESTS_UNIT_REST_HTTP_TEST_CLIENT_H_
