// SPDX-License-Identifier: Apache-2.0
#include "api/tuning_env.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "flavors/registry.h"

namespace collbench {
namespace {

using G = TuningGrammar;

constexpr size_t kMaxValueChars = 256;
constexpr size_t kMaxWordChars = 64;
constexpr size_t kMaxFileNameChars = 128;

// UCX (ucp/uct configuration names).
constexpr TuningParam kUcx[] = {
    {"UCX_TLS", G::kIdentifierList},
    {"UCX_NET_DEVICES", G::kInterfaceList},
    {"UCX_SHM_DEVICES", G::kInterfaceList},
    {"UCX_SELF_DEVICES", G::kInterfaceList},
    {"UCX_RNDV_THRESH", G::kUcxSize},
    {"UCX_ZCOPY_THRESH", G::kUcxSize},
    {"UCX_BCOPY_THRESH", G::kUcxSize},
    {"UCX_RNDV_PIPELINE_SEND_THRESH", G::kUcxSize},
    {"UCX_RNDV_FRAG_SIZE", G::kUcxSize},
    {"UCX_RNDV_SCHEME", G::kIdentifier},
    {"UCX_MAX_EAGER_LANES", G::kUnsigned},
    {"UCX_MAX_RNDV_LANES", G::kUnsigned},
    {"UCX_PROTO_ENABLE", G::kIdentifier},
    {"UCX_SEG_SIZE", G::kUcxSize},
    {"UCX_MAX_SHORT", G::kUcxSize},
    {"UCX_TCP_TX_SEG_SIZE", G::kUcxSize},
    {"UCX_TCP_RX_SEG_SIZE", G::kUcxSize},
};

// NCCL 2.28 (docs: Environment Variables).
constexpr TuningParam kNccl[] = {
    {"NCCL_ALGO", G::kIdentifierList},
    {"NCCL_PROTO", G::kIdentifierList},
    {"NCCL_MIN_NCHANNELS", G::kUnsigned},
    {"NCCL_MAX_NCHANNELS", G::kUnsigned},
    {"NCCL_MIN_CTAS", G::kUnsigned},
    {"NCCL_MAX_CTAS", G::kUnsigned},
    {"NCCL_NTHREADS", G::kUnsigned},
    {"NCCL_BUFFSIZE", G::kUnsigned},
    {"NCCL_P2P_DISABLE", G::kBool},
    {"NCCL_P2P_LEVEL", G::kIdentifier},
    {"NCCL_P2P_NET_CHUNKSIZE", G::kUnsigned},
    {"NCCL_SHM_DISABLE", G::kBool},
    {"NCCL_IB_DISABLE", G::kBool},
    {"NCCL_IB_HCA", G::kInterfaceList},
    {"NCCL_NET_GDR_LEVEL", G::kIdentifier},
    {"NCCL_NET", G::kIdentifier},
    {"NCCL_CROSS_NIC", G::kUnsigned},
    {"NCCL_SOCKET_IFNAME", G::kInterfaceList},
    {"NCCL_SOCKET_NTHREADS", G::kUnsigned},
    {"NCCL_NSOCKS_PERTHREAD", G::kUnsigned},
    {"NCCL_NVLS_ENABLE", G::kBool},
    {"NCCL_COLLNET_ENABLE", G::kBool},
    {"NCCL_CUMEM_ENABLE", G::kBool},
    {"NCCL_LAUNCH_MODE", G::kIdentifier},
    {"NCCL_DEBUG", G::kIdentifier},
    {"NCCL_DEBUG_SUBSYS", G::kIdentifierList},
};

std::vector<TuningParam> BuildTable() {
  std::vector<TuningParam> table;
  // The names are assembled once and kept for the life of the process.
  static std::vector<std::string>* names = new std::vector<std::string>();
  auto add = [&](std::string name, G grammar) {
    names->push_back(std::move(name));
    table.push_back({nullptr, grammar});
  };
  for (const MpiFlavor* flavor : Flavors().List()) {
    for (FlavorParam& p : flavor->TuningParams()) add(std::move(p.name), p.grammar);
  }
  for (const TuningParam& p : kUcx) add(p.name, p.grammar);
  for (const TuningParam& p : kNccl) add(p.name, p.grammar);
  for (size_t i = 0; i < table.size(); ++i) table[i].name = (*names)[i].c_str();
  return table;
}

const std::map<std::string, G, std::less<>>& TableByName() {
  static const auto* by_name = [] {
    auto* map = new std::map<std::string, G, std::less<>>();
    for (const TuningParam& p : TuningParams()) map->emplace(p.name, p.grammar);
    return map;
  }();
  return *by_name;
}

// The words of a key that say it names something to load, run, read or write.
constexpr const char* kRefusedWords[] = {
    "agent",  "agents",  "plugin", "plugins", "path",    "paths",   "dir",     "dirs",
    "directory", "file", "files",  "filename", "lib",    "libs",    "library", "libraries",
    "preload", "conf",   "config", "prefix",  "exec",   "command", "cmd",     "program",
    "script", "tmpdir",  "home",   "module",  "modules", "wrapper", "hook",
    "hooks",  "binary",  "dso",    "so"};

bool IsWordChar(char ch) { return absl::ascii_isalnum(ch) || ch == '_' || ch == '.' || ch == '-'; }

bool IsWord(absl::string_view word) {
  return !word.empty() && word.size() <= kMaxWordChars && absl::ascii_isalnum(word[0]) &&
         std::all_of(word.begin(), word.end(), IsWordChar);
}

bool IsUnsigned(absl::string_view text) {
  return !text.empty() && text.size() <= 19 &&
         std::all_of(text.begin(), text.end(), [](char ch) { return absl::ascii_isdigit(ch); });
}

bool IsSize(absl::string_view text) {
  if (!text.empty() && absl::StrContains("KMGkmg", text.back())) text.remove_suffix(1);
  return IsUnsigned(text);
}

bool IsUcxSize(absl::string_view text) {
  if (text == "inf" || text == "auto") return true;
  if (!text.empty() && (text.back() == 'b' || text.back() == 'B')) text.remove_suffix(1);
  return IsSize(text);
}

bool IsCidr(absl::string_view text) {
  // Exactly one '/': a pair from StrSplit would drop anything after a second.
  if (std::count(text.begin(), text.end(), '/') != 1) return false;
  std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(text, '/');
  int bits = 0;
  if (!absl::SimpleAtoi(parts.second, &bits) || bits < 0 || bits > 32 ||
      !IsUnsigned(parts.second)) {
    return false;
  }
  std::vector<absl::string_view> octets = absl::StrSplit(parts.first, '.');
  if (octets.size() != 4) return false;
  return std::all_of(octets.begin(), octets.end(), [](absl::string_view octet) {
    int value = 0;
    return octet.size() <= 3 && IsUnsigned(octet) && absl::SimpleAtoi(octet, &value) &&
           value <= 255;
  });
}

// eth0, ib0.8001, mlx5_0:1, =eth0 (NCCL's exact match), or an IPv4 CIDR.
bool IsInterface(absl::string_view text) {
  if (absl::StrContains(text, '/')) return IsCidr(text);
  absl::ConsumePrefix(&text, "=");
  std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(text, ':');
  return IsWord(parts.first) && (parts.second.empty() || IsUnsigned(parts.second)) &&
         std::count(text.begin(), text.end(), ':') <= 1 && text.back() != ':';
}

template <typename Pred>
bool IsList(absl::string_view text, Pred item) {
  absl::ConsumePrefix(&text, "^");
  if (text.empty()) return false;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    if (!item(part)) return false;
  }
  return true;
}

bool Matches(G grammar, absl::string_view value) {
  switch (grammar) {
    case G::kUnsigned: return IsUnsigned(value);
    case G::kSize: return IsSize(value);
    case G::kUcxSize: return IsUcxSize(value);
    case G::kBool: return value == "0" || value == "1";
    case G::kIdentifier: return IsWord(value);
    case G::kIdentifierList: return IsList(value, IsWord);
    case G::kInterfaceList: return IsList(value, IsInterface);
    case G::kTuningFile: return IsTuningFileName(value);
  }
  return false;
}

}  // namespace

const std::vector<TuningParam>& TuningParams() {
  static const auto* table = new std::vector<TuningParam>(BuildTable());
  return *table;
}

absl::string_view TuningGrammarText(TuningGrammar grammar) {
  switch (grammar) {
    case G::kUnsigned: return "an unsigned integer";
    case G::kSize: return "a size (unsigned integer, optional K/M/G suffix)";
    case G::kUcxSize: return "a size (unsigned integer, optional K/M/G and B suffix) or inf/auto";
    case G::kBool: return "0 or 1";
    case G::kIdentifier: return "an identifier ([A-Za-z0-9][A-Za-z0-9_.-]*)";
    case G::kIdentifierList: return "a comma list of identifiers, optionally ^-prefixed";
    case G::kInterfaceList:
      return "a comma list of interface/device names (name, =name, name:port) or IPv4 CIDRs, "
             "optionally ^-prefixed";
    case G::kTuningFile:
      return "a tuning file's bare name in the worker's --tuning-dir ([A-Za-z0-9_][A-Za-z0-9_.-]*, "
             "no '/')";
  }
  return "";
}

bool IsTuningParam(absl::string_view key) { return TableByName().contains(key); }

bool IsTuningFileParam(absl::string_view key) {
  auto it = TableByName().find(key);
  return it != TableByName().end() && it->second == G::kTuningFile;
}

bool IsTuningFileName(absl::string_view name) {
  return !name.empty() && name.size() <= kMaxFileNameChars && name[0] != '.' &&
         name[0] != '-' && std::all_of(name.begin(), name.end(), IsWordChar);
}

bool NamesProgramOrFile(absl::string_view key) {
  if (IsTuningFileParam(key)) return false;  // confined to the worker's --tuning-dir
  const std::string lower = absl::AsciiStrToLower(key);
  if (absl::StartsWith(lower, "ld_") || absl::StrContains(lower, "param_files")) return true;
  for (absl::string_view word : absl::StrSplit(lower, '_')) {
    for (const char* refused : kRefusedWords) {
      if (word == refused) return true;
    }
  }
  return false;
}

absl::Status CheckTuningParam(absl::string_view key, absl::string_view value) {
  const std::string shown = absl::CHexEscape(key);
  if (NamesProgramOrFile(key)) {
    return absl::InvalidArgumentError(absl::StrCat(
        shown, ": names a program, library, plugin, file or directory; such parameters are "
               "refused (docs/tuning-parameters.md)"));
  }
  auto it = TableByName().find(key);
  if (it == TableByName().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(shown, ": not a tuning parameter collbench knows (see "
                            "docs/tuning-parameters.md for the list and how to propose one)"));
  }
  if (value.size() > kMaxValueChars || !Matches(it->second, value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        shown, ": value '", absl::CHexEscape(value.substr(0, 64)),
        value.size() > 64 ? "...'" : "'", " is not ", TuningGrammarText(it->second)));
  }
  return absl::OkStatus();
}

}  // namespace collbench
