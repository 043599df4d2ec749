# One way to declare a library, its unit tests and its benchmarks, used by every folder.
#
#   snsim_add_library(<name> SOURCES a.cpp ... [DEPS lib ...] [TESTS a_test.cpp ...] [BENCH a_bench.cpp ...])
#
# Tests of every library link into one `snsim-unit-tests` binary; each doctest TEST_CASE becomes its own
# CTest test and so its own process (SimGrid 3.32 allows one simulation per process).
# Benchmarks link into one `snsim-bench` binary.

# Seconds one test case may take; the asan preset raises it (sanitizers and SimGrid's thread contexts are slower).
set(SNSIM_TEST_TIMEOUT 120 CACHE STRING "CTest timeout of each test case, in seconds")

set(SNSIM_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast)

function(snsim_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;TESTS;BENCH" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  target_compile_options(${name} PRIVATE ${SNSIM_WARNINGS})
  foreach(t IN LISTS ARG_TESTS)
    set_property(GLOBAL APPEND PROPERTY SNSIM_TEST_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/${t})
  endforeach()
  if(ARG_TESTS)
    set_property(GLOBAL APPEND PROPERTY SNSIM_TEST_LIBS ${name})
  endif()
  foreach(b IN LISTS ARG_BENCH)
    set_property(GLOBAL APPEND PROPERTY SNSIM_BENCH_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/${b})
  endforeach()
  if(ARG_BENCH)
    set_property(GLOBAL APPEND PROPERTY SNSIM_BENCH_LIBS ${name})
  endif()
endfunction()

# Extra test sources that are not part of a library (e.g. tests that run the `snsim` executable).
function(snsim_add_tests)
  foreach(t IN LISTS ARGN)
    set_property(GLOBAL APPEND PROPERTY SNSIM_TEST_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/${t})
  endforeach()
endfunction()

function(snsim_finish_tests)
  get_property(sources GLOBAL PROPERTY SNSIM_TEST_SOURCES)
  get_property(libs GLOBAL PROPERTY SNSIM_TEST_LIBS)
  add_executable(snsim-unit-tests ${PROJECT_SOURCE_DIR}/cmake/test_main.cpp ${sources})
  target_link_libraries(snsim-unit-tests PRIVATE ${libs} doctest::doctest)
  # The tests' own code is assertions around library calls: -O1 compiles it up to 40 % sooner (doctest's macros are
  # costly to optimize) while the libraries under test keep the build's optimization.
  target_compile_options(snsim-unit-tests PRIVATE ${SNSIM_WARNINGS} $<$<CONFIG:Release>:-O1>)
  target_compile_definitions(snsim-unit-tests PRIVATE
    SNSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}" SNSIM_BINARY="$<TARGET_FILE:snsim>")
  add_dependencies(snsim-unit-tests snsim)
  doctest_discover_tests(snsim-unit-tests WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                         PROPERTIES TIMEOUT ${SNSIM_TEST_TIMEOUT}
                         # A name that CTest or doctest mangles matches no test case: that must not pass.
                         FAIL_REGULAR_EXPRESSION "test cases: *0 \\|")

  get_property(bsources GLOBAL PROPERTY SNSIM_BENCH_SOURCES)
  get_property(blibs GLOBAL PROPERTY SNSIM_BENCH_LIBS)
  if(bsources)
    add_executable(snsim-bench ${bsources})
    target_link_libraries(snsim-bench PRIVATE ${blibs} benchmark::benchmark_main)
  endif()
endfunction()
