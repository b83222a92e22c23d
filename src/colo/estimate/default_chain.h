#pragma once
// The one estimator chain for submitted jobs, shared by `colo run`,
// `colo submit` and colod: the analytical estimate of a `colo train` spec,
// else of a Python job's model, else the largest peak the same command
// reached before; the first that knows, plus a 10% margin.

#include <optional>
#include <string>
#include <vector>

#include "colo/estimate/estimator.h"
#include "colo/estimate/history_estimator.h"

namespace colo::estimate {

// The fraction the chain adds to the estimate it takes.
inline constexpr double kSubmitMargin = 0.10;

// The chain over `history` (past runs with their measured peaks).
EstimatorPtr default_job_estimator(std::vector<PastRun> history);

// The path of the spec of a `colo train SPEC.toml` command (an argv, or a
// shell line as one of its words), relative to `workdir`; "" for any
// other command.
std::string train_spec_of(const std::vector<std::string>& command, const std::string& workdir);

// The spec of the one configuration a `colo sweep SWEEP.toml --only I`
// command trains (I a single index), relative to `workdir`; nullopt for any
// other command, several configurations, or an index the sweep lacks.
// Throws InputError when the sweep file is bad.
std::optional<train::TrainSpec> sweep_config_spec_of(const std::vector<std::string>& command,
                                                     const std::string& workdir);

// What a job says about itself: its command and workdir, the parsed spec of
// a `colo train` command (or of a one-configuration `colo sweep --only I`), and its Python model when it names one. Throws
// InputError when the named spec file is bad.
EstimateRequest job_request(const std::vector<std::string>& command, const std::string& workdir,
                            const std::optional<PythonModelSource>& python_model);

// What a `colo train` job trains, for a predicted SM share: its spec's model,
// data set and sample shape, batch size and device, without the learning
// rate, seed, epochs or output (sched::workload_key). "" when the request
// has no spec.
std::string workload_of(const EstimateRequest& request);

}  // namespace colo::estimate
