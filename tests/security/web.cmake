# SPDX-License-Identifier: Apache-2.0
# Attacks on the coordinator's web surface and on `collbench local`
# (tests/security/web_test.py; each case asserts the attack had no effect).
# local_user needs root (a second local user via setpriv) and skips
# elsewhere.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
foreach(case cross_origin foreign_host fail_closed ui_session cli_token local_user http_flood)
  add_test(NAME security.web.${case}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/web_test.py
                   --bin-dir ${CMAKE_BINARY_DIR}/bin --case ${case})
  set_tests_properties(security.web.${case} PROPERTIES
    LABELS "security" TIMEOUT 300 SKIP_RETURN_CODE 77
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
endforeach()
