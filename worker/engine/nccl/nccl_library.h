// SPDX-License-Identifier: Apache-2.0
// NCCL, loaded at run time with dlopen so that collbench-rank starts on a
// host without NCCL (or CUDA) and only `--backend nccl` needs it.
//
// The search, in order (docs/design/data-plane.md#backends; README "The engine bundle"):
//   1. $COLLBENCH_NCCL_LIBRARY. When set it is the only candidate: a
//      library the user named and that cannot be used is an error, never
//      silently replaced by another NCCL whose version the results would
//      then carry.
//   2. libnccl.so.2 through the dynamic loader's own search
//      (LD_LIBRARY_PATH, the binary's runpath, ld.so.cache, /lib, /usr/lib).
//   3. /usr/local/cuda/lib64/libnccl.so.2.
//   4. nvidia/nccl/lib/libnccl.so.2 under each of python3's site-packages
//      directories (the nvidia-nccl-cu1x wheel that PyTorch installs). python3
//      is asked for its directories only when 1-3 found nothing.
// A library that loads but lacks an entry point (not NCCL, or older than
// 2.13, the first with ncclGetLastError) is passed over for the next
// candidate; the error names the symbol.
//
// The library is opened RTLD_NODELETE: NCCL leaves threads running after
// its communicators are destroyed, so it must stay mapped until exit.
//
// Thread safety: a loaded NcclLibrary is immutable; its entry points are
// NCCL's and have NCCL's thread-safety rules.
#ifndef COLLBENCH_WORKER_ENGINE_NCCL_NCCL_LIBRARY_H_
#define COLLBENCH_WORKER_ENGINE_NCCL_NCCL_LIBRARY_H_

#include <nccl.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace collbench {

// The entry points collbench uses, each as NCCL declares it. Add a symbol
// here and it is resolved (and required) by every load.
#define COLLBENCH_NCCL_ENTRY_POINTS(X) \
  X(ncclGetVersion)                    \
  X(ncclGetUniqueId)                   \
  X(ncclCommInitRank)                  \
  X(ncclCommDestroy)                   \
  X(ncclCommAbort)                     \
  X(ncclCommGetAsyncError)             \
  X(ncclGetErrorString)                \
  X(ncclGetLastError)                  \
  X(ncclGroupStart)                    \
  X(ncclGroupEnd)                      \
  X(ncclBroadcast)                     \
  X(ncclReduce)                        \
  X(ncclAllReduce)                     \
  X(ncclAllGather)                     \
  X(ncclReduceScatter)                 \
  X(ncclSend)                          \
  X(ncclRecv)

// Members are named as the NCCL functions, so a call reads
// `api.ncclAllReduce(...)` and an error names the real call.
struct NcclApi {
#define COLLBENCH_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  COLLBENCH_NCCL_ENTRY_POINTS(COLLBENCH_NCCL_MEMBER)
#undef COLLBENCH_NCCL_MEMBER
};

// Where to look. DefaultNcclSearch() gives the order above; tests build
// their own.
struct NcclSearch {
  // $COLLBENCH_NCCL_LIBRARY; when non-empty, the only candidate.
  std::string explicit_library;
  // Names handed to dlopen as they are, for the loader's own search.
  std::vector<std::string> loader_names;
  // Directories holding libnccl.so.2.
  std::vector<std::string> directories;
  // Directories under which nvidia/nccl/lib/libnccl.so.2 may be; called
  // only when every earlier candidate failed. May be empty.
  std::function<std::vector<std::string>()> python_site_dirs;
};

// The search from the environment: COLLBENCH_NCCL_LIBRARY, libnccl.so.2,
// /usr/local/cuda/lib64, python3's site-packages.
NcclSearch DefaultNcclSearch();

// python3's site-packages and dist-packages directories (sys.path entries
// and site.getsitepackages()), from running `python3` found on PATH with
// the caller's LD_LIBRARY_PATH ($COLLBENCH_CALLER_LD_LIBRARY_PATH when an
// engine bundle set it); empty when there is no python3.
std::vector<std::string> PythonSiteDirs();

class NcclLibrary {
 public:
  // Tries the candidates in order and returns the first that loads with
  // every entry point. Failure is FailedPrecondition with one line naming
  // every place searched and, for each library that was found but could
  // not be used, why (the dlerror text or the missing symbol).
  static absl::StatusOr<std::unique_ptr<NcclLibrary>> Load(const NcclSearch& search);

  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;
  ~NcclLibrary();  // dlclose; the mapping stays (RTLD_NODELETE)

  const NcclApi& api() const { return api_; }
  // The file the library was loaded from (resolved by dladdr).
  const std::string& path() const { return path_; }
  // "NCCL 2.28.3", from ncclGetVersion.
  std::string VersionText() const;

  // OK for ncclSuccess, else a Status naming `call`, NCCL's text for the
  // code, its last-error message when it kept one, and file:line.
  absl::Status StatusOf(ncclResult_t code, const char* call, const char* file, int line) const;

 private:
  friend class NcclLoader;  // nccl_library.cc: opens and resolves candidates
  NcclLibrary(void* handle, NcclApi api, std::string path)
      : handle_(handle), api_(api), path_(std::move(path)) {}

  void* handle_;
  NcclApi api_;
  std::string path_;
};

}  // namespace collbench

// Calls `call` through `library`'s table, e.g.
//   NCCL_RETURN_IF_ERROR(*nccl_, ncclAllReduce(send, recv, ...));
// and returns its failure as a Status.
#define NCCL_RETURN_IF_ERROR(library, call)                                               \
  do {                                                                                    \
    const ::collbench::NcclLibrary& collbench_nccl_lib_ = (library);                      \
    const ncclResult_t collbench_nccl_rc_ = collbench_nccl_lib_.api().call;               \
    if (collbench_nccl_rc_ != ncclSuccess) {                                              \
      return collbench_nccl_lib_.StatusOf(collbench_nccl_rc_, #call, __FILE__, __LINE__); \
    }                                                                                     \
  } while (false)

#endif  // COLLBENCH_WORKER_ENGINE_NCCL_NCCL_LIBRARY_H_
