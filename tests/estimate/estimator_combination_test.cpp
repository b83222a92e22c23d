#include <gtest/gtest.h>

#include "colo/estimate/combined_estimator.h"
#include "colo/estimate/history_estimator.h"

namespace colo::estimate {
namespace {

class Fixed : public Estimator {
 public:
  Fixed(std::string name, bool known, int64_t bytes) : name_(std::move(name)), known_(known), bytes_(bytes) {}
  std::string name() const override { return name_; }
  MemoryEstimate estimate(const EstimateRequest&) override {
    if (!known_) return MemoryEstimate::unknown(name_, "cannot tell");
    MemoryEstimate e;
    e.estimator = name_, e.known = true, e.bytes = bytes_;
    return e;
  }

 private:
  std::string name_;
  bool known_;
  int64_t bytes_;
};

TEST(HistoryEstimator, TakesTheLargestPeakOfTheSameCommand) {
  HistoryEstimator history({{{"python", "train.py", "--lr", "0.1"}, 1000},
                            {{"python", "train.py", "--lr", "0.1"}, 1500},
                            {{"python", "train.py", "--lr", "0.2"}, 9000}});
  EstimateRequest request;
  request.command = {"python", "train.py", "--lr", "0.1"};
  MemoryEstimate e = history.estimate(request);
  ASSERT_TRUE(e.known);
  EXPECT_EQ(e.bytes, 1500);
  EXPECT_EQ(e.uncertainty, 500);
  request.command = {"python", "other.py"};
  EXPECT_FALSE(history.estimate(request).known);
}

TEST(CombinedEstimator, FirstKnownAnswerPlusMargin) {
  CombinedEstimator combined({std::make_shared<Fixed>("a", false, 0), std::make_shared<Fixed>("b", true, 1000),
                              std::make_shared<Fixed>("c", true, 50)},
                             0.1);
  MemoryEstimate e = combined.estimate(EstimateRequest{});
  ASSERT_TRUE(e.known);
  EXPECT_EQ(e.bytes, 1100);
  EXPECT_NE(e.reason.find("b, plus 10% margin"), std::string::npos) << e.reason;

  CombinedEstimator none({std::make_shared<Fixed>("a", false, 0)}, 0.1);
  MemoryEstimate u = none.estimate(EstimateRequest{});
  EXPECT_FALSE(u.known);
  EXPECT_NE(u.reason.find("a: cannot tell"), std::string::npos) << u.reason;
}

}  // namespace
}  // namespace colo::estimate
