#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Browser tests of the reports and the coordinator's /ui/ pages: Debian's
chromium, headless, driven over the DevTools protocol (cdp.py), against a
real coordinator (--http-listen, --tokens) and two workers.

    ui_test.py --bin-dir build/bin [--case pages] [--case live]

Cases:
  pages  two runs that differ in transport (shm, tcp) and a stored suite run
         (container-parity, ci profile); `collbench report` writes one run's
         and the comparison's file and refuses bad input with exit 2. In the
         browser: the report files and /ui/, /ui/runs/{id}, /ui/compare and
         /ui/suites/{id}, /ui/workflows, /ui/workflows/{id} and its report,
         /ui/schedules and /ui/schedules/{id} (a schedule checked against a
         baseline of the shm run, after its first firing) and the firing's
         workflow load with no console error, no exception and no
         request outside the page's own origin (for a file: none but the
         file); every plot has one series per configuration; the schedule's
         last outcome and the check's verdict cells are coloured (green,
         amber or red) and link to the firing's workflow; /ui/ without a
         token shows the login form, and signing in sets an HttpOnly,
         SameSite=Strict, expiring cookie holding a random session id (never
         the token) that the pages accept and the API does not; the page's
         sign-out form (same origin) ends the session, after which the old
         cookie opens nothing.
  live   a run of 18 sizes opened on /ui/runs/{id} as soon as it is created:
         while it is RUNNING the page's point count grows without a reload
         (a partial curve is seen), and it ends with every size and the
         final state.

Screenshots go to $COLLBENCH_UI_ARTIFACTS (default: BIN_DIR/../test-artifacts/ui).
Exit code 0 when every case passed, 1 otherwise, 77 when chromium or curl is
missing (ctest reports a skip).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(HERE, "..", "integration", "rest"))
sys.path.insert(0, os.path.join(HERE, "..", "integration", "service"))
sys.path.insert(0, HERE)
import cdp  # noqa: E402
import rest_test  # noqa: E402  (RestCluster: a coordinator with HTTP and tokens)
import service_test as svc  # noqa: E402
from service_test import Failure, expect, poll  # noqa: E402

READ, OPERATOR = rest_test.READ, rest_test.OPERATOR
FINAL = ("SUCCEEDED", "FAILED", "CANCELLED")


class UiCluster(rest_test.RestCluster):
    """The REST tests' cluster; the CLI carries the operator token."""

    def cli(self, *args, **kwargs):
        return super().cli("--token", OPERATOR, *args, **kwargs)

    def artifacts(self):
        path = os.environ.get("COLLBENCH_UI_ARTIFACTS") or os.path.join(
            self.bin_dir, "..", "test-artifacts", "ui")
        os.makedirs(path, exist_ok=True)
        return os.path.abspath(path)

    def state(self, rid):
        return self.call("GET", "/v1/runs/" + rid, READ)["state"]

    def wait_final(self, rid, timeout=180):
        return poll("%s to end" % rid,
                    lambda: (lambda s: s if s in FINAL else None)(self.state(rid)), timeout, 0.3)


def run_id(name):
    return name.split("/", 1)[1]


def start(c):
    c.start_coordinator()
    c.start_workers(2, slots=2)


def make_run(c, *flags):
    return run_id(c.create_run("allreduce", "--ranks", "2", *flags))


def check_clean(page, what, origin=None, only=None):
    """No error and no request elsewhere since the page's last navigate()."""
    errors = page.errors()
    expect(not errors, "%s: console errors or exceptions: %s" % (what, errors))
    for url in page.requests():
        if only is not None:
            expect(url == only, "%s: requested %s (only the file itself may be read)" % (what, url))
        else:
            expect(url.startswith(origin + "/"), "%s: requested %s outside %s" % (what, url, origin))


SERIES_PER_PLOT = """
  Array.from(document.querySelectorAll('svg.plot')).map(function (svg) {
    return Array.from(svg.querySelectorAll('g.series')).map(function (g) {
      return g.getAttribute('data-series'); });
  })"""


def check_series(page, what, expected):
    """Every plot has `expected` series (a count or a list of names)."""
    plots = page.evaluate(SERIES_PER_PLOT)
    expect(plots, "%s: no plots" % what)
    for names in plots:
        if isinstance(expected, int):
            expect(len(names) == expected and len(set(names)) == expected,
                   "%s: a plot has series %s, expected %d distinct" % (what, names, expected))
        else:
            expect(sorted(names) == sorted(expected),
                   "%s: a plot has series %s, expected %s" % (what, names, expected))
    return plots


def submit(page, script):
    """Runs `script` (which submits a form) and waits for the page it loads;
    events from here on belong to that page."""
    page.mark = len(page.browser.events)
    page.evaluate(script)
    deadline = time.monotonic() + 20
    while not page.events("Page.loadEventFired"):
        expect(time.monotonic() < deadline, "submitting a form loaded no page")
        page.browser.pump(0.2)


def sign_in(c, page, token):
    """/ui/ without a cookie shows the form; submitting a read token lands on
    /ui/ with the cookie set."""
    page.navigate(c.url("/ui/"))
    expect(page.evaluate("!!document.querySelector('form.login')"),
           "/ui/ without a token does not show the login form")
    page.screenshot(os.path.join(c.artifacts(), "ui-login.png"))
    submit(page, "document.querySelector('input[name=token]').value = %s;"
           "document.querySelector('form.login').submit(); true" % json.dumps(token))
    expect(page.evaluate("location.pathname") == "/ui/",
           "signing in went to %s" % page.evaluate("location.href"))
    cookies = page.call("Network.getCookies", {"urls": [c.url("/ui/")]})["cookies"]
    session = [k for k in cookies if k["name"] == "collbench_session"]
    expect(session and session[0]["httpOnly"] and session[0]["sameSite"] == "Strict"
           and session[0]["path"] == "/" and not session[0]["session"]
           and session[0]["expires"] <= time.time() + 12 * 3600 + 60,
           "the login cookie is not HttpOnly, SameSite=Strict, Path=/, expiring within "
           "12 h: %s" % cookies)
    expect(re.fullmatch(r"[0-9a-f]{64}", session[0]["value"]) and token not in session[0]["value"],
           "the login cookie does not hold a random session id: %s" % session[0]["value"])
    return session[0]["value"]


def sign_out(c, page, session):
    """The page's sign-out form ends the session: the browser lands on the
    login form and the old cookie, replayed, opens nothing."""
    page.navigate(c.url("/ui/"))
    submit(page, "document.querySelector('form.logout').submit(); true")
    expect(page.evaluate("location.pathname") == "/ui/login",
           "signing out went to %s" % page.evaluate("location.href"))
    status = cookie_status(c, "GET", "/ui/", "collbench_session=" + session)
    expect(status == "401", "the cookie of an ended session still opens /ui/: %s" % status)


def cookie_status(c, method, path, cookie, *extra):
    done = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X",
                           method, "-H", "Cookie: " + cookie, *extra, c.url(path)],
                          capture_output=True, text=True, timeout=30)
    return done.stdout


def curl_sign_in(c, token):
    """The session id /ui/login sets for `token` (a form POST, as a browser's)."""
    done = subprocess.run(["curl", "-s", "-o", "/dev/null", "-D", "-", "--data",
                           "token=%s&next=/ui/" % token, c.url("/ui/login")],
                          capture_output=True, text=True, timeout=30)
    match = re.search(r"^set-cookie: collbench_session=([0-9a-f]+);", done.stdout, re.M | re.I)
    expect(match, "signing in with curl set no session cookie: %r" % done.stdout[-500:])
    return match.group(1)


def check_cli_errors(c, rid, out_dir):
    for args, needle in ((["report", "-o", os.path.join(out_dir, "x.html")], "at least one run"),
                         (["report", "no-such-run", "-o", os.path.join(out_dir, "x.html")],
                          "no-such-run"),
                         (["report", rid], "-o FILE.html is required")):
        done = c.cli(*args, expect_code=2)
        expect(needle in done.stderr, "`collbench %s` said %r" % (" ".join(args), done.stderr))


def check_headers_and_cookie(c, rid):
    status, body, headers = c.curl("GET", "/ui/runs/" + rid, READ)
    expect(status == 200, "GET /ui/runs/%s with a bearer token: %d" % (rid, status))
    csp = headers.get("content-security-policy", "")
    expect("default-src 'none'" in csp and "connect-src 'self'" in csp,
           "the /ui/ page's Content-Security-Policy is %r" % csp)
    expect(headers.get("x-content-type-options") == "nosniff", "no nosniff")
    expect(headers.get("referrer-policy") == "same-origin", "no Referrer-Policy same-origin")
    # The cookie opens /ui/ pages only, never the API; the token itself as
    # a cookie opens nothing.
    cookie = "collbench_session=" + curl_sign_in(c, READ)
    for method, path, want, sent in (("GET", "/ui/runs/" + rid, 200, cookie),
                                     ("GET", "/v1/runs", 401, cookie),
                                     ("POST", "/v1/runs/%s:cancel" % rid, 401, cookie),
                                     ("GET", "/ui/runs/" + rid, 401, "collbench_session=" + READ),
                                     ("GET", "/ui/runs/" + rid, 401, "collbench_token=" + READ)):
        got = cookie_status(c, method, path, sent)
        expect(got == str(want), "%s %s with only the cookie %s answered %s, expected %d" % (
            method, path, sent.split("=")[0], got, want))
    # Logging out from another site's page is refused; from this one it ends
    # the session.
    got = cookie_status(c, "POST", "/ui/logout", cookie, "-H", "Origin: http://evil.example")
    expect(got == "403", "a cross-origin POST /ui/logout answered %s" % got)
    expect(cookie_status(c, "GET", "/ui/runs/" + rid, cookie) == "200",
           "a refused logout ended the session")
    got = cookie_status(c, "POST", "/ui/logout", cookie, "-H", "Origin: " + c.url(""))
    expect(got == "303", "POST /ui/logout answered %s" % got)
    expect(cookie_status(c, "GET", "/ui/runs/" + rid, cookie) == "401",
           "the cookie still opens /ui/ after logout")
    done = subprocess.run(["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--data",
                           "token=wrong&next=/ui/", c.url("/ui/login")],
                          capture_output=True, text=True, timeout=30)
    expect(done.stdout.endswith("\n401") and "does not give read access" in done.stdout,
           "a wrong token at /ui/login: %r" % done.stdout[-300:])


SCHEDULE = "ui-check"
# What the style sheet paints a coloured outcome or verdict with
# (analysis/html.cc): green, amber, red backgrounds.
GREEN, AMBER, RED = "rgb(231, 246, 234)", "rgb(255, 241, 214)", "rgb(253, 232, 230)"
OUTCOME_COLOURS = {"succeeded": GREEN, "regression": RED, "failed": RED, "skipped": AMBER}
VERDICT_COLOURS = {"ok": GREEN, "faster": GREEN, "slower": AMBER, "regression": RED}


def make_schedule(c, rid):
    """A baseline of run `rid` (shm, four sizes) and a schedule of the same
    run checked against it every hour; waits for its first firing (due at
    once) to end with its check. The firing's workflow id."""
    c.cli("baseline", "save", "ui-base", rid)
    c.cli("schedule", "create", SCHEDULE, "--every", "1h", "--baseline", "ui-base", "allreduce",
          "--ranks", "2", "--transport", "shm", "--sizes", "8,1K,64K,1M")

    def ended():
        history = c.call("GET", "/v1/schedules/" + SCHEDULE, READ).get("history", [])
        outcome = history[0].get("outcome") if history else None
        expect(outcome not in ("failed", "skipped", "cancelled"),
               "the first firing of %s: %s" % (SCHEDULE, history[:1]))
        return history[0] if outcome in ("succeeded", "regression") else None
    firing = poll("the first firing of %s to end with its check" % SCHEDULE, ended, 180, 0.5)
    return run_id(firing["workflow"])


BADGE_COLOURS = """
  Array.from(document.querySelectorAll('span.badge')).map(function (b) {
    return [b.textContent, getComputedStyle(b).backgroundColor]; })"""

VERDICT_CELLS = """
  Array.from(document.querySelectorAll('td[class^="verdict-"]')).map(function (td) {
    return [td.textContent, td.className, getComputedStyle(td).backgroundColor]; })"""


def check_schedule_pages(c, page, origin, out, workflow):
    """/ui/schedules and /ui/schedules/{id} list the schedule with its last
    outcome coloured and link its firing's workflow, whose page colours the
    check's verdicts."""
    page.navigate(c.url("/ui/schedules"))
    check_clean(page, "/ui/schedules", origin)
    links = page.evaluate("[document.querySelectorAll('a[href=\"/ui/schedules/%s\"]').length,"
                          " document.querySelectorAll('a[href=\"/ui/workflows/%s\"]').length]"
                          % (SCHEDULE, workflow))
    expect(links == [1, 1], "/ui/schedules links the schedule and its workflow %s times" % links)
    coloured = [(text, colour) for text, colour in page.evaluate(BADGE_COLOURS)
                if text in OUTCOME_COLOURS]
    expect(coloured and all(OUTCOME_COLOURS[t] == colour for t, colour in coloured),
           "/ui/schedules: outcome badges %s" % coloured)
    page.screenshot(os.path.join(out, "ui-schedules.png"))
    page.navigate(c.url("/ui/schedules/" + SCHEDULE))
    check_clean(page, "/ui/schedules/" + SCHEDULE, origin)
    text = page.evaluate("document.body.innerText")
    expect("baselines/ui-base" in text and workflow in text,
           "/ui/schedules/%s does not show its baseline and firing" % SCHEDULE)
    page.screenshot(os.path.join(out, "ui-schedule.png"))
    page.navigate(c.url("/ui/workflows/" + workflow))
    check_clean(page, "/ui/workflows/" + workflow, origin)
    cells = page.evaluate(VERDICT_CELLS)
    expect(len(cells) == 4, "the check of %s shows %d verdict cells, expected one per size: %s"
           % (workflow, len(cells), cells))
    for verdict, cls, colour in cells:
        expect(cls == "verdict-" + verdict and VERDICT_COLOURS.get(verdict) == colour,
               "the verdict %r is classed %r and painted %s" % (verdict, cls, colour))
    page.screenshot(os.path.join(out, "ui-check-workflow-full.png"), full_page=True)


def case_pages(c):
    start(c)
    shm = make_run(c, "--transport", "shm", "--sizes", "8,1K,64K,1M")
    tcp = make_run(c, "--transport", "tcp", "--sizes", "8,1K,64K,1M")
    for rid in (shm, tcp):
        expect(c.wait_final(rid) == "SUCCEEDED", "run %s did not succeed" % rid)
    out = c.artifacts()
    compare_file = os.path.join(out, "compare-report.html")
    one_file = os.path.join(out, "run-report.html")
    done = c.cli("report", shm, tcp, "-o", compare_file)
    expect("wrote " in done.stderr, "report printed no progress: %r" % done.stderr)
    c.cli("report", shm, "-o", one_file)
    check_cli_errors(c, shm, c.dir)
    suite_out = c.cli("suite", "run", "container-parity", timeout=400, expect_code=None)
    match = re.search(r"^# suite run: (\S+)$", suite_out.stdout, re.M)
    expect(match, "suite run printed no id: %s" % suite_out.stderr[-1000:])
    suite = match.group(1)
    suite_file = os.path.join(out, "suite-report.html")
    c.cli("report", "--suite", suite, "-o", suite_file)
    check_headers_and_cookie(c, shm)
    checked = make_schedule(c, shm)

    browser = cdp.Browser(cdp.find_chromium(), c.dir)
    try:
        page = browser.new_page()
        for path, series in ((compare_file, ["shm", "tcp"]), (one_file, 1)):
            url = "file://" + path
            page.navigate(url)
            check_clean(page, path, only=url)
            check_series(page, path, series)
            name = os.path.basename(path)[:-5]
            page.screenshot(os.path.join(out, name + ".png"))
            page.screenshot(os.path.join(out, name + "-full.png"), full_page=True)
        page.navigate("file://" + suite_file)
        check_clean(page, suite_file, only="file://" + suite_file)

        session = sign_in(c, page, READ)
        origin = c.url("")
        check_clean(page, "/ui/ after signing in", origin)
        listed = page.evaluate("document.body.innerText")
        expect(shm in listed and tcp in listed, "/ui/ does not list the runs")
        page.screenshot(os.path.join(out, "ui-runs.png"))
        # The list's compare form leads to the comparison.
        submit(page, "document.querySelector('form.compare input[name=runs]').value = %s;"
               "document.querySelector('form.compare').submit(); true"
               % json.dumps("%s,%s" % (shm, tcp)))
        expect(page.evaluate("location.pathname") == "/ui/compare",
               "the compare form went to %s" % page.evaluate("location.href"))
        check_series(page, "the compare form's page", ["shm", "tcp"])
        for path, series, shot in (("/ui/runs/" + shm, 1, "ui-run"),
                                   ("/ui/compare?runs=%s,%s" % (shm, tcp), ["shm", "tcp"],
                                    "ui-compare")):
            page.navigate(c.url(path))
            check_clean(page, path, origin)
            check_series(page, path, series)
            page.screenshot(os.path.join(out, shot + ".png"))
            page.screenshot(os.path.join(out, shot + "-full.png"), full_page=True)
        page.navigate(c.url("/ui/suites/" + suite))
        check_clean(page, "/ui/suites/" + suite, origin)
        plots = page.evaluate(SERIES_PER_PLOT)
        for names in plots:
            expect(names and len(set(names)) == len(names),
                   "a suite plot's series are not one per cell: %s" % names)
        marks = page.evaluate("[document.querySelectorAll('tr.agree, tr.disagree').length,"
                              " document.querySelectorAll('li.missing').length]")
        expect(marks[0] > 0, "the suite page marks no row as agreeing or disagreeing")
        expect(marks[1] > 0, "the suite page names no skipped cell")
        page.screenshot(os.path.join(out, "ui-suite.png"))
        page.screenshot(os.path.join(out, "ui-suite-full.png"), full_page=True)
        # The suite run is a workflow: listed, shown with its tables and
        # runs, and its report served.
        page.navigate(c.url("/ui/workflows"))
        check_clean(page, "/ui/workflows", origin)
        expect(suite in page.evaluate("document.body.innerText"),
               "/ui/workflows does not list the suite run %s" % suite)
        page.screenshot(os.path.join(out, "ui-workflows.png"))
        page.navigate(c.url("/ui/workflows/" + suite))
        check_clean(page, "/ui/workflows/" + suite, origin)
        shown = page.evaluate("[document.querySelectorAll('table').length,"
                              " document.querySelectorAll('a[href^=\"/ui/runs/\"]').length,"
                              " document.body.innerText]")
        expect(shown[0] >= 2, "/ui/workflows/%s shows %d tables" % (suite, shown[0]))
        expect(shown[1] > 0, "/ui/workflows/%s links no run" % suite)
        expect("skipped" in shown[2] and "succeeded" in shown[2],
               "/ui/workflows/%s does not show its cells' states" % suite)
        page.screenshot(os.path.join(out, "ui-workflow-full.png"), full_page=True)
        page.navigate(c.url("/ui/workflows/%s/report" % suite))
        check_clean(page, "/ui/workflows/%s/report" % suite, origin)
        marks = page.evaluate("document.querySelectorAll('tr.agree, tr.disagree').length")
        expect(marks > 0, "the workflow's report marks no row as agreeing or disagreeing")
        check_schedule_pages(c, page, origin, out, checked)
        sign_out(c, page, session)
    finally:
        browser.close()


POINTS = """[document.querySelectorAll('svg.plot')[0].querySelectorAll('circle.point').length,
  (document.querySelector('[data-state]') || {}).getAttribute ?
   document.querySelector('[data-state]').getAttribute('data-state') : '',
  window.collbenchMarker === 1]"""


def case_live(c):
    start(c)
    browser = cdp.Browser(cdp.find_chromium(), c.dir)
    try:
        page = browser.new_page()
        sign_in(c, page, READ)
        sizes = ",".join(str(8 << i) for i in range(18))  # 8 B .. 1 MiB
        # Fixed iterations, not an adaptive budget: adaptive sizes can stop within
        # milliseconds, and the whole run must last long enough to be watched.
        rid = make_run(c, "--sizes", sizes, "-n", "5000", "-w", "10")
        page.navigate(c.url("/ui/runs/" + rid))
        page.evaluate("window.collbenchMarker = 1")
        seen = []  # (points, state) while the page stayed loaded
        out = c.artifacts()
        deadline = time.monotonic() + 180
        shot = False
        while time.monotonic() < deadline:
            browser.pump(0.3)
            points, state, same_page = page.evaluate(POINTS)
            expect(same_page, "the live page was reloaded")
            if not seen or seen[-1] != (points, state):
                seen.append((points, state))
                svc.log("live page: %d points, %s" % (points, state))
            if state == "running" and 6 <= points < 18 and not shot:
                page.screenshot(os.path.join(out, "ui-live-running.png"))
                shot = True
            if state in ("succeeded", "failed", "cancelled") and points == 18:
                break
        expect(seen and seen[-1] == (18, "succeeded"),
               "the live page ended at %s, expected 18 points and succeeded" % (seen[-1:],))
        # Growth without a reload: while RUNNING the page showed at least two
        # counts, one of them a partial curve (neither empty nor complete).
        growing = sorted({p for p, s in seen if s == "running"})
        expect(len(growing) >= 2 and any(0 < p < 18 for p in growing),
               "while running the page showed point counts %s; expected it to grow" % growing)
        check_clean(page, "/ui/runs/%s (live)" % rid, c.url(""))
        page.screenshot(os.path.join(out, "ui-live-done.png"))
    finally:
        browser.close()


CASES = {"pages": case_pages, "live": case_live}


def main():
    def skip():
        if not cdp.find_chromium():
            return "chromium not found (apt-get install chromium)"
        if not shutil.which("curl"):
            return "curl not found"
        return None
    return svc.case_main(__doc__, CASES, UiCluster, "ui_test", skip=skip)


if __name__ == "__main__":
    sys.exit(main())
