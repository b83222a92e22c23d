#pragma once
// The fused forms of the zoo's models, one file each; found through
// build_fused_model (fused_classifier.h).

#include <vector>

#include "colo/data/dataset.h"
#include "colo/fuse/fused_classifier.h"
#include "colo/models/model_spec.h"

namespace colo::fuse {

// Each takes specs that share one fusion_key and builds parameters named and
// shaped as the single model's, stacked on a leading model axis.
FusedClassifierPtr build_fused_mlp(const std::vector<models::ModelSpec>& specs,
                                   const data::InputShape& shape);
FusedClassifierPtr build_fused_lenet(const std::vector<models::ModelSpec>& specs,
                                     const data::InputShape& shape);
FusedClassifierPtr build_fused_transformer(const std::vector<models::ModelSpec>& specs,
                                           const data::InputShape& shape);
FusedClassifierPtr build_fused_resnet(const std::vector<models::ModelSpec>& specs,
                                      const data::InputShape& shape);

}  // namespace colo::fuse
