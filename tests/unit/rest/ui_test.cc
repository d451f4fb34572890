// The /ui/ pages over loopback: the login cookie opens them and nothing
// else, every page carries the security headers, and a live run's page has
// exactly one script, allowed by its own nonce.
#include <string>

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
  httplib::Result WithCookie(const std::string& path, const std::string& token) {
    return client_->Get(path.c_str(), {{"Cookie", "a=1; collbench_token=" + token}});
  }
  httplib::Result Login(const std::string& form) {
    return client_->Post("/ui/login", form, "application/x-www-form-urlencoded");
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
  httplib::Result page = Get("/ui/", "");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 401);
  EXPECT_THAT(page->get_header_value("Content-Type"), StartsWith("text/html"));
  EXPECT_THAT(page->body, HasSubstr("<form class=\"login\" method=\"post\" action=\"/ui/login\">"));
  EXPECT_THAT(page->body, HasSubstr("name=\"next\" value=\"/ui/\""));
  EXPECT_EQ(Get("/ui/login", "")->status, 200);
}

TEST_F(UiTest, SigningInSetsAStrictHttpOnlyCookie) {
  Start();
  httplib::Result ok = Login("token=r-token&next=%2Fui%2Fcompare%3Fruns%3Da");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 303);
  EXPECT_EQ(ok->get_header_value("Location"), "/ui/compare?runs=a");
  EXPECT_EQ(ok->get_header_value("Set-Cookie"),
            "collbench_token=r-token; HttpOnly; SameSite=Strict; Path=/");
  httplib::Result wrong = Login("token=nope&next=/ui/");
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
  EXPECT_EQ(WithCookie("/ui/", kRead)->status, 200);
  EXPECT_EQ(WithCookie("/ui/runs/" + id, kRead)->status, 200);
  EXPECT_EQ(WithCookie("/ui/runs/" + id + "/fragment", kRead)->status, 200);
  EXPECT_EQ(WithCookie("/ui/", "wrong")->status, 401);
  EXPECT_EQ(WithCookie("/v1/runs", kRead)->status, 401);
  httplib::Result cancel = client_->Post(("/v1/runs/" + id + ":cancel").c_str(),
                                         {{"Cookie", std::string("collbench_token=") + kOperator}},
                                         "", "application/json");
  EXPECT_EQ(cancel->status, 401);
}

TEST_F(UiTest, PagesCarryTheSecurityHeaders) {
  c_.Register("a");
  Start();
  const std::string id = MakeRun(/*finish=*/true);
  for (const std::string& path : {std::string("/ui/"), "/ui/runs/" + id,
                                  "/ui/compare?runs=" + id + "," + id, std::string("/ui/login")}) {
    SCOPED_TRACE(path);
    httplib::Result page = Get(path);
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    const std::string csp = page->get_header_value("Content-Security-Policy");
    EXPECT_THAT(csp, HasSubstr("default-src 'none'"));
    EXPECT_THAT(csp, HasSubstr("script-src 'none'"));  // an ended run's page has no script
    EXPECT_THAT(csp, HasSubstr("connect-src 'self'"));
    EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(page->get_header_value("Referrer-Policy"), "no-referrer");
    EXPECT_THAT(page->body, Not(HasSubstr("<script")));
  }
  EXPECT_THAT(Get("/ui/runs/" + id)->body, HasSubstr("data-series="));
}

TEST_F(UiTest, ALiveRunsPageRunsOneScriptByItsNonce) {
  c_.Register("a");
  Start();
  const std::string id = MakeRun(/*finish=*/false);
  httplib::Result first = Get("/ui/runs/" + id);
  httplib::Result second = Get("/ui/runs/" + id);
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
  httplib::Result missing = Get("/ui/runs/nope");
  EXPECT_EQ(missing->status, 404);
  EXPECT_THAT(missing->get_header_value("Content-Type"), StartsWith("text/html"));
  EXPECT_EQ(Get("/ui/compare")->status, 400);
  EXPECT_EQ(Get("/ui/suites/none")->status, 404);
}

TEST_F(UiTest, OverTlsTheCookieIsSecure) {
  if (!StartTls("ui_tls")) GTEST_SKIP() << "no openssl command to make a certificate";
  httplib::Result login =
      tls_client_->Post("/ui/login", "token=r-token", "application/x-www-form-urlencoded");
  ASSERT_TRUE(login) << httplib::to_string(login.error());
  EXPECT_EQ(login->status, 303);
  EXPECT_EQ(login->get_header_value("Set-Cookie"),
            "collbench_token=r-token; HttpOnly; SameSite=Strict; Path=/; Secure");
}

TEST_F(UiTest, WithoutATokenFileThePagesAreOpen) {
  authorizer_ = Authorizer();
  Start();
  EXPECT_EQ(Get("/ui/", "")->status, 200);
  httplib::Result login = Login("token=anything");
  EXPECT_EQ(login->status, 303);
  EXPECT_EQ(login->get_header_value("Set-Cookie"), "");
}

TEST(UiSessionTest, CookiesAndTargets) {
  EXPECT_EQ(UiTokenFromCookies("x=1; collbench_token=a%3Bb; y=2"), "a;b");
  EXPECT_EQ(UiTokenFromCookies("collbench_token_other=1"), "");
  EXPECT_EQ(UiSessionCookie("a;b c", /*secure=*/true),
            "collbench_token=a%3bb%20c; HttpOnly; SameSite=Strict; Path=/; Secure");
  EXPECT_EQ(UiTokenFromCookies("collbench_token=a%3bb%20c"), "a;b c");
  EXPECT_EQ(SafeUiTarget("/ui/runs/x"), "/ui/runs/x");
  EXPECT_EQ(SafeUiTarget("//evil.example/ui/"), "/ui/");
  EXPECT_EQ(SafeUiTarget("/ui//evil"), "/ui/");
  EXPECT_EQ(SafeUiTarget("/v1/runs"), "/ui/");
  EXPECT_NE(NewScriptNonce(), NewScriptNonce());
}

}  // namespace
}  // namespace collbench
