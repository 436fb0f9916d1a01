# Replaces doctest-dev's doctestAddTests.cmake, the build-time half of
# doctest_discover_tests() (CMakeLists.txt points _DOCTEST_DISCOVER_TESTS_SCRIPT
# here). It reads the same -D variables, but keeps a ';' in a test case name:
# the original splits the listing into a CMake list, so "a; b" became two tests
# ("a", " b") whose filters match nothing (tests/main.cpp fails those runs).
# Also refuses duplicate names, which ctest would run twice or not at all.
# Ignored options: ADD_LABELS and JUNIT_OUTPUT_DIR (we use neither). And runs
# each case of the test suite "serial" on a server of its own (CMakeLists.txt says why).
cmake_policy(VERSION 3.25)  # a -P script starts with no policies set
if(NOT EXISTS "${TEST_EXECUTABLE}")
  message(FATAL_ERROR "Specified test executable '${TEST_EXECUTABLE}' does not exist")
endif()
set(spec)
if(TEST_SPEC)
  set(spec "--test-case=${TEST_SPEC}")
endif()
execute_process(
  COMMAND ${TEST_EXECUTOR} "${TEST_EXECUTABLE}" ${spec} --list-test-cases
  OUTPUT_VARIABLE output RESULT_VARIABLE result WORKING_DIRECTORY "${TEST_WORKING_DIR}")
if(NOT result EQUAL 0)
  message(FATAL_ERROR "Error running test executable '${TEST_EXECUTABLE}':\n  Result: ${result}\n  Output: ${output}\n")
endif()

# A placeholder no name contains stands for ';' while the listing is a CMake list.
# The cases of the suite "serial" restart their server: each gets a throwaway one of its
# own (scripts/with_postgres.sh), so the PostgreSQL tests on the shared one go on beside it.
execute_process(
  COMMAND ${TEST_EXECUTOR} "${TEST_EXECUTABLE}" ${spec} --test-suite=serial --list-test-cases
  OUTPUT_VARIABLE serial_output RESULT_VARIABLE result WORKING_DIRECTORY "${TEST_WORKING_DIR}")
if(NOT result EQUAL 0)
  message(FATAL_ERROR "Error running test executable '${TEST_EXECUTABLE}':\n  Result: ${result}\n  Output: ${serial_output}\n")
endif()

set(with_postgres "${CMAKE_CURRENT_LIST_DIR}/../scripts/with_postgres.sh")
set(semicolon "<outbox-semicolon>")
string(REPLACE ";" "${semicolon}" output "${output}")
string(REPLACE "\n" ";" lines "${output}")
string(REPLACE ";" "${semicolon}" serial_output "${serial_output}")
string(REPLACE "\n" ";" serial_lines "${serial_output}")

# One argument as CMake source: a bracket argument unless it is plain.
function(quoted out value)
  if(value MATCHES "[^-./:a-zA-Z0-9_]")
    set(${out} "[==[${value}]==]" PARENT_SCOPE)
  else()
    set(${out} "${value}" PARENT_SCOPE)
  endif()
endfunction()

set(script "")
set(names "")
set(extra "")
foreach(arg IN LISTS TEST_EXTRA_ARGS)
  quoted(q "${arg}")
  string(APPEND extra " ${q}")
endforeach()
# A lock "name*N" stands for N lanes, name_0 ... name_N-1, which the cases take
# in turn (<lane> in `properties`); the cases of the suite "serial" take the lock
# "serial" instead (serial_properties).
set(properties "")
set(serial_properties "")
set(lanes 1)
set(after_lock FALSE)
foreach(p IN LISTS TEST_PROPERTIES)
  quoted(q "${p}")
  if(after_lock AND p MATCHES "^(.+)\\*([0-9]+)$")
    set(q "${CMAKE_MATCH_1}_<lane>")
    set(lanes ${CMAKE_MATCH_2})
  endif()
  string(APPEND properties " ${q}")
  if(after_lock)
    set(q serial)
  endif()
  string(APPEND serial_properties " ${q}")
  set(after_lock FALSE)
  if(p STREQUAL "RESOURCE_LOCK")
    set(after_lock TRUE)
  endif()
endforeach()
set(case_index 0)
foreach(line IN LISTS lines)
  if(line STREQUAL "" OR line MATCHES "^===+$" OR line MATCHES "^\\[doctest\\] ")
    continue()
  endif()
  string(REPLACE "${semicolon}" ";" test "${line}")
  set(name "${TEST_PREFIX}${test}${TEST_SUFFIX}")
  if("${line}" IN_LIST names)
    message(FATAL_ERROR "${TEST_TARGET}: two test cases are named '${test}'; ctest needs unique names")
  endif()
  list(APPEND names "${line}")
  string(REPLACE "," "\\," filter "${test}")  # doctest filters are comma-separated
  quoted(qname "${name}")
  quoted(qfilter "--test-case=${filter}")
  set(own_server "")
  if("${line}" IN_LIST serial_lines)
    set(own_server "[==[${with_postgres}]==] ")
  endif()
  string(APPEND script "add_test(${qname} ${own_server}${TEST_EXECUTOR} [==[${TEST_EXECUTABLE}]==] ${qfilter}${extra})\n")
  if("${line}" IN_LIST serial_lines)
    # A lane of their own (their server is their own), one at a time; a high COST
    # starts these longest cases first, not last with the cores idle around them.
    string(APPEND script "set_tests_properties(${qname} PROPERTIES WORKING_DIRECTORY [==[${TEST_WORKING_DIR}]==]${serial_properties} COST 1000)\n")
  else()
    math(EXPR lane "${case_index} % ${lanes}")
    math(EXPR case_index "${case_index} + 1")
    string(REPLACE "<lane>" "${lane}" lane_properties "${properties}")
    string(APPEND script "set_tests_properties(${qname} PROPERTIES WORKING_DIRECTORY [==[${TEST_WORKING_DIR}]==]${lane_properties})\n")
  endif()
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
