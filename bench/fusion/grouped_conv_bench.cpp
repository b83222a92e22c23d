// Time of the grouped convolution of N fused LeNets' second layer (6 -> 16
// channels per model, 5x5 on 14x14, batch 128 per model) on colo's own
// kernels against cuDNN's, forward alone and forward + backward (input and
// weight gradients), in float32 with TF32 off on both sides.
//
//   grouped_conv_bench --models 8 32 64 --iterations 200
//
// Prints one JSON line per (models, path) and a table last.

#include <chrono>
#include <cstdio>
#include <vector>

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include "colo/fuse/grouped_conv.h"

#if COLO_HAS_CUDA
#include <c10/cuda/CUDAStream.h>

#include "colo/fuse/cuda/grouped_conv_kernels.h"
#endif

namespace {

struct Timing {
  double forward_us = 0, forward_backward_us = 0;
};

template <typename Step>
double mean_us(int iterations, Step&& step) {
  for (int i = 0; i < 10; ++i) step();
  torch::cuda::synchronize();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) step();
  torch::cuda::synchronize();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / iterations;
}

Timing time_path(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& up,
                 int64_t groups, bool own, int iterations) {
  Timing t;
  t.forward_us = mean_us(iterations, [&] {
    at::NoGradGuard no_grad;
    colo::fuse::grouped_conv2d(x, w, b, 1, 0, groups, own);
  });
  t.forward_backward_us = mean_us(iterations, [&] {
    at::Tensor y = colo::fuse::grouped_conv2d(x, w, b, 1, 0, groups, own);
    y.backward(up);
  });
  return t;
}

// Each operation alone, in microseconds: forward, input gradient and weight
// gradient, by cuDNN (at::convolution_backward with one output) and by
// colo's kernels called directly (the weight gradient with its partial sum).
nlohmann::json per_operation_us(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                                const at::Tensor& dy, int64_t groups, int iterations) {
  at::NoGradGuard no_grad;
  auto cudnn_backward = [&](std::array<bool, 3> mask) {
    at::convolution_backward(dy, x, w, at::OptionalIntArrayRef{}, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, groups,
                             mask);
  };
  nlohmann::json ops;
  ops["cudnn"] = {{"forward", mean_us(iterations, [&] { colo::fuse::grouped_conv2d(x, w, b, 1, 0, groups, false); })},
                  {"input_grad", mean_us(iterations, [&] { cudnn_backward({true, false, false}); })},
                  {"weight_grad", mean_us(iterations, [&] { cudnn_backward({false, true, false}); })},
                  {"bias_grad", mean_us(iterations, [&] { dy.sum({0, 2, 3}); })}};
#if COLO_HAS_CUDA
  colo::fuse::cuda::GroupedConvShape s;
  s.batch = x.size(0), s.groups = groups, s.in_per_group = x.size(1) / groups;
  s.out_per_group = w.size(0) / groups, s.height = x.size(2), s.width = x.size(3), s.kernel = w.size(2);
  void* stream = c10::cuda::getCurrentCUDAStream().stream();
  at::Tensor y = at::empty_like(dy), dx = at::empty_like(x);
  at::Tensor partial = at::empty({colo::fuse::cuda::grouped_conv_weight_grad_slices(s), w.size(0), w.size(1),
                                  w.size(2), w.size(3)}, w.options());
  ops["colo"] = {
      {"forward", mean_us(iterations, [&] {
         colo::fuse::cuda::grouped_conv_forward(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                                y.data_ptr<float>(), s, stream);
       })},
      {"input_grad", mean_us(iterations, [&] {
         colo::fuse::cuda::grouped_conv_input_grad(dy.data_ptr<float>(), w.data_ptr<float>(), dx.data_ptr<float>(),
                                                   s, stream);
       })},
      {"weight_grad", mean_us(iterations, [&] {
         colo::fuse::cuda::grouped_conv_weight_grad(dy.data_ptr<float>(), x.data_ptr<float>(),
                                                    partial.data_ptr<float>(), s, stream);
         partial.sum(0);
       })}};
#endif
  return ops;
}

double relative(const at::Tensor& a, const at::Tensor& b) { return ((a - b).norm() / b.norm()).item<double>(); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"colo's grouped-convolution kernels against cuDNN (LeNet's second layer)"};
  std::vector<int64_t> counts{8, 32, 64};
  int iterations = 200;
  int64_t batch = 128;
  app.add_option("--models", counts, "fused model counts");
  app.add_option("--iterations", iterations, "timed iterations per measurement")->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "samples per model")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "grouped_conv_bench: needs a CUDA device\n");
    return 1;
  }
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setBenchmarkCuDNN(true);

  std::vector<nlohmann::json> rows;
  int status = 0;
  for (int64_t n : counts) {
    at::manual_seed(1);
    auto options = at::TensorOptions().device(at::kCUDA);
    at::Tensor x = at::randn({batch, n * 6, 14, 14}, options).requires_grad_(true);
    at::Tensor w = (at::randn({n * 16, 6, 5, 5}, options) * 0.1).requires_grad_(true);
    at::Tensor b = at::randn({n * 16}, options).requires_grad_(true);
    at::Tensor up = at::randn({batch, n * 16, 10, 10}, options);
    if (!colo::fuse::own_grouped_conv_applies(x, w, n, 1, 0)) {
      std::fprintf(stderr, "grouped_conv_bench: colo's kernels do not take N = %lld\n", static_cast<long long>(n));
      return 1;
    }
    // The gradients of both paths, to show what is timed agrees.
    at::Tensor y_own = colo::fuse::grouped_conv2d(x, w, b, 1, 0, n, true);
    y_own.backward(up);
    at::Tensor dx_own = x.grad().clone(), dw_own = w.grad().clone();
    x.mutable_grad() = at::Tensor(), w.mutable_grad() = at::Tensor(), b.mutable_grad() = at::Tensor();
    at::Tensor y_ref = colo::fuse::grouped_conv2d(x, w, b, 1, 0, n, false);
    y_ref.backward(up);
    const double err = std::max({relative(y_own, y_ref), relative(dx_own, x.grad()), relative(dw_own, w.grad())});
    if (err > 1e-4) {
      std::fprintf(stderr, "grouped_conv_bench: N = %lld: colo's kernels differ from cuDNN by %.3g (relative)\n",
                   static_cast<long long>(n), err);
      status = 1;
    }

    nlohmann::json ops = per_operation_us(x, w, b, up, n, iterations);
    std::printf("%s\n", nlohmann::json{{"models", n}, {"batch", batch}, {"per_operation_us", ops}}.dump().c_str());
    for (bool own : {false, true}) {
      x.mutable_grad() = at::Tensor(), w.mutable_grad() = at::Tensor(), b.mutable_grad() = at::Tensor();
      Timing t = time_path(x, w, b, up, n, own, iterations);
      nlohmann::json row{{"models", n},
                         {"batch", batch},
                         {"path", own ? "colo" : "cudnn"},
                         {"forward_us", t.forward_us},
                         {"forward_backward_us", t.forward_backward_us},
                         {"backward_us", t.forward_backward_us - t.forward_us},
                         {"max_rel_err_vs_cudnn", err}};
      std::printf("%s\n", row.dump().c_str());
      rows.push_back(row);
    }
  }
  std::printf("\n%-6s %-6s %12s %12s %12s\n", "N", "path", "forward us", "backward us", "total us");
  for (const auto& r : rows) {
    std::printf("%-6lld %-6s %12.1f %12.1f %12.1f\n", static_cast<long long>(r["models"].get<int64_t>()),
                r["path"].get<std::string>().c_str(), r["forward_us"].get<double>(), r["backward_us"].get<double>(),
                r["forward_backward_us"].get<double>());
  }
  return status;
}
