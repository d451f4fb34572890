// SPDX-License-Identifier: Apache-2.0
// One JSON object per line (common/records.h), flushed per record so the
// agent relays each size while the run goes on.
#include "absl/strings/str_format.h"
#include "worker/engine/report/reporter.h"

namespace collbench {
namespace {

class JsonlReporter final : public Reporter {
 public:
  explicit JsonlReporter(std::FILE* out) : out_(out) {}
  void Start(const StartRecord& r) override { Write(r); }
  void Size(const SizeRecord& r) override { Write(r); }
  void End(const EndRecord& r) override { Write(r); }
  void Error(const ErrorRecord& r) override { Write(r); }

 private:
  void Write(const Record& record) {
    absl::FPrintF(out_, "%s\n", ToJsonLine(record));
    std::fflush(out_);
  }
  std::FILE* out_;
};

}  // namespace

std::unique_ptr<Reporter> NewJsonlReporter(std::FILE* out) {
  return std::make_unique<JsonlReporter>(out);
}

}  // namespace collbench
