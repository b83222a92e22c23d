#include "colo/train/epoch_record.h"

namespace colo::train {

nlohmann::json to_json(const EpochRecord& r) {
  nlohmann::json j = {
      {"epoch", r.epoch},
      {"step", r.step},
      {"loss", r.loss},
      {"train_accuracy", r.train_accuracy},
      {"test_loss", r.test_loss},
      {"test_accuracy", r.test_accuracy},
      {"samples_per_s", r.samples_per_s},
      {"epoch_s", r.epoch_s},
      {"wall_s", r.wall_s},
      {"lr", r.lr},
  };
  if (r.peak_mem_bytes) j["peak_mem_bytes"] = *r.peak_mem_bytes;
  if (r.peak_reserved_bytes) j["peak_reserved_bytes"] = *r.peak_reserved_bytes;
  if (r.data_wait_s) j["data_wait_s"] = *r.data_wait_s;
  if (r.data_wait_pct) j["data_wait_pct"] = *r.data_wait_pct;
  return j;
}

}  // namespace colo::train
