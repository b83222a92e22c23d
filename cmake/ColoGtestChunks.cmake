# Run at build time (POST_BUILD) by colo_gtest_chunks() in ColoTargets.cmake:
# lists the GoogleTest executable's tests and writes CTEST_FILE, which
# registers them with CTest in chunks of about CHUNK tests, one process per
# chunk. Each process of a LibTorch-linked test pays ~0.7 s of CPU to load
# LibTorch; one per test cost a two-core CI machine ~4 min of the suite.
#
# A chunk is whole suites of consecutive tests, or one part of a larger suite;
# it is named after them: "Suite", "Suite.part2", "First..Last". Its filter
# names each of its tests, so a failure's output names the failing test.
#
# Variables: TEST_EXECUTABLE, CTEST_FILE, CHUNK, TIMEOUT, WORKING_DIRECTORY.

execute_process(COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
                OUTPUT_VARIABLE listing ERROR_VARIABLE listing_err RESULT_VARIABLE rc TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${rc}): ${listing_err}")
endif()

# suites: ordered list of suite names; tests_<i>: that suite's full names.
set(suites "")
set(suite_count 0)
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
foreach(line IN LISTS lines)
  string(REGEX REPLACE " *#.*$" "" line "${line}")  # "  # GetParam() = ..." comments
  if(line MATCHES "^([^ ].*)\\.$")
    set(suite "${CMAKE_MATCH_1}")
    math(EXPR suite_count "${suite_count} + 1")
    set(tests_${suite_count} "")
    list(APPEND suites "${suite}")
  elseif(line MATCHES "^  ([^ ]+)$" AND suite_count GREATER 0)
    set(name "${CMAKE_MATCH_1}")
    if(NOT name MATCHES "^DISABLED_" AND NOT suite MATCHES "^DISABLED_")
      list(APPEND tests_${suite_count} "${suite}.${name}")
    endif()
  endif()
endforeach()

set(script "")
set(chunk_tests "")
set(chunk_suites "")
set(chunk_name "")

# Writes the pending chunk, if any, as one CTest test.
macro(flush_chunk)
  list(LENGTH chunk_tests pending)
  if(pending GREATER 0)
    if(NOT chunk_name)
      list(GET chunk_suites 0 first)
      list(GET chunk_suites -1 last)
      if(first STREQUAL last)
        set(chunk_name "${first}")
      else()
        set(chunk_name "${first}..${last}")
      endif()
    endif()
    list(JOIN chunk_tests ":" filter)
    string(APPEND script
      "add_test([==[${chunk_name}]==] [==[${TEST_EXECUTABLE}]==] [==[--gtest_filter=${filter}]==])\n"
      "set_tests_properties([==[${chunk_name}]==] PROPERTIES TIMEOUT ${TIMEOUT} "
      "WORKING_DIRECTORY [==[${WORKING_DIRECTORY}]==])\n")
  endif()
  set(chunk_tests "")
  set(chunk_suites "")
  set(chunk_name "")
endmacro()

set(index 0)
foreach(suite IN LISTS suites)
  math(EXPR index "${index} + 1")
  set(tests "${tests_${index}}")
  list(LENGTH tests count)
  if(count EQUAL 0)
    continue()
  endif()
  if(count GREATER CHUNK)
    flush_chunk()
    set(part 0)
    while(count GREATER 0)
      math(EXPR part "${part} + 1")
      set(take ${CHUNK})
      if(count LESS take)
        set(take ${count})
      endif()
      list(SUBLIST tests 0 ${take} chunk_tests)
      if(take LESS count)
        list(SUBLIST tests ${take} -1 tests)
      else()
        set(tests "")
      endif()
      set(chunk_name "${suite}.part${part}")
      set(chunk_suites "${suite}")
      flush_chunk()
      list(LENGTH tests count)
    endwhile()
    continue()
  endif()
  list(LENGTH chunk_tests pending)
  math(EXPR together "${pending} + ${count}")
  if(together GREATER CHUNK)
    flush_chunk()
  endif()
  list(APPEND chunk_tests ${tests})
  list(APPEND chunk_suites "${suite}")
endforeach()
flush_chunk()

file(WRITE "${CTEST_FILE}" "${script}")
