#pragma once
// Typed, validated access to one table of a TOML file a user wrote.

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

namespace colo {

// Parses a TOML file. Throws InputError naming the file (and line:column on a
// syntax error) when it is missing, unreadable or malformed.
std::shared_ptr<const toml::table> parse_toml_file(const std::string& path);

// One table of a parsed file, as a user wrote it. Every getter validates the
// type and range of its field and throws InputError naming the file, the
// dotted field ("optimizer.lr") and what was expected. A table remembers the
// keys it was asked for, so `reject_unknown` can name any field nobody read
// (typos included). Not thread-safe.
class SpecTable {
 public:
  // `prefix` is the dotted path of this table ("" for the root).
  SpecTable(std::shared_ptr<const toml::table> root, const toml::table& table,
            std::string source, std::string prefix);

  // The whole file as a root table.
  static SpecTable root(const std::string& path);

  // Whether `key` is in the table; a key asked about counts as one this
  // table knows, for reject_unknown's list of them.
  bool has(const std::string& key) const;
  // Whether `key` holds a sub-table (reading it is up to the caller).
  bool is_table(const std::string& key) const;
  const std::string& source() const { return source_; }
  // Dotted name of `key` in this table, for messages.
  std::string field(const std::string& key) const;

  std::string string(const std::string& key) const;  // required
  std::string string_or(const std::string& key, const std::string& fallback) const;
  // A string that must be one of `choices`.
  std::string choice_or(const std::string& key, const std::string& fallback,
                        const std::vector<std::string>& choices) const;
  int64_t integer_or(const std::string& key, int64_t fallback, int64_t min,
                     int64_t max = INT64_MAX) const;
  double number_or(const std::string& key, double fallback, double min, double max) const;
  bool boolean_or(const std::string& key, bool fallback) const;
  std::vector<int64_t> integers_or(const std::string& key, std::vector<int64_t> fallback,
                                   int64_t min) const;
  std::vector<double> numbers_or(const std::string& key, std::vector<double> fallback) const;
  // An array of non-empty integer arrays, e.g. [[256, 128], [512]].
  std::vector<std::vector<int64_t>> integer_lists_or(const std::string& key,
                                                     std::vector<std::vector<int64_t>> fallback,
                                                     int64_t min) const;

  std::vector<std::string> strings_or(const std::string& key, std::vector<std::string> fallback) const;

  // A sub-table; nullopt when absent. Throws when `key` holds another type.
  std::optional<SpecTable> table(const std::string& key) const;
  // An array of tables ([[key]]); empty when absent. Throws for another type.
  std::vector<SpecTable> tables(const std::string& key) const;
  // Every key of this table, in file order (reading them is up to the caller).
  std::vector<std::string> keys() const;

  // Marks `key` as understood without reading it (handled elsewhere).
  void accept(const std::string& key) const;
  // Throws InputError for the first key of this table that no getter read,
  // listing the keys this table knows (read or asked about with has()).
  void reject_unknown() const;

  // Throws InputError for `key` with `expected` as the message.
  [[noreturn]] void fail(const std::string& key, const std::string& expected) const;

 private:
  const toml::node* lookup(const std::string& key) const;
  std::string where(const std::string& key) const;

  std::shared_ptr<const toml::table> root_;
  const toml::table* table_;
  std::string source_;
  std::string prefix_;
  mutable std::set<std::string> read_;
  mutable std::set<std::string> asked_;  // has() of keys that may be absent
};

}  // namespace colo
