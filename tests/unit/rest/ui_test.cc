// SPDX-License-Identifier: Apache-2.0
// The /ui/ pages over loopback: the session cookie opens them and nothing
// else, it holds a random session id and never the token, logout ends the
// session, logins are throttled, every page carries the security headers,
// and a live run's page has exactly one script, allowed by its own nonce.
#include <string>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rest_http_fixture.h"
#include "server/rest/ui_session.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class UiTest : public RestHttpTest {
 protected:
  test_http::Result WithCookie(const std::string& path, const std::string& session) {
    return client_->Get(path.c_str(), {{"Cookie", "a=1; collbench_session=" + session}});
  }
  test_http::Result Login(const std::string& form) {
    return client_->Post("/ui/login", form, "application/x-www-form-urlencoded");
  }
  // Signs in with `token`; the session id of the cookie set ("" if none).
  std::string SignIn(const std::string& token) {
    test_http::Result login = Login("token=" + token);
    if (!login || login->status != 303) return "";
    const std::string cookie = login->get_header_value("Set-Cookie");
    const std::string prefix = "collbench_session=";
    if (cookie.rfind(prefix, 0) != 0) return "";
    return cookie.substr(prefix.size(), cookie.find(';') - prefix.size());
  }
  test_http::Result Logout(const std::string& session, test_http::Headers headers = {}) {
    headers.emplace("Cookie", "collbench_session=" + session);
    return client_->Post("/ui/logout", headers, "", "application/x-www-form-urlencoded");
  }
  // A run of two sizes, left RUNNING unless `finish`.
  std::string MakeRun(bool finish) {
    const nlohmann::json run = Json(Post("/v1/runs", CreateBody()));
    const std::string name = run["name"];
    c_.Running(name, 2);
    c_.Result(name, 0);
    if (finish) {
      c_.Result(name, 1);
      c_.Succeeded(name, 2);
    }
    return Id(run);
  }
};

TEST_F(UiTest, PagesWithoutATokenShowTheLoginForm) {
  Start();
  test_http::Result page = Get("/ui/", "");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 401);
  EXPECT_THAT(page->get_header_value("Content-Type"), StartsWith("text/html"));
  EXPECT_THAT(page->body, HasSubstr("<form class=\"login\" method=\"post\" action=\"/ui/login\">"));
  EXPECT_THAT(page->body, HasSubstr("name=\"next\" value=\"/ui/\""));
  EXPECT_EQ(Get("/ui/login", "")->status, 200);
}

TEST_F(UiTest, SigningInSetsAStrictHttpOnlyCookie) {
  Start();
  test_http::Result ok = Login("token=r-token&next=%2Fui%2Fcompare%3Fruns%3Da");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 303);
  EXPECT_EQ(ok->get_header_value("Location"), "/ui/compare?runs=a");
  // A random session id, never the token; it lasts 12 hours at most.
  const std::string cookie = ok->get_header_value("Set-Cookie");
  EXPECT_THAT(cookie, testing::MatchesRegex("collbench_session=[0-9a-f]{64}; HttpOnly; "
                                            "SameSite=Strict; Path=/; Max-Age=43200"));
  EXPECT_THAT(cookie, Not(HasSubstr("r-token")));
  test_http::Result wrong = Login("token=nope&next=/ui/");
  EXPECT_EQ(wrong->status, 401);
  EXPECT_THAT(wrong->body, HasSubstr("does not give read access"));
  EXPECT_EQ(wrong->get_header_value("Set-Cookie"), "");
  // A worker token may not read; a login never sends the browser elsewhere.
  EXPECT_EQ(Login("token=w-token")->status, 401);
  EXPECT_EQ(Login("token=r-token&next=https://evil.example/")->get_header_value("Location"),
            "/ui/");
}

TEST_F(UiTest, TheCookieOpensThePagesAndNotTheApi) {
  c_.Register("a");
  Start();
  const std::string id = MakeRun(/*finish=*/true);
  const std::string session = SignIn(kRead);
  ASSERT_FALSE(session.empty());
  EXPECT_EQ(WithCookie("/ui/", session)->status, 200);
  EXPECT_EQ(WithCookie("/ui/runs/" + id, session)->status, 200);
  EXPECT_EQ(WithCookie("/ui/runs/" + id + "/fragment", session)->status, 200);
  EXPECT_EQ(WithCookie("/ui/", "wrong")->status, 401);
  EXPECT_EQ(WithCookie("/v1/runs", session)->status, 401);
  // The token itself in the cookie opens nothing.
  EXPECT_EQ(WithCookie("/ui/", kRead)->status, 401);
  const std::string operator_session = SignIn(kOperator);
  ASSERT_FALSE(operator_session.empty());
  test_http::Result cancel =
      client_->Post(("/v1/runs/" + id + ":cancel").c_str(),
                    {{"Cookie", "collbench_session=" + operator_session}}, "", "application/json");
  EXPECT_EQ(cancel->status, 401);
}

TEST_F(UiTest, LogoutEndsTheSession) {
  Start();
  const std::string session = SignIn(kRead);
  const std::string other = SignIn(kRead);
  ASSERT_EQ(WithCookie("/ui/", session)->status, 200);
  // From another site's page: refused, and the session lives on.
  test_http::Result foreign = Logout(session, {{"Origin", "http://evil.example"}});
  EXPECT_EQ(foreign->status, 403);
  EXPECT_EQ(WithCookie("/ui/", session)->status, 200);
  test_http::Result out =
      Logout(session, {{"Origin", "http://127.0.0.1:" + std::to_string(server_->port())}});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->status, 303);
  EXPECT_EQ(out->get_header_value("Location"), "/ui/login");
  EXPECT_THAT(out->get_header_value("Set-Cookie"), StartsWith("collbench_session=; "));
  EXPECT_THAT(out->get_header_value("Set-Cookie"), HasSubstr("Max-Age=0"));
  // The old cookie, replayed, opens nothing; another session is untouched.
  EXPECT_EQ(WithCookie("/ui/", session)->status, 401);
  EXPECT_EQ(WithCookie("/ui/", other)->status, 200);
}

TEST_F(UiTest, SessionsExpire) {
  HttpServerOptions options;
  options.ui_sessions.lifetime = absl::Seconds(1);
  Start(options);
  const std::string session = SignIn(kRead);
  ASSERT_EQ(WithCookie("/ui/", session)->status, 200);
  absl::SleepFor(absl::Milliseconds(1200));
  EXPECT_EQ(WithCookie("/ui/", session)->status, 401);
}

TEST_F(UiTest, LoginsAreThrottledPerClient) {
  HttpServerOptions options;
  options.ui_sessions.login_burst = 3;
  options.ui_sessions.login_per_minute = 1;
  Start(options);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Login("token=guess-" + std::to_string(i))->status, 401);
  // Even the right token waits now: guessing costs time, not just a 401.
  test_http::Result refused = Login("token=r-token");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429);
  EXPECT_EQ(refused->get_header_value("Set-Cookie"), "");
  int retry_after_s = 0;
  EXPECT_TRUE(absl::SimpleAtoi(refused->get_header_value("Retry-After"), &retry_after_s));
  EXPECT_GE(retry_after_s, 1);
  EXPECT_LE(retry_after_s, 60);
  EXPECT_EQ(server_->login_refusals(), 1);
}

TEST_F(UiTest, PagesCarryTheSecurityHeaders) {
  c_.Register("a");
  Start();
  const std::string id = MakeRun(/*finish=*/true);
  for (const std::string& path : {std::string("/ui/"), "/ui/runs/" + id,
                                  "/ui/compare?runs=" + id + "," + id, std::string("/ui/login")}) {
    SCOPED_TRACE(path);
    test_http::Result page = Get(path);
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    const std::string csp = page->get_header_value("Content-Security-Policy");
    EXPECT_THAT(csp, HasSubstr("default-src 'none'"));
    EXPECT_THAT(csp, HasSubstr("script-src 'none'"));  // an ended run's page has no script
    EXPECT_THAT(csp, HasSubstr("connect-src 'self'"));
    EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(page->get_header_value("Referrer-Policy"), "same-origin");
    EXPECT_THAT(page->body, Not(HasSubstr("<script")));
  }
  EXPECT_THAT(Get("/ui/runs/" + id)->body, HasSubstr("data-series="));
}

TEST_F(UiTest, ALiveRunsPageRunsOneScriptByItsNonce) {
  c_.Register("a");
  Start();
  const std::string id = MakeRun(/*finish=*/false);
  test_http::Result first = Get("/ui/runs/" + id);
  test_http::Result second = Get("/ui/runs/" + id);
  const std::string csp = first->get_header_value("Content-Security-Policy");
  const size_t at = csp.find("'nonce-");
  ASSERT_NE(at, std::string::npos) << csp;
  const std::string nonce = csp.substr(at + 7, csp.find('\'', at + 7) - at - 7);
  EXPECT_GE(nonce.size(), 22u);
  EXPECT_THAT(first->body, HasSubstr("<script nonce=\"" + nonce + "\">"));
  EXPECT_THAT(second->get_header_value("Content-Security-Policy"), Not(HasSubstr(nonce)));
  EXPECT_THAT(first->body, HasSubstr("data-events=\"/ui/runs/" + id + "/events\""));
  EXPECT_THAT(first->body, HasSubstr("data-state=\"running\""));
}

TEST_F(UiTest, UnknownRunsAndBadComparisonsArePages) {
  Start();
  test_http::Result missing = Get("/ui/runs/nope");
  EXPECT_EQ(missing->status, 404);
  EXPECT_THAT(missing->get_header_value("Content-Type"), StartsWith("text/html"));
  EXPECT_EQ(Get("/ui/compare")->status, 400);
  EXPECT_EQ(Get("/ui/suites/none")->status, 404);
}

TEST_F(UiTest, OverTlsTheCookieIsSecure) {
  if (!StartTls("ui_tls")) GTEST_SKIP() << "no openssl command to make a certificate";
  test_http::Result login =
      tls_client_->Post("/ui/login", "token=r-token", "application/x-www-form-urlencoded");
  ASSERT_TRUE(login) << test_http::to_string(login.error());
  EXPECT_EQ(login->status, 303);
  EXPECT_THAT(login->get_header_value("Set-Cookie"),
              testing::MatchesRegex("collbench_session=[0-9a-f]{64}; HttpOnly; SameSite=Strict; "
                                    "Path=/; Max-Age=43200; Secure"));
}

TEST_F(UiTest, WithoutATokenFileThePagesAreOpen) {
  authorizer_ = Authorizer();
  Start();
  EXPECT_EQ(Get("/ui/", "")->status, 200);
  test_http::Result login = Login("token=anything");
  EXPECT_EQ(login->status, 303);
  EXPECT_EQ(login->get_header_value("Set-Cookie"), "");
}

TEST(UiSessionTest, CookiesAndTargets) {
  EXPECT_EQ(UiSessionFromCookies("x=1; collbench_session=a%3Bb; y=2"), "a;b");
  EXPECT_EQ(UiSessionFromCookies("collbench_session_other=1"), "");
  EXPECT_EQ(UiSessionCookie("a;b c", /*secure=*/true, 60),
            "collbench_session=a%3bb%20c; HttpOnly; SameSite=Strict; Path=/; Max-Age=60; Secure");
  EXPECT_EQ(UiSessionFromCookies("collbench_session=a%3bb%20c"), "a;b c");
  EXPECT_EQ(UiClearedCookie(false),
            "collbench_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
  EXPECT_EQ(SafeUiTarget("/ui/runs/x"), "/ui/runs/x");
  EXPECT_EQ(SafeUiTarget("//evil.example/ui/"), "/ui/");
  EXPECT_EQ(SafeUiTarget("/ui//evil"), "/ui/");
  EXPECT_EQ(SafeUiTarget("/v1/runs"), "/ui/");
  EXPECT_NE(NewScriptNonce(), NewScriptNonce());
}

}  // namespace
}  // namespace collbench
