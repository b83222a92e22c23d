#pragma once
// Host-side helpers shared by the grouped-convolution kernel files: picking
// the template instance for a plan's kernel size and register tile, and
// turning a failed launch into an exception.

#include <stdexcept>
#include <string>
#include <type_traits>

#include <cuda_runtime.h>

namespace colo::fuse::cuda {

template <int N>
using Int = std::integral_constant<int, N>;

// Calls launch(Int<K>, Int<CO>, Int<OX>) for the kernel size and the tile
// sizes of conv_plan.h's kChannelTiles and kColumnTiles.
template <typename Launch>
void dispatch_tiles(int kernel, int co_tile, int ox_tile, Launch&& launch) {
  auto by_column = [&](auto k, auto co) {
    switch (ox_tile) {
      case 4: return launch(k, co, Int<4>{});
      case 6: return launch(k, co, Int<6>{});
      case 8: return launch(k, co, Int<8>{});
      case 10: return launch(k, co, Int<10>{});
      case 12: return launch(k, co, Int<12>{});
      case 14: return launch(k, co, Int<14>{});
      case 16: return launch(k, co, Int<16>{});
    }
    throw std::logic_error("grouped conv: no kernel for a column tile of " + std::to_string(ox_tile));
  };
  auto by_channel = [&](auto k) {
    switch (co_tile) {
      case 4: return by_column(k, Int<4>{});
      case 2: return by_column(k, Int<2>{});
    }
    throw std::logic_error("grouped conv: no kernel for a channel tile of " + std::to_string(co_tile));
  };
  if (kernel == 3) return by_channel(Int<3>{});
  if (kernel == 5) return by_channel(Int<5>{});
  throw std::logic_error("grouped conv: no kernel for size " + std::to_string(kernel));
}

// Throws with CUDA's message if the last launch failed.
inline void check_launch(const char* what) {
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(error));
}

}  // namespace colo::fuse::cuda
