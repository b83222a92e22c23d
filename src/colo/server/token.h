#pragma once
// The secret that lets a client talk to colod: a file only its owner can read.

#include <string>

namespace colo::server {

// The token in `path`, creating it (32 random bytes as hex, mode 0600, its
// folder 0700) when absent. Throws InputError when the file exists but
// others may read or write it, or is empty.
std::string read_or_create_token(const std::string& path);

// The token of an existing file (the client side); InputError naming the
// file when it is missing, unreadable or open to others.
std::string read_token(const std::string& path);

}  // namespace colo::server
