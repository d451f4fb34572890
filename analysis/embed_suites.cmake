# SPDX-License-Identifier: Apache-2.0
# Writes OUTPUT: a C++ file defining EmbeddedSuites() from the JSON files in
# SUITES (a |-separated list, in order). Run at build time so an edited suite rebuilds.
string(REPLACE "|" ";" SUITES "${SUITES}")
set(body "")
foreach(file IN LISTS SUITES)
  file(READ "${file}" text)
  if(text MATCHES "\\)cbsuite\"")
    message(FATAL_ERROR "${file} contains the raw-string delimiter )cbsuite\"")
  endif()
  get_filename_component(name "${file}" NAME)
  string(APPEND body "      {\"${name}\", R\"cbsuite(${text})cbsuite\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from analysis/suites/*.json; do not edit.
#include \"analysis/suites_embedded.h\"

namespace collbench {

const std::vector<EmbeddedSuite>& EmbeddedSuites() {
  static const std::vector<EmbeddedSuite> suites = {
${body}  };
  return suites;
}

}  // namespace collbench
")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
file(REMOVE "${OUTPUT}.tmp")
