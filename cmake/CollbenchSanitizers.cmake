# SPDX-License-Identifier: Apache-2.0
# Sanitizer and fuzzing builds (tests/fuzz/README.md). Both apply to every
# target of the build tree, so the libraries a fuzz target or a unit test
# links are instrumented as the test itself is. Use a build tree of its own:
# the main build (scripts/test's `build`) sets neither option.
#
#   COLLBENCH_SANITIZE=address,undefined   -fsanitize=... on every target;
#                                          UBSan aborts on the first report.
#   COLLBENCH_FUZZ=ON                      clang only: the libFuzzer targets in
#                                          tests/fuzz, with every library
#                                          compiled -fsanitize=fuzzer-no-link;
#                                          implies address,undefined.
option(COLLBENCH_FUZZ "Build the libFuzzer targets in tests/fuzz (clang; implies COLLBENCH_SANITIZE=address,undefined)" OFF)
set(COLLBENCH_SANITIZE "" CACHE STRING "Sanitizers for every target, e.g. address,undefined")

if(COLLBENCH_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "COLLBENCH_FUZZ=ON needs clang (libFuzzer): configure with -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(NOT COLLBENCH_SANITIZE)
    set(COLLBENCH_SANITIZE address,undefined)
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(COLLBENCH_SANITIZE)
  add_compile_options(-fsanitize=${COLLBENCH_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${COLLBENCH_SANITIZE})
  message(STATUS "collbench: sanitizers ${COLLBENCH_SANITIZE}, fuzz targets ${COLLBENCH_FUZZ}")
endif()
