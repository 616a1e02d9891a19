// ClusterResolver: each launcher's variables, precedence, and the errors for
// partial or contradictory settings.
#include "sluice/distribute/cluster_resolver.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace sluice {
namespace {

using Env = ClusterResolver::Environment;

ClusterSpec Resolve(const Env& env) {
  Result<ClusterSpec> s = ClusterResolver::FromEnvironment(env);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : ClusterSpec{};
}

void ExpectSpec(const ClusterSpec& s, int rank, int size, int lrank, int lsize,
                const std::string& source) {
  EXPECT_EQ(s.rank, rank);
  EXPECT_EQ(s.world_size, size);
  EXPECT_EQ(s.local_rank, lrank);
  EXPECT_EQ(s.local_size, lsize);
  EXPECT_EQ(s.source, source);
}

TEST(ClusterResolverTest, ALoneProcessIsRankZeroOfOne) {
  ExpectSpec(Resolve({{"HOME", "/root"}}), 0, 1, 0, 1, "none");
  EXPECT_TRUE(Resolve({}).is_chief());
}

TEST(ClusterResolverTest, OpenMpi) {
  ExpectSpec(Resolve({{"OMPI_COMM_WORLD_RANK", "3"},
                      {"OMPI_COMM_WORLD_SIZE", "4"},
                      {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}),
             3, 4, 1, 2, "Open MPI");
}

TEST(ClusterResolverTest, TorchrunAndPmi) {
  ExpectSpec(
      Resolve({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}}),
      5, 8, 1, 4, "torchrun");
  // Without local variables a launcher knows of one host.
  ExpectSpec(Resolve({{"RANK", "1"}, {"WORLD_SIZE", "2"}}), 1, 2, 1, 2, "torchrun");
  ExpectSpec(Resolve({{"PMI_RANK", "2"},
                      {"PMI_SIZE", "3"},
                      {"MPI_LOCALRANKID", "0"},
                      {"MPI_LOCALNRANKS", "1"}}),
             2, 3, 0, 1, "PMI");
}

TEST(ClusterResolverTest, SlurmInsideAJobStepOnly) {
  Env env = {{"SLURM_PROCID", "5"},  {"SLURM_NTASKS", "6"},
             {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "2"},
             {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2),3"}};
  ExpectSpec(Resolve(env), 5, 6, 1, 3, "Slurm");
  // In the batch script itself (no job step) the variables describe the
  // allocation, not this process.
  env.erase("SLURM_STEP_ID");
  ExpectSpec(Resolve(env), 0, 1, 0, 1, "none");
  // mpirun inside an allocation: Open MPI's variables win, unchecked against Slurm's.
  env["SLURM_STEP_ID"] = "0";
  env["OMPI_COMM_WORLD_RANK"] = "0";
  env["OMPI_COMM_WORLD_SIZE"] = "2";
  ExpectSpec(Resolve(env), 0, 2, 0, 2, "Open MPI");
  // srun --mpi=pmi2: PMI's ranks with Slurm's local ones.
  ExpectSpec(Resolve({{"PMI_RANK", "5"},
                      {"PMI_SIZE", "6"},
                      {"SLURM_PROCID", "5"},
                      {"SLURM_NTASKS", "6"},
                      {"SLURM_LOCALID", "1"},
                      {"SLURM_NODEID", "2"},
                      {"SLURM_STEP_ID", "0"},
                      {"SLURM_TASKS_PER_NODE", "2(x2),3"}}),
             5, 6, 1, 3, "PMI");
}

TEST(ClusterResolverTest, ExplicitConfigWins) {
  ExpectSpec(Resolve({{"SLUICE_CLUSTER_CONFIG", R"({"rank": 1, "world_size": 3})"},
                      {"RANK", "0"},
                      {"WORLD_SIZE", "1"}}),
             1, 3, 1, 3, "SLUICE_CLUSTER_CONFIG");
  ExpectSpec(Resolve({{"SLUICE_CLUSTER_CONFIG",
                       R"({"rank": 3, "world_size": 4, "local_rank": 1, "local_size": 2})"}}),
             3, 4, 1, 2, "SLUICE_CLUSTER_CONFIG");
  testing::ScratchDir dir;
  testing::WriteFileOrDie(dir.file("c.json"), R"({"rank": 0, "world_size": 2})");
  ExpectSpec(Resolve({{"SLUICE_CLUSTER_CONFIG", "@" + dir.file("c.json")}}), 0, 2, 0, 2,
             "SLUICE_CLUSTER_CONFIG");
  SLUICE_EXPECT_ERROR(
      ClusterResolver::FromEnvironment({{"SLUICE_CLUSTER_CONFIG", "@" + dir.file("none.json")}}),
      StatusCode::kNotFound, "none.json");
}

TEST(ClusterResolverTest, TfConfig) {
  const std::string cluster =
      R"("cluster": {"chief": ["a:1"], "worker": ["a:2", "b:1", "b:2"], "ps": ["c:1"]})";
  ExpectSpec(
      Resolve({{"TF_CONFIG", "{" + cluster + R"(, "task": {"type": "chief", "index": 0}})"}}), 0, 4,
      0, 2, "TF_CONFIG");
  ExpectSpec(
      Resolve({{"TF_CONFIG", "{" + cluster + R"(, "task": {"type": "worker", "index": 2}})"}}), 3,
      4, 1, 2, "TF_CONFIG");
  SLUICE_EXPECT_ERROR(
      ClusterResolver::FromTfConfig("{" + cluster + R"(, "task": {"type": "ps", "index": 0}})"),
      StatusCode::kInvalidArgument, "task type \"ps\"");
  SLUICE_EXPECT_ERROR(
      ClusterResolver::FromTfConfig("{" + cluster + R"(, "task": {"type": "worker", "index": 3}})"),
      StatusCode::kInvalidArgument, "task index 3 but cluster.worker lists 3");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromTfConfig(R"({"task": {"type": "worker", "index": 0}})"),
                      StatusCode::kInvalidArgument, "\"cluster\"");
}

TEST(ClusterResolverTest, PartialSettingsNameWhatIsMissing) {
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment({{"RANK", "1"}}),
                      StatusCode::kInvalidArgument, "RANK is set but WORLD_SIZE is not");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment({{"WORLD_SIZE", "2"}}),
                      StatusCode::kInvalidArgument, "WORLD_SIZE is set but RANK is not");
  SLUICE_EXPECT_ERROR(
      ClusterResolver::FromEnvironment({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}}),
      StatusCode::kInvalidArgument, "LOCAL_RANK is set but LOCAL_WORLD_SIZE is not");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment({{"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}}),
                      StatusCode::kInvalidArgument,
                      "OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}),
                      StatusCode::kInvalidArgument, "tell the local rank");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment(
                          {{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}),
                      StatusCode::kInvalidArgument, "missing: SLURM_LOCALID SLURM_NODEID");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromJson(R"({"rank": 0})"), StatusCode::kInvalidArgument,
                      "\"world_size\" is missing");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromJson(R"({"rank": 0, "world_size": 2, "local_rank": 0})"),
                      StatusCode::kInvalidArgument, "both local_rank and local_size");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromJson(R"({"rank": 0, "world_size": 2, "ranks": 1})"),
                      StatusCode::kInvalidArgument, "unknown field \"ranks\"");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromJson("[1, 2]"), StatusCode::kInvalidArgument,
                      "not a JSON object");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromJson("{rank"), StatusCode::kInvalidArgument,
                      "not valid JSON");
}

TEST(ClusterResolverTest, BadValuesAndContradictions) {
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment({{"RANK", "4"}, {"WORLD_SIZE", "4"}}),
                      StatusCode::kInvalidArgument, "rank 4 is outside [0, 4)");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment({{"RANK", "x1"}, {"WORLD_SIZE", "4"}}),
                      StatusCode::kInvalidArgument, "RANK='x1' is not a non-negative integer");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}),
                      StatusCode::kInvalidArgument, "RANK='-1'");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
                      StatusCode::kInvalidArgument, "world size 0");
  SLUICE_EXPECT_ERROR(
      ClusterResolver::FromEnvironment(
          {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}),
      StatusCode::kInvalidArgument, "local rank 2 is outside [0, local size 2)");
  SLUICE_EXPECT_ERROR(
      ClusterResolver::FromEnvironment(
          {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "3"}}),
      StatusCode::kInvalidArgument, "local size 3");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment({{"OMPI_COMM_WORLD_RANK", "1"},
                                                        {"OMPI_COMM_WORLD_SIZE", "2"},
                                                        {"RANK", "0"},
                                                        {"WORLD_SIZE", "2"}}),
                      StatusCode::kInvalidArgument, "Open MPI says rank 1 of 2");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromJson(R"({"rank": 2, "world_size": 2})"),
                      StatusCode::kInvalidArgument, "rank 2 is outside [0, 2)");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromJson(R"({"rank": "1", "world_size": 2})"),
                      StatusCode::kInvalidArgument, "\"rank\" must be a non-negative integer");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment({{"SLURM_STEP_ID", "0"},
                                                        {"SLURM_PROCID", "0"},
                                                        {"SLURM_NTASKS", "2"},
                                                        {"SLURM_LOCALID", "0"},
                                                        {"SLURM_NODEID", "3"},
                                                        {"SLURM_TASKS_PER_NODE", "2"}}),
                      StatusCode::kInvalidArgument, "lists 1 nodes");
  SLUICE_EXPECT_ERROR(ClusterResolver::FromEnvironment({{"SLURM_STEP_ID", "0"},
                                                        {"SLURM_PROCID", "0"},
                                                        {"SLURM_NTASKS", "2"},
                                                        {"SLURM_LOCALID", "0"},
                                                        {"SLURM_NODEID", "0"},
                                                        {"SLURM_TASKS_PER_NODE", "2(y3)"}}),
                      StatusCode::kInvalidArgument, "not a list like 2(x3),1");
}

}  // namespace
}  // namespace sluice
