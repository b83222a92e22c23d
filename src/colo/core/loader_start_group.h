#pragma once
// The environment variable through which colo's scheduler puts the jobs it
// launches together on one shared-loader producer into that producer's
// start group, "N:READY_FILE" (N jobs; the producer's --ready-file): the
// scheduler (sched::LoaderProducers) sets it, a consumer
// (data::SharedLoaderClient) sends it with its first request, and the
// producer gives the group their first chunks together
// (data::LoaderServeSpec::start_group_wait_s).

namespace colo {

inline constexpr const char* kLoaderStartGroupVariable = "COLO_LOADER_START_GROUP";

}  // namespace colo
