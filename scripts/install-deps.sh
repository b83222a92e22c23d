#!/usr/bin/env bash
# Installs, with apt, the Debian packages colo builds and runs with.
# Idempotent: prints nothing and changes nothing when all are present.
# On a machine whose python3 has a CUDA build of PyTorch, LibTorch comes
# from that wheel instead and libtorch-dev is not needed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev zlib1g-dev
  libsqlite3-dev libtomlplusplus-dev nlohmann-json3-dev libcli11-dev
  libspdlog-dev libfmt-dev libcpp-httplib-dev
  libzmq3-dev cppzmq-dev libjpeg62-turbo-dev
  dataset-fashion-mnist python3-matplotlib
  libjs-chart.js chromium
  python3-pytest pybind11-dev python3-dev
  slurmctld slurmd slurm-client munge
)

has_cuda_torch() {
  python3 -c 'import torch, sys; sys.exit(0 if torch.version.cuda else 1)' >/dev/null 2>&1
}
if ! has_cuda_torch; then
  # OpenBLAS: Debian's LibTorch otherwise falls back to the reference BLAS (25x slower).
  packages+=(libtorch-dev libgloo-dev libopenblas0-pthread python3-torch python3-torchvision)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done" >&2
