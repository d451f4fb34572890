// SPDX-License-Identifier: Apache-2.0
// The MPI flavours by name, by RunSpec.mpi value, by daemon and by version
// line, filled explicitly by RegisterBuiltinFlavors() (builtin.cc; no
// static-initialisation magic). Flavors() is the process' registry, built
// once on first use from RegisterBuiltinFlavors and read-only after.
//
// Thread safety: a FlavorRegistry is filled by one thread, then only read.
#ifndef COLLBENCH_FLAVORS_REGISTRY_H_
#define COLLBENCH_FLAVORS_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "flavors/mpi_flavor.h"

namespace collbench {

class FlavorRegistry {
 public:
  // The first flavour registered is the default (RunSpec.mpi unspecified).
  // REQUIRES: no flavour of the same name or id is registered yet.
  void Register(std::unique_ptr<MpiFlavor> flavor);

  // In registration order.
  std::vector<const MpiFlavor*> List() const;
  // REQUIRES: at least one flavour is registered.
  const MpiFlavor& Default() const;
  // The flavour with this RunSpec.mpi value; the default for 0
  // (unspecified) and for a value no flavour has.
  const MpiFlavor& ForId(int id) const;
  // nullptr when none has that name / starts that daemon / reads so.
  const MpiFlavor* Find(absl::string_view name) const;
  const MpiFlavor* OfDaemon(absl::string_view daemon) const;
  const MpiFlavor* OfVersionLine(absl::string_view version) const;

  // "openmpi or mpich" (the names), "orted, prted or hydra_pmi_proxy"
  // (every daemon): for messages.
  std::string NamesText() const;
  std::string DaemonsText() const;

 private:
  std::vector<std::unique_ptr<MpiFlavor>> flavors_;
};

// Open MPI (the default), then MPICH.
void RegisterBuiltinFlavors(FlavorRegistry* registry);

// The process' registry: RegisterBuiltinFlavors on first use.
const FlavorRegistry& Flavors();

// Shorthands over Flavors().
inline const MpiFlavor& FlavorFor(int id) { return Flavors().ForId(id); }
inline const MpiFlavor* FindFlavor(absl::string_view name) { return Flavors().Find(name); }

// Joins words as "a, b or c".
std::string JoinWithOr(const std::vector<std::string>& words);

}  // namespace collbench

#endif  // COLLBENCH_FLAVORS_REGISTRY_H_
