#include "colo/server/http_api.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "colo/gpu/simulated_device.h"
#include "support/temp_dir.h"

namespace colo::server {
namespace {

class HttpApiTest : public ::testing::Test {
 protected:
  HttpApiTest()
      : api_(dir_.file("jobs.db"), "secret", {}), server_(api_, "127.0.0.1", 0), client_("127.0.0.1", server_.port()) {
    client_.set_bearer_token_auth("secret");
  }
  testing::TempDir dir_;
  HttpApi api_;
  HttpServer server_;
  httplib::Client client_;
};

TEST_F(HttpApiTest, EveryRouteButHealthNeedsTheToken) {
  httplib::Client anonymous("127.0.0.1", server_.port());
  EXPECT_EQ(anonymous.Get("/healthz")->status, 200);
  EXPECT_EQ(anonymous.Get("/jobs")->status, 401);
  EXPECT_EQ(anonymous.Get("/metrics")->status, 401);
  EXPECT_EQ(anonymous.Get("/?token=secret")->status, 200);
  anonymous.set_bearer_token_auth("wrong");
  EXPECT_EQ(anonymous.Post("/jobs", "{}", "application/json")->status, 401);
}

TEST_F(HttpApiTest, SubmitsListsShowsAndCancels) {
  auto created = client_.Post("/jobs", R"([{"name": "a", "command": ["true"]},
                                          {"name": "b", "command": ["sleep", "1"], "mem_bytes": 1024}])",
                              "application/json");
  ASSERT_EQ(created->status, 201) << created->body;
  auto ids = nlohmann::json::parse(created->body)["ids"];
  ASSERT_EQ(ids.size(), 2u);
  auto job = nlohmann::json::parse(client_.Get("/jobs/" + ids[1].dump())->body);
  EXPECT_EQ(job["state"], "PENDING");
  EXPECT_EQ(job["spec"]["mem_bytes"], 1024);
  auto cancelled = nlohmann::json::parse(client_.Post("/jobs/" + ids[0].dump() + "/cancel", "", "application/json")->body);
  EXPECT_EQ(cancelled["before"], "PENDING");
  EXPECT_EQ(cancelled["after"], "CANCELLED");
  auto pending = nlohmann::json::parse(client_.Get("/jobs?state=PENDING")->body);
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0]["spec"]["name"], "b");
  EXPECT_EQ(client_.Get("/jobs/99")->status, 404);
  EXPECT_EQ(client_.Get("/jobs?state=SLEEPING")->status, 400);
  std::string metrics = client_.Get("/metrics")->body;
  EXPECT_NE(metrics.find("colo_jobs{state=\"CANCELLED\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("colo_jobs{state=\"PENDING\"} 1"), std::string::npos) << metrics;
}

TEST_F(HttpApiTest, RejectsBadJobsNamingTheFieldAndStoresNothing) {
  auto not_json = client_.Post("/jobs", "{name", "application/json");
  EXPECT_EQ(not_json->status, 400);
  EXPECT_NE(not_json->body.find("not JSON"), std::string::npos);
  auto missing = client_.Post("/jobs", R"({"name": "x"})", "application/json");
  EXPECT_EQ(missing->status, 400);
  EXPECT_NE(missing->body.find("command"), std::string::npos);
  auto wrong_type = client_.Post("/jobs", R"([{"name": "ok", "command": ["true"]}, {"name": "y", "command": "true", "gpus": "two"}])",
                                 "application/json");
  EXPECT_EQ(wrong_type->status, 400);
  EXPECT_NE(wrong_type->body.find("job 1"), std::string::npos) << wrong_type->body;
  auto share = client_.Post("/jobs", R"({"name": "z", "command": ["true"], "sm_share": 2})", "application/json");
  EXPECT_NE(share->body.find("sm_share"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(client_.Get("/jobs")->body).size(), 0u);
}

TEST(HttpApi, RejectsAJobAskingForMoreGpusThanTheHostHas) {
  testing::TempDir dir;
  HttpApi api(dir.file("jobs.db"), "secret", {std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})});
  HttpServer server(api, "127.0.0.1", 0);
  httplib::Client client("127.0.0.1", server.port());
  client.set_bearer_token_auth("secret");
  auto two = client.Post("/jobs", R"({"name": "ddp", "command": ["true"], "gpus": 2})", "application/json");
  EXPECT_EQ(two->status, 400);
  EXPECT_NE(two->body.find("'ddp' asks for 2 GPUs; this host has 1"), std::string::npos) << two->body;
  EXPECT_EQ(client.Post("/jobs", R"({"name": "one", "command": ["true"]})", "application/json")->status, 201);
}

TEST_F(HttpApiTest, DashboardEscapesWhatUsersWrote) {
  client_.Post("/jobs", R"({"name": "<script>x</script>", "command": ["true"]})", "application/json");
  std::string page = client_.Get("/")->body;
  EXPECT_NE(page.find("&lt;script&gt;x&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(page.find("<script>"), std::string::npos);
}

}  // namespace
}  // namespace colo::server
