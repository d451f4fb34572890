# SPDX-License-Identifier: Apache-2.0
# Writes OUTPUT: a C++ file defining `const char* FUNCTION()` returning the
# text of INPUT. Run at build time so an edited file rebuilds.
file(READ "${INPUT}" text)
if(text MATCHES "\\)cbtext\"")
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )cbtext\"")
endif()
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp" "// Generated from ${name}; do not edit.
namespace collbench {

const char* ${FUNCTION}() {
  return R\"cbtext(${text})cbtext\";
}

}  // namespace collbench
")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
file(REMOVE "${OUTPUT}.tmp")
