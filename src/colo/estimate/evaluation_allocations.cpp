// record_evaluation_allocations (training_graph.h): the evaluation pass's
// tensor lifetimes as the model's own code makes them.

#include <mutex>
#include <set>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <torch/utils.h>

#include "colo/estimate/allocation_recorder.h"
#include "colo/estimate/training_graph.h"

namespace colo::estimate {
namespace {

std::vector<CpuAllocationEvent> record_evaluation_at(const LossOf& loss_of, const data::InputShape& input, int64_t batch) {
  auto [x, y] = synthetic_batch(input, batch);
  CpuAllocationRecorder recorder;
  { at::Tensor loss = loss_of(x, y); }
  return recorder.events();
}

// oneDNN switched on or off for its lifetime; the process's setting is put back after.
class OneDnnSetting {
 public:
  explicit OneDnnSetting(bool enabled) : before_(at::globalContext().userEnabledMkldnn()) {
    at::globalContext().setUserEnabledMkldnn(enabled);
  }
  ~OneDnnSetting() { at::globalContext().setUserEnabledMkldnn(before_); }
  OneDnnSetting(const OneDnnSetting&) = delete;
  OneDnnSetting& operator=(const OneDnnSetting&) = delete;

 private:
  bool before_;
};

bool same_structure(const std::vector<CpuAllocationEvent>& a, const std::vector<CpuAllocationEvent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].allocate != b[i].allocate || a[i].id != b[i].id) return false;
  }
  return true;
}

}  // namespace

std::vector<EvaluationAllocation> record_evaluation_allocations(const TrainingMode& set_mode, const LossOf& loss,
                                                                 const data::InputShape& input,
                                                                 const TrainingGraph& graph) {
  // oneDNN's convolutions allocate activation-sized buffers of their own
  // (read as a reorder of the input and an output in its layout), which no
  // GPU kernel makes; they put ResNet-50's evaluation 3-5% low. fp32 models
  // are recorded through ATen's own kernels. bf16 and fp16 ones keep oneDNN,
  // without which a bf16 matrix product on the CPU is ~100x slower; its
  // buffers (raw_allocate) are recorded too and, scratch or of no graph
  // tensor's size, left out below.
  std::vector<CpuAllocationEvent> small, large;
  {
    // One recording at a time in the process (estimates run in several
    // threads at once): the recorder and oneDNN's switch are global.
    static std::mutex one_at_a_time;
    std::lock_guard<std::mutex> lock(one_at_a_time);
    OneDnnSetting one_dnn(graph.reduced_precision && at::globalContext().userEnabledMkldnn());
    torch::NoGradGuard no_grad;
    set_mode(false);
    try {
      small = record_evaluation_at(loss, input, kRecordedSmallBatch);
      large = record_evaluation_at(loss, input, kRecordedLargeBatch);
    } catch (const std::exception&) {
      small.clear(), large.clear();
    }
    set_mode(true);
  }
  if (small.empty() || !same_structure(small, large)) return {};

  std::set<std::pair<int64_t, int64_t>> graph_sizes;
  for (const GraphTensor& t : graph.tensors) {
    if (t.owns_memory && t.per_sample_bytes > 0) graph_sizes.insert({t.fixed_bytes, t.per_sample_bytes});
  }
  std::set<int64_t> kept;
  std::vector<EvaluationAllocation> events;
  for (size_t i = 0; i < large.size(); ++i) {
    const CpuAllocationEvent& e = large[i];
    if (!e.allocate) {
      if (kept.count(e.id)) events.push_back({false, e.id, 0, 0});
      continue;
    }
    // Scratch: freed before anything else is allocated.
    bool scratch = i + 1 < large.size() && !large[i + 1].allocate && large[i + 1].id == e.id;
    auto [fixed, per_sample] = affine_bytes(small[i].bytes, e.bytes);
    if (scratch || !graph_sizes.count({fixed, per_sample})) continue;
    kept.insert(e.id);
    events.push_back({true, e.id, fixed, per_sample});
  }
  return events;
}

}  // namespace colo::estimate
