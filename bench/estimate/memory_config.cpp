#include "memory_config.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace colo::bench {
namespace {

std::string join(const std::vector<int64_t>& values, const char* sep) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += (i ? sep : "") + std::to_string(values[i]);
  return out;
}

std::vector<int64_t> split_ints(const std::string& text, char sep) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) {
    if (!item.empty()) out.push_back(std::stoll(item));
  }
  return out;
}

std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

std::string MemoryConfig::to_toml(const std::string& output) const {
  std::ostringstream t;
  t << "seed = " << row << "\ndevice = \"auto\"\noutput = \"" << output << "\"\n"
    << "epochs = 1\nbatch_size = " << batch_size << "\neval_batch_size = " << eval_batch_size
    << "\ncheckpoint_every = 0\n\n[model]\nname = \"" << model << "\"\n";
  if (model == "mlp") {
    t << "widths = [" << join(widths, ", ") << "]\nactivation = \"" << activation
      << "\"\ndropout = " << number(dropout) << "\n";
  } else if (model == "lenet") {
    t << "activation = \"" << activation << "\"\n";
  } else if (model == "resnet") {
    t << "depth = " << depth << "\nwidth = " << number(width) << "\n";
  } else {
    t << "layers = " << layers << "\nd_model = " << d_model << "\nheads = " << heads
      << "\nff_dim = " << ff_dim << "\npatch_size = " << patch_size << "\ndropout = " << number(dropout)
      << "\n";
  }
  t << "\n[data]\nname = \"synthetic\"\nshape = [" << join(shape, ", ") << "]\nclasses = 10\n"
    << "train_size = " << 3 * batch_size << "\ntest_size = " << test_size << "\nprefetch = 0\n"
    << "\n[optimizer]\nname = \"" << optimizer << "\"\nlr = 0.01\nweight_decay = " << number(weight_decay)
    << "\n";
  if (optimizer == "sgd") {
    t << "momentum = " << number(momentum) << "\nnesterov = " << (nesterov ? "true" : "false") << "\n";
  }
  return t.str();
}

std::vector<std::string> MemoryConfig::csv_header() {
  return {"row", "model", "activation", "dropout", "widths", "depth", "width", "layers", "d_model",
          "heads", "ff_dim", "patch_size", "shape", "batch_size", "eval_batch_size", "test_size",
          "optimizer", "momentum", "nesterov", "weight_decay"};
}

std::vector<std::string> MemoryConfig::csv_values() const {
  return {std::to_string(row), model, activation, number(dropout), join(widths, ";"),
          std::to_string(depth), number(width), std::to_string(layers), std::to_string(d_model),
          std::to_string(heads), std::to_string(ff_dim), std::to_string(patch_size), join(shape, "x"),
          std::to_string(batch_size), std::to_string(eval_batch_size), std::to_string(test_size),
          optimizer, number(momentum), nesterov ? "1" : "0", number(weight_decay)};
}

MemoryConfig MemoryConfig::from_csv(const std::map<std::string, std::string>& r) {
  auto get = [&](const std::string& key) -> const std::string& {
    auto it = r.find(key);
    if (it == r.end()) throw std::runtime_error("CSV row has no column " + key);
    return it->second;
  };
  MemoryConfig c;
  c.row = std::stoll(get("row"));
  c.model = get("model");
  c.activation = get("activation");
  c.dropout = std::stod(get("dropout"));
  c.widths = split_ints(get("widths"), ';');
  c.depth = std::stoll(get("depth"));
  c.width = std::stod(get("width"));
  c.layers = std::stoll(get("layers"));
  c.d_model = std::stoll(get("d_model"));
  c.heads = std::stoll(get("heads"));
  c.ff_dim = std::stoll(get("ff_dim"));
  c.patch_size = std::stoll(get("patch_size"));
  c.shape = split_ints(get("shape"), 'x');
  c.batch_size = std::stoll(get("batch_size"));
  c.eval_batch_size = std::stoll(get("eval_batch_size"));
  c.test_size = std::stoll(get("test_size"));
  c.optimizer = get("optimizer");
  c.momentum = std::stod(get("momentum"));
  c.nesterov = get("nesterov") == "1";
  c.weight_decay = std::stod(get("weight_decay"));
  return c;
}

MemoryConfig draw_memory_config(uint64_t seed, int64_t row) {
  std::mt19937_64 rng(seed * 1000003u + static_cast<uint64_t>(row));
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto pick = [&](auto const& options) { return options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)]; };
  auto log_int = [&](double lo, double hi) { return static_cast<int64_t>(std::lround(std::exp2(uniform(std::log2(lo), std::log2(hi))))); };

  MemoryConfig c;
  c.row = row;
  double family = uniform(0, 1);
  c.model = family < 0.3 ? "mlp" : family < 0.45 ? "lenet" : family < 0.7 ? "resnet" : "transformer";
  const std::vector<std::vector<int64_t>> small_images{{1, 28, 28}, {3, 32, 32}};
  c.batch_size = log_int(16, 1024);
  if (c.model == "mlp") {
    c.shape = pick(small_images);
    int64_t depth = std::uniform_int_distribution<int64_t>(1, 6)(rng);
    for (int64_t i = 0; i < depth; ++i) c.widths.push_back(log_int(64, 8192));
    c.activation = pick(std::vector<std::string>{"relu", "gelu", "tanh"});
    c.dropout = uniform(0, 1) < 0.5 ? 0.0 : std::round(uniform(0.05, 0.5) * 100) / 100;
  } else if (c.model == "lenet") {
    c.shape = pick(small_images);
    c.activation = pick(std::vector<std::string>{"relu", "gelu", "tanh"});
  } else if (c.model == "resnet") {
    c.shape = pick(std::vector<std::vector<int64_t>>{{3, 32, 32}, {3, 32, 32}, {3, 64, 64}});
    c.depth = pick(std::vector<int64_t>{18, 34, 50});
    c.width = pick(std::vector<double>{0.25, 0.5, 1.0, 1.5, 2.0});
    if (c.shape[1] == 64) c.batch_size = std::min<int64_t>(c.batch_size, 256);
    if (c.depth == 50 && c.width >= 1.5) c.batch_size = std::min<int64_t>(c.batch_size, 256);
  } else {
    struct Patching { std::vector<int64_t> shape; int64_t patch; };
    auto p = pick(std::vector<Patching>{{{1, 28, 28}, 4}, {{1, 28, 28}, 7}, {{3, 32, 32}, 2},
                                        {{3, 32, 32}, 4}, {{3, 32, 32}, 8}});
    c.shape = p.shape;
    c.patch_size = p.patch;
    c.layers = std::uniform_int_distribution<int64_t>(1, 8)(rng);
    c.d_model = pick(std::vector<int64_t>{64, 128, 192, 256, 384, 512, 768});
    std::vector<int64_t> heads;
    for (int64_t h : {1, 2, 4, 8}) {
      if (c.d_model % h == 0) heads.push_back(h);
    }
    c.heads = pick(heads);
    c.ff_dim = pick(std::vector<int64_t>{0, 2 * c.d_model, 4 * c.d_model});
    c.dropout = uniform(0, 1) < 0.5 ? 0.0 : std::round(uniform(0.05, 0.3) * 100) / 100;
    if (p.patch == 2) c.batch_size = std::min<int64_t>(c.batch_size, 256);
  }
  c.test_size = pick(std::vector<int64_t>{256, 1024, 2048});
  c.eval_batch_size = 1024;
  double opt = uniform(0, 1);
  if (opt < 0.25) {
    c.optimizer = "sgd";
  } else if (opt < 0.5) {
    c.optimizer = "sgd", c.momentum = 0.9, c.nesterov = uniform(0, 1) < 0.3;
  } else if (opt < 0.75) {
    c.optimizer = "adam";
  } else {
    c.optimizer = "adamw";
  }
  c.weight_decay = uniform(0, 1) < 0.5 ? 0.0 : 5e-4;
  return c;
}

std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::string line;
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
  auto split = [](const std::string& text) {
    std::vector<std::string> out;
    std::stringstream s(text);
    std::string item;
    while (std::getline(s, item, ',')) out.push_back(item);
    if (!text.empty() && text.back() == ',') out.emplace_back();
    return out;
  };
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto cells = split(line);
    if (header.empty()) {
      header = cells;
      continue;
    }
    if (cells == header) continue;  // a header repeated by an appended file
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace colo::bench
