#pragma once
// Training batches from a shared loader's producer (loader_server.h), served
// as DataLoader serves a split's: float32, normalised with the producer's
// per-channel mean and std, on the training device. What `colo train` reads
// when its [data] says name = "shared".

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include "colo/data/data_spec.h"
#include "colo/data/dataset.h"
#include "colo/data/device_ring.h"
#include "colo/data/image_pipeline.h"
#include "colo/data/loader.h"
#include "colo/data/shared_loader.h"

namespace colo::data {

class SharedBatches {
 public:
  // Connects to the producer of `loader` (its DATA.toml or its address). On
  // a CUDA device, batches are copied from the producer's device ring when
  // it keeps one (DATA.toml `device`), else through host memory.
  // Throws InputError for a malformed DATA.toml, std::invalid_argument for a
  // malformed address, ProducerLost when no producer answers in `timeout_s`.
  // With `load_locally_if_lost` (`loader` a DATA.toml), a producer lost
  // later is said in one line on stderr, and the batches from then on are
  // decoded here, from that file, by the same pipeline.
  SharedBatches(const std::string& loader, int64_t batch_size, const c10::Device& device, double timeout_s = 30,
                bool load_locally_if_lost = false);

  // The images' shape and classes, as the producer reports them.
  InputShape shape() const;
  // One pass over the producer's images, in whole batches.
  int64_t batches_per_epoch() const { return client_->batches_per_epoch(); }
  // Starts counting a new epoch's batches (the producer's stream goes on).
  void start_epoch() { served_ = 0; }
  // The next batch, or nullopt once this epoch's batches are served. Throws
  // ProducerLost when the producer stops answering (unless loading locally).
  std::optional<Batch> next();
  // Whether batches come from the producer's device ring.
  bool reads_device_ring() const { return device_ring_ != nullptr; }
  // Whether the producer was lost and batches are decoded here.
  bool loads_locally() const { return local_ != nullptr; }
  // This consumer's counters (SharedLoaderClient::stats: wait_s, samples,
  // ...); once loading locally, wait_s adds the time spent decoding here,
  // with loads_locally and producer_lost.
  nlohmann::json stats() const;

 private:
  Batch next_shared();
  Batch next_local();
  void load_locally(const std::string& why);
  // uint8 pixels and labels to a normalised batch on the device.
  Batch to_device(const at::Tensor& pixels, const at::Tensor& labels) const;
  // Empty uint8 pixels and int64 labels of one batch, on the host.
  std::pair<at::Tensor, at::Tensor> host_batch() const;

  std::unique_ptr<SharedLoaderClient> client_;
  std::unique_ptr<DeviceRingReader> device_ring_;  // destroyed before client_
  c10::Device device_;
  at::Tensor scale_, shift_;  // x * scale + shift = (x / 255 - mean) / std, per channel
  int64_t served_ = 0;
  std::string data_file_;                // set when a lost producer is to be replaced by local decoding
  std::unique_ptr<ImageDecoder> local_;  // decoding here, once the producer was lost
  std::vector<int64_t> local_order_;     // this pass's image order, and the next image in it
  int64_t local_next_ = 0, local_pass_ = 0;
  double local_wait_s_ = 0;
  std::string lost_;
};

// What a run reads for `spec`: its data set read into memory, or, for
// "shared" data, the producer's batches and a data set holding only its
// name and shape (no splits). Throws as load_dataset and SharedBatches do.
struct RunData {
  Dataset dataset;
  std::unique_ptr<SharedBatches> shared;  // set for "shared" data
};
RunData open_run_data(const DataSpec& spec, int64_t batch_size, const c10::Device& device);

}  // namespace colo::data
