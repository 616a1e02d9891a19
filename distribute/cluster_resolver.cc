// ClusterResolver: the launchers' variables, checked, into a ClusterSpec.
#include "sluice/distribute/cluster_resolver.h"

#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "sluice/core/file.h"

extern char** environ;

namespace sluice {
namespace {

using Env = ClusterResolver::Environment;
using Json = nlohmann::json;

std::optional<std::string> Get(const Env& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

// The variable as a non-negative int, nullopt if unset.
Result<std::optional<int>> GetInt(const Env& env, const std::string& name) {
  std::optional<std::string> v = Get(env, name);
  if (!v) return std::optional<int>();
  int out = 0;
  const char* end = v->data() + v->size();
  auto [p, ec] = std::from_chars(v->data(), end, out);
  if (v->empty() || ec != std::errc() || p != end || out < 0) {
    return Status::InvalidArgument("cluster: " + name + "='" + *v +
                                   "' is not a non-negative integer");
  }
  return std::optional<int>(out);
}

Status CheckSpec(const ClusterSpec& s, const std::string& names) {
  if (s.world_size < 1) {
    return Status::InvalidArgument("cluster (" + names + "): world size " +
                                   std::to_string(s.world_size) + " must be at least 1");
  }
  if (s.rank < 0 || s.rank >= s.world_size) {
    return Status::InvalidArgument("cluster (" + names + "): rank " + std::to_string(s.rank) +
                                   " is outside [0, " + std::to_string(s.world_size) + ")");
  }
  if (s.local_size < 1 || s.local_size > s.world_size) {
    return Status::InvalidArgument("cluster (" + names + "): local size " +
                                   std::to_string(s.local_size) + " is outside [1, world size " +
                                   std::to_string(s.world_size) + "]");
  }
  if (s.local_rank < 0 || s.local_rank >= s.local_size) {
    return Status::InvalidArgument("cluster (" + names + "): local rank " +
                                   std::to_string(s.local_rank) + " is outside [0, local size " +
                                   std::to_string(s.local_size) + ")");
  }
  return Status::OK();
}

// A launcher's four variables: all or none of rank/size, and of the local
// pair. nullopt if none is set.
struct Names {
  const char* source;
  std::string rank, size, local_rank, local_size;
};

Result<std::optional<ClusterSpec>> FromNames(const Env& env, const Names& n) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<int> rank, GetInt(env, n.rank));
  SLUICE_ASSIGN_OR_RETURN(std::optional<int> size, GetInt(env, n.size));
  SLUICE_ASSIGN_OR_RETURN(std::optional<int> lrank, GetInt(env, n.local_rank));
  SLUICE_ASSIGN_OR_RETURN(std::optional<int> lsize, GetInt(env, n.local_size));
  if (!rank && !size && !lrank && !lsize) return std::optional<ClusterSpec>();
  auto partial = [&](const std::string& set, const std::string& missing) {
    return Status::InvalidArgument("cluster (" + std::string(n.source) + "): " + set +
                                   " is set but " + missing + " is not");
  };
  if (rank.has_value() != size.has_value()) {
    return rank ? partial(n.rank, n.size) : partial(n.size, n.rank);
  }
  if (!rank) {
    return partial(lrank ? n.local_rank : n.local_size, n.rank + " and " + n.size);
  }
  if (lrank.has_value() != lsize.has_value()) {
    return lrank ? partial(n.local_rank, n.local_size) : partial(n.local_size, n.local_rank);
  }
  ClusterSpec s;
  s.source = n.source;
  s.rank = *rank;
  s.world_size = *size;
  // Without local variables: the launcher knows of one host.
  s.local_rank = lrank ? *lrank : *rank;
  s.local_size = lsize ? *lsize : *size;
  SLUICE_RETURN_IF_ERROR(CheckSpec(
      s, n.rank + ", " + n.size + (lrank ? ", " + n.local_rank + ", " + n.local_size : "")));
  return std::optional<ClusterSpec>(s);
}

// "2(x3),1" -> {2, 2, 2, 1}.
Result<std::vector<int>> ExpandTasksPerNode(const std::string& name, const std::string& v) {
  std::vector<int> out;
  std::stringstream ss(v);
  std::string item;
  auto bad = [&] {
    return Status::InvalidArgument("cluster (Slurm): " + name + "='" + v +
                                   "' is not a list like 2(x3),1");
  };
  while (std::getline(ss, item, ',')) {
    int count = 0, times = 1;
    const char* b = item.data();
    const char* e = b + item.size();
    auto [p, ec] = std::from_chars(b, e, count);
    if (ec != std::errc() || count < 1) return bad();
    if (p != e) {
      if (e - p < 4 || p[0] != '(' || p[1] != 'x' || e[-1] != ')') return bad();
      auto [q, ec2] = std::from_chars(p + 2, e - 1, times);
      if (ec2 != std::errc() || q != e - 1 || times < 1 || times > (1 << 20)) return bad();
    }
    out.insert(out.end(), static_cast<size_t>(times), count);
  }
  if (out.empty()) return bad();
  return out;
}

Result<std::optional<ClusterSpec>> FromSlurm(const Env& env) {
  if (!Get(env, "SLURM_STEP_ID") && !Get(env, "SLURM_STEPID")) {
    return std::optional<ClusterSpec>();  // a batch script, not a task of srun
  }
  const std::string size_name = Get(env, "SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
  SLUICE_ASSIGN_OR_RETURN(std::optional<int> rank, GetInt(env, "SLURM_PROCID"));
  SLUICE_ASSIGN_OR_RETURN(std::optional<int> size, GetInt(env, size_name));
  SLUICE_ASSIGN_OR_RETURN(std::optional<int> lrank, GetInt(env, "SLURM_LOCALID"));
  SLUICE_ASSIGN_OR_RETURN(std::optional<int> node, GetInt(env, "SLURM_NODEID"));
  if (!rank && !size) return std::optional<ClusterSpec>();
  if (!rank || !size || !lrank || !node) {
    return Status::InvalidArgument(
        "cluster (Slurm): inside a job step SLURM_PROCID, " + size_name +
        ", SLURM_LOCALID and SLURM_NODEID must all be set; missing: " +
        std::string(!rank ? "SLURM_PROCID " : "") + (!size ? size_name + " " : "") +
        (!lrank ? "SLURM_LOCALID " : "") + (!node ? "SLURM_NODEID" : ""));
  }
  const std::string per_node_name =
      Get(env, "SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
  std::optional<std::string> per_node = Get(env, per_node_name);
  if (!per_node) {
    return Status::InvalidArgument(
        "cluster (Slurm): SLURM_STEP_TASKS_PER_NODE and "
        "SLURM_TASKS_PER_NODE are unset: cannot tell the local size");
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<int> counts, ExpandTasksPerNode(per_node_name, *per_node));
  if (*node >= static_cast<int>(counts.size())) {
    return Status::InvalidArgument("cluster (Slurm): SLURM_NODEID=" + std::to_string(*node) +
                                   " but " + per_node_name + "='" + *per_node + "' lists " +
                                   std::to_string(counts.size()) + " nodes");
  }
  ClusterSpec s;
  s.source = "Slurm";
  s.rank = *rank;
  s.world_size = *size;
  s.local_rank = *lrank;
  s.local_size = counts[static_cast<size_t>(*node)];
  SLUICE_RETURN_IF_ERROR(
      CheckSpec(s, "SLURM_PROCID, " + size_name + ", SLURM_LOCALID, " + per_node_name));
  return std::optional<ClusterSpec>(s);
}

Result<std::optional<ClusterSpec>> FromPmi(const Env& env) {
  SLUICE_ASSIGN_OR_RETURN(
      std::optional<ClusterSpec> s,
      FromNames(env, {"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"}));
  if (!s || Get(env, "MPI_LOCALRANKID")) return s;
  // srun --mpi=pmi2 sets PMI_* beside Slurm's own local variables.
  SLUICE_ASSIGN_OR_RETURN(std::optional<ClusterSpec> slurm, FromSlurm(env));
  if (!slurm) {
    return Status::InvalidArgument(
        "cluster (PMI): PMI_RANK and PMI_SIZE are set but neither MPI_LOCALRANKID/"
        "MPI_LOCALNRANKS nor Slurm's SLURM_LOCALID tell the local rank; set "
        "SLUICE_CLUSTER_CONFIG");
  }
  s->local_rank = slurm->local_rank;
  s->local_size = slurm->local_size;
  SLUICE_RETURN_IF_ERROR(CheckSpec(*s, "PMI_RANK, PMI_SIZE, SLURM_LOCALID"));
  return s;
}

Result<int> JsonInt(const Json& j, const char* field, const std::string& where, bool required,
                    int fallback) {
  if (!j.contains(field)) {
    if (required) return Status::InvalidArgument(where + ": field \"" + field + "\" is missing");
    return fallback;
  }
  const Json& v = j[field];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 30)) {
    return Status::InvalidArgument(where + ": field \"" + field + "\" must be a non-negative " +
                                   "integer, got " + v.dump());
  }
  return static_cast<int>(v.get<int64_t>());
}

Result<Json> ParseObject(std::string_view text, const std::string& where) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(where + ": not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument(where + ": not a JSON object");
  return j;
}

std::string HostOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

}  // namespace

std::string ClusterSpec::ToString() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size) + " (local " +
         std::to_string(local_rank) + " of " + std::to_string(local_size) + "; from " + source +
         ")";
}

Result<ClusterSpec> ClusterResolver::FromJson(std::string_view json) {
  const std::string where = "SLUICE_CLUSTER_CONFIG";
  SLUICE_ASSIGN_OR_RETURN(Json j, ParseObject(json, where));
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "rank" && it.key() != "world_size" && it.key() != "local_rank" &&
        it.key() != "local_size") {
      return Status::InvalidArgument(where + ": unknown field \"" + it.key() +
                                     "\" (expected rank, world_size, local_rank, local_size)");
    }
  }
  ClusterSpec s;
  s.source = where;
  SLUICE_ASSIGN_OR_RETURN(s.rank, JsonInt(j, "rank", where, true, 0));
  SLUICE_ASSIGN_OR_RETURN(s.world_size, JsonInt(j, "world_size", where, true, 1));
  if (j.contains("local_rank") != j.contains("local_size")) {
    return Status::InvalidArgument(where + ": give both local_rank and local_size, or neither");
  }
  SLUICE_ASSIGN_OR_RETURN(s.local_rank, JsonInt(j, "local_rank", where, false, s.rank));
  SLUICE_ASSIGN_OR_RETURN(s.local_size, JsonInt(j, "local_size", where, false, s.world_size));
  SLUICE_RETURN_IF_ERROR(CheckSpec(s, where));
  return s;
}

Result<ClusterSpec> ClusterResolver::FromTfConfig(std::string_view json) {
  const std::string where = "TF_CONFIG";
  SLUICE_ASSIGN_OR_RETURN(Json j, ParseObject(json, where));
  if (!j.contains("cluster") || !j["cluster"].is_object()) {
    return Status::InvalidArgument(where + ": field \"cluster\" (an object) is missing");
  }
  if (!j.contains("task") || !j["task"].is_object()) {
    return Status::InvalidArgument(where + ": field \"task\" (an object) is missing");
  }
  const Json& cluster = j["cluster"];
  const Json& task = j["task"];
  // Ranks: the chief first, then the workers; other jobs (ps, evaluator)
  // take no part in data-parallel training.
  std::vector<std::string> hosts;
  int chiefs = 0;
  for (const char* job : {"chief", "worker"}) {
    if (!cluster.contains(job)) continue;
    if (!cluster[job].is_array()) {
      return Status::InvalidArgument(where + ": cluster." + job + " must be a list of addresses");
    }
    for (const Json& a : cluster[job]) {
      if (!a.is_string()) {
        return Status::InvalidArgument(where + ": cluster." + job + " holds a non-string " +
                                       a.dump());
      }
      hosts.push_back(HostOf(a.get<std::string>()));
    }
    if (std::string(job) == "chief") chiefs = static_cast<int>(hosts.size());
  }
  if (hosts.empty()) {
    return Status::InvalidArgument(where + ": cluster lists no chief and no worker");
  }
  if (!task.contains("type") || !task["type"].is_string()) {
    return Status::InvalidArgument(where + ": field \"task.type\" is missing");
  }
  const std::string type = task["type"].get<std::string>();
  if (type != "chief" && type != "worker") {
    return Status::InvalidArgument(where + ": task type \"" + type +
                                   "\" takes no part in data-parallel training (chief or worker)");
  }
  SLUICE_ASSIGN_OR_RETURN(int index, JsonInt(task, "index", where + " task", true, 0));
  const int count = type == "chief" ? chiefs : static_cast<int>(hosts.size()) - chiefs;
  if (index >= count) {
    return Status::InvalidArgument(where + ": task index " + std::to_string(index) +
                                   " but cluster." + type + " lists " + std::to_string(count));
  }
  ClusterSpec s;
  s.source = where;
  s.world_size = static_cast<int>(hosts.size());
  s.rank = (type == "chief" ? 0 : chiefs) + index;
  s.local_rank = s.local_size = 0;
  for (int r = 0; r < s.world_size; ++r) {
    if (hosts[static_cast<size_t>(r)] != hosts[static_cast<size_t>(s.rank)]) continue;
    if (r < s.rank) ++s.local_rank;
    ++s.local_size;
  }
  SLUICE_RETURN_IF_ERROR(CheckSpec(s, where));
  return s;
}

Result<ClusterSpec> ClusterResolver::FromEnvironment(const Environment& env) {
  if (std::optional<std::string> c = Get(env, "SLUICE_CLUSTER_CONFIG")) {
    if (!c->empty() && (*c)[0] == '@') {
      const std::string path = c->substr(1);
      // A config is a few lines; never read more than this (a device file
      // or a huge file by mistake).
      constexpr int64_t kMaxConfig = int64_t{1} << 20;
      Result<std::string> text = ReadFileToString(path, kMaxConfig);
      if (!text.ok()) return text.status().WithContext("SLUICE_CLUSTER_CONFIG");
      Result<ClusterSpec> s = FromJson(*text);
      if (!s.ok()) return s.status().WithContext(path);
      return s;
    }
    return FromJson(*c);
  }
  if (std::optional<std::string> c = Get(env, "TF_CONFIG")) return FromTfConfig(*c);

  // The launchers' own variables; those that are set must agree.
  SLUICE_ASSIGN_OR_RETURN(
      std::optional<ClusterSpec> ompi,
      FromNames(env, {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                      "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"}));
  SLUICE_ASSIGN_OR_RETURN(std::optional<ClusterSpec> pmi, FromPmi(env));
  SLUICE_ASSIGN_OR_RETURN(
      std::optional<ClusterSpec> torchrun,
      FromNames(env, {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}));
  std::optional<ClusterSpec> chosen;
  for (const std::optional<ClusterSpec>* s : {&ompi, &pmi, &torchrun}) {
    if (!s->has_value()) continue;
    if (!chosen) {
      chosen = **s;
    } else if (chosen->rank != (*s)->rank || chosen->world_size != (*s)->world_size) {
      return Status::InvalidArgument("cluster: " + chosen->source + " says " + chosen->ToString() +
                                     " but " + (*s)->source + " says " + (*s)->ToString() +
                                     "; unset one or set SLUICE_CLUSTER_CONFIG");
    }
  }
  if (chosen) return *chosen;
  SLUICE_ASSIGN_OR_RETURN(std::optional<ClusterSpec> slurm, FromSlurm(env));
  if (slurm) return *slurm;
  return ClusterSpec{};
}

Result<ClusterSpec> ClusterResolver::FromEnvironment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return FromEnvironment(env);
}

}  // namespace sluice
