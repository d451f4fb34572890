#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bin/collbench-bundle of an engine bundle (scripts/bundle-engine): sets the
# variables that relocate Open MPI, PMIx, MPICH's hydra and UCX to this
# folder, then runs the real program from libexec/. Every tool in bin/ is a
# link to this script and runs the program of its name:
#   bin/mpirun, bin/mpiexec.openmpi, bin/orterun, bin/orted   Open MPI
#   bin/mpiexec.mpich, bin/mpiexec.hydra                      MPICH (hydra)
#   bin/collbench-rank, bin/collbench-rank-mpich              the engine
# or by name: `collbench-bundle TOOL ARGS...`. `collbench-bundle env`
# prints the variables as shell exports.
#
# The variables are set only for the program run, so nothing else started
# from the same shell (python3, torch) sees the bundle's libraries.
# POSIX sh: the bundle must run where bash is absent.
set -eu

self=$(readlink -f "$0")
bundle=$(cd "$(dirname "$self")/.." && pwd)
tool=$(basename "$0")
if [ "$tool" = collbench-bundle ]; then
  if [ $# -eq 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,12p' "$self" | sed 's/^# \{0,1\}//'
    exit 0
  fi
  tool=$1
  shift
fi

case $tool in
  mpirun | mpiexec.openmpi | orterun) program=orterun ;;
  orted) program=orted ;;
  mpiexec.mpich | mpiexec.hydra) program=mpiexec.hydra ;;
  collbench-rank | collbench-rank-mpich) program=$tool ;;
  env) program= ;;
  *)
    echo "collbench-bundle: unknown tool '$tool' (mpirun, mpiexec.mpich, collbench-rank, collbench-rank-mpich, env)" >&2
    exit 2
    ;;
esac
if [ -n "$program" ] && [ ! -x "$bundle/libexec/$program" ]; then
  echo "collbench-bundle: $program is not in this bundle ($bundle/libexec)" >&2
  exit 2
fi

# The caller's library path, kept so that the engine runs python3 (to find
# NCCL in PyTorch's wheels) as the caller would have.
COLLBENCH_CALLER_LD_LIBRARY_PATH=${COLLBENCH_CALLER_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}
COLLBENCH_BUNDLE=$bundle
PATH=$bundle/bin:$PATH
LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Open MPI 4.1: every install directory it derives from its prefix.
OPAL_PREFIX=$bundle
OPAL_BINDIR=$bundle/bin
OPAL_LIBDIR=$bundle/lib
OPAL_PKGLIBDIR=$bundle/lib/openmpi
OPAL_DATADIR=$bundle/share
OPAL_PKGDATADIR=$bundle/share/openmpi
OPAL_SYSCONFDIR=$bundle/etc
# PMIx (Open MPI's launch protocol): its components and help files.
PMIX_PREFIX=$bundle
PMIX_LIBDIR=$bundle/lib
PMIX_PKGLIBDIR=$bundle/lib/pmix
PMIX_DATADIR=$bundle/share
PMIX_PKGDATADIR=$bundle/share/pmix
PMIX_SYSCONFDIR=$bundle/etc
PMIX_MCA_mca_base_component_path=$bundle/lib/pmix
# UCX (MPICH's ch4:ucx): its transport modules.
UCX_MODULE_DIR=$bundle/lib/ucx
# Open MPI refuses to start without a remote shell even for one host. Where
# there is none, name one that is never called on one host; a multi-host
# run then fails to start its remote daemons, as it would anyway.
if [ -z "${OMPI_MCA_plm_rsh_agent+set}" ] && ! command -v ssh >/dev/null 2>&1 &&
  ! command -v rsh >/dev/null 2>&1; then
  OMPI_MCA_plm_rsh_agent=false
  export OMPI_MCA_plm_rsh_agent
fi
export COLLBENCH_CALLER_LD_LIBRARY_PATH COLLBENCH_BUNDLE PATH LD_LIBRARY_PATH \
  OPAL_PREFIX OPAL_BINDIR OPAL_LIBDIR OPAL_PKGLIBDIR OPAL_DATADIR OPAL_PKGDATADIR OPAL_SYSCONFDIR \
  PMIX_PREFIX PMIX_LIBDIR PMIX_PKGLIBDIR PMIX_DATADIR PMIX_PKGDATADIR PMIX_SYSCONFDIR \
  PMIX_MCA_mca_base_component_path UCX_MODULE_DIR

if [ -z "$program" ]; then
  for name in COLLBENCH_BUNDLE PATH LD_LIBRARY_PATH OPAL_PREFIX OPAL_BINDIR OPAL_LIBDIR \
    OPAL_PKGLIBDIR OPAL_DATADIR OPAL_PKGDATADIR OPAL_SYSCONFDIR PMIX_PREFIX PMIX_LIBDIR \
    PMIX_PKGLIBDIR PMIX_DATADIR PMIX_PKGDATADIR PMIX_SYSCONFDIR PMIX_MCA_mca_base_component_path \
    UCX_MODULE_DIR; do
    eval "value=\$$name"
    printf "export %s='%s'\n" "$name" "$value"
  done
  exit 0
fi
# hydra finds hydra_pmi_proxy beside the mpiexec it was started as.
exec "$bundle/libexec/$program" "$@"
