#include "colo/train/train_spec.h"

namespace colo::train {

TrainSpec parse_train_spec(const std::string& path) {
  SpecTable root = SpecTable::root(path);
  TrainSpec spec = parse_train_spec_fields(root);
  root.reject_unknown();
  return spec;
}

TrainSpec parse_train_spec_fields(const SpecTable& root) {
  TrainSpec spec;
  spec.source = root.source();
  spec.seed = static_cast<uint64_t>(root.integer_or("seed", 0, 0));
  spec.shuffle_seed = root.integer_or("shuffle_seed", -1, -1);
  spec.device = root.string_or("device", spec.device);
  spec.output = root.string_or("output", spec.output);
  if (spec.output.empty()) root.fail("output", "expected a directory path");
  spec.epochs = root.integer_or("epochs", spec.epochs, 1, 100000);
  spec.max_steps = root.integer_or("max_steps", spec.max_steps, 0);
  spec.batch_size = root.integer_or("batch_size", spec.batch_size, 1, 1 << 24);
  spec.eval_batch_size = root.integer_or("eval_batch_size", spec.eval_batch_size, 1, 1 << 24);
  spec.checkpoint_every = root.integer_or("checkpoint_every", spec.checkpoint_every, 0);

  auto model = root.table("model");
  if (!model) root.fail("model", "missing required table [model]");
  spec.model = models::parse_model_spec(*model);
  auto data = root.table("data");
  if (!data) root.fail("data", "missing required table [data]");
  spec.data = data::parse_data_spec(*data);
  auto optimizer = root.table("optimizer");
  spec.optimizer = parse_optimizer_spec(optimizer ? &*optimizer : nullptr);
  auto schedule = root.table("schedule");
  spec.schedule = parse_schedule_spec(schedule ? &*schedule : nullptr);
  return spec;
}

const char* train_spec_reference() {
  return R"(Training spec (TOML). Every field, with its default:

  seed = 0                 model initialisation, shuffling, augmentation, dropout
  shuffle_seed = -1        batch order and augmentation only (-1 = seed); colo sweep
                           writes it so that one model of an array can be retrained alone
  device = "auto"          auto (first CUDA device if any, else cpu) | cpu | cuda | cuda:N
  output = "runs/train"    directory for metrics.jsonl, checkpoint.pt, spec.toml
  epochs = 1               passes over the training split
  max_steps = 0            optimiser-step budget (0 = none); stops mid-epoch
  batch_size = 128         training batch
  eval_batch_size = 1024   test-split batch
  checkpoint_every = 1     epochs between checkpoints (0 = never)

  [model]                  required
  name                     mlp | lenet | resnet | transformer (required)
  widths = [256, 128]      mlp: hidden widths
  activation = "relu"      mlp, lenet: relu | gelu | tanh
  dropout = 0.0            mlp, transformer
  depth = 18               resnet: 18 | 34 (basic blocks) | 50 (bottleneck)
  width = 1.0              resnet: channel multiplier
  layers = 2               transformer: encoder blocks
  d_model = 64             transformer: embedding width
  heads = 4                transformer: attention heads (divides d_model)
  ff_dim = 0               transformer: feed-forward width (0 = 4*d_model)
  patch_size = 4           transformer over images: square patch side

  [data]                   required
  name = "fashion-mnist"   fashion-mnist | mnist | cifar10 | synthetic
  path                     fashion-mnist: /usr/share/datasets/fashion-mnist; mnist, cifar10: required
  shape = [3, 32, 32]      synthetic: one sample's shape ([length] for tokens)
  classes = 10             synthetic
  train_size = 10000       synthetic
  test_size = 2000         synthetic
  tokens = false           synthetic: integer token sequences instead of features
  vocab = 256              synthetic tokens: vocabulary size
  seed = 0                 synthetic: generator seed
  train_limit = 0          use only the first N training samples (0 = all)
  test_limit = 0           use only the first N test samples (0 = all)
  normalize = true         per-channel mean/std of the training split
  augment = false          random crop (padding 4) + horizontal flip, images only
  pin_memory = true        page-locked batches when training on CUDA
  prefetch = 2             batches prepared ahead on a background thread
  on_device = false        keep the whole data set on the training device

  [optimizer]              optional
  name = "sgd"             sgd | adam | adamw
  lr = 0.1 (sgd), 0.001    learning rate
  momentum = 0.0           sgd
  nesterov = false         sgd
  weight_decay = 0.0       (adamw: 0.01, decoupled)
  betas = [0.9, 0.999]     adam, adamw
  eps = 1e-8               adam, adamw

  [schedule]               optional
  name = "constant"        constant | step | cosine
  warmup_epochs = 0.0      linear warm-up (fractions allowed)
  step_epochs = 30.0       step: decay period
  gamma = 0.1              step: decay factor
  min_lr = 0.0             cosine: final rate
)";
}

}  // namespace colo::train
