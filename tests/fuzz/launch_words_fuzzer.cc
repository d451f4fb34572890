// SPDX-License-Identifier: Apache-2.0
// The launch path's input checks
// (docs/design/security.md#no-shell-on-the-launch-path): the tuning-parameter
// table (api/tuning_env), the shim's quote parser (worker/agent/shell_words)
// and Exec's daemon check (worker/agent/daemon_command). The first line is a
// KEY=VALUE for the table; the rest is a remote command line. Invariants:
// refusals are InvalidArgument naming the key or the word; an accepted value
// holds no shell metacharacter, '/', blank or leading '-'; parsed words hold no
// unquoted expansion; an accepted daemon argv runs the installed daemon of the
// run's library with the other words unchanged.
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "api/tuning_env.h"
#include "tests/fuzz/fuzz_check.h"
#include "worker/agent/daemon_command.h"
#include "worker/agent/shell_words.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace collbench;
  const absl::string_view text = fuzz::AsText(data, size);
  const std::pair<absl::string_view, absl::string_view> lines =
      absl::StrSplit(text, absl::MaxSplits('\n', 1));
  const std::pair<absl::string_view, absl::string_view> kv =
      absl::StrSplit(lines.first, absl::MaxSplits('=', 1));

  const absl::Status tuning = CheckTuningParam(kv.first, kv.second);
  if (!tuning.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(tuning), tuning.ToString());
  } else {
    FUZZ_CHECK(IsTuningParam(kv.first) && !NamesProgramOrFile(kv.first), std::string(kv.first));
    FUZZ_CHECK(!kv.second.empty() && kv.second[0] != '-', std::string(kv.second));
    constexpr absl::string_view kNever = " \t\n\r\"'`$;|&<>()*?[]{}~#!\\";
    for (char ch : kv.second) {
      FUZZ_CHECK(kNever.find(ch) == absl::string_view::npos && ch != '\0',
                 std::string(kv.second));
    }
    // A '/' only in an IPv4 CIDR of an interface list.
    if (kv.second.find('/') != absl::string_view::npos) {
      bool interface_list = false;
      for (const TuningParam& p : TuningParams()) {
        if (p.name == kv.first) interface_list = p.grammar == TuningGrammar::kInterfaceList;
      }
      FUZZ_CHECK(interface_list, std::string(lines.first));
    }
  }

  const absl::StatusOr<std::vector<std::string>> words = SplitShellWords(lines.second);
  if (!words.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(words.status()), words.status().ToString());
    FUZZ_CHECK(absl::StartsWith(words.status().message(), "remote command"),
               words.status().ToString());
    return 0;
  }
  DaemonPaths paths;
  paths["orted"] = "/opt/mpi/orted";
  paths["hydra_pmi_proxy"] = "/opt/mpi/hydra_pmi_proxy";
  // The run's library from the input's length, so both bindings are tried
  // against every daemon name. No tuning folder: no tuning file passes.
  const v1::MpiImplementation mpi = size % 2 == 0 ? v1::OPENMPI : v1::MPICH;
  const absl::StatusOr<std::vector<std::string>> argv = CheckDaemonArgv(*words, paths, mpi, "");
  if (!argv.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(argv.status()), argv.status().ToString());
    FUZZ_CHECK(absl::StartsWith(argv.status().message(), "Exec argv"), argv.status().ToString());
    return 0;
  }
  FUZZ_CHECK(argv->size() == words->size(), "argv size changed");
  FUZZ_CHECK((*argv)[0] == (mpi == v1::MPICH ? paths.at("hydra_pmi_proxy") : paths.at("orted")), (*argv)[0]);
  for (size_t i = 1; i < argv->size(); ++i) {
    FUZZ_CHECK((*argv)[i] == (*words)[i], "an argument changed");
    FUZZ_CHECK((*argv)[i].find('\0') == std::string::npos, "NUL in an argument");
  }
  return 0;
}
