#pragma once
// How far jobs may overtake an earlier job that does not fit yet. Both the
// runner and the simulator try waiting jobs in rank order (queue_order.h)
// and start every one that fits: greedy backfilling, which keeps GPUs full
// but can starve a large job behind a stream of small ones.

namespace colo::sched {

struct BackfillRule {
  // A job that has waited at least this long (seconds since submission) and
  // still does not fit stops every job ranked after it from starting, so
  // GPUs drain for it. 0: never (pure greedy backfilling).
  double reserve_after_s = 0;
  // The same for a job of several GPUs, which a stream of one-GPU jobs would
  // otherwise starve: it reserves after this long even when reserve_after_s
  // is 0. 0: never.
  double multi_gpu_reserve_after_s = 60;

  // Whether a job of `gpus` GPUs that waited `waited_s` and does not fit
  // holds back the rest.
  bool holds_back_later_jobs(double waited_s, int gpus = 1) const {
    if (reserve_after_s > 0 && waited_s >= reserve_after_s) return true;
    return gpus > 1 && multi_gpu_reserve_after_s > 0 && waited_s >= multi_gpu_reserve_after_s;
  }
};

}  // namespace colo::sched
