// SPDX-License-Identifier: Apache-2.0
// Published references per hardware class (docs/design/workflows.md#verdicts):
// analysis/references/collective_references.json, compiled in, looked up
// for a result so it can say "97% of expected" and whether it is below a
// published floor. Every entry carries its public source; none was
// measured by this project.
//
// Lookup, for one result:
//   class      an entry with a GPU model matches runs on GPUs whose model
//              name has that model as a word ("NVIDIA H100 80GB HBM3" is an
//              H100; a GH200 is not an H200), with as many GPUs as the run
//              uses; an entry without one matches host-memory runs only;
//   path       NVLink / Infinity Fabric entries hold for runs on one host
//              (a multi-node NVLink domain for any), InfiniBand entries for
//              runs across hosts with RDMA devices, and entries measured
//              with NCCL kept on the NICs (NVLink/SHM off) for runs that set
//              NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 on RDMA workers;
//              the GPU count is per host (published figures are per node);
//              "(NVLS)" entries hold for NCCL all-reduce unless the run
//              turns NVLink SHARP off (NCCL_NVLS_ENABLE=0, or NCCL_ALGO
//              without NVLS), "(NVLS off)" entries only then;
//   metric     busbw entries for every operation, algbw entries only where
//              the two are equal (bus factor 1: bw, copies, bcast, reduce);
//   size       an entry holds at the size it was published for and above
//              (published figures are the plateau of large sizes); between
//              two published sizes the value is interpolated on log(size);
//              below the smallest, and for entries published without a
//              size, there is no reference: a figure for 16 GiB says
//              nothing about 1 MiB.
// Several matching entries at one size: the highest value and the highest
// floor hold.
#ifndef COLLBENCH_ANALYSIS_REFERENCES_H_
#define COLLBENCH_ANALYSIS_REFERENCES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/roofline.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"

namespace collbench {

struct ReferenceEntry {
  std::string gpu;           // "" for host-memory entries
  int gpus = 0;              // 0: any count
  std::string interconnect;  // "NVLink4/NVSwitch (NVLS)"
  std::string nic;
  std::string operation;
  bool busbw = true;          // the metric: busbw_GBps, else algbw_GBps
  double value = 0;           // bytes/s; 0: none (a range's low end when a range is given)
  double floor = 0;           // bytes/s; 0: none
  uint64_t at_bytes = 0;      // 0: size not published
  std::string source_url;
  std::string source_title;
};

// What a run is, as far as the table cares.
struct RunClass {
  std::string gpu;   // the GPU model name of the run's workers ("" without GPUs)
  // GPUs (for a host-memory run: ranks) per host, the most any host has;
  // 1 for a copy. Published figures are per node: 8 GPUs of one node, or
  // one GPU and its NIC per node for a two-node bw test.
  int gpus = 0;
  bool on_gpu = false;  // GPU backend, device memory, or a host<->device copy
  int hosts = 0;
  bool rdma = false;    // every worker has an RDMA device
  bool nccl = false;
  bool nvls_off = false;
  bool nics_only = false;  // NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1
};

struct Expected {
  double value_bytes_per_s = 0;  // 0: no expected value, only a floor
  double floor_bytes_per_s = 0;  // 0: no floor
  std::string class_text;        // "8x H200, NVLink4/NVSwitch (NVLS)"
  std::string source_url;
};

class ReferenceTable {
 public:
  // The JSON file's text; InvalidArgument naming the entry and field that
  // is malformed (a version other than 1, an entry without a source URL, a
  // value that is not a positive number).
  static absl::StatusOr<ReferenceTable> Parse(absl::string_view json);
  // The compiled-in table. REQUIRES: it parses (a unit test holds it).
  static const ReferenceTable& Embedded();

  const std::vector<ReferenceEntry>& entries() const { return entries_; }
  // This table's entries and then `more`'s (a site's own references on top
  // of the published ones).
  ReferenceTable With(const ReferenceTable& more) const;
  std::optional<Expected> Lookup(const RunClass& run, absl::string_view operation,
                                 uint64_t bytes) const;

 private:
  std::vector<ReferenceEntry> entries_;
};

// The class of a scheduled run (`inventory` returns a worker's inventory,
// nullptr when unknown).
RunClass RunClassOf(const v1::Run& run,
                    const std::function<const v1::Inventory*(const std::string& worker)>& inventory);

// The verdict of a bus bandwidth against a reference: "below-floor" under a
// floor, "low" under 90% of the expected value, else "ok".
std::string ExpectedVerdict(double busbw_bytes_per_s, const Expected& expected);

// The references of one result of a run on `path`, of class `run_class`:
// % of limit from the roofline, % of expected and its verdict from the
// table; fields left 0/empty where unknown.
v1::ResultReferences ReferencesOf(const PathFacts& path, const RunClass& run_class,
                                  const v1::SizeResult& result,
                                  const ReferenceTable& table = ReferenceTable::Embedded());

// The compiled-in references' JSON text (generated from the data file).
const char* EmbeddedReferencesJson();

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_REFERENCES_H_
