#pragma once
// Job admission: fills in the memory need of submitted jobs that did not
// state one (the estimates sched/ places them by). Its own library,
// colo_admission, as it runs LibTorch estimators; colo_sched does not.

#include <vector>

#include "colo/estimate/past_run.h"
#include "colo/sched/job_spec.h"
#include "colo/sched/model_estimates.h"
#include "colo/sched/store.h"

namespace colo::sched {

// Which estimates fill_memory_estimates leaves to the scheduler, which makes
// them in the background once the jobs are queued (RunnerOptions::
// estimate_model, scheduler_estimate()), so that a submission never waits
// for a model to be built or a spec to be estimated:
//   kNothing         estimates all at submission (colo slurm submit, colo
//                    compare, which place jobs by them at once);
//   kModels          leaves [job.model] tables (colo submit to a store: the
//                    spec estimates are shown to the user who submits);
//   kModelsAndSpecs  leaves tables and `colo train`/`colo sweep --only`
//                    specs too (colo run, colod and colo submit to colod,
//                    whose scheduler starts jobs at once).
enum class ByScheduler { kNothing, kModels, kModelsAndSpecs };

// For every job, what colo reads of its model (`workload`, for a predicted
// SM share); for each job without `mem`, the default chain (estimate/default_chain.h):
// a `colo train SPEC.toml` command gets the analytical estimate of its spec,
// a job naming its Python model (`model`) that model's, and any command
// that completed before in `history` its largest measured peak; each with a
// 10% margin, and its high bound taken (MemoryEstimate::bytes_high). Jobs
// colo cannot estimate stay unknown (a note on stderr says
// why). A `colo train` job whose spec reads a shared loader's DATA.toml
// gets it as its `loader`, so the scheduler runs its producer. Used by
// `colo run`, `colo submit` and colod alike.
void fill_memory_estimates(std::vector<JobSpec>& specs, const JobStore* history,
                           ByScheduler left = ByScheduler::kNothing);

// The same from past runs read earlier (past_runs), so that a caller holding
// a lock on the store need not hold it while models are estimated.
void fill_memory_estimates(std::vector<JobSpec>& specs, std::vector<estimate::PastRun> history,
                           ByScheduler left = ByScheduler::kNothing);

// The scheduler's estimate of a job (RunnerOptions::estimate_model), its
// high bound (MemoryEstimate::bytes_high), with no margin: of its [job.model] table, colo.job_estimate in a child process
// with at most `threads` CPU threads, unknown after `timeout_s` (a builder
// that hangs); else of its `colo train`/`colo sweep --only` spec, the
// analytical estimate, in the calling thread.
EstimateModel scheduler_estimate(int threads = 2, double timeout_s = 120);

// What made scheduler_estimate's answers (RunnerOptions::estimator_version):
// the size and modification time of this program and of the colo package's
// estimating modules (estimate.py, ops_as_on_gpu.py, job_estimate.py, device_profile.py and
// its compiled core), hashed. Another build or install of colo gives
// another version, so estimates stored by an older estimator are made again.
std::string scheduler_estimator_version();

// Every completed job of `store` with its measured peak, for the history estimator.
std::vector<estimate::PastRun> past_runs(const JobStore& store);

}  // namespace colo::sched
