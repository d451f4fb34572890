// SPDX-License-Identifier: Apache-2.0
// Terminal-safe output (client/terminal_text.h): what a server sends cannot
// act on the user's terminal, and the CLI's own cursor control still can.
#include "client/terminal_text.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "gtest/gtest.h"

namespace collbench {
namespace {

TEST(TerminalSafeTest, EscapesWhatATerminalWouldActOn) {
  // A title rewrite, a colour, a screen clear, a bell: visible, inert.
  EXPECT_EQ(TerminalSafe("node1\x1b]0;pwned\x07\x1b[31m\x1b[2J"),
            "node1\\x1b]0;pwned\\x07\\x1b[31m\\x1b[2J");
  EXPECT_EQ(TerminalSafe("a\rb"), "a\\rb");  // a carriage return that overwrites
  EXPECT_EQ(TerminalSafe("a\x7f\x01"), "a\\x7f\\x01");
  EXPECT_EQ(TerminalSafe("\xc2\x9b" "31m"), "\\u009b31m");  // C1 CSI in UTF-8
  EXPECT_EQ(TerminalSafe("\xff\xfe"), "\\xff\\xfe");        // not UTF-8
  EXPECT_EQ(TerminalSafe("\xc0\xaf"), "\\xc0\\xaf");        // overlong '/'
  EXPECT_EQ(TerminalSafe("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(TerminalSafe("\xe2\x9c"), "\\xe2\\x9c");        // cut at the end
}

TEST(TerminalSafeTest, KeepsPrintableTextTabsNewlinesAndUtf8) {
  const std::string text = "SIZE\tBUSBW\r\nnode-ü ✓ 中 \xf0\x9f\x9a\x80\n";
  EXPECT_EQ(TerminalSafe(text), text);
}

TEST(TerminalSafeTest, ASequenceCutBetweenWritesIsKeptWhole) {
  TerminalSafeFilter filter;
  std::string out;
  filter.Feed("ab\xe2\x9c", &out);
  EXPECT_EQ(out, "ab");
  filter.Feed("\x93" "cd\xc2", &out);
  filter.Feed("\x9b", &out);
  filter.Finish(&out);
  EXPECT_EQ(out, "ab\xe2\x9c\x93" "cd\\u009b");
}

// In a child (stdio is process-wide): a server's string printed with
// printf reaches the file escaped; the CLI's own control does not.
TEST(TerminalSafeTest, InstalledStdioEscapesPrintsButNotTheCliControl) {
  char path[] = "/tmp/terminal_text_test.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    InstallTerminalSafeStdio();
    std::printf("host %s\n", "evil\x1b[2Jname");
    std::fprintf(stderr, "error: %s\n", "\x1b]0;title\x07");
    WriteTerminalControl(stderr, "\r\x1b[K");
    std::printf("done\n");
    std::exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::ifstream in(path, std::ios::binary);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  close(fd);
  unlink(path);
  EXPECT_NE(written.find("host evil\\x1b[2Jname\n"), std::string::npos) << written;
  EXPECT_NE(written.find("error: \\x1b]0;title\\x07\n"), std::string::npos) << written;
  EXPECT_NE(written.find("\r\x1b[K"), std::string::npos) << written;  // the CLI's own, raw
  EXPECT_NE(written.find("done\n"), std::string::npos) << written;
  EXPECT_EQ(written.find("\x1b[2J"), std::string::npos) << written;
  EXPECT_EQ(written.find("\x1b]"), std::string::npos) << written;
}

}  // namespace
}  // namespace collbench
