#pragma once
// File-system helpers with clear errors.

#include <string>

namespace colo {

// Creates `dir` (and parents) if needed and checks a file can be written in
// it. Throws InputError naming `source` and `field` when it cannot.
void ensure_writable_dir(const std::string& dir, const std::string& source,
                         const std::string& field);

// Checks `path` names an existing regular file; throws InputError otherwise.
void require_file(const std::string& path, const std::string& source, const std::string& field);

// Replaces `path` with `contents` atomically (write to a temporary file in
// the same directory, then rename). Throws std::runtime_error on I/O failure.
void write_file_atomically(const std::string& path, const std::string& contents);

// Whole contents of a file; throws InputError naming `path` when unreadable.
std::string read_file(const std::string& path);

// This program's own path (/proc/self/exe), so it can start copies of
// itself. Throws std::runtime_error when it cannot be read.
std::string this_program_path();

// The `colo` executable beside the running program (colo-torch, colod or
// colo itself), which runs the quick commands without LibTorch's start-up
// and hands the rest to colo-torch; this program when no `colo` is beside it.
std::string colo_program_path();

}  // namespace colo
