// colo._core's fused-array pieces for colo.fuse (python/colo/fuse): the
// grouped convolution and ReLU+max-pool on colo's own CUDA kernels, and the
// fused optimiser with per-model hyper-parameters. Tensors cross as they
// are, so autograd and CUDA-graph capture see the same tensors as Python.

#include "fuse_bindings.h"

#include <optional>

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "colo/fuse/fused_optimizer.h"
#include "colo/fuse/grouped_conv.h"
#include "colo/fuse/relu_max_pool.h"
#include "colo/fuse/sweep_plan.h"

namespace py = pybind11;

namespace {

// One model's optimiser from a dict of Python values (keys as OptimizerSpec).
colo::train::OptimizerSpec optimizer_spec(const py::dict& d) {
  colo::train::OptimizerSpec spec;
  for (auto item : d) {
    auto key = item.first.cast<std::string>();
    if (key == "name") spec.name = item.second.cast<std::string>();
    else if (key == "lr") spec.lr = item.second.cast<double>();
    else if (key == "momentum") spec.momentum = item.second.cast<double>();
    else if (key == "nesterov") spec.nesterov = item.second.cast<bool>();
    else if (key == "weight_decay") spec.weight_decay = item.second.cast<double>();
    else if (key == "beta1") spec.beta1 = item.second.cast<double>();
    else if (key == "beta2") spec.beta2 = item.second.cast<double>();
    else if (key == "eps") spec.eps = item.second.cast<double>();
    else throw py::value_error("FusedOptimizer: unknown optimiser setting '" + key + "'");
  }
  return spec;
}

colo::fuse::FusedOptimizer make_fused_optimizer(std::vector<at::Tensor> parameters, const py::list& specs) {
  std::vector<colo::train::OptimizerSpec> per_model;
  for (auto spec : specs) per_model.push_back(optimizer_spec(spec.cast<py::dict>()));
  try {
    return colo::fuse::FusedOptimizer(std::move(parameters), std::move(per_model));
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
}

// expand_axes over JSON text: axes [{"name", "values"} or {"name", "min",
// "max", "log"}] -> the configurations as a JSON list of objects.
std::string expand_axes_json(const std::string& axes_json, const std::string& sampling, int64_t count,
                             uint64_t seed) {
  std::vector<colo::fuse::SweepAxis> axes;
  for (const auto& item : nlohmann::json::parse(axes_json)) {
    colo::fuse::SweepAxis axis;
    axis.name = item.at("name").get<std::string>();
    if (item.contains("values")) {
      for (const auto& v : item["values"]) axis.values.push_back(v);
    } else {
      axis.range = true;
      axis.min = item.at("min").get<double>();
      axis.max = item.at("max").get<double>();
      axis.log = item.value("log", false);
    }
    axes.push_back(std::move(axis));
  }
  return nlohmann::json(colo::fuse::expand_axes(axes, sampling, count, seed)).dump();
}

}  // namespace

void bind_fuse(py::module& m) {
  m.def("expand_axes_json", &expand_axes_json, py::arg("axes_json"), py::arg("sampling"), py::arg("count"),
        py::arg("seed"));
  m.def("halving_survivors", &colo::fuse::halving_survivors, py::arg("accuracies"), py::arg("keep"));
  m.def("own_grouped_conv_applies", &colo::fuse::own_grouped_conv_applies, py::arg("x"), py::arg("weight"),
        py::arg("groups"), py::arg("stride"), py::arg("padding"));
  m.def(
      "grouped_conv2d",
      [](const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias, int64_t stride,
         int64_t padding, int64_t groups, bool allow_own) {
        return colo::fuse::grouped_conv2d(x, weight, bias ? *bias : at::Tensor(), stride, padding, groups, allow_own);
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("groups") = 1, py::arg("allow_own") = true);
  m.def("own_relu_max_pool_applies", &colo::fuse::own_relu_max_pool_applies, py::arg("x"));
  m.def("relu_max_pool2x2", &colo::fuse::relu_max_pool2x2, py::arg("x"), py::arg("allow_own") = true);

  py::class_<colo::fuse::FusedOptimizer>(m, "FusedOptimizer")
      .def(py::init(&make_fused_optimizer), py::arg("parameters"), py::arg("specs"))
      .def("zero_grad", &colo::fuse::FusedOptimizer::zero_grad)
      .def("step", &colo::fuse::FusedOptimizer::step)
      .def("set_learning_rate", &colo::fuse::FusedOptimizer::set_learning_rate, py::arg("lr"))
      .def("set_lr_table", &colo::fuse::FusedOptimizer::set_lr_table, py::arg("table"))
      .def("state", &colo::fuse::FusedOptimizer::state)
      .def("steps_taken", &colo::fuse::FusedOptimizer::steps_taken)
      .def_property_readonly("models", &colo::fuse::FusedOptimizer::models);
}
