// SPDX-License-Identifier: Apache-2.0
#include "http_test_client.h"

#include <curl/curl.h>
#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

namespace collbench::test_http {

bool CaseInsensitiveLess::operator()(const std::string& a, const std::string& b) const {
  return strcasecmp(a.c_str(), b.c_str()) < 0;
}

std::string Response::get_header_value(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

std::string to_string(Error error) {
  switch (error) {
    case Error::kSuccess:
      return "success";
    case Error::kConnection:
      return "could not connect";
    case Error::kTls:
      return "TLS failure";
    case Error::kRead:
      return "read failure";
    case Error::kWrite:
      return "write failure";
    case Error::kTimeout:
      return "timed out";
    case Error::kCanceled:
      return "canceled";
    case Error::kOther:
      break;
  }
  return "failed";
}

namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Error ErrorOf(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return Error::kSuccess;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
      return Error::kConnection;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return Error::kTls;
    case CURLE_OPERATION_TIMEDOUT:
      return Error::kTimeout;
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
      return Error::kRead;
    case CURLE_SEND_ERROR:
      return Error::kWrite;
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_WRITE_ERROR:
      return Error::kCanceled;
    default:
      return Error::kOther;
  }
}

}  // namespace

struct Client::Request {
  std::string method;
  std::string path;
  Headers headers;
  std::optional<std::string> body;  // none: no body (or a chunked one)
  ContentProvider provider;         // set: a chunked body
  std::string content_type;
  ResponseHandler on_response;
  ContentReceiver receiver;

  // While it runs.
  const std::atomic<bool>* stopped = nullptr;
  Response response;
  bool headers_done = false;
  std::string pending;  // chunked body bytes not yet given to libcurl
  size_t offset = 0;
  bool provided_all = false;
  DataSink sink;
};

namespace {

Client::Request NewRequest(const char* method, const std::string& path, const Headers& headers) {
  Client::Request r;
  r.method = method;
  r.path = path;
  r.headers = headers;
  return r;
}

}  // namespace

Client::Client(const std::string& scheme_host_port) : base_url_(scheme_host_port) { GlobalInit(); }

Client::Client(const std::string& host, int port)
    : Client("http://" + host + ":" + std::to_string(port)) {}

void Client::set_read_timeout(time_t seconds, time_t microseconds) {
  read_timeout_s_ = std::max<long>(1, static_cast<long>(seconds + (microseconds > 0 ? 1 : 0)));
}

void Client::set_connection_timeout(time_t seconds, time_t microseconds) {
  connect_timeout_ms_ = static_cast<long>(seconds * 1000 + microseconds / 1000);
}

Result Client::Get(const std::string& path, const Headers& headers) {
  Request r = NewRequest("GET", path, headers);
  return Send(r);
}

Result Client::Get(const std::string& path, const Headers& headers, ResponseHandler on_response,
                   ContentReceiver receiver) {
  Request r = NewRequest("GET", path, headers);
  r.on_response = std::move(on_response);
  r.receiver = std::move(receiver);
  return Send(r);
}

Result Client::Post(const std::string& path, const std::string& body,
                    const std::string& content_type) {
  return Post(path, Headers{}, body, content_type);
}

Result Client::Post(const std::string& path, const Headers& headers, const std::string& body,
                    const std::string& content_type) {
  Request r = NewRequest("POST", path, headers);
  r.body = body;
  r.content_type = content_type;
  return Send(r);
}

Result Client::Post(const std::string& path, const Headers& headers) {
  Request r = NewRequest("POST", path, headers);
  r.body = std::string();
  return Send(r);
}

Result Client::Post(const std::string& path, const Headers& headers, ContentProvider provider,
                    const std::string& content_type) {
  Request r = NewRequest("POST", path, headers);
  r.provider = std::move(provider);
  r.content_type = content_type;
  return Send(r);
}

Result Client::Delete(const std::string& path, const Headers& headers) {
  Request r = NewRequest("DELETE", path, headers);
  return Send(r);
}

namespace {

size_t OnHeader(char* data, size_t size, size_t count, void* arg) {
  auto& r = *static_cast<Client::Request*>(arg);
  std::string line(data, size * count);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {  // a status line: a new response (after 100 Continue)
    r.response = Response();
    const size_t space = line.find(' ');
    r.response.status = space == std::string::npos ? -1 : std::atoi(line.c_str() + space + 1);
    return size * count;
  }
  if (line.empty()) {
    if (r.response.status >= 200 && !r.headers_done) {
      r.headers_done = true;
      if (r.on_response && !r.on_response(r.response)) return 0;
    }
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  size_t value = colon + 1;
  while (value < line.size() && line[value] == ' ') ++value;
  r.response.headers.emplace(line.substr(0, colon), line.substr(value));
  return size * count;
}

size_t OnBody(char* data, size_t size, size_t count, void* arg) {
  auto& r = *static_cast<Client::Request*>(arg);
  if (r.stopped->load()) return 0;
  if (r.receiver) return r.receiver(data, size * count) ? size * count : 0;
  r.response.body.append(data, size * count);
  return size * count;
}

size_t OnRead(char* buffer, size_t size, size_t count, void* arg) {
  auto& r = *static_cast<Client::Request*>(arg);
  while (r.pending.empty() && !r.provided_all) {
    if (!r.provider(r.offset, r.sink)) return CURL_READFUNC_ABORT;
  }
  const size_t n = std::min(r.pending.size(), size * count);
  std::memcpy(buffer, r.pending.data(), n);
  r.pending.erase(0, n);
  return n;
}

int OnProgress(void* arg, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<Client::Request*>(arg)->stopped->load() ? 1 : 0;
}

}  // namespace

Result Client::Send(Request& r) {
  if (stopped_) return Result(nullptr, Error::kCanceled, "stopped");
  r.stopped = &stopped_;
  std::shared_ptr<void> handle = keep_alive_ ? kept_ : nullptr;
  if (handle == nullptr) {
    handle = std::shared_ptr<void>(curl_easy_init(), [](void* h) { curl_easy_cleanup(h); });
    if (keep_alive_) kept_ = handle;
  } else {
    curl_easy_reset(handle.get());  // keeps the live connection
  }
  CURL* curl = handle.get();
  const std::string url = base_url_ + r.path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms_);
  // Given up after read_timeout_s_ without a byte.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, read_timeout_s_);
  curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, keep_alive_ ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &r);
  if (base_url_.rfind("https://", 0) == 0) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, verify_ ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, verify_ ? 2L : 0L);
    if (!ca_path_.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, ca_path_.c_str());
    if (!cert_path_.empty()) {
      curl_easy_setopt(curl, CURLOPT_SSLCERT, cert_path_.c_str());
      curl_easy_setopt(curl, CURLOPT_SSLKEY, key_path_.c_str());
    }
  }
  curl_slist* list = nullptr;
  for (const auto& [name, value] : r.headers) {
    list = curl_slist_append(list, (name + ": " + value).c_str());
  }
  list = curl_slist_append(list, "Expect:");  // no 100-continue round trip
  if (!keep_alive_) list = curl_slist_append(list, "Connection: close");
  if (!r.content_type.empty()) {
    list = curl_slist_append(list, ("Content-Type: " + r.content_type).c_str());
  }
  if (r.method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else if (r.method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    if (r.provider) {
      r.sink.write = [&r](const char* data, size_t size) {
        r.pending.append(data, size);
        r.offset += size;
        return true;
      };
      r.sink.done = [&r] { r.provided_all = true; };
      curl_easy_setopt(curl, CURLOPT_READFUNCTION, &OnRead);
      curl_easy_setopt(curl, CURLOPT_READDATA, &r);
      list = curl_slist_append(list, "Transfer-Encoding: chunked");
    } else {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body->size()));
      curl_easy_setopt(curl, CURLOPT_COPYPOSTFIELDS, r.body->c_str());
    }
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(list);
  if (code != CURLE_OK) return Result(nullptr, ErrorOf(code), curl_easy_strerror(code));
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  auto response = std::make_unique<Response>(std::move(r.response));
  response->status = static_cast<int>(status);
  return Result(std::move(response), Error::kSuccess, "");
}

SSLClient::SSLClient(const std::string& host, int port)
    : Client("https://" + host + ":" + std::to_string(port)) {}

SSLClient::SSLClient(const std::string& host, int port, const std::string& cert,
                     const std::string& key)
    : SSLClient(host, port) {
  set_client_certificate(cert, key);
}

}  // namespace collbench::test_http
