#include "colo/sched/recovery.h"

#include <gtest/gtest.h>

#include "support/bytes.h"

namespace colo::sched {
namespace {

using testing::kGiB;

TEST(Recovery, RadRmRuleRetriesAlone) {
  JobRequest original{7, 4 * kGiB, 0.3, false, 0};
  JobRequest retry = recovery_request(original, RecoveryOptions{}, 1, 12 * kGiB);
  EXPECT_TRUE(retry.must_run_alone);
  EXPECT_EQ(retry.mem_bytes, 4 * kGiB);
}

TEST(Recovery, PeakMarginRuleAsksForThePeakPlusAGrowingMargin) {
  RecoveryOptions options;
  options.rule = RecoveryRule::kPeakMargin;
  options.margin_fraction = 0.25;
  JobRequest original{7, 4 * kGiB, 0.3, false, 0};
  JobRequest first = recovery_request(original, options, 1, 8 * kGiB);
  EXPECT_FALSE(first.must_run_alone);
  EXPECT_EQ(first.min_free_bytes, 10 * kGiB);
  EXPECT_EQ(first.mem_bytes, 10 * kGiB);
  EXPECT_EQ(recovery_request(original, options, 2, 8 * kGiB).min_free_bytes, 12 * kGiB);
}

TEST(Recovery, RuleNamesParse) {
  EXPECT_EQ(recovery_rule_from_string("alone"), RecoveryRule::kAlone);
  EXPECT_EQ(recovery_rule_from_string("peak-margin"), RecoveryRule::kPeakMargin);
  EXPECT_THROW(recovery_rule_from_string("pray"), std::invalid_argument);
}

}  // namespace
}  // namespace colo::sched
