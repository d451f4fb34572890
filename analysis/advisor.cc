// SPDX-License-Identifier: Apache-2.0
#include "analysis/advisor.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
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

namespace {

// One group's message rules: a forced algorithm only where its win is
// significant, Open MPI's own decision below the smallest size measured,
// where no win is significant and above the largest size measured. Adjacent
// sizes with the same algorithm share a rule, which holds from its first
// size up to the next rule's.
std::vector<OpenMpiMessageRule> MessageRules(const AdviceGroup& g, const MpiFlavor& flavor) {
  std::vector<OpenMpiMessageRule> rules;
  auto add = [&rules](uint64_t from, int algorithm, std::string why) {
    if (!rules.empty() && rules.back().algorithm == algorithm) {
      absl::StrAppend(&rules.back().why, "; ", why);
      return;
    }
    rules.push_back({from, algorithm, 0, 0, std::move(why)});
  };
  add(0, 0, absl::StrCat("below ", FormatBytes(g.contests.front().bytes), ": not measured"));
  for (const SizeContest& c : g.contests) {
    const RunWithResults* run = RunNamed(g, c.winner);
    const int number = c.significant && run != nullptr
                           ? flavor.AlgorithmNumber(g.operation, ForcedAlgorithm(run->run.spec()))
                           : 0;
    std::string why = absl::StrCat(FormatBytes(c.bytes), ": ", c.winner);
    if (c.runner_up.empty()) {
      absl::StrAppend(&why, " ran alone");
    } else {
      absl::StrAppend(&why, " ", Percent(c.margin), "% ahead of ", c.runner_up,
                      c.significant ? "" : ", not significant");
    }
    add(c.bytes, number, std::move(why));
  }
  add(g.contests.back().bytes + 1, 0,
      absl::StrCat("above ", FormatBytes(g.contests.back().bytes), ": not measured"));
  return rules;
}

bool ForcesAnAlgorithm(const std::vector<OpenMpiMessageRule>& rules) {
  return std::any_of(rules.begin(), rules.end(),
                     [](const OpenMpiMessageRule& m) { return m.algorithm != 0; });
}

// `measured` (communicator size -> its rules) with Open MPI's own decision
// on every communicator size between and around them: Open MPI applies a
// communicator size's rules from that size up to the next one listed.
std::vector<OpenMpiCommRule> ScopedComms(std::map<int, std::vector<OpenMpiMessageRule>> measured) {
  std::vector<OpenMpiCommRule> comms;
  auto unmeasured = [](int from, std::string why) {
    return OpenMpiCommRule{from, {{0, 0, 0, 0, ""}}, std::move(why)};
  };
  if (measured.begin()->first > 1) {
    comms.push_back(unmeasured(1, absl::StrCat("below ", measured.begin()->first,
                                               " ranks: not measured")));
  }
  for (auto it = measured.begin(); it != measured.end(); ++it) {
    const int size = it->first;
    comms.push_back({size, std::move(it->second), absl::StrCat(size, " ranks: measured")});
    const auto next = std::next(it);
    if (next == measured.end() || next->first > size + 1) {
      const std::string span =
          next == measured.end()        ? absl::StrCat("from ", size + 1, " ranks up")
          : next->first == size + 2     ? absl::StrCat(size + 1, " ranks")
                                        : absl::StrCat(size + 1, "-", next->first - 1, " ranks");
      comms.push_back(unmeasured(size + 1, absl::StrCat(span, ": not measured")));
    }
  }
  return comms;
}

}  // namespace

OpenMpiRules OpenMpiRulesFrom(const Advice& advice) {
  std::map<int, std::map<int, std::vector<OpenMpiMessageRule>>> by_collective;
  for (const AdviceGroup& g : advice.groups) {
    // Groups of one library that reads numbered rules files ("mixed" has none).
    const MpiFlavor* flavor = FindFlavor(g.mpi);
    const int id = flavor == nullptr ? -1 : flavor->RulesFileCollectiveId(g.operation);
    if (id < 0 || g.backend != "mpi" || !AlgorithmOnly(g) || g.contests.empty()) continue;
    std::vector<OpenMpiMessageRule> messages = MessageRules(g, *flavor);
    if (ForcesAnAlgorithm(messages)) by_collective[id][g.ranks] = std::move(messages);
  }
  OpenMpiRules rules;
  for (auto& [id, comms] : by_collective) {
    rules.collectives.push_back({id, ScopedComms(std::move(comms))});
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
      "# blocks (allgather, gather, alltoall, reduce_scatter), as collbench's size column.\n"
      "# Rules force an algorithm only where its win was significant (the two means' 95%\n"
      "# intervals, from the histograms, do not overlap), and only on the communicator\n"
      "# and message sizes measured: everywhere else algorithm 0 leaves the choice to\n"
      "# Open MPI. A rule holds from its size up to the next rule's.\n";
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
      absl::StrAppend(&out, comm.comm_size, "  # ", comm.why, "\n", comm.messages.size(),
                      "  # message sizes\n");
      for (const OpenMpiMessageRule& m : comm.messages) {
        const bool named = m.algorithm > 0 && m.algorithm <= static_cast<int>(names.size());
        absl::StrAppend(&out, m.min_bytes, " ", m.algorithm, " ", m.faninout, " ", m.segsize,
                        "  # ", named ? names[m.algorithm - 1] : "Open MPI's own decision",
                        m.why.empty() ? "" : "; ", m.why, "\n");
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
                                 static_cast<int>(v[2]), static_cast<int>(v[3]), ""});
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

namespace {

// The value `value_of` gives the winner of every size of `g`, when every
// win is significant and all give the same value; "" otherwise.
std::string SignificantEverywhere(
    const AdviceGroup& g, const std::function<std::string(const RunWithResults&)>& value_of) {
  std::string value;
  for (const SizeContest& c : g.contests) {
    const RunWithResults* run = RunNamed(g, c.winner);
    if (!c.significant || run == nullptr) return "";
    const std::string v = value_of(*run);
    if (v.empty() || (!value.empty() && v != value)) return "";
    value = v;
  }
  return value;
}

// An environment setting holds at every communicator and message size, so
// the files carry it commented out, with the scope it was measured on.
std::string SuggestedSetting(const AdviceGroup& g, const std::string& key,
                             const std::string& value) {
  return absl::StrCat("# ", key, "=", value, " won significantly at every size measured on ",
                      g.ranks, " ranks (", FormatBytes(g.contests.front().bytes), "-",
                      FormatBytes(g.contests.back().bytes),
                      "). A variable holds at every communicator and message size,\n"
                      "# beyond what was measured: set it for jobs like these only.\n# ",
                      key, "=", value, "\n");
}

std::string GroupHead(const AdviceGroup& g) {
  std::string ranges;
  UsualWinner(g, &ranges);
  return absl::StrCat("# ", g.operation, " on ", g.ranks, " ranks, by size range:\n", ranges);
}

}  // namespace

std::string FormatMpichEnv(const Advice& advice, EnvSettings* settings) {
  std::string out;
  for (const AdviceGroup& g : advice.groups) {
    // Libraries that force an algorithm by name with one variable ("mixed"
    // groups have none).
    const MpiFlavor* flavor = FindFlavor(g.mpi);
    if (flavor == nullptr || flavor->AlgorithmVariable(g.operation).empty()) continue;
    if (g.backend != "mpi" || !AlgorithmOnly(g) || g.contests.empty()) continue;
    if (flavor->Algorithms(g.operation).empty()) continue;
    const std::string variable = flavor->AlgorithmVariable(g.operation);
    const std::string winner = SignificantEverywhere(
        g, [](const RunWithResults& r) { return ForcedAlgorithm(r.run.spec()); });
    if (winner.empty()) continue;  // the library's own choice, or no significant winner
    absl::StrAppend(&out, GroupHead(g), SuggestedSetting(g, variable, winner));
    (*settings)[variable] = winner;
  }
  if (out.empty()) return out;
  return absl::StrCat(
      "# MPICH collective selection from collbench advise: each setting is commented out\n"
      "# with the communicator and message sizes it was measured on; uncomment it, or pass\n"
      "# it as `mpiexec -genv KEY VALUE` / `collbench run --env KEY=VALUE`, for such jobs.\n",
      out);
}

std::string FormatNcclEnv(const Advice& advice, EnvSettings* settings) {
  std::string out;
  for (const AdviceGroup& g : advice.groups) {
    if (g.backend != "nccl" || !AlgorithmOnly(g) || g.contests.empty()) continue;
    std::string block;
    for (const char* key : {"NCCL_ALGO", "NCCL_PROTO"}) {
      const std::string value = SignificantEverywhere(g, [key](const RunWithResults& r) {
        const auto& env = r.run.spec().env();
        return env.contains(key) ? env.at(key) : std::string();
      });
      if (value.empty()) continue;
      absl::StrAppend(&block, SuggestedSetting(g, key, value));
      (*settings)[key] = value;
    }
    if (!block.empty()) absl::StrAppend(&out, GroupHead(g), block);
  }
  if (out.empty()) return out;
  return absl::StrCat(
      "# NCCL settings from collbench advise: each is commented out with the communicator\n"
      "# and message sizes it was measured on; an unset one leaves NCCL's tuner its choice.\n",
      out);
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

namespace {

// Why no tuning file is written: each group's significant sizes.
absl::Status NothingSignificant(const Advice& advice) {
  std::vector<std::string> groups;
  for (const AdviceGroup& g : advice.groups) {
    int significant = 0, own_choice = 0;
    for (const SizeContest& c : g.contests) {
      if (!c.significant) continue;
      ++significant;
      const RunWithResults* run = RunNamed(g, c.winner);
      if (run != nullptr && ForcedAlgorithm(run->run.spec()).empty()) ++own_choice;
    }
    std::string text = absl::StrCat(g.operation, " on ", g.ranks, " ranks (", g.mpi, ", ",
                                    g.backend, "): ", significant, " of ", g.contests.size(),
                                    " sizes significant");
    if (own_choice > 0) {
      absl::StrAppend(&text, ", ", own_choice == significant ? "all" : absl::StrCat(own_choice),
                      " won by the library's own choice");
    }
    groups.push_back(std::move(text));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "--write-rules: no tuning file written: no forced algorithm or setting wins "
      "significantly (its and the runner-up's 95% intervals apart) in runs that differ only "
      "in it (",
      groups.empty() ? "no groups" : absl::StrJoin(groups, "; "),
      "). Where the library's own choice wins there is nothing to tune; elsewhere measure "
      "longer (-n, --time-budget) or compare fewer algorithms"));
}

}  // namespace

absl::StatusOr<std::vector<TuningFileText>> TuningFiles(const Advice& advice) {
  std::vector<TuningFileText> files;
  const OpenMpiRules rules = OpenMpiRulesFrom(advice);
  if (!rules.collectives.empty()) {
    files.emplace_back(kOpenMpiRulesFile, FormatOpenMpiRules(rules, advice));
  }
  EnvSettings ignored;
  if (std::string text = FormatMpichEnv(advice, &ignored); !text.empty()) {
    files.emplace_back("mpich.env", text);
  }
  if (std::string text = FormatNcclEnv(advice, &ignored); !text.empty()) {
    files.emplace_back("nccl.env", text);
  }
  if (files.empty()) return NothingSignificant(advice);
  return files;
}

absl::StatusOr<std::vector<std::string>> WriteTuningFiles(const Advice& advice,
                                                          const std::string& dir) {
  absl::StatusOr<std::vector<TuningFileText>> files = TuningFiles(advice);
  if (!files.ok()) return files.status();
  return WriteTuningFileTexts(*files, dir);
}

absl::StatusOr<std::vector<std::string>> WriteTuningFileTexts(
    const std::vector<TuningFileText>& files, const std::string& dir) {
  // The names come from a coordinator: each must be a bare file name
  // (letters, digits, '.', '-', '_'; not hidden), checked before anything
  // is written, so none can reach outside `dir`.
  for (const auto& [name, text] : files) {
    const bool bare =
        !name.empty() && name.size() <= 128 && name[0] != '.' &&
        std::all_of(name.begin(), name.end(), [](char c) {
          return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
                 c == '_';
        });
    if (!bare) {
      return absl::InvalidArgumentError(
          absl::StrCat("--write-rules: the coordinator named a tuning file \"",
                       absl::CHexEscape(name.substr(0, 128)),
                       "\", which is not a bare file name (letters, digits, '.', '-', '_', not "
                       "starting with '.'); nothing was written"));
    }
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InvalidArgumentError(
        absl::StrCat("--write-rules: cannot create ", dir, ": ", std::strerror(errno)));
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
