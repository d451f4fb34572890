// SPDX-License-Identifier: Apache-2.0
#include "client/terminal_text.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "absl/strings/str_format.h"

namespace collbench {
namespace {

void AppendByteEscape(unsigned char byte, std::string* out) {
  if (byte == '\r') {
    out->append("\\r");
  } else {
    absl::StrAppendFormat(out, "\\x%02x", byte);
  }
}

// The length of the UTF-8 sequence led by `lead`, and the range its second
// byte must fall in (no overlong forms, no surrogates, nothing past
// U+10FFFF); 0 when `lead` cannot start one.
int SequenceLength(unsigned char lead, unsigned char* low, unsigned char* high) {
  *low = 0x80;
  *high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead == 0xE0) *low = 0xA0;
  if (lead == 0xED) *high = 0x9F;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead == 0xF0) *low = 0x90;
  if (lead == 0xF4) *high = 0x8F;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

}  // namespace

void TerminalSafeFilter::Feed(absl::string_view piece, std::string* out) {
  std::string data = std::move(pending_);
  pending_.clear();
  data.append(piece.data(), piece.size());
  const size_t n = data.size();
  size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(data[i]);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7F)) {
      out->push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (c == '\r' && i + 1 < n && data[i + 1] == '\n') {
      out->append("\r\n");
      i += 2;
      continue;
    }
    if (c < 0x80) {  // C0 controls and DEL
      AppendByteEscape(c, out);
      ++i;
      continue;
    }
    unsigned char low = 0, high = 0;
    const int length = SequenceLength(c, &low, &high);
    bool valid = length > 0;
    size_t have = 1;
    for (; valid && have < static_cast<size_t>(length) && i + have < n; ++have) {
      const auto next = static_cast<unsigned char>(data[i + have]);
      const unsigned char lo = have == 1 ? low : 0x80;
      const unsigned char hi = have == 1 ? high : 0xBF;
      valid = next >= lo && next <= hi;
    }
    if (valid && have < static_cast<size_t>(length)) {  // cut at the piece's end
      pending_ = data.substr(i);
      return;
    }
    if (!valid) {
      AppendByteEscape(c, out);
      ++i;
      continue;
    }
    if (length == 2 && c == 0xC2 && static_cast<unsigned char>(data[i + 1]) <= 0x9F) {
      absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned char>(data[i + 1]));  // C1
    } else {
      out->append(data, i, length);
    }
    i += length;
  }
}

void TerminalSafeFilter::Finish(std::string* out) {
  for (const char c : pending_) AppendByteEscape(static_cast<unsigned char>(c), out);
  pending_.clear();
}

std::string TerminalSafe(absl::string_view text) {
  TerminalSafeFilter filter;
  std::string out;
  filter.Feed(text, &out);
  filter.Finish(&out);
  return out;
}

namespace {

struct SafeStream {
  int fd;
  TerminalSafeFilter filter;
};

SafeStream* safe_stdout = nullptr;
SafeStream* safe_stderr = nullptr;

bool WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

ssize_t SafeWrite(void* cookie, const char* buffer, size_t size) {
  auto* stream = static_cast<SafeStream*>(cookie);
  std::string safe;
  stream->filter.Feed(absl::string_view(buffer, size), &safe);
  if (!WriteAll(stream->fd, safe)) return -1;
  return static_cast<ssize_t>(size);
}

void FinishAtExit() {
  for (SafeStream* stream : {safe_stdout, safe_stderr}) {
    std::fflush(stream == safe_stdout ? stdout : stderr);
    std::string rest;
    stream->filter.Finish(&rest);
    WriteAll(stream->fd, rest);
  }
}

}  // namespace

void InstallTerminalSafeStdio() {
  if (safe_stdout != nullptr) return;
  std::fflush(stdout);
  std::fflush(stderr);
  const cookie_io_functions_t functions = {nullptr, SafeWrite, nullptr, nullptr};
  safe_stdout = new SafeStream{STDOUT_FILENO, {}};
  safe_stderr = new SafeStream{STDERR_FILENO, {}};
  FILE* out = fopencookie(safe_stdout, "w", functions);
  FILE* err = fopencookie(safe_stderr, "w", functions);
  if (out == nullptr || err == nullptr) std::abort();
  std::setvbuf(out, nullptr, isatty(STDOUT_FILENO) == 1 ? _IOLBF : _IOFBF, BUFSIZ);
  std::setvbuf(err, nullptr, _IONBF, 0);
  stdout = out;
  stderr = err;
  std::atexit(FinishAtExit);
}

void WriteTerminalControl(std::FILE* stream, absl::string_view sequence) {
  std::fflush(stream);
  const bool is_stdout = stream == stdout;
  WriteAll(is_stdout ? STDOUT_FILENO : STDERR_FILENO, sequence);
}

}  // namespace collbench
