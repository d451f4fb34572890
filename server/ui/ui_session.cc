// SPDX-License-Identifier: Apache-2.0
#include "server/ui/ui_session.h"

#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace collbench {
namespace {

bool Unreserved(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
         c == '~';
}

// Percent-encoding keeps any token a valid cookie value.
std::string Encode(absl::string_view text) {
  std::string out;
  for (char c : text) {
    if (Unreserved(c)) {
      out += c;
    } else {
      absl::StrAppend(&out, "%", absl::BytesToHexString(absl::string_view(&c, 1)));
    }
  }
  return out;
}

std::string Decode(absl::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && absl::ascii_isxdigit(text[i + 1]) &&
        absl::ascii_isxdigit(text[i + 2])) {
      out += absl::HexStringToBytes(text.substr(i + 1, 2));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

bool IsUiPath(absl::string_view path) { return absl::StartsWith(path, "/ui/"); }

std::string UiSessionFromCookies(absl::string_view cookie_header) {
  for (absl::string_view part : absl::StrSplit(cookie_header, ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, kUiCookieName) && absl::ConsumePrefix(&part, "=")) {
      return Decode(part);
    }
  }
  return "";
}

std::string UiSessionCookie(absl::string_view id, bool secure, int64_t max_age_s) {
  return absl::StrCat(kUiCookieName, "=", Encode(id), "; HttpOnly; SameSite=Strict; Path=/",
                      "; Max-Age=", max_age_s, secure ? "; Secure" : "");
}

std::string UiClearedCookie(bool secure) { return UiSessionCookie("", secure, 0); }

std::string SafeUiTarget(absl::string_view next) {
  if (!IsUiPath(next) || absl::StrContains(next, "//") || absl::StrContains(next, "\\") ||
      absl::StrContains(next, "\r") || absl::StrContains(next, "\n")) {
    return "/ui/";
  }
  return std::string(next);
}

std::string NewScriptNonce() {
  std::random_device random;
  std::string bytes(16, '\0');
  for (char& b : bytes) b = static_cast<char>(random() & 0xff);
  return absl::Base64Escape(bytes);
}

std::map<std::string, std::string> UiSecurityHeaders(const std::string& nonce) {
  const std::string script = nonce.empty() ? "'none'" : absl::StrCat("'nonce-", nonce, "'");
  return {
      {"Content-Security-Policy",
       absl::StrCat("default-src 'none'; script-src ", script,
                    "; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; "
                    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")},
      {"X-Content-Type-Options", "nosniff"},
      // Not no-referrer: under it a browser sends `Origin: null` with the
      // pages' own form POSTs, which the request guard refuses. same-origin
      // still sends nothing to other sites.
      {"Referrer-Policy", "same-origin"},
      {"Cache-Control", "no-store"},
  };
}

}  // namespace collbench
