// The dashboard in a real browser: headless Chromium loads each page from a
// server seeded as in serve_test, and the rendered DOM (--dump-dom) must show
// the queue rows, the chart's canvas, the task rows, a task's timeline, the
// poisoned run and the schedule. A screenshot of each page is saved under
// DOCKET_SERVE_TEST_OUTPUT. Skipped, saying so, when Chromium is missing.
//
// Chromium runs with a virtual time budget: virtual time does not advance while
// the page's requests are in flight, so the page has rendered its data when the
// DOM is dumped, however slow the machine; each page marks its body with
// data-loaded="<page>" once its data is on screen.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "serve_fixture.hpp"

#ifndef DOCKET_SERVE_TEST_OUTPUT
#error "DOCKET_SERVE_TEST_OUTPUT (where screenshots go) must be defined by the build"
#endif

namespace docket {
namespace {

std::string chromium_path() {
  const char* configured = std::getenv("DOCKET_CHROMIUM");
  if (configured != nullptr && configured[0] != '\0') return configured;
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    struct stat info {};
    if (::stat(candidate, &info) == 0) return candidate;
  }
  return "";
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size()))
    ++n;
  return n;
}

class ServeBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = chromium_path();
    if (chromium_.empty())
      GTEST_SKIP() << "SKIPPED: Chromium is not installed (Debian package chromium, "
                      "scripts/deps.sh installs it when it can); the dashboard's browser test "
                      "did not run";
    ::mkdir(DOCKET_SERVE_TEST_OUTPUT, 0755);
    profile_ = "/tmp/docket_serve_chromium_" + std::to_string(::getpid());
  }

  void TearDown() override {
    if (!profile_.empty()) std::system(("rm -rf " + shell_quote(profile_)).c_str());
  }

  // Runs headless Chromium on url with `mode` (--dump-dom or --screenshot=...);
  // its standard output.
  std::string chromium(const std::string& url, const std::string& mode) const {
    const std::string command =
        "timeout 120 " + shell_quote(chromium_) +
        " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
        " --disable-background-networking --disable-component-update --disable-sync"
        " --disable-dev-shm-usage --hide-scrollbars --window-size=1280,900"
        " --user-data-dir=" +
        shell_quote(profile_) + " --virtual-time-budget=20000 " + mode + " " + shell_quote(url) +
        " 2>/dev/null";
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return out;
    char buffer[8192];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
    ::pclose(pipe);
    return out;
  }

  // The page's rendered DOM, and its screenshot saved as <name>.png. A dump
  // without the page's data-loaded mark (Chromium gave up on the page) is taken
  // again, up to three times.
  std::string load(const test::RunningServer& server, const std::string& route,
                   const std::string& name, const std::string& page) const {
    const std::string url = server.url() + "#/" + route;
    const std::string png = std::string(DOCKET_SERVE_TEST_OUTPUT) + "/" + name + ".png";
    std::string dom;
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::remove(png.c_str());
      dom = chromium(url, "--screenshot=" + shell_quote(png) + " --dump-dom");
      if (dom.find("data-loaded=\"" + page + "\"") != std::string::npos) break;
    }
    struct stat info {};
    EXPECT_EQ(::stat(png.c_str(), &info), 0) << "no screenshot of " << route << " at " << png;
    EXPECT_GT(info.st_size, 1000) << png;
    return dom;
  }

  std::string chromium_;
  std::string profile_;
};

TEST_F(ServeBrowserTest, EveryPageRendersItsData) {
  const test::Seed seed = test::seed_dashboard();
  serve::Options options;
  options.scope = seed.scope;
  options.allow_actions = true;
  const test::RunningServer server(options);

  const std::string overview = load(server, "overview", "overview", "overview");
  EXPECT_NE(overview.find("data-loaded=\"overview\""), std::string::npos) << overview;
  EXPECT_EQ(count(overview, "class=\"queue-row\""), 2u) << overview;
  EXPECT_NE(overview.find("data-key=\"" + seed.qa + "\""), std::string::npos);
  EXPECT_NE(overview.find("<canvas id=\"throughput\""), std::string::npos) << overview;
  // Chart.js took the canvas over (it sizes it and sets its style).
  EXPECT_NE(overview.find("style=\"display: block; box-sizing: border-box;"), std::string::npos)
      << overview;
  EXPECT_NE(overview.find("id=\"emit-form\""), std::string::npos);  // --allow-actions

  const std::string tasks = load(server, "tasks?queue=" + seed.qa, "tasks", "tasks");
  EXPECT_NE(tasks.find("data-loaded=\"tasks\""), std::string::npos) << tasks;
  EXPECT_EQ(count(tasks, "class=\"task-row\""), 8u) << tasks;

  const std::string detail = load(server, "task/" + seed.runs.at("completed"), "task", "task");
  EXPECT_NE(detail.find("data-loaded=\"task\""), std::string::npos) << detail;
  EXPECT_NE(detail.find(seed.runs.at("completed")), std::string::npos);
  EXPECT_EQ(count(detail, "class=\"step-row\""), 1u) << detail;
  EXPECT_NE(detail.find("ops@example.com"), std::string::npos);  // params
  EXPECT_NE(detail.find("traceparent"), std::string::npos);      // headers
  // The history as a timeline: spawned, claimed, step_completed, completed.
  EXPECT_EQ(count(detail, "class=\"timeline-entry"), 4u) << detail;
  EXPECT_NE(detail.find("data-type=\"step_completed\""), std::string::npos) << detail;

  const std::string poisoned = load(server, "poisoned", "poisoned", "poisoned");
  EXPECT_NE(poisoned.find("data-loaded=\"poisoned\""), std::string::npos) << poisoned;
  EXPECT_EQ(count(poisoned, "class=\"poisoned-row\""), 1u) << poisoned;
  EXPECT_NE(poisoned.find("class=\"retry\""), std::string::npos);

  const std::string schedules = load(server, "schedules", "schedules", "schedules");
  EXPECT_NE(schedules.find("data-loaded=\"schedules\""), std::string::npos) << schedules;
  EXPECT_EQ(count(schedules, "class=\"schedule-row\""), 1u) << schedules;
  EXPECT_NE(schedules.find(seed.schedule), std::string::npos);
}

}  // namespace
}  // namespace docket
