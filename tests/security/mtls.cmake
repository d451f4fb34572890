# SPDX-License-Identifier: Apache-2.0
# Mutual TLS on the coordinator (--tls-client-ca): callers without a
# certificate from the client CA, or with another CA's, create nothing over
# gRPC or HTTP; workers and the CLI get through with theirs
# (mtls_attack_test.cc, a real coordinator and workers on 127.0.0.1).
# HTTP calls go through the HTTP tests' libcurl client (tests/unit/http).
add_executable(mtls_attack_test mtls_attack_test.cc)
target_link_libraries(mtls_attack_test PRIVATE
  collbench::proto gRPC::grpc++ collbench_http_test_client absl::strings
  absl::time GTest::gtest_main)
target_include_directories(mtls_attack_test PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_definitions(mtls_attack_test PRIVATE
  COLLBENCH_COORDINATOR_BIN="$<TARGET_FILE:collbench-coordinator>"
  COLLBENCH_WORKER_BIN="$<TARGET_FILE:collbench-worker>"
  COLLBENCH_CLI_BIN="$<TARGET_FILE:collbench>")
add_dependencies(mtls_attack_test collbench-coordinator collbench-worker collbench)
add_test(NAME security.mtls COMMAND mtls_attack_test)
set_tests_properties(security.mtls PROPERTIES LABELS "security" TIMEOUT 300)

if(COLLBENCH_SANITIZE AND TARGET sanitize_unit_tests)
  # Spawns the (sanitized) coordinator, workers and CLI.
  add_dependencies(sanitize_unit_tests mtls_attack_test)
  add_test(NAME sanitize.mtls_attack_test COMMAND mtls_attack_test)
  set_tests_properties(sanitize.mtls_attack_test PROPERTIES
    LABELS "sanitize;security" TIMEOUT 600
    ENVIRONMENT "ASAN_OPTIONS=halt_on_error=1:detect_leaks=1;UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
endif()
