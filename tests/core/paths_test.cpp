#include "colo/core/paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "support/temp_dir.h"

namespace colo {
namespace {

TEST(Paths, CreatesMissingOutputDirectories) {
  testing::TempDir dir;
  ensure_writable_dir(dir.file("a/b/c"), "spec.toml", "output");
  EXPECT_TRUE(is_directory(dir.file("a/b/c")));
}

TEST(Paths, UnwritableDirectoryIsAnInputError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can write anywhere";
  testing::TempDir dir;
  ::mkdir(dir.file("ro").c_str(), 0500);
  EXPECT_THROW(ensure_writable_dir(dir.file("ro/out"), "spec.toml", "output"), InputError);
}

TEST(Paths, OutputPathThatIsAFileIsAnInputError) {
  testing::TempDir dir;
  auto file = dir.write("f", "x");
  try {
    ensure_writable_dir(file, "spec.toml", "output");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "output");
    EXPECT_NE(std::string(e.what()).find("is a file"), std::string::npos);
  }
}

TEST(Paths, AtomicWriteReplacesContents) {
  testing::TempDir dir;
  write_file_atomically(dir.file("x"), "one");
  write_file_atomically(dir.file("x"), "two");
  EXPECT_EQ(read_file(dir.file("x")), "two");
  EXPECT_EQ(list_directory(dir.path()), std::vector<std::string>{"x"});
}

// Two calls never get the same directory; a parent that does not exist is
// named in the error.
TEST(Paths, UniqueDirectoriesAreNewAndDistinct) {
  testing::TempDir dir;
  std::string a = make_unique_directory(dir.path(), "x"), b = make_unique_directory(dir.path(), "x");
  EXPECT_NE(a, b);
  EXPECT_TRUE(is_directory(a) && is_directory(b));
  EXPECT_EQ(a.rfind(dir.path() + "/x-", 0), 0u) << a;
  try {
    make_unique_directory(dir.file("missing"), "x");
    ADD_FAILURE() << "no error for a missing parent";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace colo
