#include "colo/core/shell_words.h"

#include <gtest/gtest.h>

#include "colo/core/subprocess.h"

namespace colo {
namespace {

TEST(ShellQuote, QuotesWhatTheShellWouldReadAndEscapesQuotes) {
  EXPECT_EQ(shell_quote("train.py"), "train.py");
  EXPECT_EQ(shell_quote("--lr=0.1"), "--lr=0.1");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_quote("~/x"), "'~/x'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(ShellCommandLine, ASpaceOrMetacharacterStaysInsideItsWord) {
  EXPECT_EQ(shell_command_line({"sh", "-c", "echo hi; sleep 30"}), "sh -c 'echo hi; sleep 30'");
  EXPECT_EQ(shell_command_line({"python3", "train.py", "--name", "it's", ""}), "python3 train.py --name 'it'\\''s' ''");
  EXPECT_EQ(shell_command_line({"A=b", "x=y"}), "'A=b' x=y") << "a first word with = is a command, not an assignment";
}

TEST(ShellCommandLine, ARealShellSplitsItBackIntoTheSameWords) {
  std::vector<std::string> argv = {"printf", "[%s]", "a b", "it's", "$HOME", "*", "", "x;y", "\"q\"", "tab\there"};
  auto r = run_process({"/bin/sh", "-c", shell_command_line(argv)}, {}, "", 10);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "[a b][it's][$HOME][*][][x;y][\"q\"][tab\there]");
}

}  // namespace
}  // namespace colo
