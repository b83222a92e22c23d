#include "colo/data/training_batches.h"

namespace colo::data {

void TrainingBatches::start_epoch(int64_t epoch) {
  if (shared_) {
    shared_->start_epoch();
  } else {
    own_->start_epoch(epoch);
  }
}

std::optional<double> TrainingBatches::data_wait_s() const {
  if (!shared_) return std::nullopt;
  return shared_->stats().value("wait_s", 0.0);
}

}  // namespace colo::data
