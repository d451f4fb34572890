// SPDX-License-Identifier: Apache-2.0
// What the CLI prints is made safe for a terminal
// (docs/operations/security.md#output): a worker's host name, a run's error
// or a log line from a coordinator may hold bytes a terminal acts on (an
// escape sequence that moves the cursor, rewrites the title, hides text).
// Every byte the CLI writes to its stdout and stderr goes through
// TerminalSafe once InstallTerminalSafeStdio ran; the CLI's own cursor
// control (the progress line redrawn in place) is the only thing written
// around it, with WriteTerminalControl.
//
// Thread safety: TerminalSafe is pure; TerminalSafeFilter is one stream's
// state (one writer at a time, as stdio's own lock guarantees);
// InstallTerminalSafeStdio is called once, first thing in main.
#ifndef COLLBENCH_CLIENT_TERMINAL_TEXT_H_
#define COLLBENCH_CLIENT_TERMINAL_TEXT_H_

#include <cstdio>
#include <string>

#include "absl/strings/string_view.h"

namespace collbench {

// `text` with every byte a terminal would act on written as a visible
// escape: the C0 controls but tab and newline (a carriage return only
// right before a newline stays), DEL, the C1 controls U+0080..U+009F (\u0080)
// and bytes that are not UTF-8 (\xff); ESC is \x1b, a lone CR \r. Printable
// text, UTF-8 included, is unchanged.
std::string TerminalSafe(absl::string_view text);

// TerminalSafe over a stream written in pieces: a UTF-8 sequence cut at a
// piece's end waits for the next piece.
class TerminalSafeFilter {
 public:
  // Appends the safe form of `piece` to `*out`.
  void Feed(absl::string_view piece, std::string* out);
  // What still waits (a cut sequence), escaped; the filter is empty after.
  void Finish(std::string* out);

 private:
  std::string pending_;
};

// From now on stdout and stderr write through TerminalSafeFilter to file
// descriptors 1 and 2 (stdout keeps its buffering: by line on a terminal;
// stderr stays unbuffered). Idempotent.
void InstallTerminalSafeStdio();

// Writes the CLI's own control `sequence` (e.g. "\r\033[K") to `stream`
// (stdout or stderr) as it is, after what the stream holds.
void WriteTerminalControl(std::FILE* stream, absl::string_view sequence);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_TERMINAL_TEXT_H_
