// The stats JSON and the Chrome trace are JSON whatever the stage names
// (issue 37 item 10): stages named with quotes, backslashes, newlines,
// control characters, non-ASCII and invalid UTF-8, read back with a real
// JSON parser (nlohmann-json); every stage is there under its exact name
// (invalid UTF-8 bytes as U+FFFD, as core/json_writer.h says), and the
// autotuner's decisions are well-formed events that match the stats.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sanitizer_slowdown.h"
#include "sluice/pipeline/benchmark.h"
#include "sluice/pipeline/dataset.h"
#include "test_util.h"

namespace sluice {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kFffd = "\xEF\xBF\xBD";  // U+FFFD

struct Name {
  std::string given;   // as the user wrote it
  std::string parsed;  // as a JSON parser reads it back
};

// Hostile stage names. The first is the autotuned stage's.
std::vector<Name> HostileNames() {
  const std::string control("ctl \x01\x02\x1b\x1f\x7f nul \0 end", 19);
  const std::string utf8 = "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80 \xE2\x80\xA8";
  const std::string longer = std::string(700, 'x') + "\" longer than any fixed buffer";
  return {{"io \"quoted\" \\back\\slash\\", "io \"quoted\" \\back\\slash\\"},
          {"new\nline\r\ttab\b\f", "new\nline\r\ttab\b\f"},
          {control, control},
          {utf8, utf8},
          {"bad \xFF\xFE utf8 \xC0\xAF \xED\xA0\x80 \xC3", "bad " + kFffd + kFffd + " utf8 " +
                                                               kFffd + kFffd + " " + kFffd + kFffd +
                                                               kFffd + " " + kFffd},
          {longer, longer},
          {"}]}, {\"name\": \"injected\"", "}]}, {\"name\": \"injected\""}};
}

// range -> map (sleeps: the tuner grows it) -> one stage per other name ->
// prefetch, on one core so the tuner has something to do.
Dataset HostilePipeline(const std::vector<Name>& names) {
  Dataset ds = Dataset::range(1'000'000'000)
                   .map(
                       [](Element e) {
                         std::this_thread::sleep_for(std::chrono::milliseconds(2));
                         return e;
                       },
                       {.parallelism = kAutotune, .name = names[0].given});
  for (size_t i = 1; i + 1 < names.size(); ++i) {
    ds = i % 2 ? ds.map([](Element e) { return e; }, {.name = names[i].given})
               : ds.filter([](const Element&) -> Result<bool> { return true; },
                           {.name = names[i].given});
  }
  return ds.prefetch(kAutotune, {.name = names.back().given}).with_options({.cpu_budget = 1});
}

json Parse(const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON:\n" << text.substr(0, 4000);
  return j;
}

class HostileNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    names_ = HostileNames();
    expected_ = {"range"};
    for (const Name& n : names_) expected_.push_back(n.parsed);
    auto it = HostilePipeline(names_).iterator();
    ASSERT_TRUE(it.ok()) << it.status();
    it_.emplace(std::move(it).value());
    // Read until the tuner has changed the sleeping map at least twice.
    const auto deadline =
        Clock::now() + std::chrono::duration<double>(10 * testing::kSanitizerSlowdown);
    while (Clock::now() < deadline) {
      auto e = it_->next();
      ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
      const IteratorStats st = it_->stats();
      if (st.tuner_steps >= 2 && !st.stages[1].tuner_reason.empty()) break;
    }
    // The consumer stops here: the tuner runs only on its calls, so the
    // stats and the trace below see the same decisions.
    stats_ = it_->stats();
    ASSERT_GE(stats_.tuner_steps, 2) << stats_.ToString();
  }
  std::vector<Name> names_;
  std::vector<std::string> expected_;  // every stage's name, parsed
  std::optional<Iterator> it_;
  IteratorStats stats_;
};

TEST_F(HostileNamesTest, StatsJsonParsesWithEveryStageAndItsExactName) {
  const json j = Parse(stats_.ToJson());
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j["stages"].is_array());
  std::vector<std::string> names;
  for (const json& s : j["stages"]) {
    ASSERT_TRUE(s["name"].is_string());
    names.push_back(s["name"].get<std::string>());
    EXPECT_TRUE(s["kind"].is_string());
    EXPECT_TRUE(s["elements"].is_number_integer());
    EXPECT_TRUE(s["parallelism"].is_number_integer());
    EXPECT_TRUE(s["autotuned"].is_boolean());
    EXPECT_TRUE(s["tuner_reason"].is_string());
  }
  EXPECT_EQ(names, expected_);
  ASSERT_EQ(j["stages"].size(), stats_.stages.size());
  // The tuned map: its decision as the stats hold it.
  const json& tuned = j["stages"][1];
  EXPECT_TRUE(tuned["autotuned"].get<bool>());
  EXPECT_EQ(tuned["tuner_reason"].get<std::string>(), stats_.stages[1].tuner_reason);
  EXPECT_FALSE(stats_.stages[1].tuner_reason.empty());
  EXPECT_EQ(tuned["parallelism"].get<int64_t>(), stats_.stages[1].parallelism);
  EXPECT_EQ(j["tuner_steps"].get<int64_t>(), stats_.tuner_steps);
  EXPECT_EQ(j["cpu_budget"].get<int64_t>(), 1);
}

TEST_F(HostileNamesTest, TraceParsesWithEveryStageAndTheTunersDecisions) {
  testing::ScratchDir dir;
  SLUICE_ASSERT_OK(it_->WriteTrace(dir.file("trace.json")));
  const json j = Parse(testing::ReadFileOrDie(dir.file("trace.json")));
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j["traceEvents"].is_array());
  std::map<int64_t, std::string> tracks;       // tid -> stage name
  std::map<std::string, int64_t> counters;     // stage name -> counter events
  std::map<std::string, std::string> decided;  // stage name -> last reason
  int64_t decisions = 0;
  for (const json& e : j["traceEvents"]) {
    ASSERT_TRUE(e.is_object());
    ASSERT_TRUE(e["name"].is_string()) << e.dump();
    ASSERT_TRUE(e["ph"].is_string()) << e.dump();
    EXPECT_EQ(e["pid"], 1) << e.dump();
    const std::string ph = e["ph"].get<std::string>();
    const std::string name = e["name"].get<std::string>();
    if (ph == "M") {
      ASSERT_TRUE(e["args"]["name"].is_string()) << e.dump();
      if (name == "thread_name") tracks[e["tid"].get<int64_t>()] = e["args"]["name"];
    } else if (ph == "C") {
      ASSERT_TRUE(e["ts"].is_number()) << e.dump();
      EXPECT_TRUE(e["args"]["busy_threads"].is_number()) << e.dump();
      EXPECT_TRUE(e["args"]["buffer_depth"].is_number_integer()) << e.dump();
      EXPECT_TRUE(e["args"]["parallelism"].is_number_integer()) << e.dump();
      // On its stage's track.
      EXPECT_EQ(tracks[e["tid"].get<int64_t>()], name) << e.dump();
      ++counters[name];
    } else {
      ASSERT_EQ(ph, "i") << e.dump();
      EXPECT_EQ(e["s"], "g") << e.dump();
      ASSERT_TRUE(e["ts"].is_number()) << e.dump();
      ASSERT_TRUE(e["args"]["reason"].is_string()) << e.dump();
      EXPECT_FALSE(e["args"]["reason"].get<std::string>().empty()) << e.dump();
      ASSERT_EQ(name.rfind("autotune ", 0), 0u) << name;
      decided[name.substr(9)] = e["args"]["reason"].get<std::string>();
      ++decisions;
    }
  }
  // Every stage has its track, under its exact name, and counter events.
  std::set<std::string> track_names;
  for (const auto& [tid, name] : tracks) track_names.insert(name);
  for (const std::string& name : expected_) {
    EXPECT_TRUE(track_names.count(name)) << "no track for stage " << json(name).dump();
    EXPECT_GT(counters[name], 0) << "no counter events for stage " << json(name).dump();
  }
  // The tuner's decisions: at least one per step it took, each on a stage
  // of the pipeline, the last of each stage the reason its stats give.
  EXPECT_GE(decisions, stats_.tuner_steps);
  ASSERT_TRUE(decided.count(expected_[1])) << "no decision on the tuned map";
  for (const auto& [stage, reason] : decided) {
    EXPECT_TRUE(track_names.count(stage)) << json(stage).dump();
  }
  for (size_t i = 0; i < expected_.size(); ++i) {
    if (decided.count(expected_[i])) {
      EXPECT_EQ(decided[expected_[i]], stats_.stages[i].tuner_reason) << json(expected_[i]).dump();
    }
  }
}

TEST(StatsJsonTest, ErrorsAndBenchmarkReportParse) {
  // Error texts kept by ignore_errors carry what the function said.
  const std::string message = "bad \"value\"\n\x01 \xFF at \\";
  auto ds = Dataset::range(3)
                .map(
                    [&](Element e) -> Result<Element> {
                      if (e[0].scalar<int64_t>() == 1) return Status::DataLoss(message);
                      return e;
                    },
                    {.name = "fail \"here\"\n"})
                .ignore_errors();
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  while (true) {
    SLUICE_ASSERT_OK_AND_ASSIGN(auto e, it.next());
    if (!e) break;
  }
  const json st = Parse(it.stats().ToJson());
  ASSERT_TRUE(st["stages"].is_array());
  bool found = false;
  for (const json& s : st["stages"]) {
    if (s["kind"] != "ignore_errors") continue;
    found = true;
    ASSERT_EQ(s["errors"].size(), 1u) << s.dump();
    const std::string error = s["errors"][0].get<std::string>();
    EXPECT_NE(error.find("bad \"value\"\n\x01 " + kFffd + " at \\"), std::string::npos) << error;
  }
  EXPECT_TRUE(found);

  Result<BenchmarkReport> r =
      Benchmark(Dataset::range(10).map([](Element e) { return e; }, {.name = "b\"\\\n\xC3"}),
                {.warmup_s = 0, .epochs = 1});
  ASSERT_TRUE(r.ok()) << r.status();
  const json b = Parse(r->ToJson());
  ASSERT_TRUE(b["pipeline"].is_string());
  ASSERT_TRUE(b["stats"]["stages"].is_array());
  ASSERT_EQ(b["stats"]["stages"].size(), 2u);
  EXPECT_EQ(b["stats"]["stages"][1]["name"], "b\"\\\n" + kFffd);
  EXPECT_EQ(b["elements"], 10);
}

}  // namespace
}  // namespace sluice
