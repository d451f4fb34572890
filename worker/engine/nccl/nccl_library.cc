// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/nccl/nccl_library.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace collbench {
namespace {

constexpr char kSoname[] = "libnccl.so.2";
constexpr char kWheelLayout[] = "nvidia/nccl/lib/libnccl.so.2";
constexpr char kEnvVar[] = "COLLBENCH_NCCL_LIBRARY";

// Library messages may contain newlines; a Status is one line.
std::string OneLine(absl::string_view text) {
  return absl::StrReplaceAll(absl::StripAsciiWhitespace(text), {{"\n", "; "}});
}

std::string LastDlError() {
  const char* text = dlerror();
  return text == nullptr ? "unknown dlopen error" : OneLine(text);
}

// Why one candidate could not be used; absent when it simply is not there.
struct Attempt {
  std::unique_ptr<NcclLibrary> library;
  std::optional<std::string> unusable;
};

absl::StatusCode NcclErrorCode(ncclResult_t code) {
  switch (code) {
    case ncclInvalidArgument:
      return absl::StatusCode::kInvalidArgument;
    case ncclInvalidUsage:
      return absl::StatusCode::kFailedPrecondition;
    case ncclSystemError:
    case ncclRemoteError:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

std::string LoadedPath(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

}  // namespace

// Opens one candidate and resolves the table (NcclLibrary's friend).
class NcclLoader {
 public:
  // `by_name`: hand `what` to dlopen's own search, and treat "not found"
  // as absence rather than a reason.
  static Attempt Try(const std::string& what, bool by_name) {
    Attempt attempt;
    if (!by_name && access(what.c_str(), F_OK) != 0) return attempt;
    void* handle = dlopen(what.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == nullptr) {
      const std::string error = LastDlError();
      // dlopen names the file it could not open: the candidate itself is
      // absence; anything else (a dependency, a wrong ELF class) a reason.
      const bool absent =
          by_name &&
          absl::StartsWith(error, absl::StrCat(what, ": cannot open shared object file"));
      if (!absent) attempt.unusable = error;
      return attempt;
    }
    NcclApi api;
    std::string missing;
#define COLLBENCH_NCCL_RESOLVE(name)                                     \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name)); \
  if (api.name == nullptr && missing.empty()) missing = #name;
    COLLBENCH_NCCL_ENTRY_POINTS(COLLBENCH_NCCL_RESOLVE)
#undef COLLBENCH_NCCL_RESOLVE
    const std::string path = LoadedPath(handle, what);
    if (!missing.empty()) {
      dlclose(handle);
      attempt.unusable =
          absl::StrCat(path, " has no symbol ", missing, " (not NCCL, or NCCL older than 2.13)");
      return attempt;
    }
    attempt.library.reset(new NcclLibrary(handle, api, path));
    return attempt;
  }
};

absl::StatusOr<std::unique_ptr<NcclLibrary>> NcclLibrary::Load(const NcclSearch& search) {
  if (!search.explicit_library.empty()) {
    Attempt attempt = NcclLoader::Try(search.explicit_library, /*by_name=*/false);
    if (attempt.library) return std::move(attempt.library);
    return absl::FailedPreconditionError(absl::StrCat("cannot use NCCL from ", kEnvVar, "=",
                                                      search.explicit_library, ": ",
                                                      attempt.unusable.value_or("no such file")));
  }
  std::vector<std::string> searched;
  std::vector<std::string> unusable;
  auto try_one = [&](const std::string& what, bool by_name) -> std::unique_ptr<NcclLibrary> {
    Attempt attempt = NcclLoader::Try(what, by_name);
    if (attempt.unusable) unusable.push_back(*attempt.unusable);
    return std::move(attempt.library);
  };
  searched.push_back(absl::StrCat("$", kEnvVar, " (unset)"));
  for (const std::string& name : search.loader_names) {
    if (auto library = try_one(name, true)) return library;
    searched.push_back(absl::StrCat(name, " on the loader path (LD_LIBRARY_PATH, ld.so.cache)"));
  }
  for (const std::string& dir : search.directories) {
    if (auto library = try_one(absl::StrCat(dir, "/", kSoname), false)) return library;
    searched.push_back(dir);
  }
  const std::vector<std::string> site_dirs =
      search.python_site_dirs ? search.python_site_dirs() : std::vector<std::string>{};
  for (const std::string& dir : site_dirs) {
    if (auto library = try_one(absl::StrCat(dir, "/", kWheelLayout), false)) return library;
  }
  searched.push_back(site_dirs.empty()
                         ? absl::StrCat(kWheelLayout, " under python3's site-packages (none found)")
                         : absl::StrCat(kWheelLayout, " under ", absl::StrJoin(site_dirs, ", ")));
  std::string message =
      absl::StrCat("NCCL not found (", kSoname, "); searched ", absl::StrJoin(searched, "; "));
  if (!unusable.empty()) absl::StrAppend(&message, "; unusable: ", absl::StrJoin(unusable, "; "));
  absl::StrAppend(&message, "; set ", kEnvVar, " to the path of ", kSoname);
  return absl::FailedPreconditionError(message);
}

NcclLibrary::~NcclLibrary() { dlclose(handle_); }

// NCCL packs versions as major*10000 + minor*100 + patch since 2.9.
std::string NcclLibrary::VersionText() const {
  int code = 0;
  if (api_.ncclGetVersion(&code) != ncclSuccess) return "NCCL (unknown version)";
  return absl::StrCat("NCCL ", code / 10000, ".", (code % 10000) / 100, ".", code % 100);
}

absl::Status NcclLibrary::StatusOf(ncclResult_t code, const char* call, const char* file,
                                   int line) const {
  if (code == ncclSuccess) return absl::OkStatus();
  std::string message = absl::StrCat(call, " failed: ", api_.ncclGetErrorString(code));
  const char* last = api_.ncclGetLastError(nullptr);
  if (last != nullptr && last[0] != '\0') absl::StrAppend(&message, ": ", OneLine(last));
  absl::StrAppend(&message, " [", file, ":", line, "]");
  return absl::Status(NcclErrorCode(code), message);
}

NcclSearch DefaultNcclSearch() {
  NcclSearch search;
  if (const char* value = std::getenv(kEnvVar)) search.explicit_library = value;
  search.loader_names = {kSoname};
  search.directories = {"/usr/local/cuda/lib64"};
  search.python_site_dirs = PythonSiteDirs;
  return search;
}

std::vector<std::string> PythonSiteDirs() {
  // sys.path covers PYTHONPATH and virtual environments; site adds the
  // user's and the system's package directories. python3 gets the library
  // path its caller had: an engine bundle's wrapper keeps it in
  // COLLBENCH_CALLER_LD_LIBRARY_PATH, since the bundle's own libraries
  // must not replace the ones python3 and its packages were built with.
  constexpr char kCommand[] =
      "LD_LIBRARY_PATH=\"${COLLBENCH_CALLER_LD_LIBRARY_PATH-$LD_LIBRARY_PATH}\" "
      "python3 -c 'import site, sys\n"
      "dirs = sys.path + site.getsitepackages() + [site.getusersitepackages()]\n"
      "print(\"\\n\".join(d for d in dirs if d.endswith((\"site-packages\", "
      "\"dist-packages\"))))' 2>/dev/null";
  std::vector<std::string> dirs;
  FILE* pipe = popen(kCommand, "r");
  if (pipe == nullptr) return dirs;
  std::string output;
  char chunk[4096];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, pipe)) > 0) output.append(chunk, got);
  pclose(pipe);
  for (absl::string_view line : absl::StrSplit(output, '\n', absl::SkipWhitespace())) {
    std::string dir(absl::StripAsciiWhitespace(line));
    if (access(dir.c_str(), F_OK) != 0) continue;
    bool seen = false;
    for (const std::string& d : dirs) seen = seen || d == dir;
    if (!seen) dirs.push_back(std::move(dir));
  }
  return dirs;
}

}  // namespace collbench
