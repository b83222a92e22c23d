#include "colo/fuse/cuda/conv_plan.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace colo::fuse::cuda {
namespace {

GroupedConvShape shape(int64_t batch, int64_t groups, int64_t in, int64_t out, int64_t size, int64_t kernel,
                       int64_t padding) {
  GroupedConvShape s;
  s.batch = batch, s.groups = groups, s.in_per_group = in, s.out_per_group = out;
  s.height = s.width = size, s.kernel = kernel, s.padding = padding;
  return s;
}

// The invariants the kernels rely on: tiles cover every output, row reads
// stay inside the padded tile, shared memory and threads within limits.
void expect_direct_plan_sound(const DirectConvPlan& p) {
  EXPECT_GE(p.co_blocks * p.co_tile, p.cout);
  EXPECT_LT((p.co_blocks - 1) * p.co_tile, p.cout) << "no all-padding channel tile";
  EXPECT_GE(p.col_tiles * p.ox_tile, p.wo);
  EXPECT_LT((p.col_tiles - 1) * p.ox_tile, p.wo) << "no all-padding column tile";
  EXPECT_GE(p.segment(), p.ox_tile + p.kernel - 1) << "a tile's row segment holds every column it reads";
  EXPECT_EQ(p.segment() % 4, 0) << "float4 loads";
  EXPECT_EQ(p.weight_floats() % 4, 0) << "the input tiles start 16-byte aligned";
  EXPECT_EQ(p.cout_pad() % p.co_tile, 0);
  EXPECT_EQ(p.hp, p.ho + p.kernel - 1);
  EXPECT_GE(p.samples, 1);
  EXPECT_GE(p.ci_chunk, 1);
  EXPECT_LE(p.ci_chunk, p.cin);
  EXPECT_EQ(p.row() % 8, 4) << "adjacent rows an odd number of float4s apart";
  EXPECT_LE(p.shared_floats(), kSharedFloats);
  EXPECT_LE(p.threads, kBlockThreads);
  EXPECT_EQ(p.threads % 32, 0);
  EXPECT_GE(p.threads, p.row()) << "a thread per float of a row";
  EXPECT_LE(p.cout_pad(), 32) << "a thread per padded output channel";
}

void expect_weight_grad_plan_sound(const WeightGradPlan& p) {
  EXPECT_GE(p.chunks * p.per_chunk, p.batch);
  EXPECT_LT((p.chunks - 1) * p.per_chunk, p.batch) << "every chunk has a sample";
  EXPECT_GE(p.item_blocks * kBlockThreads, p.items());
  EXPECT_GE(p.col_tiles * p.ox_tile, p.wo);
  EXPECT_GE(p.dy_segment(), p.ox_tile);
  EXPECT_EQ(p.dy_segment() % 4, 0);
  EXPECT_EQ(p.x_floats() % 4, 0) << "the dy tiles start 16-byte aligned";
  EXPECT_GE(p.stage, 1);
  EXPECT_LE(p.shared_floats(), kSharedFloats);
  EXPECT_GE(p.threads, std::max(p.x_row(), p.dy_row()));
  EXPECT_LE(p.threads, kBlockThreads);
  EXPECT_GE(p.row_splits, 1);
  EXPECT_LE(p.row_splits, p.ho);
}

TEST(ConvPlan, LenetSecondConvolutionTilesWithoutWaste) {
  // 32 LeNets: 6 -> 16 channels, 5x5 on 14x14, batch 128.
  GroupedConvPlans plans = plan_grouped_conv(shape(128, 32, 6, 16, 14, 5, 0));
  ASSERT_TRUE(plans.ok);
  EXPECT_EQ(plans.forward.co_tile, 4);
  EXPECT_EQ(plans.forward.ox_tile, 10);  // one tile covers the 10 output columns
  EXPECT_EQ(plans.forward.col_tiles, 1);
  EXPECT_EQ(plans.forward.segment(), 16);  // 14 columns read, loaded as four float4s
  EXPECT_EQ(plans.forward.ho, 10);
  // 4 channel tiles x 10 rows = 40 register tiles per sample: 3 samples give
  // 120 of 128 threads one each; 4 of the 6 channels fit in 24 KB at once.
  EXPECT_EQ(plans.forward.samples, 3);
  EXPECT_EQ(plans.forward.threads, 128);
  EXPECT_EQ(plans.forward.ci_chunk, 4);
  // The input gradient is a full convolution of dy (padding 4) with the
  // transposed kernel: 16 -> 6 channels, output 14x14.
  EXPECT_TRUE(plans.input_grad.transposed);
  EXPECT_EQ(plans.input_grad.cin, 16);
  EXPECT_EQ(plans.input_grad.cout, 6);
  EXPECT_EQ(plans.input_grad.pad, 4);
  EXPECT_EQ(plans.input_grad.ho, 14);
  EXPECT_EQ(plans.input_grad.wo, 14);
  EXPECT_EQ(plans.input_grad.co_tile, 2);  // 6 = 3 x 2 channels, no padding
  EXPECT_EQ(plans.input_grad.ox_tile, 14);
  EXPECT_EQ(plans.input_grad.samples, 3);
  EXPECT_EQ(plans.input_grad.ci_chunk, 3);  // 18 rows x 20 floats per channel and sample
  EXPECT_EQ(plans.weight_grad.items(), 4 * 6 * 5);
  EXPECT_EQ(plans.weight_grad.row_splits, 1);
  EXPECT_EQ(plans.weight_grad.partial_slices(), 16);
  EXPECT_EQ(grouped_conv_weight_grad_slices(shape(128, 32, 6, 16, 14, 5, 0)), 16);
}

TEST(ConvPlan, EverySupportedShapeGetsSoundPlans) {
  int supported = 0;
  for (int64_t batch : {1, 3, 128, 257}) {
    for (int64_t in : {1, 3, 6, 16}) {
      for (int64_t out : {1, 2, 6, 16, 32}) {
        for (int64_t size : {4, 7, 14, 28, 32}) {
          for (int64_t kernel : {3, 5}) {
            for (int64_t padding = 0; padding < kernel; ++padding) {
              GroupedConvShape s = shape(batch, 4, in, out, size, kernel, padding);
              if (s.out_height() < 1) continue;
              GroupedConvPlans plans = plan_grouped_conv(s);
              if (!plans.ok) continue;
              ++supported;
              SCOPED_TRACE(::testing::Message() << "batch " << batch << " in " << in << " out " << out << " size "
                                              << size << " k " << kernel << " pad " << padding);
              expect_direct_plan_sound(plans.forward);
              expect_direct_plan_sound(plans.input_grad);
              EXPECT_EQ(plans.input_grad.ho, size) << "the input gradient has the input's size";
              expect_weight_grad_plan_sound(plans.weight_grad);
              if (::testing::Test::HasFailure()) return;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(supported, 1000) << "most small shapes are supported";
}

TEST(ConvPlan, RejectsShapesTheKernelsCannotTake) {
  EXPECT_FALSE(plan_grouped_conv(shape(8, 4, 6, 16, 14, 7, 0)).ok) << "7x7";
  EXPECT_FALSE(plan_grouped_conv(shape(8, 4, 6, 16, 14, 5, 5)).ok) << "padding as large as the kernel";
  EXPECT_FALSE(plan_grouped_conv(shape(8, 4, 6, 16, 3, 5, 0)).ok) << "no output";
  EXPECT_FALSE(plan_grouped_conv(shape(8, 4, 16, 32, 12, 5, 0)).ok) << "51 KB of weights per group";
  EXPECT_FALSE(plan_grouped_conv(shape(8, 4, 16, 16, 64, 3, 1)).ok) << "a 66x66x16 tile is 279 KB";
  EXPECT_FALSE(grouped_conv_shape_supported(shape(0, 4, 6, 16, 14, 5, 0))) << "empty batch";
}

}  // namespace
}  // namespace colo::fuse::cuda
