// SPDX-License-Identifier: Apache-2.0
// The tuning-parameter table: what a run may set in spec.env, and how each
// hostile key or value is refused (docs/tuning-parameters.md).
#include "api/tuning_env.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* key;
  std::string value;
};

TEST(TuningEnvTest, AcceptsRealParametersWithValuesOfTheirGrammar) {
  const std::vector<Case> accepted = {
      {"OMPI_MCA_coll_tuned_use_dynamic_rules", "1"},
      {"OMPI_MCA_coll_tuned_allreduce_algorithm", "3"},
      {"OMPI_MCA_coll_tuned_allreduce_algorithm", "recursive_doubling"},
      {"OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize", "64K"},
      {"OMPI_MCA_coll_tuned_bcast_algorithm_tree_fanout", "4"},
      {"OMPI_MCA_coll_tuned_priority", "100"},
      {"OMPI_MCA_coll", "^hcoll"},
      {"OMPI_MCA_pml", "ob1"},
      {"OMPI_MCA_btl", "self,vader,tcp"},
      {"OMPI_MCA_btl", "^openib"},
      {"OMPI_MCA_btl_tcp_if_include", "eth0,10.0.0.0/16"},
      {"OMPI_MCA_btl_tcp_if_exclude", "127.0.0.1/8,docker0"},
      {"OMPI_MCA_btl_tcp_eager_limit", "65536"},
      {"OMPI_MCA_btl_vader_single_copy_mechanism", "cma"},
      {"OMPI_MCA_mpi_yield_when_idle", "1"},
      {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "recursive_doubling"},
      {"MPIR_CVAR_BCAST_INTRA_ALGORITHM", "binomial"},
      {"MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE", "2048"},
      {"MPIR_CVAR_NOLOCAL", "1"},
      {"MPIR_CVAR_CH4_NETMOD", "ucx"},
      {"UCX_TLS", "self,sm"},
      {"UCX_TLS", "^tcp"},
      {"UCX_NET_DEVICES", "mlx5_0:1,eth0"},
      {"UCX_RNDV_THRESH", "8k"},
      {"UCX_RNDV_THRESH", "inf"},
      {"UCX_ZCOPY_THRESH", "auto"},
      {"NCCL_ALGO", "Ring,Tree"},
      {"NCCL_ALGO", "^NVLS"},
      {"NCCL_PROTO", "Simple"},
      {"NCCL_MIN_NCHANNELS", "4"},
      {"NCCL_BUFFSIZE", "4194304"},
      {"NCCL_P2P_DISABLE", "1"},
      {"NCCL_SOCKET_IFNAME", "=eth0"},
      {"NCCL_SOCKET_IFNAME", "^docker,lo"},
      {"NCCL_DEBUG", "INFO"},
      {"NCCL_DEBUG_SUBSYS", "INIT,COLL"},
  };
  for (const Case& c : accepted) {
    EXPECT_TRUE(CheckTuningParam(c.key, c.value).ok())
        << c.key << "=" << c.value << ": " << CheckTuningParam(c.key, c.value);
  }
}

// A CIDR has one '/': a path hidden after one is no CIDR (found by the
// launch_words fuzzer).
TEST(TuningEnvTest, InterfaceListsTakeOnlyWholeCidrs) {
  for (const char* value : {"10.0.0.0/16/bin/sh", "10.0.0.0/16/", "10.0.0.0//16",
                            "eth0,10.0.0.0/16/x", "/16", "10.0.0.0/"}) {
    EXPECT_EQ(CheckTuningParam("OMPI_MCA_btl_tcp_if_include", value).code(),
              absl::StatusCode::kInvalidArgument)
        << value;
  }
  EXPECT_TRUE(CheckTuningParam("OMPI_MCA_btl_tcp_if_include", "10.0.0.0/16").ok());
}

// Keys that name a program, library, plugin, file or directory: refused
// whatever the value, and whether or not they exist.
TEST(TuningEnvTest, RefusesKeysThatNameSomethingToLoadOrRun) {
  for (const char* key :
       {"OMPI_MCA_orte_fork_agent", "OMPI_MCA_plm_rsh_agent", "OMPI_MCA_mca_base_param_files",
        "OMPI_MCA_mca_base_component_path", "OMPI_MCA_orte_tmpdir_base_dir", "OMPI_MCA_btl_vader_backing_directory",
        "OMPI_MCA_opal_cuda_support_lib", "NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN",
        "NCCL_PROFILER_PLUGIN", "NCCL_TOPO_FILE", "NCCL_DEBUG_FILE", "NCCL_CONF_FILE",
        "NCCL_GRAPH_DUMP_FILE", "UCX_MODULE_DIR", "MPIR_CVAR_CH4_NETMOD_CONFIG_FILE",
        "LD_PRELOAD", "LD_LIBRARY_PATH", "ld_audit", "PATH", "MPIR_CVAR_EXEC_PROGRAM"}) {
    absl::Status status = CheckTuningParam(key, "1");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << key;
    EXPECT_TRUE(absl::StartsWith(status.message(), key)) << status;
    EXPECT_THAT(status.message(), HasSubstr("names a program, library, plugin, file or directory"))
        << key;
  }
}

// Tuning files: data-only files the operator installs in a worker's
// --tuning-dir. A spec names one by its bare name only (the launcher
// resolves it, worker/agent/tuning_files.h); any path is refused naming the
// key, so no run can point MPI at a file of its choosing.
TEST(TuningEnvTest, TuningFilesAreBareNamesOnly) {
  const std::vector<const char*> keys = {"OMPI_MCA_coll_tuned_dynamic_rules_filename",
                                         "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE",
                                         "MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE",
                                         "MPIR_CVAR_CH4_POSIX_COLL_SELECTION_TUNING_JSON_FILE"};
  for (const char* key : keys) {
    EXPECT_TRUE(IsTuningFileParam(key)) << key;
    for (const char* name : {"openmpi-rules.conf", "rules_2.json", "A1", "x..y"}) {
      EXPECT_TRUE(CheckTuningParam(key, name).ok()) << key << "=" << name;
    }
    for (const std::string& value :
         {std::string("../x"), std::string("/etc/passwd"), std::string(".hidden"),
          std::string(".."), std::string("-x"), std::string(""), std::string("a/b"),
          std::string("x y"), std::string("$(touch p)"), std::string("rules.conf\n"),
          std::string("rules;sh"), std::string("~/x"), std::string(129, 'a'),
          std::string("r\0x", 3)}) {
      absl::Status status = CheckTuningParam(key, value);
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << key << "=" << value;
      EXPECT_TRUE(absl::StartsWith(status.message(), key)) << status;
      EXPECT_THAT(status.message(), HasSubstr("tuning file's bare name")) << key;
    }
  }
  EXPECT_FALSE(IsTuningFileParam("OMPI_MCA_coll_tuned_allreduce_algorithm"));
  EXPECT_FALSE(IsTuningFileParam("NCCL_TUNER_PLUGIN"));  // a plugin loads code: refused
  EXPECT_FALSE(IsTuningFileParam("NCCL_TOPO_FILE"));
}

TEST(TuningEnvTest, RefusesUnknownKeysPointingToTheDocs) {
  for (const char* key : {"OMPI_MCA_foo", "NCCL_SOMETHING_NEW", "UCX_X", "MPIR_CVAR_",
                          "FOO", "OMPI_MCA_coll_tuned_allreduce_algorithm_count", ""}) {
    absl::Status status = CheckTuningParam(key, "1");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << key;
    EXPECT_THAT(status.message(), HasSubstr("docs/tuning-parameters.md")) << key;
  }
  // Shell metacharacters in an unknown name are named, escaped, not run.
  absl::Status status = CheckTuningParam("OMPI_MCA_$(touch /tmp/p)", "1");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("OMPI_MCA_$(touch /tmp/p)"));
}

// Values of every hostile kind against parameters of every grammar.
TEST(TuningEnvTest, RefusesValuesOutsideTheirGrammar) {
  const std::vector<std::string> hostile = {
      "/bin/sh -c 'touch /tmp/p'", "$(touch /tmp/p)", "`touch /tmp/p`", "1;touch /tmp/p",
      "1 && touch /tmp/p", "1|sh", "/tmp/x.so", "./x.so", "../../etc/passwd", "-x",
      "--mca", "1\n2", std::string("1\0x", 3), "", " 1", "1 ", "\"1\"", "'1'", "x=y",
      std::string(300, '1'), "${HOME}", "~/x", "*", "a b"};
  for (const char* key : {"OMPI_MCA_coll_tuned_allreduce_algorithm", "OMPI_MCA_btl",
                          "OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_coll_tuned_use_dynamic_rules",
                          "OMPI_MCA_btl_tcp_eager_limit", "UCX_RNDV_THRESH", "NCCL_ALGO",
                          "NCCL_MIN_NCHANNELS", "NCCL_SOCKET_IFNAME", "MPIR_CVAR_NOLOCAL"}) {
    for (const std::string& value : hostile) {
      absl::Status status = CheckTuningParam(key, value);
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << key << "=" << value;
      EXPECT_TRUE(absl::StartsWith(status.message(), key)) << status;
    }
  }
}

TEST(TuningEnvTest, GrammarEdges) {
  EXPECT_FALSE(CheckTuningParam("NCCL_P2P_DISABLE", "2").ok());
  EXPECT_FALSE(CheckTuningParam("NCCL_MIN_NCHANNELS", "4K").ok());
  EXPECT_TRUE(CheckTuningParam("OMPI_MCA_btl_tcp_eager_limit", "4K").ok());
  EXPECT_FALSE(CheckTuningParam("OMPI_MCA_btl_tcp_eager_limit", "4T").ok());
  EXPECT_FALSE(CheckTuningParam("OMPI_MCA_btl_tcp_if_include", "10.0.0.0/33").ok());
  EXPECT_FALSE(CheckTuningParam("OMPI_MCA_btl_tcp_if_include", "300.0.0.0/8").ok());
  EXPECT_FALSE(CheckTuningParam("OMPI_MCA_btl", "^").ok());
  EXPECT_FALSE(CheckTuningParam("OMPI_MCA_btl", "tcp,,self").ok());
  EXPECT_FALSE(CheckTuningParam("UCX_NET_DEVICES", "mlx5_0:").ok());
  EXPECT_FALSE(CheckTuningParam("UCX_NET_DEVICES", "mlx5_0:1:2").ok());
}

TEST(TuningEnvTest, EveryTableEntryIsConsistent) {
  for (const TuningParam& p : TuningParams()) {
    EXPECT_TRUE(IsTuningParam(p.name)) << p.name;
    EXPECT_FALSE(NamesProgramOrFile(p.name)) << p.name << " is both listed and refused";
    EXPECT_FALSE(TuningGrammarText(p.grammar).empty());
  }
  EXPECT_GT(TuningParams().size(), 150u);
}

}  // namespace
}  // namespace collbench
