// SPDX-License-Identifier: Apache-2.0
#include "client/local_flags.h"

namespace collbench {

void AddLocalFlags(FlagParser* flags, LocalOptions* options) {
  flags->Int("workers", "K", &options->workers, "local workers (default 2)");
  flags->Int("slots", &options->slots, "ranks per worker (default: CPUs)");
  flags->String("store", "FILE", &options->store,
                "keep the runs in this SQLite file (default: in memory, gone after the command), "
                "so a later `collbench local --store FILE suite show ID` or `report` finds them;"
                " its folder must exist");
  flags->String("tuning-dir", "DIR", &options->tuning_dir,
                "the workers' folder of tuning files (e.g. what `advise --write-rules DIR` wrote);"
                " a run names one by its bare name, e.g. --env"
                " OMPI_MCA_coll_tuned_dynamic_rules_filename=openmpi-rules.conf (default: none)");
}

}  // namespace collbench
