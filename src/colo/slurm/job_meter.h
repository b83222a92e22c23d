#pragma once
// What one job uses of the GPUs it was given, measured from outside it:
// the largest GPU memory its processes held on one GPU, and its share of the GPUs'
// energy. On a GPU shared with other jobs, each interval's energy is split
// by the GPU memory each holds (what Slurm packed them by).

#include <sys/types.h>

#include <optional>
#include <vector>

#include "colo/gpu/device.h"

namespace colo::slurm {

class JobMeter {
 public:
  // `devices`: the GPUs the job runs on; `process_group`: the job's.
  JobMeter(std::vector<gpu::DevicePtr> devices, pid_t process_group);

  // Reads every device once; call at a steady interval while the job runs.
  // A device that stops answering is skipped (its energy is then missing
  // for those intervals) and reported once on the log.
  void sample();

  std::optional<int64_t> peak_bytes() const;
  std::optional<double> energy_j() const;

  // This job's share of an interval on one GPU: its memory over all the
  // memory the GPU's processes hold; all of it when no process reports any
  // memory and the job is the GPU's only process, or when no one holds any.
  static double energy_share(int64_t own_bytes, int64_t all_bytes, int processes, int own_processes);

 private:
  struct PerDevice {
    gpu::DevicePtr device;
    std::optional<gpu::DeviceSample> last;
    bool warned = false;
  };
  std::vector<PerDevice> devices_;
  pid_t process_group_;
  int64_t peak_ = 0;
  bool peak_seen_ = false;
  double energy_ = 0;
  bool energy_seen_ = false;
};

}  // namespace colo::slurm
