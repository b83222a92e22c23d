#include "colo/sched/oom.h"

#include <gtest/gtest.h>

namespace colo::sched {
namespace {

// Tails of real logs of the kinds a training job prints when GPU memory runs out.
const char* kPyTorchOom =
    "Traceback (most recent call last):\n  File \"train.py\", line 41, in <module>\n"
    "    loss.backward()\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
    "GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free.";
const char* kCublasOom =
    "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`";
const char* kRuntimeOom = "terminate called after throwing an instance of 'c10::Error'\n"
                          "  what():  CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported";
const char* kCudaRuntime = "cudaMalloc failed: cudaErrorMemoryAllocation (out of memory)";
const char* kPlainFailure = "Traceback (most recent call last):\nValueError: bad learning rate";

TEST(OomClassification, RecognisesOutOfMemoryDeaths) {
  EXPECT_EQ(classify_exit(1, kPyTorchOom), ExitKind::kOutOfMemory);
  EXPECT_EQ(classify_exit(1, kCublasOom), ExitKind::kOutOfMemory);
  EXPECT_EQ(classify_exit(134, kRuntimeOom), ExitKind::kOutOfMemory);
  EXPECT_EQ(classify_exit(2, kCudaRuntime), ExitKind::kOutOfMemory);
}

TEST(OomClassification, OtherFailuresStayFailures) {
  EXPECT_EQ(classify_exit(1, kPlainFailure), ExitKind::kFailure);
  EXPECT_EQ(classify_exit(137, ""), ExitKind::kFailure);
}

TEST(OomClassification, SuccessIsSuccessWhateverTheLogSays) {
  EXPECT_EQ(classify_exit(0, "recovered from CUDA out of memory by halving the batch"), ExitKind::kSuccess);
}

}  // namespace
}  // namespace colo::sched
