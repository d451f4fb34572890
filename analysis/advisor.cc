#include "analysis/advisor.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "analysis/algorithms.h"
#include "common/atomic_file.h"
#include "common/units.h"
#include "flavors/registry.h"

namespace collbench {
namespace {

std::string Percent(double fraction) {
  return std::isnan(fraction) ? "-" : absl::StrFormat("%.1f", fraction * 100);
}

std::string Micros(double seconds) { return absl::StrFormat("%.3g", seconds * 1e6); }

std::vector<const v1::Run*> Runs(const std::vector<const RunWithResults*>& runs) {
  std::vector<const v1::Run*> out;
  for (const RunWithResults* r : runs) out.push_back(&r->run);
  return out;
}

std::string Common(const std::vector<const RunWithResults*>& runs,
                   std::string (*field)(const v1::Run&)) {
  std::set<std::string> values;
  for (const RunWithResults* r : runs) values.insert(field(r->run));
  return values.size() == 1 ? *values.begin() : "mixed";
}

std::string MpiOf(const v1::Run& run) { return MpiName(run.spec().mpi()); }
std::string BackendOf(const v1::Run& run) {
  return run.spec().backend().empty() ? "mpi" : run.spec().backend();
}

std::vector<SizeContest> Contests(const AdviceGroup& group) {
  std::map<uint64_t, std::vector<std::pair<int, const v1::SizeResult*>>> by_size;
  for (size_t i = 0; i < group.runs.size(); ++i) {
    for (const v1::SizeResult& r : group.runs[i]->results) {
      if (r.avg_s() > 0) by_size[r.bytes()].emplace_back(static_cast<int>(i), &r);
    }
  }
  std::vector<SizeContest> contests;
  for (auto& [bytes, list] : by_size) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      if (a.second->avg_s() != b.second->avg_s()) return a.second->avg_s() < b.second->avg_s();
      return a.first < b.first;
    });
    SizeContest c;
    c.bytes = bytes;
    c.winner = group.configs[list[0].first];
    c.winner_s = list[0].second->avg_s();
    c.margin = NAN;
    if (list.size() > 1) {
      c.runner_up = group.configs[list[1].first];
      c.runner_up_s = list[1].second->avg_s();
      c.margin = c.runner_up_s / c.winner_s - 1;
      c.significant = Separated(MeanInterval(*list[0].second), MeanInterval(*list[1].second));
    }
    contests.push_back(c);
  }
  return contests;
}

// The runner-up named most often in a range (ties: the first met).
std::string UsualRunnerUp(const std::vector<SizeContest>& contests, const SizeRange& range) {
  std::map<std::string, int> counts;
  std::string best;
  for (const SizeContest& c : contests) {
    if (c.bytes < range.from || c.bytes > range.to || c.runner_up.empty()) continue;
    if (++counts[c.runner_up] > counts[best]) best = c.runner_up;
  }
  return best;
}

const RunWithResults* RunNamed(const AdviceGroup& group, const std::string& config) {
  for (size_t i = 0; i < group.configs.size(); ++i) {
    if (group.configs[i] == config) return group.runs[i];
  }
  return nullptr;
}

// Groups whose runs differ in their algorithm only: a tuning file can say
// what their advice says.
bool AlgorithmOnly(const AdviceGroup& group) {
  const std::vector<std::string> varying =
      VaryingConfigFields(Runs(group.runs), LabelFields::kLeftOut);
  return !varying.empty() && varying == std::vector<std::string>{"algorithm"};
}

std::string RangeComment(const AdviceGroup& group, const SizeRange& r) {
  std::string comment =
      absl::StrCat("measured ", SpanText(r), " on ", group.ranks, " ranks: ", r.winner);
  if (!std::isnan(r.margin_min)) {
    absl::StrAppend(&comment, ", ", Percent(r.margin_min), "-", Percent(r.margin_max),
                    "% ahead, significant at ", r.significant_sizes, "/", r.sizes, " sizes");
  }
  return comment;
}

// The forced algorithm winning the most sizes of a group ("" for default).
std::string UsualWinner(const AdviceGroup& group, std::string* comment) {
  std::map<std::string, int> sizes;
  for (const SizeRange& r : group.ranges) {
    const RunWithResults* run = RunNamed(group, r.winner);
    sizes[run == nullptr ? "" : ForcedAlgorithm(run->run.spec())] += r.sizes;
    absl::StrAppend(comment, "#   ", RangeComment(group, r), "\n");
  }
  std::string best;
  int most = -1;
  for (const auto& [algorithm, count] : sizes) {
    if (count > most) most = count, best = algorithm;
  }
  return best;
}

}  // namespace

std::string SpanText(const SizeRange& range) {
  return range.from == range.to
             ? FormatBytes(range.from)
             : absl::StrCat(FormatBytes(range.from), "-", FormatBytes(range.to));
}

std::vector<std::string> SwitchPoints(const std::vector<SizeRange>& ranges) {
  std::vector<std::string> lines;
  for (size_t i = 1; i < ranges.size(); ++i) {
    lines.push_back(absl::StrCat("switch point: ", ranges[i - 1].winner, " -> ", ranges[i].winner,
                                 " at ", FormatBytes(ranges[i].from)));
  }
  return lines;
}

std::vector<SizeRange> MergeRanges(const std::vector<SizeContest>& contests) {
  std::vector<SizeRange> ranges;
  for (const SizeContest& c : contests) {
    if (ranges.empty() || ranges.back().winner != c.winner) {
      ranges.push_back({c.bytes, c.bytes, c.winner, c.margin, c.margin, 0, 0});
    }
    SizeRange& r = ranges.back();
    r.to = c.bytes;
    r.margin_min = std::isnan(r.margin_min) ? c.margin : std::fmin(r.margin_min, c.margin);
    r.margin_max = std::isnan(r.margin_max) ? c.margin : std::fmax(r.margin_max, c.margin);
    ++r.sizes;
    r.significant_sizes += c.significant ? 1 : 0;
  }
  return ranges;
}

Advice Advise(const std::vector<RunWithResults>& runs) {
  Advice advice;
  std::map<std::pair<std::string, int>, std::vector<const RunWithResults*>> by_key;
  for (const RunWithResults& r : runs) {
    const std::string& name = r.run.name();
    if (r.run.state() != v1::SUCCEEDED) {
      advice.notes.push_back(absl::StrCat(name, ": left out, it did not succeed"));
    } else if (r.results.empty()) {
      advice.notes.push_back(absl::StrCat(name, ": left out, it has no results"));
    } else if (r.run.wrong() > 0) {
      advice.notes.push_back(absl::StrCat(name, ": left out, ", r.run.wrong(), " wrong results"));
    } else {
      by_key[{r.run.spec().operation(), r.run.spec().ranks()}].push_back(&r);
    }
  }
  for (auto& [key, members] : by_key) {
    if (members.size() < 2) {
      advice.notes.push_back(absl::StrCat(members[0]->run.name(), ": the only ", key.first,
                                          " run on ", key.second, " ranks, nothing to hold it against"));
      continue;
    }
    AdviceGroup group;
    group.operation = key.first;
    group.ranks = key.second;
    group.runs = members;
    group.mpi = Common(members, MpiOf);
    group.backend = Common(members, BackendOf);
    // Named by how they ran; runs alike in that (a suite's cells of two
    // parts) are named by their labels too rather than by their ids.
    group.configs = DistinctConfigNames(Runs(members), LabelFields::kLeftOut);
    if (VaryingConfigFields(Runs(members), LabelFields::kLeftOut).empty() ||
        std::any_of(group.configs.begin(), group.configs.end(),
                    [](const std::string& name) { return absl::StrContains(name, " (runs/"); })) {
      group.configs = DistinctConfigNames(Runs(members), LabelFields::kIncluded);
    }
    group.contests = Contests(group);
    group.ranges = MergeRanges(group.contests);
    advice.groups.push_back(std::move(group));
  }
  return advice;
}

std::vector<Table> AdviceTables(const Advice& advice) {
  std::vector<Table> tables;
  for (const AdviceGroup& g : advice.groups) {
    Table t{absl::StrCat("advice-", g.operation, "-", g.ranks),
            absl::StrCat(g.operation, " on ", g.ranks, " ranks: the fastest of ", g.configs.size(),
                         " configurations per size range"),
            {"size_range", "best", "best_us", "runner_up", "margin_%", "significant"},
            {},
            {}};
    for (const SizeRange& r : g.ranges) {
      double low = 0, high = 0;
      for (const SizeContest& c : g.contests) {
        if (c.bytes < r.from || c.bytes > r.to) continue;
        low = low == 0 ? c.winner_s : std::fmin(low, c.winner_s);
        high = std::fmax(high, c.winner_s);
      }
      const std::string margin = std::isnan(r.margin_min) ? "-"
                                 : r.margin_min == r.margin_max
                                     ? Percent(r.margin_min)
                                     : absl::StrCat(Percent(r.margin_min), "-", Percent(r.margin_max));
      const std::string significant =
          std::isnan(r.margin_min)           ? "-"
          : r.significant_sizes == r.sizes   ? "yes"
          : r.significant_sizes == 0         ? "no"
                                             : absl::StrCat(r.significant_sizes, "/", r.sizes, " sizes");
      const std::string runner_up = UsualRunnerUp(g.contests, r);
      t.rows.push_back({SpanText(r), r.winner,
                        low == high ? Micros(low) : absl::StrCat(Micros(low), "-", Micros(high)),
                        runner_up.empty() ? "-" : runner_up, margin, significant});
    }
    for (std::string& line : SwitchPoints(g.ranges)) t.notes.push_back(std::move(line));
    std::vector<std::string> named;
    for (size_t i = 0; i < g.configs.size(); ++i) {
      named.push_back(absl::StrCat(g.configs[i], " = ", g.runs[i]->run.name()));
    }
    t.notes.push_back(absl::StrCat("configurations: ", absl::StrJoin(named, ", ")));
    t.notes.push_back(
        "margin: the runner-up's mean over the best's; significant: the two means' 95% "
        "intervals (from the stored histograms) do not overlap");
    tables.push_back(std::move(t));
  }
  if (!advice.notes.empty()) {
    Table left{"advice-left-out", "runs the advice does not use", {"run"}, {}, {}};
    for (const std::string& note : advice.notes) left.rows.push_back({note});
    tables.push_back(std::move(left));
  }
  return tables;
}

OpenMpiRules OpenMpiRulesFrom(const Advice& advice) {
  std::map<int, std::map<int, std::vector<OpenMpiMessageRule>>> by_collective;
  for (const AdviceGroup& g : advice.groups) {
    // Groups of one library that reads numbered rules files ("mixed" has none).
    const MpiFlavor* flavor = FindFlavor(g.mpi);
    const int id = flavor == nullptr ? -1 : flavor->RulesFileCollectiveId(g.operation);
    if (id < 0 || g.backend != "mpi" || !AlgorithmOnly(g)) continue;
    std::vector<OpenMpiMessageRule> messages;
    for (const SizeRange& r : g.ranges) {
      const RunWithResults* run = RunNamed(g, r.winner);
      const std::string algorithm = run == nullptr ? "" : ForcedAlgorithm(run->run.spec());
      const int number = flavor->AlgorithmNumber(g.operation, algorithm);
      if (!messages.empty() && messages.back().algorithm == number) continue;
      messages.push_back({messages.empty() ? 0 : r.from, number, 0, 0});
    }
    by_collective[id][g.ranks] = std::move(messages);
  }
  OpenMpiRules rules;
  for (auto& [id, comms] : by_collective) {
    OpenMpiCollectiveRules collective{id, {}};
    for (auto& [size, messages] : comms) collective.comms.push_back({size, std::move(messages)});
    rules.collectives.push_back(std::move(collective));
  }
  return rules;
}

std::string FormatOpenMpiRules(const OpenMpiRules& rules, const Advice& advice) {
  std::string out =
      "# Open MPI coll_tuned dynamic rules from collbench advise (the classic format of\n"
      "# Open MPI 4.1 and later). With collbench, install it in the workers' --tuning-dir\n"
      "# and run with --env OMPI_MCA_coll_tuned_use_dynamic_rules=1 --env\n"
      "# OMPI_MCA_coll_tuned_dynamic_rules_filename=NAME (its bare file name); with mpirun,\n"
      "#   --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE.\n"
      "# No coll_tuned_<op>_algorithm setting: it would override the file. A message\n"
      "# size is the bytes of the whole vector (allreduce, bcast, reduce) or of all ranks'\n"
      "# blocks (allgather, gather, alltoall, reduce_scatter), as collbench's size column;\n"
      "# a rule holds from its size up to the next rule's; algorithm 0 leaves the choice\n"
      "# to Open MPI.\n";
  absl::StrAppend(&out, rules.collectives.size(), "  # collectives\n");
  for (const OpenMpiCollectiveRules& c : rules.collectives) {
    std::string op;
    for (const AdviceGroup& g : advice.groups) {
      if (OpenMpiCollectiveId(g.operation) == c.collective_id) op = g.operation;
    }
    const std::vector<std::string>& names = OpenMpiAlgorithms(op);
    absl::StrAppend(&out, c.collective_id, "  # collective id: ", op, "\n", c.comms.size(),
                    "  # communicator sizes\n");
    for (const OpenMpiCommRule& comm : c.comms) {
      absl::StrAppend(&out, comm.comm_size, "  # from ", comm.comm_size, " ranks up\n",
                      comm.messages.size(), "  # message sizes\n");
      const AdviceGroup* group = nullptr;
      for (const AdviceGroup& g : advice.groups) {
        if (g.operation == op && g.ranks == comm.comm_size) group = &g;
      }
      for (const OpenMpiMessageRule& m : comm.messages) {
        const std::string name = m.algorithm == 0 ? "Open MPI's own choice"
                                                  : names[m.algorithm - 1];
        std::string why;
        if (group != nullptr) {
          for (const SizeRange& r : group->ranges) {
            if (r.from >= m.min_bytes) {  // the range the rule starts with
              why = RangeComment(*group, r);
              break;
            }
          }
        }
        absl::StrAppend(&out, m.min_bytes, " ", m.algorithm, " ", m.faninout, " ", m.segsize,
                        "  # ", name, why.empty() ? "" : "; " + why, "\n");
      }
    }
  }
  return out;
}

absl::StatusOr<OpenMpiRules> ParseOpenMpiRules(const std::string& text) {
  // The numbers in order, each with its line, comments gone.
  std::vector<std::pair<long long, int>> numbers;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const size_t hash = line.find('#');
    if (hash != absl::string_view::npos) line = line.substr(0, hash);
    for (absl::string_view word : absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty())) {
      long long value = 0;
      if (!absl::SimpleAtoi(word, &value) || value < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("rules file line ", line_number, ": '", word, "' is not a count or size"));
      }
      numbers.emplace_back(value, line_number);
    }
  }
  size_t at = 0;
  auto next = [&](const char* what, long long* value) -> absl::Status {
    if (at >= numbers.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("rules file ends where ", what, " should be (line ", line_number, ")"));
    }
    *value = numbers[at++].first;
    return absl::OkStatus();
  };
  OpenMpiRules rules;
  long long collectives = 0;
  if (absl::Status s = next("the number of collectives", &collectives); !s.ok()) return s;
  for (long long i = 0; i < collectives; ++i) {
    OpenMpiCollectiveRules c;
    long long id = 0, comms = 0;
    if (absl::Status s = next("a collective id", &id); !s.ok()) return s;
    if (absl::Status s = next("the number of communicator sizes", &comms); !s.ok()) return s;
    c.collective_id = static_cast<int>(id);
    for (long long j = 0; j < comms; ++j) {
      OpenMpiCommRule comm;
      long long size = 0, messages = 0;
      if (absl::Status s = next("a communicator size", &size); !s.ok()) return s;
      if (absl::Status s = next("the number of message sizes", &messages); !s.ok()) return s;
      comm.comm_size = static_cast<int>(size);
      for (long long k = 0; k < messages; ++k) {
        long long v[4];
        for (long long& x : v) {
          if (absl::Status s = next("a message rule (size algorithm faninout segsize)", &x);
              !s.ok()) {
            return s;
          }
        }
        if (k == 0 && v[0] != 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "rules file line ", numbers[at - 4].second,
              ": the first message rule must start at size 0 (Open MPI refuses the file)"));
        }
        comm.messages.push_back({static_cast<uint64_t>(v[0]), static_cast<int>(v[1]),
                                 static_cast<int>(v[2]), static_cast<int>(v[3])});
      }
      c.comms.push_back(std::move(comm));
    }
    rules.collectives.push_back(std::move(c));
  }
  if (at != numbers.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rules file line ", numbers[at].second, ": more numbers than the counts say"));
  }
  return rules;
}

std::string FormatMpichEnv(const Advice& advice, EnvSettings* settings) {
  std::string out;
  // Per operation, the group with the most ranks among the libraries that
  // force an algorithm by name with one variable ("mixed" groups have none).
  std::map<std::string, std::pair<const AdviceGroup*, const MpiFlavor*>> chosen;
  for (const AdviceGroup& g : advice.groups) {
    const MpiFlavor* flavor = FindFlavor(g.mpi);
    if (flavor == nullptr || flavor->AlgorithmVariable(g.operation).empty()) continue;
    if (g.backend != "mpi" || !AlgorithmOnly(g)) continue;
    if (flavor->Algorithms(g.operation).empty()) continue;
    auto& slot = chosen[g.operation];
    if (slot.first == nullptr || g.ranks > slot.first->ranks) slot = {&g, flavor};
  }
  for (const auto& [op, choice] : chosen) {
    const auto& [group, flavor] = choice;
    std::string ranges;
    const std::string winner = UsualWinner(*group, &ranges);
    const std::string variable = flavor->AlgorithmVariable(op);
    absl::StrAppend(&out, "# ", op, " on ", group->ranks, " ranks, by size range:\n", ranges);
    if (winner.empty()) {
      absl::StrAppend(&out, "# ", flavor->display_name(), "'s own choice wins the most sizes: leave ",
                      variable, " unset\n");
      continue;
    }
    if (group->ranges.size() > 1) {
      absl::StrAppend(&out, "# a CVAR holds for every size: this is the algorithm that wins the "
                            "most sizes\n");
    }
    absl::StrAppend(&out, variable, "=", winner, "\n");
    (*settings)[variable] = winner;
  }
  if (out.empty()) return out;
  return absl::StrCat(
      "# MPICH collective selection from collbench advise: export these variables or pass\n"
      "# them as `mpiexec -genv KEY VALUE` / `collbench run --env KEY=VALUE`.\n",
      out);
}

std::string FormatNcclEnv(const Advice& advice, EnvSettings* settings) {
  std::string out;
  std::map<std::string, int> algo_sizes, proto_sizes;
  for (const AdviceGroup& g : advice.groups) {
    if (g.backend != "nccl" || !AlgorithmOnly(g)) continue;
    absl::StrAppend(&out, "# ", g.operation, " on ", g.ranks, " ranks, by size range:\n");
    std::string ranges;
    UsualWinner(g, &ranges);
    absl::StrAppend(&out, ranges);
    for (const SizeRange& r : g.ranges) {
      const RunWithResults* run = RunNamed(g, r.winner);
      if (run == nullptr) continue;
      const auto& env = run->run.spec().env();
      algo_sizes[env.contains("NCCL_ALGO") ? env.at("NCCL_ALGO") : ""] += r.sizes;
      proto_sizes[env.contains("NCCL_PROTO") ? env.at("NCCL_PROTO") : ""] += r.sizes;
    }
  }
  if (out.empty()) return out;
  auto most = [](const std::map<std::string, int>& counts) {
    std::string best;
    int n = -1;
    for (const auto& [value, count] : counts) {
      if (count > n) n = count, best = value;
    }
    return best;
  };
  std::string head =
      "# NCCL settings from collbench advise. NCCL_ALGO and NCCL_PROTO hold for every\n"
      "# size and collective: these are the values that win the most sizes; an unset\n"
      "# one leaves NCCL's tuner its choice.\n";
  for (const auto& [key, counts] : {std::pair{"NCCL_ALGO", algo_sizes}, {"NCCL_PROTO", proto_sizes}}) {
    const std::string value = most(counts);
    if (value.empty()) continue;
    absl::StrAppend(&out, key, "=", value, "\n");
    (*settings)[key] = value;
  }
  return head + out;
}

absl::StatusOr<EnvSettings> ParseEnvFile(const std::string& text) {
  EnvSettings settings;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("env file line ", line_number, ": '", line, "' is not KEY=VALUE"));
    }
    settings[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return settings;
}

absl::StatusOr<std::vector<std::string>> WriteTuningFiles(const Advice& advice,
                                                          const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InvalidArgumentError(
        absl::StrCat("--write-rules: cannot create ", dir, ": ", std::strerror(errno)));
  }
  std::vector<std::pair<std::string, std::string>> files;
  const OpenMpiRules rules = OpenMpiRulesFrom(advice);
  if (!rules.collectives.empty()) {
    files.emplace_back("openmpi-rules.conf", FormatOpenMpiRules(rules, advice));
  }
  EnvSettings ignored;
  if (std::string text = FormatMpichEnv(advice, &ignored); !text.empty()) {
    files.emplace_back("mpich.env", text);
  }
  if (std::string text = FormatNcclEnv(advice, &ignored); !text.empty()) {
    files.emplace_back("nccl.env", text);
  }
  std::vector<std::string> written;
  for (const auto& [name, text] : files) {
    const std::string path = absl::StrCat(dir, "/", name);
    if (absl::Status s = WriteFileAtomically(path, text); !s.ok()) return s;
    written.push_back(path);
  }
  return written;
}

}  // namespace collbench
