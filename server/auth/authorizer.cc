// SPDX-License-Identifier: Apache-2.0
#include "server/auth/authorizer.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace collbench {
namespace {

std::array<uint8_t, 32> Sha256(absl::string_view text) {
  std::array<uint8_t, 32> digest;
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return digest;
}

// The roles that join through WorkerGateway.Connect, protected apart from
// the API's.
bool JoinsGateway(Role role) { return role == Role::kWorker || role == Role::kLauncher; }

bool Allows(Role have, Role needed) {
  if (have == needed) return true;
  return have == Role::kOperator && needed == Role::kRead;
}

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kPublic:
      return "public";
    case Role::kRead:
      return "read";
    case Role::kOperator:
      return "operator";
    case Role::kWorker:
      return "worker";
    case Role::kLauncher:
      return "launcher";
  }
  return "unknown";
}

absl::StatusOr<Authorizer> Authorizer::FromText(absl::string_view text) {
  Authorizer authorizer;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": expected 'ROLE TOKEN', got ", fields.size(),
                       " fields"));
    }
    Role role;
    if (fields[0] == "read") {
      role = Role::kRead;
    } else if (fields[0] == "operator") {
      role = Role::kOperator;
    } else if (fields[0] == "worker") {
      role = Role::kWorker;
    } else if (fields[0] == "launcher") {
      role = Role::kLauncher;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": unknown role '",
                                                     fields[0],
                                                     "' (read, operator, worker or launcher)"));
    }
    if (authorizer.Find(fields[1]) >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": the same token appears twice"));
    }
    authorizer.Add(role, std::string(fields[1]));
  }
  return authorizer;
}

absl::StatusOr<Authorizer> Authorizer::FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--tokens: cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<Authorizer> parsed = FromText(text.str());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--tokens ", path, ": ", parsed.status().message()));
  }
  if (!parsed->Protects(Role::kRead) && !parsed->Protects(Role::kWorker)) {
    return absl::InvalidArgumentError(absl::StrCat("--tokens ", path, ": no tokens in the file"));
  }
  return parsed;
}

void Authorizer::Add(Role role, std::string token) {
  entries_.push_back({Sha256(token), role});
  // The caller's copy of the token is its own to clear; this one goes now.
  OPENSSL_cleanse(token.data(), token.size());
}

int Authorizer::Find(absl::string_view token) const {
  const Digest digest = Sha256(token);
  int found = -1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    // Every entry is compared; the select below has no data-dependent branch
    // on the digests' bytes.
    const int same = CRYPTO_memcmp(digest.data(), entries_[i].digest.data(), digest.size()) == 0;
    found = same && found < 0 ? static_cast<int>(i) : found;
  }
  return found;
}

absl::StatusOr<Role> Authorizer::RoleOf(absl::string_view token) const {
  const int index = Find(token);
  if (index < 0) return absl::NotFoundError("unknown token");
  return entries_[index].role;
}

bool Authorizer::Protects(Role role) const {
  if (role == Role::kPublic) return false;
  for (const Entry& entry : entries_) {
    if (JoinsGateway(entry.role) == JoinsGateway(role)) return true;
  }
  return false;
}

absl::Status Authorizer::Check(absl::string_view authorization, Role needed) const {
  if (!Protects(needed)) return absl::OkStatus();
  if (authorization.empty()) {
    return absl::UnauthenticatedError("missing bearer token (Authorization: Bearer TOKEN)");
  }
  constexpr absl::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::StartsWithIgnoreCase(authorization, kScheme)) {
    return absl::UnauthenticatedError("the Authorization header is not 'Bearer TOKEN'");
  }
  return CheckToken(absl::StripAsciiWhitespace(authorization.substr(kScheme.size())), needed);
}

absl::Status Authorizer::CheckToken(absl::string_view token, Role needed) const {
  if (!Protects(needed)) return absl::OkStatus();
  if (token.empty()) return absl::UnauthenticatedError("missing token");
  const int index = Find(token);
  if (index < 0) return absl::UnauthenticatedError("unknown token");
  const Role have = entries_[index].role;
  if (!Allows(have, needed)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "a ", RoleName(have), " token may not do this; it needs the ", RoleName(needed), " role"));
  }
  return absl::OkStatus();
}

std::string Authorizer::CallerOf(absl::string_view authorization, absl::string_view peer) const {
  constexpr absl::string_view kScheme = "bearer ";
  if (authorization.size() > kScheme.size() &&
      absl::StartsWithIgnoreCase(authorization, kScheme)) {
    const absl::string_view token =
        absl::StripAsciiWhitespace(authorization.substr(kScheme.size()));
    const int index = Find(token);
    if (index >= 0 && !JoinsGateway(entries_[index].role)) {
      return absl::StrCat("token ", index);
    }
  }
  // gRPC peers are "ipv4:1.2.3.4:5678", "ipv6:[::1]:5678" or "unix:/path".
  absl::string_view host = peer;
  if (const size_t scheme = host.find(':');
      scheme != absl::string_view::npos && absl::StartsWith(host, "ip")) {
    host.remove_prefix(scheme + 1);
    if (const size_t port = host.rfind(':'); port != absl::string_view::npos) {
      host = host.substr(0, port);
    }
  }
  if (host.empty()) return "anonymous";
  return absl::StrCat("peer ", host);
}

}  // namespace collbench
