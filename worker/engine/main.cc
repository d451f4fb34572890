// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/rank_main.h"

// A sanitized build (scripts/test-fuzz) runs real ranks in the security
// tests of the coordinator and the agent. The MPI libraries keep some of
// their allocations until the process exits, by design, so LeakSanitizer
// would fail every rank on memory that is not the engine's; the engine's
// own code is leak-checked by its unit tests. AddressSanitizer's other
// checks stay on in the ranks.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COLLBENCH_RANK_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(COLLBENCH_RANK_ASAN)
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
#endif

int main(int argc, char** argv) { return collbench::RunRankMain(argc, argv); }
