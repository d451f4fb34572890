// SPDX-License-Identifier: Apache-2.0
// The request guard's table: every kind of request a browser page of
// another site, a DNS-rebinding page, the server's own pages and the
// non-browser clients send, and what each gets.
#include "server/http/request_guard.h"

#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace collbench {
namespace {

constexpr std::nullopt_t kNone = std::nullopt;

struct Case {
  const char* name;
  const char* method;
  const char* path;
  std::optional<absl::string_view> host;
  std::optional<absl::string_view> origin;
  std::optional<absl::string_view> content_type;
  bool has_body;
  bool loopback;
  bool tls;
  int expected_status;        // 0: routed
  const char* message_names;  // a part of the message (the header's value)
};

const Case kCases[] = {
    // Bodies: JSON only; the /ui/ forms also as a form.
    {"json create", "POST", "/v1/runs", "127.0.0.1:8080", kNone, "application/json", true, true,
     false, 0, ""},
    {"json with charset", "POST", "/v1/runs", "localhost:8080", kNone,
     "Application/JSON; charset=utf-8", true, true, false, 0, ""},
    {"text/plain create", "POST", "/v1/runs", "127.0.0.1:8080", kNone, "text/plain", true, true,
     false, 415, "text/plain"},
    {"form to the API", "POST", "/v1/runs", "127.0.0.1:8080", kNone,
     "application/x-www-form-urlencoded", true, true, false, 415,
     "application/x-www-form-urlencoded"},
    {"multipart to the API", "PUT", "/v1/runs", "127.0.0.1:8080", kNone,
     "multipart/form-data; boundary=x", true, true, false, 415, "multipart/form-data"},
    {"body without a type", "POST", "/v1/runs", "127.0.0.1:8080", kNone, kNone, true, true, false,
     415, "without a type"},
    {"body with an empty type", "POST", "/v1/runs", "127.0.0.1:8080", kNone, "", true, true, false,
     415, "without a type"},
    {"no body, any type", "POST", "/v1/runs/x:cancel", "127.0.0.1:8080", kNone, "text/plain", false,
     true, false, 0, ""},
    {"login form", "POST", "/ui/login", "127.0.0.1:8080", "http://127.0.0.1:8080",
     "application/x-www-form-urlencoded", true, true, false, 0, ""},
    {"login as text/plain", "POST", "/ui/login", "127.0.0.1:8080", kNone, "text/plain", true, true,
     false, 415, "text/plain"},
    // Origins of state-changing requests.
    {"foreign origin text/plain", "POST", "/v1/runs", "127.0.0.1:8080", "http://evil.example",
     "text/plain", true, true, false, 403, "evil.example"},
    {"foreign origin json", "POST", "/v1/runs", "127.0.0.1:8080", "http://evil.example",
     "application/json", true, true, false, 403, "evil.example"},
    {"origin null", "POST", "/v1/runs", "127.0.0.1:8080", "null", "application/json", true, true,
     false, 403, "'null'"},
    {"another port is another origin", "POST", "/v1/runs", "127.0.0.1:8080",
     "http://127.0.0.1:3000", "application/json", true, true, false, 403, "127.0.0.1:3000"},
    {"another scheme is another origin", "POST", "/v1/runs", "127.0.0.1:8080",
     "https://127.0.0.1:8080", "application/json", true, true, false, 403, "https"},
    {"localhost page to 127.0.0.1", "POST", "/v1/runs", "127.0.0.1:8080", "http://localhost:8080",
     "application/json", true, true, false, 403, "localhost"},
    {"own origin", "POST", "/v1/runs", "127.0.0.1:8080", "http://127.0.0.1:8080",
     "application/json", true, true, false, 0, ""},
    {"own origin, host case", "DELETE", "/v1/runs/x", "LOCALHOST:8080", "http://localhost:8080",
     kNone, false, true, false, 0, ""},
    {"own origin over tls, default port", "POST", "/v1/runs", "collbench.example",
     "https://collbench.example", "application/json", true, false, true, 0, ""},
    {"own origin, explicit default port", "POST", "/v1/runs", "collbench.example:443",
     "https://collbench.example", "application/json", true, false, true, 0, ""},
    {"origin with a path", "POST", "/v1/runs", "127.0.0.1:8080", "http://127.0.0.1:8080/x",
     "application/json", true, true, false, 403, "127.0.0.1:8080/x"},
    {"origin without a host header", "POST", "/v1/runs", kNone, "http://127.0.0.1:8080",
     "application/json", true, false, false, 403, "127.0.0.1:8080"},
    {"foreign origin on a read", "GET", "/v1/runs", "127.0.0.1:8080", "http://evil.example", kNone,
     false, true, false, 0, ""},
    {"foreign origin drain", "POST", "/v1/workers/a:drain", "10.0.0.5:8080", "http://evil.example",
     kNone, false, false, false, 403, "evil.example"},
    {"foreign origin logout", "POST", "/ui/logout", "127.0.0.1:8080", "http://evil.example",
     "application/x-www-form-urlencoded", true, true, false, 403, "evil.example"},
    // Host names on a loopback listener (DNS rebinding).
    {"rebound name, read", "GET", "/v1/runs", "evil.example:8080", kNone, kNone, false, true, false,
     421, "evil.example:8080"},
    {"rebound name, same-origin create", "POST", "/v1/runs", "evil.example:8080",
     "http://evil.example:8080", "application/json", true, true, false, 421, "evil.example"},
    {"rebound name, metrics", "GET", "/metrics", "evil.example", kNone, kNone, false, true, false,
     421, "evil.example"},
    {"empty host", "GET", "/v1/runs", "", kNone, kNone, false, true, false, 421, "''"},
    {"host 127.1.2.3", "GET", "/v1/runs", "127.1.2.3:9", kNone, kNone, false, true, false, 0, ""},
    {"host [::1]", "GET", "/v1/runs", "[::1]:8080", kNone, kNone, false, true, false, 0, ""},
    {"host localhost", "GET", "/ui/", "localhost", kNone, kNone, false, true, false, 0, ""},
    {"host 127.0.0.1.evil", "GET", "/v1/runs", "127.0.0.1.evil.example", kNone, kNone, false, true,
     false, 421, "127.0.0.1.evil.example"},
    {"host 0.0.0.0", "GET", "/v1/runs", "0.0.0.0:8080", kNone, kNone, false, true, false, 421,
     "0.0.0.0"},
    {"host shorthand 127.1", "GET", "/v1/runs", "127.1:8080", kNone, kNone, false, true, false, 421,
     "127.1"},
    {"host with userinfo", "GET", "/v1/runs", "x@127.0.0.1:8080", kNone, kNone, false, true, false,
     421, "x@127.0.0.1"},
    {"no host header (HTTP/1.0 tool)", "GET", "/healthz", kNone, kNone, kNone, false, true, false,
     0, ""},
    {"any host beyond loopback", "GET", "/v1/runs", "collbench.example:8080", kNone, kNone, false,
     false, false, 0, ""},
};

TEST(RequestGuardTest, Table) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    GuardedRequest request;
    request.method = c.method;
    request.path = c.path;
    request.host = c.host;
    request.origin = c.origin;
    request.content_type = c.content_type;
    request.has_body = c.has_body;
    const std::optional<GuardRefusal> refusal =
        CheckRequest(request, GuardedListener{c.loopback, c.tls, "/ui/"});  // the forms' path
    if (c.expected_status == 0) {
      EXPECT_FALSE(refusal.has_value()) << refusal->http_status << " " << refusal->message;
      continue;
    }
    ASSERT_TRUE(refusal.has_value());
    EXPECT_EQ(refusal->http_status, c.expected_status) << refusal->message;
    EXPECT_NE(refusal->message.find(c.message_names), std::string::npos) << refusal->message;
  }
}

TEST(RequestGuardTest, StateChangingMethods) {
  for (const char* method : {"POST", "PUT", "PATCH", "DELETE"})
    EXPECT_TRUE(IsStateChanging(method));
  for (const char* method : {"GET", "HEAD", "OPTIONS"}) EXPECT_FALSE(IsStateChanging(method));
}

}  // namespace
}  // namespace collbench
