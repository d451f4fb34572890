// SPDX-License-Identifier: Apache-2.0
#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace collbench {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::UnavailableError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

}  // namespace

absl::Status CheckParentFolder(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return absl::OkStatus();
  const std::string folder = slash == 0 ? "/" : path.substr(0, slash);
  struct stat st;
  if (stat(folder.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        errno == ENOENT
            ? absl::StrCat(path, ": the folder ", folder, " does not exist (it is not created)")
            : absl::StrCat(path, ": the folder ", folder, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", folder, " is not a folder"));
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  if (absl::Status folder = CheckParentFolder(path); !folder.ok()) return folder;
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const absl::Status error = Errno("cannot write", temp);
      close(fd);
      unlink(temp.c_str());
      return error;
    }
    written += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    const absl::Status error = Errno("cannot write", temp);
    unlink(temp.c_str());
    return error;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const absl::Status error = Errno(absl::StrCat("cannot rename ", temp, " to"), path);
    unlink(temp.c_str());
    return error;
  }
  return absl::OkStatus();
}

}  // namespace collbench
