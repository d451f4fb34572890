// SPDX-License-Identifier: Apache-2.0
#include "kube/kube_client.h"

#include <curl/curl.h>

#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "kube/json_fields.h"

namespace collbench::kube {
namespace {

// A caller name for the shared bucket of RateLimiter.
constexpr char kBucket[] = "kube";

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

const char* ContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kJson:
      break;
  }
  return "application/json-patch+json";
}

struct Transfer {
  std::string* body = nullptr;
  const std::function<bool(const char*, size_t)>* on_data = nullptr;
  const std::atomic<bool>* stopped = nullptr;
  bool stopped_by_caller = false;  // on_data returned false
};

size_t OnWrite(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (t->on_data != nullptr && *t->on_data) {
    if (!(*t->on_data)(data, n)) {
      t->stopped_by_caller = true;
      return 0;  // ends the transfer
    }
    return n;
  }
  t->body->append(data, n);
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<Transfer*>(user)->stopped->load() ? 1 : 0;
}

void SetBlob(CURL* curl, CURLoption option, const std::string& pem) {
  curl_blob blob;
  blob.data = const_cast<char*>(pem.data());
  blob.len = pem.size();
  blob.flags = CURL_BLOB_COPY;
  curl_easy_setopt(curl, option, &blob);
}

absl::StatusCode CodeOf(long http, const std::string& reason) {
  switch (http) {
    case 400:
    case 415:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    default:
      break;
  }
  return http == 429 || http >= 500 ? absl::StatusCode::kUnavailable : absl::StatusCode::kUnknown;
}

}  // namespace

absl::Status StatusFromHttp(const std::string& method, const std::string& path, long code,
                            const std::string& body) {
  if (code >= 200 && code < 300) return absl::OkStatus();
  std::string reason, message;
  const Json status = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (Text(status, "kind") == "Status") {
    reason = Text(status, "reason");
    message = Text(status, "message");
  }
  if (message.empty()) message = std::string(absl::StripAsciiWhitespace(body.substr(0, 200)));
  return absl::Status(CodeOf(code, reason),
                      absl::StrCat(method, " ", path, ": ", code, reason.empty() ? "" : " ", reason,
                                   message.empty() ? "" : ": ", message));
}

absl::Status RetryOnConflict(int tries, const std::function<absl::Status()>& attempt) {
  absl::Status status;
  for (int i = 0; i < std::max(1, tries); ++i) {
    status = attempt();
    if (status.code() != absl::StatusCode::kAborted) return status;
  }
  return status;
}

std::string EscapeQueryValue(const std::string& value) {
  std::string out;
  for (unsigned char c : value) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      absl::StrAppend(&out, "%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

KubeClient::KubeClient(KubeConfig config, KubeClientOptions options, const Clock* clock,
                       std::function<void(absl::Duration)> sleep)
    : config_(std::move(config)),
      options_(std::move(options)),
      clock_(clock),
      sleep_(std::move(sleep)),
      limiter_(RateLimit{options_.qps, std::max(1, options_.burst)}) {
  InitCurlOnce();
}

KubeClient::~KubeClient() { Stop(); }

void KubeClient::Stop() { stopped_ = true; }

void KubeClient::Throttle() {
  for (;;) {
    absl::Duration wait;
    {
      absl::MutexLock lock(&mu_);
      if (!limiter_.enabled()) return;
      wait = limiter_.Acquire(kBucket, clock_->Now());
    }
    if (wait <= absl::ZeroDuration() || stopped_) return;
    if (sleep_) sleep_(wait);
  }
}

absl::StatusOr<std::string> KubeClient::Token() const {
  if (config_.token_file.empty()) return config_.token;
  std::ifstream in(config_.token_file);
  if (!in) {
    return absl::UnauthenticatedError(
        absl::StrCat("cannot read the token file ", config_.token_file));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return std::string(absl::StripAsciiWhitespace(text.str()));
}

absl::StatusOr<KubeClient::Response> KubeClient::Perform(
    const std::string& method, const std::string& path, const std::string& content_type,
    const std::string& body, absl::Duration timeout,
    const std::function<bool(const char*, size_t)>& on_data) {
  if (stopped_) return absl::CancelledError(absl::StrCat(method, " ", path, ": stopping"));
  Throttle();
  absl::StatusOr<std::string> token = Token();
  if (!token.ok()) return token.status();
  ++requests_;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  const std::string url = config_.server + path;
  Response response;
  Transfer transfer{&response.body, &on_data, &stopped_};
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  if (!content_type.empty()) {
    headers = curl_slist_append(headers, absl::StrCat("Content-Type: ", content_type).c_str());
  }
  if (!token->empty()) {
    headers = curl_slist_append(headers, absl::StrCat("Authorization: Bearer ", *token).c_str());
  }
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10'000L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(timeout)));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnWrite);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https,http");
  if (!body.empty() || method == "POST" || method == "PATCH" || method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  if (!config_.ca_pem.empty()) SetBlob(curl, CURLOPT_CAINFO_BLOB, config_.ca_pem);
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!config_.client_cert_pem.empty()) {
    SetBlob(curl, CURLOPT_SSLCERT_BLOB, config_.client_cert_pem);
    SetBlob(curl, CURLOPT_SSLKEY_BLOB, config_.client_key_pem);
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
  }
  const CURLcode result = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (result == CURLE_WRITE_ERROR && transfer.stopped_by_caller) return response;
  if (result == CURLE_ABORTED_BY_CALLBACK || stopped_) {
    return absl::CancelledError(absl::StrCat(method, " ", path, ": stopping"));
  }
  if (result != CURLE_OK) {
    return absl::UnavailableError(
        absl::StrCat(method, " ", config_.server, path, ": ", curl_easy_strerror(result)));
  }
  return response;
}

absl::StatusOr<Json> KubeClient::Unary(const std::string& method, const std::string& path,
                                       const std::string& content_type, const std::string& body) {
  absl::StatusOr<Response> response =
      Perform(method, path, content_type, body, options_.request_timeout, nullptr);
  if (!response.ok()) return response.status();
  if (absl::Status status = StatusFromHttp(method, path, response->code, response->body);
      !status.ok()) {
    return status;
  }
  Json json = Json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::UnavailableError(absl::StrCat(method, " ", path, ": the answer is not JSON"));
  }
  return json;
}

absl::StatusOr<Json> KubeClient::Get(const std::string& path) { return Unary("GET", path, "", ""); }

absl::StatusOr<Json> KubeClient::Create(const std::string& path, const Json& object) {
  return Unary("POST", path, "application/json", object.dump());
}

absl::StatusOr<Json> KubeClient::Patch(const std::string& path, PatchType type, const Json& patch) {
  return Unary("PATCH", path, ContentType(type), patch.dump());
}

absl::StatusOr<Json> KubeClient::Delete(const std::string& path) {
  return Unary("DELETE", path, "", "");
}

absl::Status KubeClient::Watch(const std::string& path, const WatchOptions& options,
                               const std::function<bool(const Json& event)>& on_event) {
  std::string query = absl::StrCat("watch=1&timeoutSeconds=", options.timeout_seconds);
  if (options.bookmarks) absl::StrAppend(&query, "&allowWatchBookmarks=true");
  if (!options.resource_version.empty()) {
    absl::StrAppend(&query, "&resourceVersion=", EscapeQueryValue(options.resource_version));
  }
  if (!options.label_selector.empty()) {
    absl::StrAppend(&query, "&labelSelector=", EscapeQueryValue(options.label_selector));
  }
  if (!options.field_selector.empty()) {
    absl::StrAppend(&query, "&fieldSelector=", EscapeQueryValue(options.field_selector));
  }
  const std::string full =
      absl::StrCat(path, path.find('?') == std::string::npos ? "?" : "&", query);
  std::string pending;
  absl::Status failed;
  std::string error_body;
  const std::function<bool(const char*, size_t)> on_data = [&](const char* data, size_t n) {
    pending.append(data, n);
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, eol);
      pending.erase(0, eol + 1);
      if (absl::StripAsciiWhitespace(line).empty()) continue;
      const Json event = Json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!event.is_object() || !event.contains("type")) {
        error_body += line;  // a non-watch answer (an error's Status)
        continue;
      }
      if (Text(event, "type") == "ERROR") {
        const Json& status = Field(event, "object");
        const Json& code_field = Field(status, "code");
        const long code = code_field.is_number_integer() ? code_field.get<long>() : 500L;
        failed = StatusFromHttp("WATCH", path, code, status.dump());
        return false;
      }
      if (!on_event(event)) return false;
    }
    return true;
  };
  absl::StatusOr<Response> response =
      Perform("GET", full, "", "", absl::Seconds(options.timeout_seconds + 30), on_data);
  if (!failed.ok()) return failed;
  if (!response.ok()) return response.status();
  if (response->code != 0 && (response->code < 200 || response->code >= 300)) {
    return StatusFromHttp("WATCH", path, response->code, error_body + pending);
  }
  return absl::OkStatus();
}

}  // namespace collbench::kube
