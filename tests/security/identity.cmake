# SPDX-License-Identifier: Apache-2.0
# Worker identity and Agent attacks (issue 19, stream "identity"): a real
# coordinator and two workers on 127.0.0.1 (identity_attack_test.cc). The
# unit tests of the same rules (tests/unit/server/worker_identity_test.cc,
# tests/unit/agent/agent_identity_test.cc) also run under the sanitizers.
add_executable(identity_attack_test identity_attack_test.cc)
target_link_libraries(identity_attack_test PRIVATE
  collbench::proto gRPC::grpc++ absl::statusor absl::strings absl::time absl::synchronization
  GTest::gtest_main)
target_include_directories(identity_attack_test PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_definitions(identity_attack_test PRIVATE
  COLLBENCH_COORDINATOR_BIN="$<TARGET_FILE:collbench-coordinator>"
  COLLBENCH_WORKER_BIN="$<TARGET_FILE:collbench-worker>")
add_dependencies(identity_attack_test collbench-coordinator collbench-worker collbench-rank)
add_test(NAME security.identity COMMAND identity_attack_test)
set_tests_properties(security.identity PROPERTIES
  LABELS "security" TIMEOUT 600 RUN_SERIAL TRUE
  ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")

if(COLLBENCH_SANITIZE AND TARGET sanitize_unit_tests)
  # The attack test spawns the (sanitized) binaries; the unit tests run whole.
  foreach(test agent_identity_test gateway_queue_test identity_attack_test)
    add_dependencies(sanitize_unit_tests ${test})
    add_test(NAME sanitize.${test} COMMAND ${test})
    set_tests_properties(sanitize.${test} PROPERTIES
      LABELS "sanitize;security" TIMEOUT 900
      ENVIRONMENT "ASAN_OPTIONS=halt_on_error=1:detect_leaks=1;UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  endforeach()
  # run_manager_test (worker_identity_test.cc) is in the sanitized set already.
endif()
