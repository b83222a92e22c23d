#pragma once
// Where a run's training batches come from: its training split through a
// DataLoader, or a shared loader's producer (SharedBatches). Trainers read
// one of these and need not know which.

#include <cstdint>
#include <memory>
#include <optional>

#include "colo/data/loader.h"
#include "colo/data/shared_batches.h"

namespace colo::data {

class TrainingBatches {
 public:
  // From the run's own loader (owned).
  explicit TrainingBatches(std::unique_ptr<DataLoader> own) : own_(std::move(own)) {}
  // From a shared loader's producer (not owned; must outlive this).
  explicit TrainingBatches(SharedBatches& shared) : shared_(&shared) {}

  int64_t batches_per_epoch() const { return shared_ ? shared_->batches_per_epoch() : own_->batches_per_epoch(); }
  // Starts epoch `epoch` (its order, for an own loader; a producer's stream goes on).
  void start_epoch(int64_t epoch);
  // The next batch of the epoch, or nullopt when it is over.
  std::optional<Batch> next() { return shared_ ? shared_->next() : own_->next(); }
  // Seconds spent waiting for the producer so far; nullopt for an own loader.
  std::optional<double> data_wait_s() const;

 private:
  std::unique_ptr<DataLoader> own_;
  SharedBatches* shared_ = nullptr;
};

}  // namespace colo::data
