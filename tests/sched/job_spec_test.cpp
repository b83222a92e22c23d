#include "colo/sched/job_spec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/sched/model_estimates.h"
#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo::sched {
namespace {

std::string job_file_error_of(const std::string& text) {
  testing::TempDir dir;
  return testing::input_error_of([&] { parse_job_file(dir.write("jobs.toml", text)); });
}

TEST(JobSpec, AJobWithoutANameIsNamedAfterWhatItsCommandRuns) {
  testing::TempDir dir;
  auto jobs = parse_job_file(dir.write("jobs.toml", R"(
[[job]]
command = ["python3", "train.py", "--lr", "0.1"]
[[job]]
command = ["python3", "train.py", "0.1"]
[[job]]
command = ["/usr/bin/env", "python3", "eval.py"]
[[job]]
command = "python3 train.py --arch resnet50"
[[job]]
name = "mine"
command = ["python3", "train.py"]
)"));
  ASSERT_EQ(jobs.size(), 5u);
  EXPECT_EQ(jobs[0].name, "train");
  EXPECT_EQ(jobs[1].name, "train") << "a three-word argv is no shell command line";
  EXPECT_EQ(jobs[2].name, "eval");
  EXPECT_EQ(jobs[3].name, "python3 train.py --arch resnet50") << "a command string names its job, as before";
  EXPECT_EQ(jobs[4].name, "mine") << "a name given wins";
}

TEST(JobSpec, ReadsEveryField) {
  testing::TempDir dir;
  auto jobs = parse_job_file(dir.write("jobs.toml", R"(
name = "train"
command = ["python3", "train.py", "--lr", "0.1"]
workdir = "/srv"
env = { SEED = "3" }
mem = "6GiB"
sm_share = 0.4
priority = 2
array = "0-3"
)"));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].command, (std::vector<std::string>{"python3", "train.py", "--lr", "0.1"}));
  EXPECT_EQ(jobs[0].env.at("SEED"), "3");
  EXPECT_EQ(jobs[0].mem_bytes, int64_t{6} << 30);
  EXPECT_DOUBLE_EQ(*jobs[0].sm_share, 0.4);
  auto expanded = expand_array(jobs[0]);
  ASSERT_EQ(expanded.size(), 4u);
  EXPECT_EQ(expanded[3].env.at("COLO_ARRAY_INDEX"), "3");
  EXPECT_EQ(expanded[3].name, "train[3]");
}

TEST(JobSpec, ReadsThePythonModelAndKeepsItThroughJson) {
  testing::TempDir dir;
  auto jobs = parse_job_file(dir.write("jobs.toml", R"(
command = "python3 train.py"
[model]
builder = "models:build_gpt"
input = [128]
vocab = 50257
batch_size = 16
optimizer = "adamw"
)"));
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_TRUE(jobs[0].model.has_value());
  EXPECT_EQ(jobs[0].model->builder, "models:build_gpt");
  EXPECT_EQ(jobs[0].model->input, (std::vector<int64_t>{128}));
  EXPECT_EQ(jobs[0].model->vocab, 50257);
  EXPECT_EQ(jobs[0].model->batch_size, 16);
  EXPECT_EQ(jobs[0].model->optimizer, "adamw");
  JobSpec back = job_spec_from_json(to_json(jobs[0]));
  EXPECT_EQ(back.model, jobs[0].model);
  EXPECT_FALSE(job_spec_from_json(to_json(parse_job_file(dir.write("plain.toml", "command = \"true\"\n"))[0]))
                   .model.has_value());
}

TEST(JobSpec, HowThePythonModelTrainsIsReadKeptThroughJsonAndKeysItsEstimate) {
  testing::TempDir dir;
  const std::string table = "command = \"python3 train.py\"\n[model]\nbuilder = \"m:f\"\ninput = [3, 32, 32]\n";
  JobSpec plain = parse_job_file(dir.write("plain.toml", table))[0];
  EXPECT_EQ(plain.model->autocast, "");
  EXPECT_TRUE(plain.model->keep_output);
  EXPECT_TRUE(plain.model->set_to_none);
  EXPECT_EQ(plain.model->accumulation_steps, 1);
  EXPECT_EQ(plain.model->zero_grad, "");
  JobSpec tuned = parse_job_file(dir.write("tuned.toml", table + "autocast = \"bf16\"\nkeep_output = false\n"
                                                                 "set_to_none = false\naccumulation_steps = 4\n"
                                                                 "zero_grad = \"after_forward\"\n"))[0];
  EXPECT_EQ(tuned.model->autocast, "bf16");
  EXPECT_FALSE(tuned.model->keep_output);
  EXPECT_FALSE(tuned.model->set_to_none);
  EXPECT_EQ(tuned.model->accumulation_steps, 4);
  EXPECT_EQ(tuned.model->zero_grad, "after_forward");
  EXPECT_EQ(job_spec_from_json(to_json(tuned)).model, tuned.model);
  EXPECT_EQ(parse_job_file(dir.write("none.toml", table + "autocast = \"none\"\nzero_grad = \"auto\"\n"))[0].model,
            plain.model);
  JobSpec lightning = parse_job_file(dir.write("l.toml", table + "zero_grad = \"after_forward\"\n"))[0];
  EXPECT_NE(model_table_key(lightning), model_table_key(plain));
  // Each way of training is estimated apart; the defaults keep the key they had.
  EXPECT_NE(model_table_key(tuned), model_table_key(plain));
  EXPECT_EQ(model_table_key(plain),
            nlohmann::json({"m:f", std::vector<int64_t>{3, 32, 32}, 0, 32, "adam", 0, plain.workdir}).dump());
  EXPECT_NE(workload_key(tuned), workload_key(plain));
  EXPECT_NE(job_file_error_of(table + "autocast = \"fp8\"\n").find("model.autocast"), std::string::npos);
  EXPECT_NE(job_file_error_of(table + "accumulation_steps = 0\n").find("model.accumulation_steps"), std::string::npos);
  EXPECT_NE(job_file_error_of(table + "set_to_none = \"yes\"\n").find("model.set_to_none"), std::string::npos);
  EXPECT_NE(job_file_error_of(table + "zero_grad = \"never\"\n").find("model.zero_grad"), std::string::npos);
}

TEST(JobSpec, BadPythonModelNamesTheField) {
  EXPECT_NE(job_file_error_of("command = \"x\"\n[model]\ninput = [3]\n").find("model.builder"), std::string::npos);
  EXPECT_NE(job_file_error_of("command = \"x\"\n[model]\nbuilder = \"nocolon\"\ninput = [3]\n").find("module:function"),
            std::string::npos);
  EXPECT_NE(job_file_error_of("command = \"x\"\n[model]\nbuilder = \"m:f\"\n").find("model.input"), std::string::npos);
  EXPECT_NE(job_file_error_of("command = \"x\"\n[model]\nbuilder = \"m:f\"\ninput = [3, 0]\n").find("model.input"),
            std::string::npos);
  EXPECT_NE(job_file_error_of("command = \"x\"\n[model]\nbuilder = \"m:f\"\ninput = [3]\noptimizer = \"lion\"\n")
                .find("model.optimizer"),
            std::string::npos);
  EXPECT_NE(job_file_error_of("command = \"x\"\n[model]\nbuilder = \"m:f\"\ninput = [3]\nlayers = 2\n").find("layers"),
            std::string::npos);
}

TEST(JobSpec, ALoaderDataFileIsKeptAbsoluteThroughJsonAndAMissingOneIsRejected) {
  testing::TempDir dir;
  std::string data = dir.write("data.toml", "root = \"images\"\n");
  auto jobs = parse_job_file(dir.write("jobs.toml", "command = \"true\"\nloader = \"" + data + "\"\n"));
  EXPECT_EQ(jobs[0].loader, data);
  EXPECT_EQ(job_spec_from_json(to_json(jobs[0])).loader, data);
  std::string error = job_file_error_of("command = \"true\"\nloader = \"" + dir.file("absent.toml") + "\"\n");
  EXPECT_NE(error.find("loader"), std::string::npos) << error;
  EXPECT_NE(error.find("absent.toml"), std::string::npos) << error;
}

TEST(JobSpec, StringCommandsRunUnderTheShell) {
  testing::TempDir dir;
  auto jobs = parse_job_file(dir.write("jobs.toml", "[[job]]\ncommand = \"echo a | wc -c\"\n[[job]]\ncommand = [\"true\"]\n"));
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].command, (std::vector<std::string>{"/bin/sh", "-c", "echo a | wc -c"}));
}

TEST(JobSpec, RoundTripsThroughJson) {
  JobSpec spec;
  spec.name = "x";
  spec.command = {"a", "b"};
  spec.mem_bytes = 5;
  spec.env["K"] = "V";
  JobSpec back = job_spec_from_json(to_json(spec));
  EXPECT_EQ(back.command, spec.command);
  EXPECT_EQ(back.mem_bytes, 5);
  EXPECT_EQ(back.env, spec.env);
  EXPECT_FALSE(back.sm_share.has_value());
}

TEST(JobSpec, BadJobFilesAreRejectedClearly) {
  EXPECT_NE(job_file_error_of("name = \"x\"\n").find("command: missing required field"), std::string::npos);
  EXPECT_NE(job_file_error_of("command = \"true\"\nmem = \"lots\"\n").find("mem: expected a size"), std::string::npos);
  EXPECT_NE(job_file_error_of("command = \"true\"\narray = \"5-2\"\n").find("array: expected a range"), std::string::npos);
  EXPECT_NE(job_file_error_of("command = \"true\"\ngpu = 1\n").find("gpu: unknown field"), std::string::npos);
  EXPECT_NE(job_file_error_of("command = \"true\"\nsm_share = 2.0\n").find("sm_share"), std::string::npos);
  EXPECT_NE(job_file_error_of("command = []\n").find("command"), std::string::npos);
  EXPECT_NE(job_file_error_of("command = \"true\"\ngpus = 0\n").find("gpus"), std::string::npos);
}

TEST(JobSpec, AMemOfZeroOrLessIsRefusedNamingTheFileAndField) {
  testing::TempDir dir;
  for (const char* mem : {"0", "0GiB", "0 MiB", "0.2", "-1GiB", "-4096"}) {
    const std::string file = dir.write("jobs.toml", std::string("command = \"true\"\nmem = \"") + mem + "\"\n");
    const std::string error = testing::input_error_of([&] { parse_job_file(file); });
    EXPECT_NE(error.find(file), std::string::npos) << mem << ": " << error;
    EXPECT_NE(error.find("mem: expected a size above zero"), std::string::npos) << mem << ": " << error;
    EXPECT_NE(error.find(std::string("got \"") + mem + "\""), std::string::npos) << mem << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
  }
  EXPECT_EQ(parse_job_file(dir.write("one.toml", "command = \"true\"\nmem = \"1\"\n")).front().mem_bytes, 1);
}

TEST(JobSpec, AWorkdirIsResolvedWhereTheFileIsReadAndMustExist) {
  testing::TempDir dir;
  // Relative to this process's directory, as colo run resolves it, so that
  // colod (another working directory) runs the job where its user meant.
  std::string here = current_directory();
  JobSpec plain = parse_job_file(dir.write("a.toml", "command = \"pwd\"\n")).front();
  EXPECT_EQ(plain.workdir, here);
  std::string missing = job_file_error_of("command = \"pwd\"\nworkdir = \"no-such-folder-here\"\n");
  EXPECT_NE(missing.find("workdir: an existing directory; there is none at " + here + "/no-such-folder-here"),
            std::string::npos) << missing;
  JobSpec absolute = parse_job_file(dir.write("b.toml", "command = \"pwd\"\nworkdir = \"" + dir.path() + "\"\n")).front();
  EXPECT_EQ(absolute.workdir, dir.path());
}

TEST(JobSpec, MessagesPointAtWhatTheUserMeant) {
  // A misspelled field lists every field a job may have, read or not.
  std::string misspelled = job_file_error_of("[[job]]\ncommand = \"true\"\nmemm = \"1GiB\"\n");
  EXPECT_NE(misspelled.find("job[0].memm: unknown field"), std::string::npos) << misspelled;
  for (const char* field : {"mem", "sm_share", "array", "loader", "samples"}) {
    EXPECT_NE(misspelled.find(std::string(" ") + field), std::string::npos) << field << " not listed: " << misspelled;
  }
  // [[jobs]] for [[job]]: not "command: missing required field".
  std::string tables = job_file_error_of("[[jobs]]\ncommand = \"true\"\n");
  EXPECT_NE(tables.find("expected [[job]] tables"), std::string::npos) << tables;
  EXPECT_NE(tables.find("found jobs"), std::string::npos) << tables;
  // A command of the wrong type or empty says what a command may be.
  EXPECT_NE(job_file_error_of("command = 5\n").find("command: expected a string or a non-empty array"), std::string::npos)
      << job_file_error_of("command = 5\n");
  EXPECT_NE(job_file_error_of("command = \"\"\n").find("command: expected a non-empty command"), std::string::npos)
      << job_file_error_of("command = \"\"\n");
}

TEST(JobSpec, AJobAskingForMoreGpusThanTheHostHasIsRejected) {
  JobSpec two;
  two.name = "ddp";
  two.gpus = 2;
  EXPECT_NO_THROW(check_gpus_fit({two}, 2));
  JobSpec one;
  EXPECT_NO_THROW(check_gpus_fit({one}, 0));  // no GPU: jobs run one at a time, each as if given one
  try {
    check_gpus_fit({one, two}, 0);
    FAIL() << "a 2-GPU job on a host without a GPU was accepted (it would wait for ever)";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'ddp' asks for 2 GPUs; this host has none"), std::string::npos) << e.what();
  }
  try {
    check_gpus_fit({JobSpec{}, two}, 1);
    FAIL() << "a 2-GPU job on a 1-GPU host was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'ddp' asks for 2 GPUs; this host has 1"), std::string::npos);
  }
}

}  // namespace
}  // namespace colo::sched
