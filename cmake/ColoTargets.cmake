# Helpers that give every colo target the same warnings, unity batches and,
# for targets that use LibTorch, one shared precompiled header (LibTorch
# headers cost ~25 s per translation unit; the shared PCH brings that to ~8 s).

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

# Unity builds: a target's sources are compiled in batches, so that the
# headers they share (LibTorch's above all, but also fmt, spdlog,
# nlohmann::json, toml++, GoogleTest) are parsed, and their templates
# instantiated, once per batch instead of once per file: on two cores a fresh
# build's compile work fell by about a third when the targets without LibTorch
# were batched too. Off for quicker incremental rebuilds of one file. A
# LibTorch target pays ~8 s per batch for the precompiled header alone
# (loading it and instantiating the templates it leaves pending), so its
# batches are larger: one per library.
option(COLO_UNITY_BUILD "Compile targets in batches (unity build)" ON)
set(COLO_UNITY_BATCH 32 CACHE STRING "sources per unity batch, LibTorch targets")
set(COLO_PLAIN_UNITY_BATCH 8 CACHE STRING "sources per unity batch, targets without LibTorch")

# Batches the sources of a LibTorch target when COLO_UNITY_BUILD is on.
function(colo_torch_unity name)
  if(COLO_UNITY_BUILD)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${COLO_UNITY_BATCH})
  endif()
endfunction()

# Batches the sources of a target without LibTorch when COLO_UNITY_BUILD is on.
function(colo_plain_unity name)
  if(COLO_UNITY_BUILD)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${COLO_PLAIN_UNITY_BATCH})
  endif()
endfunction()

# The shared LibTorch precompiled header, for every target that links
# colo_torch (REUSE_FROM colo_torch_pch). It names only headers every
# LibTorch since 1.x has; where one is missing (or COLO_PCH is off) no target
# uses a precompiled header and each translation unit parses LibTorch itself.
option(COLO_PCH "Share one precompiled LibTorch header between LibTorch targets" ON)
set(COLO_TORCH_PCH_HEADERS ATen/ATen.h torch/nn.h torch/optim.h torch/serialize.h)
if(COLO_PCH)
  foreach(header IN LISTS COLO_TORCH_PCH_HEADERS)
    unset(_colo_pch_found CACHE)
    find_file(_colo_pch_found ${header} PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
    if(NOT _colo_pch_found)
      message(STATUS "colo: LibTorch has no ${header}; building without the precompiled header")
      set(COLO_PCH OFF)
    endif()
    unset(_colo_pch_found CACHE)
  endforeach()
endif()
if(NOT COLO_PCH)
  # Also turns off the REUSE_FROM of targets outside these helpers (bench/).
  set(CMAKE_DISABLE_PRECOMPILE_HEADERS ON)
endif()
add_library(colo_torch_pch STATIC "${CMAKE_SOURCE_DIR}/cmake/torch_pch.cpp")
target_link_libraries(colo_torch_pch PUBLIC colo_torch)
target_compile_options(colo_torch_pch PRIVATE ${COLO_WARNINGS})
list(TRANSFORM COLO_TORCH_PCH_HEADERS PREPEND "<" OUTPUT_VARIABLE _colo_pch_headers)
list(TRANSFORM _colo_pch_headers APPEND ">")
target_precompile_headers(colo_torch_pch PRIVATE ${_colo_pch_headers})

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
  else()
    colo_plain_unity(${name})
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
  else()
    colo_plain_unity(${name})
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
