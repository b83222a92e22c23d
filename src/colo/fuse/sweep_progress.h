#pragma once
// What a running sweep reports, as calls on an observer: the CLI prints
// them (SweepConsole); other front ends pass their own observer to run_sweep.

#include <cstdint>
#include <string>

#include "colo/train/epoch_record.h"

namespace colo::fuse {

struct SweepResult;

class SweepObserver {
 public:
  virtual ~SweepObserver() = default;
  // Before training: how many configurations of which model, on what.
  virtual void on_start(size_t configurations, const std::string& model, const std::string& dataset,
                        const std::string& device) = 0;
  // An array starts: its position, the number of arrays, its size and key.
  virtual void on_array(size_t array, size_t arrays, size_t models, const std::string& key) = 0;
  // One model finished an epoch.
  virtual void on_epoch(int64_t model, size_t array, const train::EpochRecord& record) = 0;
  // The arrays started together finished their last epoch.
  virtual void on_arrays_done() = 0;
  // Something the user should know (a CUDA graph that fell back, an array split).
  virtual void on_note(const std::string& text) = 0;
  // The sweep finished.
  virtual void on_done(const SweepResult& result) = 0;
};

// Prints a sweep's progress to stdout: one line per array, one per epoch
// (models, best test accuracy, aggregate samples/s), the ranking at the end.
class SweepConsole : public SweepObserver {
 public:
  explicit SweepConsole(int64_t epochs) : epochs_(epochs) {}
  void on_start(size_t configurations, const std::string& model, const std::string& dataset,
                const std::string& device) override;
  void on_array(size_t array, size_t arrays, size_t models, const std::string& key) override;
  void on_epoch(int64_t model, size_t array, const train::EpochRecord& record) override;
  void on_arrays_done() override { flush_epoch(); }
  void on_note(const std::string& text) override;
  void on_done(const SweepResult& result) override;

 private:
  void flush_epoch();
  int64_t epochs_;
  int64_t last_epoch_ = 0, epoch_models_ = 0, best_model_ = -1;
  double epoch_best_ = 0, epoch_rate_ = 0;
  bool tested_ = true;  // the last record had test figures (not a shared loader's data)
};

}  // namespace colo::fuse
