# Helpers that give every colo target the same warnings and, for targets that
# use LibTorch, one shared precompiled header (LibTorch headers cost ~30 s per
# translation unit on two cores; the shared PCH brings that to a few seconds).

# Warnings are errors in colo's own code (LibTorch and the other libraries
# are system includes), so a new warning fails the build and CI.
option(COLO_WERROR "Treat warnings in colo's code as errors" ON)
set(COLO_WARNINGS -Wall -Wextra)
if(COLO_WERROR)
  list(APPEND COLO_WARNINGS -Werror)
endif()
# Every colo target also compiles position-independent: the static layer
# libraries go into the Python module colo._core, and the one precompiled
# header is only valid where it is used with the flags it was built with.
list(APPEND COLO_WARNINGS -fPIC)

# Unity builds for LibTorch targets: on two cores every LibTorch translation
# unit pays ~10 s just to load the precompiled header, so a library's sources
# are compiled in batches that load it once. Off for quicker incremental
# rebuilds of one file.
option(COLO_UNITY_BUILD "Compile LibTorch targets in batches (unity build)" ON)
set(COLO_UNITY_BATCH 16 CACHE STRING "sources per unity batch")

# Batches the sources of a LibTorch target when COLO_UNITY_BUILD is on.
function(colo_torch_unity name)
  if(COLO_UNITY_BUILD)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${COLO_UNITY_BATCH})
  endif()
endfunction()

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
    colo_torch_unity(${name})
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
    colo_torch_unity(${name})
  endif()
  colo_gtest_chunks(${name} 600)
endfunction()

# Registers the tests of GoogleTest executable `target` with CTest in chunks
# of about COLO_TEST_CHUNK tests, one process each (cmake/ColoGtestChunks.cmake
# says why), each chunk limited to `timeout` seconds. The list is made after
# every build of the target.
set(COLO_TEST_CHUNK 8 CACHE STRING "GoogleTest tests per CTest process")
function(colo_gtest_chunks target timeout)
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_chunks.cmake")
  # Until the target is built there is no list: CTest then shows one failing
  # test saying so instead of stopping at a missing file.
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  file(WRITE "${include_file}"
    "if(EXISTS [==[${ctest_file}]==])\n"
    "  include([==[${ctest_file}]==])\n"
    "else()\n"
    "  add_test([==[${target}_NOT_BUILT]==] [==[${target}_NOT_BUILT]==])\n"
    "endif()\n")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>" -D "CTEST_FILE=${ctest_file}"
            -D "CHUNK=${COLO_TEST_CHUNK}" -D "TIMEOUT=${timeout}" -D "WORKING_DIRECTORY=${CMAKE_CURRENT_BINARY_DIR}"
            -P "${CMAKE_SOURCE_DIR}/cmake/ColoGtestChunks.cmake"
    BYPRODUCTS "${ctest_file}"
    VERBATIM)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
