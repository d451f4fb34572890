// SPDX-License-Identifier: Apache-2.0
// The /ui/ pages over loopback: the session cookie opens them and nothing
// else, it holds a random session id and never the token, logout ends the
// session, logins are throttled, every page carries the security headers,
// a live run's page has exactly one script, allowed by its own nonce, and
// the schedule pages and a check's workflow page colour their verdicts.
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "api/convert.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rest_http_fixture.h"
#include "server/ui/ui_session.h"
#include "server/workflows/checks.h"
#include "server/workflows/run_manager_runs.h"
#include "server/workflows/schedule_manager.h"

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
  FakeClock clock;
  clock_ = &clock;
  HttpFrontendOptions options;
  options.ui_sessions.lifetime = absl::Seconds(1);
  Start(options);
  const std::string session = SignIn(kRead);
  ASSERT_EQ(WithCookie("/ui/", session)->status, 200);
  clock.Advance(absl::Milliseconds(1200));
  EXPECT_EQ(WithCookie("/ui/", session)->status, 401);
}

TEST_F(UiTest, LoginsAreThrottledPerClient) {
  HttpFrontendOptions options;
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

// The run page's results carry the references the coordinator set: the
// limit of the path from the worker's measured memory bandwidth, with its
// derivation as the tooltip and as a dashed line on the bandwidth plot;
// "-" where a result has none.
TEST_F(UiTest, TheRunPageShowsTheResultsReferences) {
  v1::Register hello;
  hello.set_worker_id("a");
  hello.set_slots(2);
  hello.set_agent_address("a:7000");
  hello.mutable_inventory()->set_host_id("host-a");
  hello.mutable_inventory()->set_hostname("a");
  hello.mutable_inventory()->set_memory_bytes(uint64_t{8} << 30);
  hello.mutable_inventory()->mutable_memory_bandwidth()->set_copy_bytes_per_s(10e9);
  hello.mutable_inventory()->mutable_memory_bandwidth()->set_copy_all_bytes_per_s(20e9);
  ASSERT_TRUE(c_.fleet().OnRegister(hello, absl::Now()).ok());
  Start();
  const nlohmann::json run = Json(Post("/v1/runs", CreateBody()));
  const std::string name = run["name"];
  c_.Running(name, 2);
  // One worker: shared memory with CMA, one copy per byte, so the limit is
  // min(10 GB/s, 20 GB/s / 2 ranks) = 10 GB/s.
  v1::RunResult measured;
  measured.set_run(name);
  measured.mutable_result()->set_sequence(0);
  measured.mutable_result()->set_operation("allreduce");
  measured.mutable_result()->set_bytes(8);
  measured.mutable_result()->set_avg_s(1e-6);
  measured.mutable_result()->set_busbw_bytes_per_s(6.2e9);
  c_.manager().OnResult("workers/a", measured, absl::Now());
  c_.manager().FlushJournal();
  c_.Result(name, 1);  // no operation, no bandwidth: no references
  c_.Succeeded(name, 2);

  test_http::Result page = Get("/ui/runs/" + Id(run));
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200);
  EXPECT_THAT(page->body, HasSubstr("<th>% of limit</th><th>% of expected</th>"));
  EXPECT_THAT(page->body, HasSubstr("<td class=\"num\" title=\"shm (cma), 1 host: memory "
                                    "min(copy 10 GB/s"));
  // No published reference holds for a host-memory run on one host.
  EXPECT_THAT(page->body, HasSubstr("\">62%</td><td class=\"num\">-</td></tr>"));
  EXPECT_THAT(page->body, HasSubstr("<td class=\"num\">-</td><td class=\"num\">-</td></tr>"));
  EXPECT_THAT(page->body, HasSubstr("<g class=\"reference\" data-reference=\"limit\">"));
  EXPECT_THAT(page->body, Not(HasSubstr("data-reference=\"expected\"")));
  // The live fragment renders the same table.
  EXPECT_THAT(Get("/ui/runs/" + Id(run) + "/fragment")->body, HasSubstr(">62%</td>"));
}

// A comparison names each run once however often it is given, and no more
// distinct runs than a request may name (--max-runs-per-request), refused
// before any is read.
TEST_F(UiTest, AComparisonShowsEachRunOnceAndBoundsTheirNumber) {
  c_.Register("a");
  Start();
  const std::string id = MakeRun(/*finish=*/true);
  test_http::Result once = Get("/ui/compare?runs=" + id);
  ASSERT_EQ(once->status, 200);
  std::string copies = id;
  for (int i = 0; i < 100; ++i) absl::StrAppend(&copies, ",runs/", id);
  test_http::Result repeated = Get("/ui/compare?runs=" + copies);
  ASSERT_EQ(repeated->status, 200);
  EXPECT_EQ(repeated->body, once->body);
  std::string distinct = id;
  for (int i = 0; i < 256; ++i) absl::StrAppend(&distinct, ",nope", i);
  test_http::Result refused = Get("/ui/compare?runs=" + distinct);
  EXPECT_EQ(refused->status, 400);
  EXPECT_THAT(refused->body, HasSubstr("more than 256 distinct runs"));
  EXPECT_THAT(refused->body, HasSubstr("--max-runs-per-request"));
}

TEST_F(UiTest, UnknownRunsAndBadComparisonsArePages) {
  Start();
  test_http::Result missing = Get("/ui/runs/nope");
  EXPECT_EQ(missing->status, 404);
  EXPECT_THAT(missing->get_header_value("Content-Type"), StartsWith("text/html"));
  EXPECT_EQ(Get("/ui/compare")->status, 400);
  EXPECT_EQ(Get("/ui/suites/none")->status, 404);
}

// The schedule pages over stored schedules and a stored check workflow,
// as a coordinator would have left them (the managers load them at start;
// nothing ticks them, so nothing fires during the test).
class UiScheduleTest : public UiTest {
 protected:
  void TearDown() override {
    UiTest::TearDown();  // the server first: it uses the managers
    schedule_manager_.reset();
    workflow_manager_.reset();
  }

  // Starts the server with a workflow manager and, unless `with_schedules`
  // is false, a schedule manager over what is stored.
  void StartWithSchedules(bool with_schedules = true) {
    runs_ = std::make_unique<RunManagerRuns>(&c_.manager(), &c_.fleet(), &c_.hub());
    workflow_manager_ = std::make_unique<WorkflowManager>(&c_.store(), runs_.get(), RealClock(),
                                                          WorkflowManagerOptions());
    ASSERT_TRUE(workflow_manager_->Start().ok());
    workflows_ = workflow_manager_.get();
    if (with_schedules) {
      schedule_manager_ = std::make_unique<ScheduleManager>(
          &c_.store(), runs_.get(), workflow_manager_.get(), ScheduleManagerOptions());
      ASSERT_TRUE(schedule_manager_->Start().ok());
      schedules_ = schedule_manager_.get();
    }
    Start();
  }

  // workflows/check-1: a check that found one regression among four
  // configurations, with its table as the workflow manager adds it.
  void StoreCheckWorkflow() {
    v1::Workflow w;
    w.set_name("workflows/check-1");
    w.set_kind("matrix");
    w.set_state(v1::WORKFLOW_SUCCEEDED);
    *w.mutable_create_time() = TimestampFromTime(absl::Now());
    v1::CheckOutput* check = w.mutable_output()->mutable_check();
    check->set_baseline("baselines/base");
    check->set_threshold(0.05);
    check->set_alpha(0.01);
    for (const char* verdict : {"ok", "faster", "slower", "regression"}) {
      v1::CheckRow* row = check->add_rows();
      row->set_key_text(absl::StrCat("allreduce ", verdict));
      row->set_verdict(verdict);
      row->set_baseline_median_s(1e-5);
      row->set_candidate_median_s(1.2e-5);
      row->set_ratio(1.2);
    }
    check->set_regressions(1);
    check->set_regressed(true);
    *w.mutable_output()->add_tables() = workflows::CheckTable(*check);
    ASSERT_TRUE(c_.store().PutWorkflow(w).ok());
  }

  // schedules/nightly: active, checked against baselines/base; its last
  // three firings found a regression, were skipped and succeeded.
  // schedules/weekly: a paused suite, no baseline, a firing still running
  // after one that failed.
  void StoreSchedules() {
    const absl::Time now = absl::Now();
    v1::Schedule nightly;
    nightly.set_name("schedules/nightly");
    nightly.mutable_spec()->set_every_seconds(86400);
    nightly.mutable_spec()->mutable_run()->set_operation("allreduce");
    nightly.mutable_spec()->mutable_run()->set_ranks(2);
    nightly.mutable_spec()->set_baseline("baselines/base");
    *nightly.mutable_create_time() = TimestampFromTime(now - absl::Hours(72));
    *nightly.mutable_next_fire_time() = TimestampFromTime(now + absl::Hours(1));
    nightly.set_firings(3);
    nightly.set_regressions_found(1);
    nightly.set_last_outcome("regression");
    AddFiring(&nightly, now - absl::Hours(23), "workflows/check-1", "regression", 1, "");
    AddFiring(&nightly, now - absl::Hours(47), "", "skipped", 0,
              "workers busy for the whole window (6h): runs/x <b>");
    AddFiring(&nightly, now - absl::Hours(71), "workflows/old-1", "succeeded", 0, "");
    ASSERT_TRUE(c_.store().PutSchedule(nightly).ok());

    v1::Schedule weekly;
    weekly.set_name("schedules/weekly");
    weekly.mutable_spec()->set_every_seconds(7 * 86400);
    weekly.mutable_spec()->mutable_suite()->set_suite("container-parity");
    weekly.mutable_spec()->mutable_suite()->set_profile("ci");
    weekly.set_paused(true);
    weekly.set_last_outcome("failed");
    AddFiring(&weekly, now - absl::Hours(1), "workflows/wk-2", "running", 0, "");
    AddFiring(&weekly, now - absl::Hours(169), "workflows/wk-1", "failed", 0, "a run failed");
    ASSERT_TRUE(c_.store().PutSchedule(weekly).ok());
  }

  static void AddFiring(v1::Schedule* s, absl::Time time, const std::string& workflow,
                        const std::string& outcome, int regressions, const std::string& reason) {
    v1::ScheduleFiring* f = s->add_history();
    *f->mutable_time() = TimestampFromTime(time);
    f->set_workflow(workflow);
    f->set_outcome(outcome);
    f->set_regressions(regressions);
    f->set_reason(reason);
  }

  std::unique_ptr<RunManagerRuns> runs_;
  std::unique_ptr<WorkflowManager> workflow_manager_;
  std::unique_ptr<ScheduleManager> schedule_manager_;
};

// docs/design/workflows.md#schedules: /ui/schedules lists the schedules with their last verdicts,
// coloured (succeeded green, regression and failed red, skipped amber, a
// firing still going neutral), each linked to its page and its workflow.
TEST_F(UiScheduleTest, TheListShowsEachScheduleWithItsLastOutcome) {
  StoreCheckWorkflow();
  StoreSchedules();
  StartWithSchedules();
  test_http::Result page = Get("/ui/schedules");
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200) << page->body;
  EXPECT_THAT(page->get_header_value("Content-Type"), StartsWith("text/html"));
  EXPECT_THAT(page->get_header_value("Content-Security-Policy"), HasSubstr("script-src 'none'"));
  const std::string& body = page->body;
  EXPECT_THAT(body, HasSubstr("<a href=\"/ui/schedules\">schedules</a>"));  // the nav
  EXPECT_THAT(body,
              HasSubstr("<tr><td><a href=\"/ui/schedules/nightly\">nightly</a></td><td>1d</td>"
                        "<td>run allreduce on 2 ranks</td><td>baselines/base</td>"
                        "<td><span class=\"badge active\">active</span></td><td>"));
  EXPECT_THAT(
      body,
      HasSubstr(
          "<td><span class=\"badge regression\">regression</span></td><td class=\"num\">1</td>"
          "<td><a href=\"/ui/workflows/check-1\">check-1</a></td></tr>"));
  EXPECT_THAT(
      body, HasSubstr("<tr><td><a href=\"/ui/schedules/weekly\">weekly</a></td><td>7d</td>"
                      "<td>suite container-parity (ci)</td><td>none: runs only, no check</td>"
                      "<td><span class=\"badge paused\">paused</span></td><td>none (paused)</td>"));
  // A firing still running is neutral, shown with the last one that ended.
  EXPECT_THAT(body, HasSubstr("<td><span class=\"badge running\">running</span> "
                              "<span class=\"meta\">before: </span>"
                              "<span class=\"badge failed\">failed</span></td>"));
  EXPECT_THAT(body, HasSubstr("<a href=\"/ui/workflows/wk-2\">wk-2</a>"));
  // The style sheet gives the outcomes their colours.
  EXPECT_THAT(body, HasSubstr(".badge.failed, .badge.cancelled, .badge.regression {"));
  EXPECT_THAT(body, HasSubstr(".badge.skipped {"));
}

TEST_F(UiScheduleTest, AScheduleShowsItsSettingsAndFirings) {
  StoreCheckWorkflow();
  StoreSchedules();
  StartWithSchedules();
  test_http::Result page = Get("/ui/schedules/nightly");
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200) << page->body;
  const std::string& body = page->body;
  EXPECT_THAT(body, HasSubstr("<h1>collbench schedule nightly</h1>"));
  EXPECT_THAT(body, HasSubstr("<tr><td>every</td><td>1d</td></tr>"));
  EXPECT_THAT(body, HasSubstr("<tr><td>baseline</td><td>baselines/base</td></tr>"));
  EXPECT_THAT(body, HasSubstr("<tr><td>regression threshold</td><td>5% slower (default)</td>"));
  EXPECT_THAT(body, HasSubstr("<tr><td>firings</td><td class=\"num\">3</td></tr>"));
  // Newest first: the regression, the skipped firing with its reason
  // (escaped), the success; each that ran linked to its workflow.
  const size_t regression = body.find(
      "<td><span class=\"badge regression\">regression</span></td>"
      "<td><a href=\"/ui/workflows/check-1\">check-1</a></td><td class=\"num\">1</td>");
  const size_t skipped = body.find(
      "<td><span class=\"badge skipped\">skipped</span></td><td></td><td class=\"num\">0</td>"
      "<td class=\"wrap\">workers busy for the whole window (6h): runs/x &lt;b&gt;</td>");
  const size_t succeeded = body.find(
      "<td><span class=\"badge succeeded\">succeeded</span></td>"
      "<td><a href=\"/ui/workflows/old-1\">old-1</a></td>");
  ASSERT_NE(regression, std::string::npos) << body;
  ASSERT_NE(skipped, std::string::npos) << body;
  ASSERT_NE(succeeded, std::string::npos) << body;
  EXPECT_LT(regression, skipped);
  EXPECT_LT(skipped, succeeded);
  EXPECT_THAT(body, Not(HasSubstr("<b>")));

  test_http::Result weekly = Get("/ui/schedules/weekly");
  EXPECT_THAT(weekly->body, HasSubstr("<tr><td>next firing</td><td>none (paused)</td></tr>"));
  EXPECT_THAT(weekly->body, HasSubstr("<td class=\"wrap\">a run failed</td>"));
  test_http::Result missing = Get("/ui/schedules/nope");
  EXPECT_EQ(missing->status, 404);
  EXPECT_THAT(missing->get_header_value("Content-Type"), StartsWith("text/html"));
}

// The check's table on the workflow page: regression red, slower amber,
// ok and faster green, by the verdict column's class.
TEST_F(UiScheduleTest, TheWorkflowPageColoursTheCheckVerdicts) {
  StoreCheckWorkflow();
  StartWithSchedules();
  test_http::Result page = Get("/ui/workflows/check-1");
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200) << page->body;
  for (const char* verdict : {"regression", "slower", "faster", "ok"}) {
    EXPECT_THAT(page->body,
                HasSubstr(absl::StrCat("<tr><td class=\"verdict-", verdict, "\">", verdict,
                                       "</td><td>allreduce ", verdict, "</td>")));
  }
}

TEST_F(UiScheduleTest, WithNoSchedulesTheListSaysSo) {
  StartWithSchedules();
  test_http::Result empty = Get("/ui/schedules");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 200);
  EXPECT_THAT(empty->body, HasSubstr("No schedules yet."));
  EXPECT_THAT(empty->body, Not(HasSubstr("<table")));
}

TEST_F(UiScheduleTest, WithoutAScheduleManagerThePagesSaySo) {
  StartWithSchedules(/*with_schedules=*/false);
  for (const std::string path : {"/ui/schedules", "/ui/schedules/nightly"}) {
    test_http::Result page = Get(path);
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 503) << path;
    EXPECT_THAT(page->get_header_value("Content-Type"), StartsWith("text/html"));
    EXPECT_THAT(page->body, HasSubstr("this server runs no schedules"));
  }
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
