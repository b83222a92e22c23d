#include "colo/server/token.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo::server {
namespace {

TEST(Token, CreatedOnlyItsOwnerCanReadAndReadBackUnchanged) {
  testing::TempDir dir;
  std::string path = dir.file("state/token");
  std::string token = read_or_create_token(path);
  EXPECT_EQ(token.size(), 64u);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_EQ(read_or_create_token(path), token);
  EXPECT_EQ(read_token(path), token);
  EXPECT_NE(read_or_create_token(dir.file("other/token")), token);
}

TEST(Token, RejectsAFileOthersCanReadAnEmptyOneAndAMissingOne) {
  testing::TempDir dir;
  std::string path = dir.write("token", "abc\n");
  ::chmod(path.c_str(), 0644);
  EXPECT_NE(testing::input_error_of([&] { read_token(path); }).find("chmod 600"), std::string::npos);
  std::string empty = dir.write("empty", "");
  ::chmod(empty.c_str(), 0600);
  EXPECT_NE(testing::input_error_of([&] { read_token(empty); }).find("empty"), std::string::npos);
  EXPECT_NE(testing::input_error_of([&] { read_token(dir.file("none")); }).find("is colod running"),
            std::string::npos);
}

}  // namespace
}  // namespace colo::server
