// All-reduce bus bandwidth through colo's dist::Communicator (c10d NCCL on
// GPUs, Gloo on the CPU), measured as nccl-tests does: busbw = bytes *
// 2 (W-1) / W / time. Started once per rank with COLO_DIST_RANK,
// COLO_DIST_WORLD and COLO_DIST_RENDEZVOUS set (bench/dist/run.sh does it);
// rank 0 prints one JSON line.

#include <cstdio>

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "colo/core/stopwatch.h"
#include "colo/dist/communicator.h"
#include "colo/gpu/torch_device.h"

int main(int argc, char** argv) {
  CLI::App app{"all-reduce bus bandwidth through colo's communicator"};
  double mib = 256;
  int warmup = 5, iterations = 20;
  std::string backend = "nccl";
  app.add_option("--mib", mib, "buffer size in MiB (float32)");
  app.add_option("--warmup", warmup);
  app.add_option("--iterations", iterations);
  app.add_option("--backend", backend, "nccl | gloo");
  CLI11_PARSE(app, argc, argv);

  auto member = colo::dist::membership_from_environment();
  if (!member) {
    std::fprintf(stderr, "set COLO_DIST_RANK, COLO_DIST_WORLD and COLO_DIST_RENDEZVOUS\n");
    return 2;
  }
  c10::Device device = backend == "nccl" ? c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(member->rank))
                                         : c10::Device(c10::DeviceType::CPU);
  colo::gpu::make_current(device);
  auto timeout = std::chrono::milliseconds(120000);
  colo::dist::Rendezvous rendezvous(*member, timeout);
  colo::dist::Communicator group(rendezvous, "busbw", member->rank, member->world, backend, device, timeout);
  int64_t numel = static_cast<int64_t>(mib * 1024 * 1024 / 4);
  at::Tensor buffer = at::ones({numel}, at::TensorOptions().device(device));
  for (int i = 0; i < warmup; ++i) group.allreduce_sum(buffer).wait();
  colo::gpu::synchronize(device);
  group.barrier();
  colo::gpu::synchronize(device);
  colo::Stopwatch clock;
  for (int i = 0; i < iterations; ++i) group.allreduce_sum(buffer).wait();
  colo::gpu::synchronize(device);
  double seconds = clock.elapsed_s() / iterations;
  double bytes = static_cast<double>(numel) * 4;
  double world = member->world;
  double busbw = bytes * 2 * (world - 1) / world / seconds / 1e9;
  if (member->rank == 0) {
    std::printf("%s\n", nlohmann::json{{"impl", "colo"}, {"backend", backend}, {"world", member->world},
                                       {"bytes", bytes}, {"time_s", seconds}, {"busbw_gbps", busbw}}
                            .dump()
                            .c_str());
  }
  return 0;
}
