#include "colo/sched/job_request.h"

namespace colo::sched {

JobRequest build_request(const RequestFacts& job, const JobHistory& history, const RecoveryOptions& recovery,
                         bool provisional) {
  JobRequest request;
  request.id = job.id;
  request.mem_bytes = job.mem_bytes;
  request.sm_share = job.sm_share;
  request.gpus = job.gpus;
  if (request.sm_share <= 0) {
    if (auto learned = history.share(job.keys)) request.sm_share = *learned;
  }
  if (!request.mem_bytes) request.mem_bytes = history.reservation(job.keys);
  request.provisional = !request.mem_bytes && provisional;
  if (job.oom_deaths > 0) request = recovery_request(request, recovery, job.oom_deaths, job.peak_bytes);
  return request;
}

}  // namespace colo::sched
