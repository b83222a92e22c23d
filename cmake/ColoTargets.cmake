# Helpers that give every colo target the same warnings and, for targets that
# use LibTorch, one shared precompiled header (LibTorch headers cost ~30 s per
# translation unit on two cores; the shared PCH brings that to a few seconds).

set(COLO_WARNINGS -Wall -Wextra)

add_library(colo_torch_pch STATIC "${CMAKE_SOURCE_DIR}/cmake/torch_pch.cpp")
target_link_libraries(colo_torch_pch PUBLIC colo_torch)
target_compile_options(colo_torch_pch PRIVATE ${COLO_WARNINGS})
target_precompile_headers(colo_torch_pch PRIVATE
  <ATen/ATen.h> <torch/nn.h> <torch/optim.h> <torch/serialize.h>)

# colo_library(NAME SOURCES ... [DEPS ...] [TORCH])
function(colo_library name)
  cmake_parse_arguments(ARG "TORCH" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC "${CMAKE_SOURCE_DIR}/src")
  target_compile_options(${name} PRIVATE ${COLO_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  if(ARG_TORCH)
    target_link_libraries(${name} PUBLIC colo_torch)
    target_precompile_headers(${name} REUSE_FROM colo_torch_pch)
  endif()
endfunction()

# colo_test(NAME SOURCES ... DEPS ... [TORCH]): one GoogleTest executable,
# each of its tests registered with CTest.
function(colo_test name)
  cmake_parse_arguments(ARG "TORCH" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${COLO_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    COLO_SOURCE_DIR="${CMAKE_SOURCE_DIR}" COLO_BINARY_DIR="${CMAKE_BINARY_DIR}")
  if(ARG_TORCH)
    target_link_libraries(${name} PRIVATE colo_torch)
    target_precompile_headers(${name} REUSE_FROM colo_torch_pch)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
endfunction()
