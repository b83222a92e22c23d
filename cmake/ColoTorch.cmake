# Finds LibTorch. A python3 with a CUDA build of PyTorch wins (its LibTorch is
# used and COLO_HAS_CUDA=1); otherwise Debian's libtorch-dev (CPU, 1.13).
set(COLO_HAS_CUDA 0)
if(NOT COLO_FORCE_CPU_TORCH)
  execute_process(
    COMMAND python3 -c "import torch,sys; sys.stdout.write(torch.utils.cmake_prefix_path if torch.version.cuda else '')"
    OUTPUT_VARIABLE _colo_torch_prefix ERROR_QUIET RESULT_VARIABLE _colo_torch_rc)
  if(_colo_torch_rc EQUAL 0 AND _colo_torch_prefix)
    list(PREPEND CMAKE_PREFIX_PATH "${_colo_torch_prefix}")
    set(COLO_HAS_CUDA 1)
  endif()
endif()

if(COLO_HAS_CUDA AND NOT CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
if(COLO_HAS_CUDA AND NOT TORCH_CUDA_ARCH_LIST)
  set(TORCH_CUDA_ARCH_LIST "9.0")
endif()
find_package(Torch REQUIRED)
message(STATUS "colo: LibTorch ${Torch_VERSION} from ${Torch_DIR}, COLO_HAS_CUDA=${COLO_HAS_CUDA}, flags ${TORCH_CXX_FLAGS}")

# One interface target carrying LibTorch and our CUDA switch.
# (colo avoids std::filesystem: see core/files.h.)
add_library(colo_torch INTERFACE)
target_link_libraries(colo_torch INTERFACE ${TORCH_LIBRARIES})
target_compile_definitions(colo_torch INTERFACE COLO_HAS_CUDA=${COLO_HAS_CUDA})
if(TORCH_CXX_FLAGS)
  separate_arguments(_colo_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(colo_torch INTERFACE ${_colo_torch_flags})
endif()

# c10d backends this LibTorch can give colo's dist/ layer: Gloo needs gloo's
# headers (Debian's libgloo-dev; the PyTorch wheel ships none), NCCL a CUDA
# build and nccl.h. Each is tried by compiling its c10d header.
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_INCLUDES ${TORCH_INCLUDE_DIRS})
if(EXISTS "${CMAKE_SOURCE_DIR}/.deps/root/usr/include")
  list(APPEND CMAKE_REQUIRED_INCLUDES "${CMAKE_SOURCE_DIR}/.deps/root/usr/include")
endif()
set(CMAKE_REQUIRED_FLAGS "-std=c++17 ${TORCH_CXX_FLAGS}")
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)  # compile only: the headers are the question
check_cxx_source_compiles("
#define USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
int main() { return 0; }" COLO_HAS_GLOO)
set(COLO_HAS_NCCL 0)
if(COLO_HAS_CUDA)
  # Torch's config found the toolkit; its headers (cuda.h) are not in TORCH_INCLUDE_DIRS.
  list(APPEND CMAKE_REQUIRED_INCLUDES ${CUDAToolkit_INCLUDE_DIRS} ${CUDA_INCLUDE_DIRS})
  check_cxx_source_compiles("
#define USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
int main() { return 0; }" COLO_HAS_NCCL_HEADERS)
  if(COLO_HAS_NCCL_HEADERS)
    set(COLO_HAS_NCCL 1)
  endif()
endif()
if(NOT COLO_HAS_GLOO)
  set(COLO_HAS_GLOO 0)
else()
  set(COLO_HAS_GLOO 1)
endif()
unset(CMAKE_TRY_COMPILE_TARGET_TYPE)
unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_FLAGS)
message(STATUS "colo: c10d Gloo=${COLO_HAS_GLOO} NCCL=${COLO_HAS_NCCL}")
