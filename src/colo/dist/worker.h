#pragma once
// One process of a distributed run: a worker (ranks 0 .. workers-1) trains
// its shard of the data under the cluster's strategy; a server (the ranks
// after) serves a key range of the parameters.

#include "colo/dist/cluster_spec.h"
#include "colo/dist/rendezvous.h"

namespace colo::dist {

// Trains as worker `rank`. Writes `<output>/steps-rank<R>.jsonl` (one record
// per step: loss, compute / communication / waiting seconds, bytes sent);
// worker 0 also evaluates on the test split (every `eval_every` steps and at
// each epoch's end) into `<output>/eval.jsonl` and writes
// `<output>/result.json`. Every worker leaves its final flat parameters as
// raw float32 in `<output>/params-rank<R>.f32`. Throws std::runtime_error (naming the peer) when a
// peer dies or times out.
void run_worker(const ClusterSpec& spec, Rendezvous& rendezvous, int rank);

// Runs this process's role in the run `member` belongs to.
void run_rank(const ClusterSpec& spec, const Membership& member);

}  // namespace colo::dist
