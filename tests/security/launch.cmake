# SPDX-License-Identifier: Apache-2.0
# The launch path: hostile spec.env keys and values, a direct Exec of a
# non-daemon argv with a valid run token, tokens in the run's processes,
# a rank that leaves a setsid'd child, allowed tuning parameters and tuning
# files that still take effect (launch_test.py --list). A real coordinator and two
# workers on 127.0.0.1 per case (tests/integration/service/service_test.py).
add_executable(exec_probe exec_probe.cc)
target_link_libraries(exec_probe PRIVATE collbench::proto gRPC::grpc++)

set(launch_security_binaries collbench collbench-coordinator collbench-worker collbench-rank
    exec_probe)
if(TARGET collbench-rank-mpich)
  list(APPEND launch_security_binaries collbench-rank-mpich)
endif()
add_test(NAME security.launch.build
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target ${launch_security_binaries})
set_tests_properties(security.launch.build PROPERTIES
  FIXTURES_SETUP collbench_launch_security_binaries TIMEOUT 1800 LABELS "security")

# case name, timeout in seconds
set(launch_security_cases
  hostile_env 120
  exec_non_daemon 180
  tokens_in_processes 180
  setsid_rank 180
  tuning_takes_effect 300
  tuning_file 300
  fake_launcher 180)
list(LENGTH launch_security_cases n)
math(EXPR last "${n} - 1")
foreach(i RANGE 0 ${last} 2)
  math(EXPR j "${i} + 1")
  list(GET launch_security_cases ${i} case)
  list(GET launch_security_cases ${j} timeout)
  add_test(NAME security.launch.${case}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/launch_test.py
            --bin-dir $<TARGET_FILE_DIR:collbench>
            --case ${case})
  set_tests_properties(security.launch.${case} PROPERTIES
    TIMEOUT ${timeout}
    LABELS "security"
    FIXTURES_REQUIRED collbench_launch_security_binaries
    RUN_SERIAL TRUE
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
endforeach()

# Under COLLBENCH_SANITIZE the agent's launch-path unit tests (Exec with a
# real server, the shim, the daemon check, the quote parser, processes and
# containment) also run under ASan + UBSan (label `sanitize`, scripts/test-fuzz).
if(COLLBENCH_SANITIZE AND TARGET sanitize_unit_tests)
  add_dependencies(sanitize_unit_tests agent_test)
  add_test(NAME sanitize.agent_launch
    COMMAND agent_test
            --gtest_filter=ExecService*:ExecManager*:LaunchShim*:ParseShimArgs*:SplitShellWords*:CheckDaemonArgv*:TuningFiles*:CleanEnv*:LineBuffer*:LaunchCommand*:PosixProcess*:ResultSpool*)
  set_tests_properties(sanitize.agent_launch PROPERTIES
    LABELS sanitize TIMEOUT 600
    ENVIRONMENT "ASAN_OPTIONS=halt_on_error=1:detect_leaks=1;UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
endif()
