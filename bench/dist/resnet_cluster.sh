# Sourced by bench/dist/run.sh and bench/dist/ps/run.sh: writes the ResNet-18
# cluster file both benchmarks use (SGD lr 0.05 momentum 0.9, 128 per worker,
# $CLUSTER_SERVERS or 2 servers, timeout 300 s, seed $CLUSTER_SEED or 1) and prints its path.
#   resnet_cluster_file PATH OUTPUT WORKERS STRATEGY DATA STEPS EPOCHS BACKEND EXTRA
resnet_cluster_file() {
  local path=$1 output=$2 workers=$3 strategy=$4 data=$5 steps=$6 epochs=$7 backend=$8 extra=$9
  cat >"$path" <<TOML
seed = ${CLUSTER_SEED:-1}
device = "cuda"
output = "$output"
epochs = $epochs
max_steps = $steps
batch_size = 128
eval_batch_size = 1024
checkpoint_every = 0
[model]
name = "resnet"
depth = 18
[data]
$data
[optimizer]
name = "sgd"
lr = 0.05
momentum = 0.9
[cluster]
workers = $workers
strategy = "$strategy"
servers = ${CLUSTER_SERVERS:-2}
backend = "$backend"
timeout_s = 300
$extra
TOML
  echo "$path"
}
