#include "colo/core/spec_table.h"

#include <sstream>

#include "colo/core/error.h"
#include "colo/core/files.h"

namespace colo {
namespace {

std::string type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date or time";
  }
}

std::string describe(const toml::node& node) {
  std::ostringstream out;
  if (auto s = node.as_string()) {
    out << '"' << s->get() << '"';
  } else if (auto i = node.as_integer()) {
    out << i->get();
  } else if (auto f = node.as_floating_point()) {
    out << f->get();
  } else if (auto b = node.as_boolean()) {
    out << (b->get() ? "true" : "false");
  } else {
    return type_name(node);
  }
  return out.str();
}

std::optional<double> as_number(const toml::node& node) {
  if (auto i = node.as_integer()) return static_cast<double>(i->get());
  if (auto f = node.as_floating_point()) return f->get();
  return std::nullopt;
}

}  // namespace

std::shared_ptr<const toml::table> parse_toml_file(const std::string& path) {
  if (!path_exists(path)) {
    throw InputError(path, "", "file does not exist");
  }
  if (is_directory(path)) {
    throw InputError(path, "", "expected a TOML file, found a directory");
  }
  try {
    return std::make_shared<const toml::table>(toml::parse_file(path));
  } catch (const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    std::ostringstream message;
    message << "line " << begin.line << ", column " << begin.column
            << ": malformed TOML: " << e.description();
    throw InputError(path, "", message.str());
  }
}

SpecTable::SpecTable(std::shared_ptr<const toml::table> root, const toml::table& table,
                     std::string source, std::string prefix)
    : root_(std::move(root)), table_(&table), source_(std::move(source)),
      prefix_(std::move(prefix)) {}

SpecTable SpecTable::root(const std::string& path) {
  auto parsed = parse_toml_file(path);
  const toml::table& table = *parsed;
  return SpecTable(std::move(parsed), table, path, "");
}

bool SpecTable::is_table(const std::string& key) const {
  const toml::node* node = table_->get(key);
  return node != nullptr && node->is_table();
}

bool SpecTable::has(const std::string& key) const {
  asked_.insert(key);
  return table_->contains(key);
}

std::string SpecTable::field(const std::string& key) const {
  return prefix_.empty() ? key : prefix_ + "." + key;
}

std::string SpecTable::where(const std::string& key) const {
  const toml::node* node = table_->get(key);
  if (node == nullptr || !node->source().begin) return source_;
  return source_ + ":" + std::to_string(node->source().begin.line);
}

void SpecTable::fail(const std::string& key, const std::string& expected) const {
  throw InputError(where(key), field(key), expected);
}

const toml::node* SpecTable::lookup(const std::string& key) const {
  read_.insert(key);
  return table_->get(key);
}

std::string SpecTable::string(const std::string& key) const {
  const toml::node* node = lookup(key);
  if (node == nullptr) fail(key, "missing required field (a string)");
  if (!node->is_string()) fail(key, "expected a string, got " + describe(*node));
  return node->as_string()->get();
}

std::string SpecTable::string_or(const std::string& key, const std::string& fallback) const {
  if (!has(key)) {
    read_.insert(key);
    return fallback;
  }
  return string(key);
}

std::string SpecTable::choice_or(const std::string& key, const std::string& fallback,
                                 const std::vector<std::string>& choices) const {
  std::string value = string_or(key, fallback);
  for (const auto& choice : choices) {
    if (value == choice) return value;
  }
  std::string list;
  for (const auto& choice : choices) list += (list.empty() ? "" : ", ") + choice;
  fail(key, "expected one of " + list + ", got \"" + value + "\"");
}

int64_t SpecTable::integer_or(const std::string& key, int64_t fallback, int64_t min,
                              int64_t max) const {
  const toml::node* node = lookup(key);
  if (node == nullptr) return fallback;
  std::string range = max == INT64_MAX ? ">= " + std::to_string(min)
                                       : "in [" + std::to_string(min) + ", " +
                                             std::to_string(max) + "]";
  if (!node->is_integer()) fail(key, "expected an integer " + range + ", got " + describe(*node));
  int64_t value = node->as_integer()->get();
  if (value < min || value > max) {
    fail(key, "expected an integer " + range + ", got " + std::to_string(value));
  }
  return value;
}

double SpecTable::number_or(const std::string& key, double fallback, double min,
                            double max) const {
  const toml::node* node = lookup(key);
  if (node == nullptr) return fallback;
  std::ostringstream range;
  range << "in [" << min << ", " << max << "]";
  auto value = as_number(*node);
  if (!value) fail(key, "expected a number " + range.str() + ", got " + describe(*node));
  if (!(*value >= min && *value <= max)) {
    fail(key, "expected a number " + range.str() + ", got " + describe(*node));
  }
  return *value;
}

bool SpecTable::boolean_or(const std::string& key, bool fallback) const {
  const toml::node* node = lookup(key);
  if (node == nullptr) return fallback;
  if (!node->is_boolean()) fail(key, "expected true or false, got " + describe(*node));
  return node->as_boolean()->get();
}

std::vector<int64_t> SpecTable::integers_or(const std::string& key,
                                            std::vector<int64_t> fallback, int64_t min) const {
  const toml::node* node = lookup(key);
  if (node == nullptr) return fallback;
  std::string expected = "expected an array of integers >= " + std::to_string(min);
  if (!node->is_array()) fail(key, expected + ", got " + describe(*node));
  std::vector<int64_t> values;
  for (const toml::node& item : *node->as_array()) {
    if (!item.is_integer() || item.as_integer()->get() < min) {
      fail(key, expected + ", found element " + describe(item));
    }
    values.push_back(item.as_integer()->get());
  }
  return values;
}

std::vector<std::vector<int64_t>> SpecTable::integer_lists_or(
    const std::string& key, std::vector<std::vector<int64_t>> fallback, int64_t min) const {
  const toml::node* node = lookup(key);
  if (node == nullptr) return fallback;
  std::string expected = "expected an array of arrays of integers >= " + std::to_string(min);
  if (!node->is_array()) fail(key, expected + ", got " + describe(*node));
  std::vector<std::vector<int64_t>> lists;
  for (const toml::node& list : *node->as_array()) {
    if (!list.is_array() || list.as_array()->empty()) fail(key, expected + ", found element " + describe(list));
    lists.emplace_back();
    for (const toml::node& item : *list.as_array()) {
      if (!item.is_integer() || item.as_integer()->get() < min) {
        fail(key, expected + ", found element " + describe(item));
      }
      lists.back().push_back(item.as_integer()->get());
    }
  }
  return lists;
}

std::vector<double> SpecTable::numbers_or(const std::string& key,
                                          std::vector<double> fallback) const {
  const toml::node* node = lookup(key);
  if (node == nullptr) return fallback;
  if (!node->is_array()) fail(key, "expected an array of numbers, got " + describe(*node));
  std::vector<double> values;
  for (const toml::node& item : *node->as_array()) {
    auto value = as_number(item);
    if (!value) fail(key, "expected an array of numbers, found element " + describe(item));
    values.push_back(*value);
  }
  return values;
}

std::vector<std::string> SpecTable::strings_or(const std::string& key,
                                              std::vector<std::string> fallback) const {
  const toml::node* node = lookup(key);
  if (node == nullptr) return fallback;
  if (!node->is_array()) fail(key, "expected an array of strings, got " + describe(*node));
  std::vector<std::string> values;
  for (const toml::node& item : *node->as_array()) {
    if (!item.is_string()) fail(key, "expected an array of strings, found element " + describe(item));
    values.push_back(item.as_string()->get());
  }
  return values;
}

std::vector<SpecTable> SpecTable::tables(const std::string& key) const {
  const toml::node* node = lookup(key);
  std::vector<SpecTable> out;
  if (node == nullptr) return out;
  if (!node->is_array_of_tables()) fail(key, "expected [[" + field(key) + "]] tables, got " + describe(*node));
  int index = 0;
  for (const toml::node& item : *node->as_array()) {
    out.emplace_back(root_, *item.as_table(), source_, field(key) + "[" + std::to_string(index++) + "]");
  }
  return out;
}

std::vector<std::string> SpecTable::keys() const {
  std::vector<std::string> names;
  for (const auto& [key, node] : *table_) names.emplace_back(key.str());
  return names;
}

std::optional<SpecTable> SpecTable::table(const std::string& key) const {
  const toml::node* node = lookup(key);
  if (node == nullptr) return std::nullopt;
  if (!node->is_table()) fail(key, "expected a table ([" + field(key) + "]), got " + describe(*node));
  return SpecTable(root_, *node->as_table(), source_, field(key));
}

void SpecTable::accept(const std::string& key) const { read_.insert(key); }

void SpecTable::reject_unknown() const {
  for (const auto& [key, node] : *table_) {
    std::string name(key.str());
    if (read_.count(name) == 0) {
      std::set<std::string> known_keys = read_;
      known_keys.insert(asked_.begin(), asked_.end());
      known_keys.erase(name);
      std::string known;
      for (const auto& k : known_keys) known += (known.empty() ? "" : ", ") + k;
      fail(name, "unknown field (known here: " + known + ")");
    }
  }
}

}  // namespace colo
