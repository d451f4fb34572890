// SPDX-License-Identifier: Apache-2.0
// One page of resources listed by name (baselines, schedules): the page
// after `page_token` (the last name of the previous page), at most
// `page_size` (0: 50; InvalidArgument outside 0..1000). Shared by the gRPC
// methods and the REST routes, so both page alike.
#ifndef COLLBENCH_SERVER_CORE_NAME_PAGES_H_
#define COLLBENCH_SERVER_CORE_NAME_PAGES_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/repeated_ptr_field.h"

namespace collbench {

template <typename T>
absl::Status PageByName(std::vector<T> items, int page_size, const std::string& page_token,
                        google::protobuf::RepeatedPtrField<T>* page, std::string* next_page_token) {
  if (page_size < 0 || page_size > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: ", page_size, " is outside 0..1000"));
  }
  const int limit = page_size == 0 ? 50 : page_size;
  for (T& item : items) {
    if (!page_token.empty() && item.name() <= page_token) continue;
    if (page->size() == limit) {
      *next_page_token = page->Get(limit - 1).name();
      break;
    }
    *page->Add() = std::move(item);
  }
  return absl::OkStatus();
}

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_NAME_PAGES_H_
