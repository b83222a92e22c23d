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
