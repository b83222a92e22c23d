// The dashboard in a real browser: Debian's Chromium, headless, loads the
// page from a colod on two simulated GPUs and the test reads the DOM after
// the page's scripts ran (--dump-dom).

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/subprocess.h"
#include "colo/server/daemon_info.h"
#include "support/temp_dir.h"

namespace colo::server {
namespace {

const char* kChromium = "/usr/bin/chromium";

class DashboardInBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!path_exists(kChromium)) GTEST_SKIP() << "no " << kChromium << " (scripts/install-deps.sh installs chromium)";
    daemon_ = std::make_unique<ChildProcess>(std::vector<std::string>{COLOD_EXECUTABLE, "--poll", "0.2"}, env(),
                                             dir_.file("colod.log"));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!(info_ = find_daemon(state_dir())) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(info_) << read_file(dir_.file("colod.log"));
    token_ = read_file(token_path(state_dir()));
    while (!token_.empty() && (token_.back() == '\n' || token_.back() == ' ')) token_.pop_back();
  }
  void TearDown() override {
    if (daemon_) {
      daemon_->terminate(5);
      daemon_->wait();
    }
  }

  std::string state_dir() const { return dir_.path() + "/colo"; }
  EnvironmentOverrides env() const {
    return {{"XDG_STATE_HOME", dir_.path()}, {"COLO_SIMULATED_GPUS", "2"}, {"COLO_PROGRESS", "0"}};
  }
  void submit(const std::string& name, const std::string& script) {
    auto r = run_process({COLO_EXECUTABLE, "submit", "--name", name, "--mem", "6GiB", "--sm-share", "0.3", "--", "sh",
                          "-c", script},
                         env(), "", 60);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // The DOM of `url_suffix` (after /) once the page's scripts ran.
  std::string dom(const std::string& url_suffix) {
    std::string url = "http://127.0.0.1:" + std::to_string(info_->port) + "/" + url_suffix;
    auto r = run_process({kChromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--no-first-run", "--disable-background-networking", "--disable-component-update",
                          "--disable-sync", "--user-data-dir=" + dir_.file("chromium-" + std::to_string(++pages_)),
                          "--virtual-time-budget=6000", "--dump-dom", url},
                         {}, "", 120);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  }
  static int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }

  testing::TempDir dir_;
  std::unique_ptr<ChildProcess> daemon_;
  std::optional<DaemonInfo> info_;
  std::string token_;
  int pages_ = 0;
};

TEST_F(DashboardInBrowser, ShowsRunningJobsAChartPerGpuAndAJobPageWithItsLog) {
  submit("dash-a", "echo hello-from-dash-a; sleep 30");
  submit("<b>bold</b>", "sleep 30");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (count(read_file(dir_.file("colod.log")), "started on GPU") < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // a few samples for the charts

  std::string overview = dom("?token=" + token_);
  EXPECT_EQ(count(overview, "class=\"RUNNING\" data-job="), 2) << overview;
  EXPECT_NE(overview.find("dash-a"), std::string::npos);
  EXPECT_NE(overview.find("&lt;b&gt;bold&lt;/b&gt;"), std::string::npos) << "user text is shown, not run as markup";
  EXPECT_EQ(overview.find("<b>bold</b>"), std::string::npos);
  // One memory, SM and power chart per GPU, each drawn with data points.
  for (const std::string chart : {"mem", "sm", "power"}) {
    EXPECT_EQ(count(overview, "<canvas class=\"" + chart + "\" data-points=\""), 2) << chart << ": " << overview;
    EXPECT_EQ(count(overview, "<canvas class=\"" + chart + "\" data-points=\"0\""), 0) << chart;
  }
  EXPECT_NE(overview.find("data-jobs=\"2\">"), std::string::npos) << "both jobs in the Gantt chart";
  EXPECT_NE(overview.find("<span class=\"key\" data-kind=\"RUNNING\">"), std::string::npos)
      << "the Gantt's legend names its running bars: " << overview;
  EXPECT_NE(overview.find("<span id=\"status\">updated"), std::string::npos) << "the page refreshed without error";

  std::string job = dom("?token=" + token_ + "#/job/1");
  EXPECT_NE(job.find("hello-from-dash-a"), std::string::npos) << "the log tail: " << job;
  EXPECT_NE(job.find("<code id=\"command\">sh -c 'echo hello-from-dash-a; sleep 30'</code>"), std::string::npos)
      << "the command as a shell would read it: " << job;
  EXPECT_NE(job.find("6144 MiB"), std::string::npos) << "its estimate";
  EXPECT_NE(job.find("RUNNING"), std::string::npos);

  std::string refused = dom("?token=wrong");
  EXPECT_EQ(refused.find("dash-a"), std::string::npos) << "no data without the token";
  EXPECT_NE(refused.find("missing or wrong token"), std::string::npos) << refused;
}

}  // namespace
}  // namespace colo::server
