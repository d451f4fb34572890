// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/worker_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace collbench {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// mkdir -p with mode 0700 for the folders it creates.
absl::Status MakeDirs(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
  }
  const std::string parent = DirOf(dir);
  if (parent != dir) {
    if (absl::Status made = MakeDirs(parent); !made.ok()) return made;
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Errno("cannot create", dir);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadWorkerSecret(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::string();
    return Errno("cannot read the worker secret", path);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat(
        "the worker secret ", path, " must be a regular file only its owner can access "
        "(mode 0600)"));
  }
  std::string secret;
  char buffer[256];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) secret.append(buffer, n);
  close(fd);
  if (n < 0) return Errno("cannot read the worker secret", path);
  return std::string(absl::StripAsciiWhitespace(secret));
}

absl::Status WriteWorkerSecret(const std::string& path, absl::string_view secret) {
  const std::string dir = DirOf(path);
  if (absl::Status made = MakeDirs(dir); !made.ok()) return made;
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  unlink(temp.c_str());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Errno("cannot create", temp);
  const std::string text = absl::StrCat(secret, "\n");
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       fsync(fd) == 0;
  const int saved_errno = errno;
  close(fd);
  if (!written) {
    unlink(temp.c_str());
    errno = saved_errno;
    return Errno("cannot write", temp);
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    const absl::Status status = Errno("cannot rename to", path);
    unlink(temp.c_str());
    return status;
  }
  if (const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadJoinToken(const std::string& file) {
  if (file.empty()) {
    const char* value = std::getenv(kJoinTokenEnv);
    std::string token = value == nullptr ? "" : value;
    unsetenv(kJoinTokenEnv);
    return std::string(absl::StripAsciiWhitespace(token));
  }
  unsetenv(kJoinTokenEnv);  // the file wins; no child inherits either
  std::ifstream in(file);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--join-token-file: cannot read '", file, "': ", std::strerror(errno)));
  }
  std::string line;
  std::getline(in, line);
  const std::string token(absl::StripAsciiWhitespace(line));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--join-token-file: '", file, "' is empty"));
  }
  return token;
}

}  // namespace collbench
