// colo._core: what the Python package calls in C++. Tensors cross as they
// are (torch's own pybind11 casters); Python callables become the
// std::functions the estimator runs, called with the GIL held.

#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "colo/core/files.h"
#include "colo/estimate/analytical_estimator.h"
#include "colo/estimate/caching_allocator_model.h"
#include "colo/estimate/device_profile.h"
#include "colo/estimate/device_profile_store.h"
#include "colo/estimate/training_graph.h"
#include "colo/estimate/learned_estimator.h"
#include "colo/estimate/user_model.h"
#include "data_bindings.h"
#include "fuse_bindings.h"

namespace py = pybind11;

namespace {

py::dict to_dict(const colo::estimate::MemoryEstimate& e, int64_t parameter_count) {
  py::dict d;
  d["estimator"] = e.estimator;
  d["bytes"] = e.bytes;
  d["uncertainty"] = e.uncertainty;
  d["peak_phase"] = e.peak_phase;
  d["unmodelled_ops"] = e.unmodelled_ops;
  d["reason"] = e.reason;
  d["parameter_count"] = parameter_count;
  if (e.breakdown) {
    const auto& b = *e.breakdown;
    py::dict parts;
    parts["parameters"] = b.parameters;
    parts["gradients"] = b.gradients;
    parts["optimizer"] = b.optimizer;
    parts["activations"] = b.activations;
    parts["data"] = b.data;
    parts["workspace"] = b.workspace;
    parts["context"] = b.context;
    d["breakdown"] = parts;
  }
  return d;
}

// The stored profile of GPU `gpu` ("h200"), or the reference GPU's for "";
// read once per file version (an estimate asks at every convolution).
const colo::estimate::DeviceProfile& profile_of(const std::string& gpu) {
  static const colo::estimate::DeviceProfile reference = colo::estimate::default_device_profile();
  static std::map<std::string, std::pair<std::optional<double>, colo::estimate::DeviceProfile>> stored;
  if (gpu.empty()) return reference;
  std::optional<double> written =
      colo::estimate::device_profile_stored(gpu)
          ? colo::file_written_unix_s(colo::estimate::profile_directory() + "/" + gpu + ".json")
          : std::nullopt;
  auto it = stored.find(gpu);
  if (it == stored.end() || it->second.first != written) {
    it = stored.insert_or_assign(gpu, std::make_pair(written, colo::estimate::load_device_profile(gpu))).first;
  }
  return it->second.second;
}

// The analytical estimate of a model given as Python callables; see
// colo/estimate.py for the arguments' meaning.
py::dict estimate_model(const std::function<void(bool)>& set_mode,
                        const std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>& loss,
                        const std::vector<int64_t>& sample_shape, bool tokens, int64_t vocab, int64_t batch_size,
                        int64_t eval_batch_size, const std::string& optimizer, double momentum,
                        double weight_decay, bool nesterov, bool keeps_output, bool keeps_gradients,
                        const std::string& learned, const std::string& gpu,
                        const std::string& optimizer_implementation, bool zero_grad_before_forward,
                        int accumulation_steps, const std::vector<int64_t>& resident_allocations) {
  colo::estimate::UserModel model;
  model.set_mode = set_mode;
  model.loss = loss;
  model.input.sample_shape = sample_shape;
  model.input.tokens = tokens;
  model.input.vocab = vocab;
  colo::estimate::UserTraining training;
  training.batch_size = batch_size;
  training.eval_batch_size = eval_batch_size;
  training.optimizer.name = optimizer;
  training.optimizer.momentum = momentum;
  training.optimizer.weight_decay = weight_decay;
  training.optimizer.nesterov = nesterov;
  training.keeps_output = keeps_output;
  training.keeps_gradients = keeps_gradients;
  training.accumulation_steps = accumulation_steps;
  training.resident_allocations = resident_allocations;
  training.optimizer_implementation = optimizer_implementation;
  training.zero_grad_before_forward = zero_grad_before_forward;
  colo::estimate::JobModel job = colo::estimate::describe_user_job(model, training);
  py::dict d = to_dict(colo::estimate::analytical_estimate(job, profile_of(gpu)), job.parameter_count);
  if (!learned.empty()) {
    // colo's learned estimator on the same model's summary (a peer, for comparison).
    colo::estimate::EstimateRequest request;
    request.summary = job.summary;
    colo::estimate::MemoryEstimate e = colo::estimate::LearnedEstimator::load(learned)->estimate(request);
    d["learned_bytes"] = e.known ? py::object(py::int_(e.bytes)) : py::object(py::none());
  }
  return d;
}

// The CUDA caching allocator, as colo models it, over `events` in order:
// (id, bytes > 0) allocates under id, (id, 0) frees it. `segment_addresses`:
// for the allocations that made a segment, the driver's address of it (a
// GPU's trace), to order cached blocks by; empty: colo's guess. Returns its
// peak (allocated, reserved) bytes.
std::pair<int64_t, int64_t> allocator_peaks(const std::vector<std::pair<int64_t, int64_t>>& events,
                                            const std::unordered_map<int64_t, int64_t>& segment_addresses) {
  colo::estimate::CachingAllocatorModel allocator;
  for (const auto& [id, bytes] : events) {
    if (bytes > 0) {
      auto address = segment_addresses.find(id);
      allocator.allocate(id, bytes,
                         address == segment_addresses.end() ? std::nullopt : std::optional<int64_t>(address->second));
    } else {
      allocator.free(id);
    }
  }
  return {allocator.peak_allocated(), allocator.peak_reserved()};
}

// cuDNN's workspace for the forward kernel of a 2-d convolution of these
// input, weight and output shapes at `batch` samples, on GPU `gpu` (see profile_of),
// for elements of `element_bytes` (see ConvWorkspaceTable). 0 when the
// shapes are not a 2-d convolution's.
int64_t conv_forward_workspace(const std::vector<int64_t>& input, const std::vector<int64_t>& weight,
                               const std::vector<int64_t>& output, int64_t batch, int64_t element_bytes,
                               const std::string& gpu) {
  const colo::estimate::DeviceProfile& profile = profile_of(gpu);
  colo::estimate::ConvGeometry conv = colo::estimate::conv_geometry(input, weight, output);
  if (conv.in_channels <= 0) return 0;
  return colo::estimate::conv_workspace_for(profile.conv_workspace, &profile.conv_workspace_half, conv,
                                           colo::estimate::ConvPass::kForward, batch, element_bytes);
}

// cuBLAS's workspace per handle on GPU `gpu` (see profile_of): what the
// caching allocator takes at a thread's first matrix product and keeps.
int64_t gemm_workspace(const std::string& gpu) { return profile_of(gpu).gemm_workspace_bytes(); }

// The CUDA libraries' workspaces a training process holds on GPU `gpu` (see
// profile_of), cuBLAS's per-handle workspaces included.
int64_t library_workspace(const std::string& gpu) { return profile_of(gpu).library_workspace_bytes; }

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "colo's C++ core (colo.estimate calls it; use the colo package, not this module)";
  m.def("estimate_model", &estimate_model, py::arg("set_mode"), py::arg("loss"), py::arg("sample_shape"),
        py::arg("tokens"), py::arg("vocab"), py::arg("batch_size"), py::arg("eval_batch_size"),
        py::arg("optimizer"), py::arg("momentum"), py::arg("weight_decay"), py::arg("nesterov"),
        py::arg("keeps_output") = true, py::arg("keeps_gradients") = false, py::arg("learned") = "",
        py::arg("gpu") = "", py::arg("optimizer_implementation") = "single",
        py::arg("zero_grad_before_forward") = false, py::arg("accumulation_steps") = 1,
        py::arg("resident_allocations") = std::vector<int64_t>{});
  m.def("allocator_peaks", &allocator_peaks, py::arg("events"),
        py::arg("segment_addresses") = std::unordered_map<int64_t, int64_t>{});
  m.def("gemm_workspace", &gemm_workspace, py::arg("gpu"));
  m.def("library_workspace", &library_workspace, py::arg("gpu"));
  m.def("next_sequence_number", &colo::estimate::next_sequence_number);
  m.def("note_recomputed_region", &colo::estimate::note_recomputed_region, py::arg("first"), py::arg("end"));
  m.def("note_in_place_node", &colo::estimate::note_in_place_node, py::arg("sequence_number"));
  m.def("conv_forward_workspace", &conv_forward_workspace, py::arg("input"), py::arg("weight"), py::arg("output"),
        py::arg("batch"), py::arg("element_bytes"), py::arg("gpu") = "");
  m.def("profile_key", &colo::estimate::profile_key, py::arg("gpu_name"));
  m.def("profile_directory", &colo::estimate::profile_directory);
  m.def("device_profile_stored", &colo::estimate::device_profile_stored, py::arg("key"));
  m.def("device_profile_name", [](const std::string& key) { return colo::estimate::load_device_profile(key).name; },
        py::arg("key"));
  m.def("store_device_profile",
        [](const std::string& json, const std::string& key) {
          return colo::estimate::store_device_profile(colo::estimate::device_profile_from_json(json), key);
        },
        py::arg("json"), py::arg("key"));
  m.def("reference_device_profile_json",
        [] { return colo::estimate::device_profile_to_json(colo::estimate::default_device_profile()); });
  bind_fuse(m);
  bind_data(m);
}
