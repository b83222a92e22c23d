#include "colo/sched/trace.h"

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/core/paths.h"
#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo::sched {
namespace {

std::string trace_error_of(const std::string& text) {
  testing::TempDir dir;
  return testing::input_error_of([&] { read_trace(dir.write("t.csv", text)); });
}

TEST(Trace, RoundTripsThroughCsvWithCommasInCommands) {
  testing::TempDir dir;
  std::vector<TraceJob> jobs(2);
  jobs[0] = {0, "a", 30, 1 << 30, 0.4, int64_t{2} << 30, 1, 2, "python train.py --lr 0.1,0.2 \"quoted\""};
  jobs[1] = {5.5, "b", 10, 123, 1.0, std::nullopt, 0, 1, ""};
  write_trace(dir.file("t.csv"), jobs);
  auto read = read_trace(dir.file("t.csv"));
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].command, jobs[0].command);
  EXPECT_EQ(read[0].mem_estimate_bytes, int64_t{2} << 30);
  EXPECT_FALSE(read[1].mem_estimate_bytes.has_value());
  EXPECT_DOUBLE_EQ(read[1].submit_s, 5.5);
  EXPECT_EQ(read[0].gpus, 2);
  EXPECT_EQ(read[1].gpus, 1);
}

TEST(Trace, StartUpsRoundTripInTheirOwnColumnAndMustLieWithinTheRun) {
  testing::TempDir dir;
  std::vector<TraceJob> jobs(2);
  jobs[0] = {0, "a", 30, 1 << 30, 0.4, std::nullopt, 0, 1, "python a.py", 7.5};
  jobs[1] = {1, "b", 10, 123, 1.0, std::nullopt, 0, 1, "python b.py"};
  write_trace(dir.file("t.csv"), jobs);
  EXPECT_EQ(read_file(dir.file("t.csv")).substr(0, std::string(kTraceHeaderStartup).size()), kTraceHeaderStartup);
  auto read = read_trace(dir.file("t.csv"));
  ASSERT_EQ(read.size(), 2u);
  EXPECT_DOUBLE_EQ(read[0].startup_s, 7.5);
  EXPECT_DOUBLE_EQ(read[1].startup_s, 0);
  EXPECT_EQ(read[0].command, "python a.py");
  write_trace(dir.file("plain.csv"), {jobs[1]});
  EXPECT_EQ(read_file(dir.file("plain.csv")).substr(0, std::string(kTraceHeader).size() + 1),
            std::string(kTraceHeader) + "\n") << "no start-up, no column";
  std::string header = std::string(kTraceHeaderStartup) + "\n";
  EXPECT_NE(trace_error_of(header + "0,a,10,1,0.5,,0,1,10,x\n").find("startup_s"), std::string::npos);
  EXPECT_NE(trace_error_of(header + "0,a,10,1,0.5,,0,1,-1,x\n").find("startup_s"), std::string::npos);
}

TEST(Trace, WorkloadsRoundTripInTheirOwnColumnWithCommasAndQuotes) {
  testing::TempDir dir;
  std::vector<TraceJob> jobs(2);
  jobs[0] = {0, "a", 30, 1 << 30, 0.4, std::nullopt, 0, 1, "python a.py --lr 0.1,0.2", 0,
             R"(["model","vision:build_resnet18",[3,224,224],128,"sgd"])"};
  jobs[1] = {1, "b", 10, 123, 1.0, std::nullopt, 0, 1, "python b.py"};
  write_trace(dir.file("t.csv"), jobs);
  EXPECT_EQ(read_file(dir.file("t.csv")).substr(0, std::string(kTraceHeaderWorkload).size()), kTraceHeaderWorkload);
  auto read = read_trace(dir.file("t.csv"));
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].workload, jobs[0].workload);
  EXPECT_EQ(read[0].command, jobs[0].command);
  EXPECT_EQ(read[1].workload, "");
  EXPECT_EQ(read[1].command, "python b.py");
  EXPECT_EQ(workload_of(read[0]), workload_of(TraceJob{0, "c", 5, 1, 0.5, std::nullopt, 0, 1, "python c.py", 0,
                                                       jobs[0].workload}))
      << "jobs of one workload are alike whatever their commands";
  EXPECT_NE(workload_of(read[0]), workload_of(read[1]));
}

TEST(Trace, ATraceWithoutTheGpusColumnIsOneGpuPerJob) {
  testing::TempDir dir;
  auto jobs = read_trace(dir.write("t.csv", std::string(kTraceHeaderV1) + "\n0,a,1,1,0.5,,0,echo a,b\n"));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].gpus, 1);
  EXPECT_EQ(jobs[0].command, "echo a,b");
  EXPECT_NE(trace_error_of(std::string(kTraceHeader) + "\n0,a,1,1,0.5,,0,0,x\n").find("gpus"), std::string::npos)
      << "0 GPUs is a bad input";
}

TEST(Trace, JobsAreSortedBySubmitTime) {
  std::string text = std::string(kTraceHeaderV1) + "\n9,late,1,1,0.5,,0,\n1,early,1,1,0.5,,0,\n";
  testing::TempDir dir;
  auto jobs = read_trace(dir.write("t.csv", text));
  EXPECT_EQ(jobs[0].name, "early");
}

TEST(Trace, BadValuesNameTheLineAndColumn) {
  std::string header = std::string(kTraceHeaderV1) + "\n";
  std::string message = trace_error_of(header + "0,a,10,1,0.5,,0,\n0,b,ten,1,0.5,,0,\n");
  EXPECT_NE(message.find("t.csv:3: duration_s: expected seconds > 0, got \"ten\""), std::string::npos) << message;
  EXPECT_NE(trace_error_of(header + "0,a,10,1,1.5,,0,\n").find("sm_activity"), std::string::npos);
  EXPECT_NE(trace_error_of(header + "0,a\n").find("expected 8 columns"), std::string::npos);
  EXPECT_NE(trace_error_of("submit,name\n").find("expected the header"), std::string::npos);
}

std::string with_crlf(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
  return out;
}

TEST(Trace, ACrlfTraceReadsToTheSameJobsAsTheLfOne) {
  std::string lf = std::string(kTraceHeader) +
                   "\n0,a,30,1073741824,0.4,2147483648,1,2,python train.py --lr 0.1,0.2\n"
                   "\n5.5,b,10,123,1,,0,1,\"echo \"\"quoted\"\"\"\n";
  testing::TempDir dir;
  auto from_lf = read_trace(dir.write("lf.csv", lf));
  auto from_crlf = read_trace(dir.write("crlf.csv", with_crlf(lf)));
  ASSERT_EQ(from_lf.size(), 2u);
  ASSERT_EQ(from_crlf.size(), from_lf.size());
  for (size_t i = 0; i < from_lf.size(); ++i) {
    EXPECT_EQ(from_crlf[i].name, from_lf[i].name);
    EXPECT_DOUBLE_EQ(from_crlf[i].submit_s, from_lf[i].submit_s);
    EXPECT_DOUBLE_EQ(from_crlf[i].duration_s, from_lf[i].duration_s);
    EXPECT_EQ(from_crlf[i].mem_bytes, from_lf[i].mem_bytes);
    EXPECT_DOUBLE_EQ(from_crlf[i].sm_activity, from_lf[i].sm_activity);
    EXPECT_EQ(from_crlf[i].mem_estimate_bytes, from_lf[i].mem_estimate_bytes);
    EXPECT_EQ(from_crlf[i].priority, from_lf[i].priority);
    EXPECT_EQ(from_crlf[i].gpus, from_lf[i].gpus);
    EXPECT_EQ(from_crlf[i].command, from_lf[i].command);
  }
  EXPECT_EQ(from_crlf[1].command, "echo \"quoted\"") << "the quotes are undone once the \\r is gone";
  auto v1 = read_trace(dir.write("v1.csv", with_crlf(std::string(kTraceHeaderV1) + "\n0,a,1,1,0.5,,0,echo a\n")));
  ASSERT_EQ(v1.size(), 1u);
  EXPECT_EQ(v1[0].command, "echo a");
}

TEST(Trace, OnlyOneCarriageReturnBeforeTheLineEndIsDropped) {
  std::string header(kTraceHeader);
  EXPECT_NE(trace_error_of(header + "\r\r\n").find("expected the header"), std::string::npos);
  EXPECT_NE(trace_error_of(header + "\r0,a,1,1,0.5,,0,1,x\r").find("expected the header"), std::string::npos)
      << "a file with bare \\r line ends is one line";
  EXPECT_NE(trace_error_of(header + "\r\n0,a,1,1,0.5,,0,1\r\n").find("expected 9 columns"), std::string::npos);
  EXPECT_NE(trace_error_of(header + "\r\n0,a,1,1,1.5,,0,1,x\r\n").find("t.csv:2: sm_activity"), std::string::npos);
}

TEST(Trace, GeneratorIsDeterministicAndHasTheModelMix) {
  TraceGeneratorOptions options;
  options.jobs = 2000;
  options.seed = 3;
  auto a = generate_trace(options), b = generate_trace(options);
  ASSERT_EQ(a.size(), 2000u);
  EXPECT_EQ(a[1234].name, b[1234].name);
  EXPECT_EQ(a[1234].mem_bytes, b[1234].mem_bytes);
  int large = 0;
  double last = -1;
  for (const auto& j : a) {
    large += j.name.rfind("transformer", 0) == 0;
    EXPECT_GE(j.submit_s, last);
    last = j.submit_s;
  }
  EXPECT_GT(large, 150);  // 10% of 2000, give or take
  EXPECT_LT(large, 250);
  EXPECT_NEAR(a.back().submit_s / 2000.0, options.mean_interarrival_s, 2.0);
}

}  // namespace
}  // namespace colo::sched
