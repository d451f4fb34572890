# SPDX-License-Identifier: Apache-2.0
# Locates the Debian-packaged dependencies
# (docs/design/layout.md#build-options-and-dependencies) and defines imported
# targets for those that ship no CMake config of their own.
find_package(PkgConfig REQUIRED)
find_package(absl REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)
# The coordinator's HTTP transport (server/http): libevent's evhttp
# (libevent_extra), its OpenSSL bufferevents and the pthread locks that
# let other threads post to its event loop.
pkg_check_modules(LIBEVENT REQUIRED IMPORTED_TARGET libevent_extra libevent_openssl
                  libevent_pthreads)

# Open MPI is the default MPI; MPICH is the second axis. Both come as
# pkg-config modules on Debian and can be installed side by side.
pkg_check_modules(OMPI REQUIRED IMPORTED_TARGET ompi-c)
pkg_check_modules(MPICH IMPORTED_TARGET mpich)
set(COLLBENCH_MPICH_FOUND ${MPICH_FOUND})
# The C API only: keep the deprecated C++ bindings out of every user of mpi.h.
set_property(TARGET PkgConfig::OMPI APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS OMPI_SKIP_MPICXX=1)
if(MPICH_FOUND)
  set_property(TARGET PkgConfig::MPICH APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS MPICH_SKIP_MPICXX=1)
endif()
find_program(COLLBENCH_OPENMPI_MPIRUN NAMES mpirun.openmpi mpirun REQUIRED)
find_program(COLLBENCH_MPICH_MPIEXEC NAMES mpiexec.mpich mpiexec.hydra)

pkg_check_modules(MEMKIND REQUIRED IMPORTED_TARGET memkind)
pkg_check_modules(NUMA REQUIRED IMPORTED_TARGET numa)

# CUDA: host-compiled code against the runtime API and NCCL; no device code,
# so nvcc is not needed. The static runtime keeps binaries loadable where
# only the driver (or nothing) is installed. NCCL is not linked: only its
# header is needed, the engine loads libnccl.so.2 at run time
# (worker/engine/nccl/nccl_library.h).
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT}/include)
if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR)
  set(COLLBENCH_CUDA_FOUND ON)
  if(NOT TARGET collbench::nccl_headers)
    # nccl.h includes cuda_runtime.h, so the toolkit's headers come along.
    add_library(collbench::nccl_headers INTERFACE IMPORTED)
    set_target_properties(collbench::nccl_headers PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR};${CUDAToolkit_INCLUDE_DIRS}")
  endif()
else()
  set(COLLBENCH_CUDA_FOUND OFF)
endif()

if(COLLBENCH_BUILD_TESTS OR NOT DEFINED COLLBENCH_BUILD_TESTS)
  find_package(GTest REQUIRED)
  # The HTTP tests' client (tests/unit/rest/http_test_client.h).
  find_package(CURL REQUIRED)
endif()
find_package(benchmark QUIET)
