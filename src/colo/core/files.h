#pragma once
// File-system queries and changes through POSIX calls.
//
// colo does not use std::filesystem: PyTorch's wheels export a broken copy of
// it from libtorch.so (pytorch/pytorch#133437), which calls through a null
// pointer when a program linked against the wheel binds to it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace colo {

bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
bool is_regular_file(const std::string& path);

// Size in bytes of a regular file, or -1 when it cannot be read.
int64_t file_size(const std::string& path);

// Creates `path` and its missing parents (mode 0755). Returns "" on success,
// else the reason (strerror) it failed.
std::string make_directories(const std::string& path);

// Renames atomically within one file system; throws std::runtime_error.
void rename_path(const std::string& from, const std::string& to);

// Removes `path` and, for a directory, everything under it. Missing is fine.
void remove_tree(const std::string& path);

// Names (not paths) of the entries of a directory, sorted; empty if unreadable.
std::vector<std::string> list_directory(const std::string& path);

// $TMPDIR, or /tmp.
std::string temp_directory();

// A new directory `parent`/`prefix`-XXXXXX that no other caller gets (mkdtemp,
// mode 0700); throws std::runtime_error naming `parent` when it cannot be made.
std::string make_unique_directory(const std::string& parent, const std::string& prefix);

// `path` made absolute with links, "." and ".." resolved (the parts that
// do not exist yet kept as written, normalised): every spelling of one
// file gives one string.
std::string resolved_path(const std::string& path);

// When the file was last written, in seconds since the epoch; nullopt when
// it cannot be read.
std::optional<double> file_written_unix_s(const std::string& path);

// The working directory of this process, or "." when it cannot be read.
std::string current_directory();

// `path` made absolute against the working directory (not resolved: links
// and ".." stay).
std::string absolute_path(const std::string& path);

// The last `bytes` of a file (all of it when shorter); "" when unreadable.
std::string file_tail(const std::string& path, size_t bytes);

}  // namespace colo
