// The tar reader, writer and index: golden shards made by Python's tarfile
// and grouped by the webdataset package (tests/data/tar/make_golden.py), a
// write/read round trip, random access through the index, and hostile
// headers (bad checksum, sizes past the file, huge pax records, names
// without a key, truncation), each DataLoss naming the file and offset.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "sluice/records/internal/tar_header.h"
#include "sluice/records/tar_format.h"
#include "sluice/records/tar_index.h"
#include "sluice/records/tar_reader.h"
#include "sluice/records/tar_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::TestDataPath;
using testing::WriteFileOrDie;

struct Member {
  std::string key, ext, data;
};
struct Sample {
  std::string key;
  std::map<std::string, std::string> members;  // lower-cased extension -> payload
};

std::string LowerCase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Result<Sample> ToSample(const Record& rec, const std::string& name) {
  Sample s;
  SLUICE_RETURN_IF_ERROR(ForEachTarMember(rec.data, rec.offset, name, 1 << 20,
                                          [&](const TarMember& m) {
                                            s.key = std::string(m.key);
                                            s.members[LowerCase(m.extension)] = std::string(m.data);
                                            return Status::OK();
                                          }));
  return s;
}

struct Outcome {
  std::vector<Sample> samples;
  std::vector<Status> errors;  // errors passed (the reader moved on)
  Status stop;                 // the error the reader stayed at, or OK at a clean end
};

// Reads everything, passing errors after which the reader moved on.
Outcome ReadAll(std::unique_ptr<ReadableFile> file, TarReaderOptions opts = {}) {
  Outcome out;
  const std::string name = file->name();
  Result<std::unique_ptr<TarReader>> reader = TarReader::Open(std::move(file), opts);
  if (!reader.ok()) {
    out.stop = reader.status();
    return out;
  }
  for (int guard = 0; guard < 10000; ++guard) {
    const uint64_t before = (*reader)->next_record_number();
    Result<std::optional<Record>> r = (*reader)->Next();
    if (!r.ok()) {
      if ((*reader)->next_record_number() == before) {
        // It stays: asking again gives the same error.
        Result<std::optional<Record>> again = (*reader)->Next();
        EXPECT_FALSE(again.ok());
        if (!again.ok()) {
          EXPECT_EQ(again.status().message(), r.status().message());
        }
        out.stop = r.status();
        return out;
      }
      out.errors.push_back(r.status());
      continue;
    }
    if (!*r) return out;
    Result<Sample> s = ToSample(**r, name);
    EXPECT_TRUE(s.ok()) << s.status();
    if (s.ok()) out.samples.push_back(*s);
  }
  ADD_FAILURE() << "the reader did not stop";
  return out;
}

Outcome ReadBytes(const std::string& bytes, TarReaderOptions opts = {}) {
  return ReadAll(NewMemoryFile("bad.tar", bytes), opts);
}

// ------------------------------------------------------------------ golden

class TarGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(TarGolden, SamplesAreWebdatasetsGrouping) {
  const std::string path = TestDataPath(std::string("tar/") + GetParam());
  const nlohmann::json expected = nlohmann::json::parse(ReadFileOrDie(path + ".json"));
  for (size_t buffer : {size_t{4096}, size_t{1} << 20}) {
    TarReaderOptions opts;
    opts.buffer_size = buffer;
    SLUICE_ASSERT_OK_AND_ASSIGN(auto file, OpenReadableFile(path));
    Outcome got = ReadAll(std::move(file), opts);
    SLUICE_ASSERT_OK(got.stop);
    ASSERT_TRUE(got.errors.empty()) << got.errors[0];
    ASSERT_EQ(got.samples.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const nlohmann::json& want = expected[i];
      const Sample& s = got.samples[i];
      EXPECT_EQ(s.key, want["__key__"].get<std::string>()) << i;
      EXPECT_EQ(s.members.size() + 1, want.size()) << s.key;
      for (const auto& [ext, data] : s.members) {
        ASSERT_TRUE(want.contains(ext)) << s.key << " ." << ext;
        EXPECT_EQ(data.size(), want[ext]["size"].get<size_t>()) << s.key << " ." << ext;
        const uint32_t crc = static_cast<uint32_t>(
            crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
        EXPECT_EQ(crc, want[ext]["crc32"].get<uint32_t>()) << s.key << " ." << ext;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, TarGolden,
                         ::testing::Values("ustar.tar", "pax.tar", "gnu.tar", "pax.tar.gz"));

TEST(TarName, SplitsAsWebdataset) {
  const auto split = [](std::string_view name) {
    std::string_view k, e;
    if (!records_internal::SplitTarName(name, &k, &e)) return std::string("none");
    return std::string(k) + "|" + std::string(e);
  };
  EXPECT_EQ(split("a.jpg"), "a|jpg");
  EXPECT_EQ(split("dir/a.seg.png"), "dir/a|seg.png");
  EXPECT_EQ(split("a.b/c.d.e"), "a.b/c|d.e");
  EXPECT_EQ(split("x/.txt"), "x/|txt");
  EXPECT_EQ(split("/.txt"), "/|txt");
  EXPECT_EQ(split(".jpg"), "none");
  EXPECT_EQ(split("a.b/.txt"), "none");
  EXPECT_EQ(split("noext"), "none");
  EXPECT_EQ(split("a.b/c"), "none");
  EXPECT_TRUE(records_internal::IsTarMetaName("__meta__"));
  EXPECT_TRUE(records_internal::IsTarMetaName("__index__/x.y"));
  EXPECT_FALSE(records_internal::IsTarMetaName("__key__.txt"));
  EXPECT_FALSE(records_internal::IsTarMetaName("dir/__meta__"));
}

// ------------------------------------------------------------------ writer

std::string WriteTar(const ScratchDir& dir, const std::vector<Member>& members) {
  const std::string path = dir.file("w.tar");
  auto w = TarWriter::Create(path);
  EXPECT_TRUE(w.ok()) << w.status();
  for (const Member& m : members) SLUICE_EXPECT_OK((*w)->Add(m.key + "." + m.ext, m.data));
  SLUICE_EXPECT_OK((*w)->Close());
  return path;
}

TEST(TarWriter, RoundTripsNamesAndPayloads) {
  ScratchDir dir;
  const std::string long_key = std::string(150, 'k') + "/" + std::string(120, 'n');
  std::vector<Member> members = {
      {"a", "jpg", "JPEG"},           {"a", "cls", "7"},
      {"b", "jpg", ""},               {"b", "cls", std::string(512, 'x')},
      {long_key, "json", "{}"},       {"c/d", "seg.png", std::string(100000, '\x01')},
  };
  const std::string path = WriteTar(dir, members);
  const std::string bytes = ReadFileOrDie(path);
  EXPECT_EQ(bytes.size() % 10240, 0u);
  Outcome got = ReadBytes(bytes);
  SLUICE_ASSERT_OK(got.stop);
  ASSERT_EQ(got.samples.size(), 4u);
  EXPECT_EQ(got.samples[0].key, "a");
  EXPECT_EQ(got.samples[0].members.at("jpg"), "JPEG");
  EXPECT_EQ(got.samples[1].members.at("cls"), std::string(512, 'x'));
  EXPECT_EQ(got.samples[2].key, long_key);
  EXPECT_EQ(got.samples[3].members.at("seg.png").size(), 100000u);
  // The file is published only at Close().
  {
    auto w = TarWriter::Create(dir.file("never.tar"));
    SLUICE_ASSERT_OK(w);
    SLUICE_ASSERT_OK((*w)->Add("x.y", "z"));
  }
  EXPECT_FALSE(OpenReadableFile(dir.file("never.tar")).ok());
}

// ------------------------------------------------------------------ index

TEST(TarIndex, RandomAccessMatchesTheSequentialRead) {
  ScratchDir dir;
  const std::string path = dir.file("ustar.tar");
  WriteFileOrDie(path, ReadFileOrDie(TestDataPath("tar/ustar.tar")));
  EXPECT_EQ(LoadTarIndex(path).status().code(), StatusCode::kNotFound);
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, BuildAndSaveTarIndex(path));
  SLUICE_ASSERT_OK_AND_ASSIGN(auto file, OpenReadableFile(path));
  Outcome seq = ReadAll(std::move(file));
  SLUICE_ASSERT_OK(seq.stop);
  ASSERT_EQ(index.size(), seq.samples.size());
  EXPECT_EQ(index[0].offset, 0u);
  SLUICE_ASSERT_OK_AND_ASSIGN(auto indexed, OpenIndexedTar(path));
  ASSERT_EQ(indexed->num_records(), seq.samples.size());
  for (uint64_t i = indexed->num_records(); i-- > 0;) {  // backwards: random access
    SLUICE_ASSERT_OK_AND_ASSIGN(Record rec, indexed->Read(i));
    EXPECT_EQ(rec.number, i);
    SLUICE_ASSERT_OK_AND_ASSIGN(Sample s, ToSample(rec, path));
    EXPECT_EQ(s.key, seq.samples[i].key);
    EXPECT_EQ(s.members, seq.samples[i].members);
  }
  SLUICE_ASSERT_OK_AND_ASSIGN(std::vector<Record> run, indexed->ReadRun(1, 1 << 20, 2));
  ASSERT_EQ(run.size(), (seq.samples.size() - 2) / 2 + 1);
  EXPECT_EQ(run[1].number, 3u);
  EXPECT_EQ(indexed->Read(index.size()).status().code(), StatusCode::kOutOfRange);

  // A reader seeks with the index.
  SLUICE_ASSERT_OK_AND_ASSIGN(auto reader, TarReader::Open(path));
  SLUICE_ASSERT_OK_AND_ASSIGN(bool sought, reader->Seek(5));
  EXPECT_TRUE(sought);
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Record> fifth, reader->Next());
  ASSERT_TRUE(fifth.has_value());
  EXPECT_EQ(fifth->number, 5u);
  EXPECT_EQ(ToSample(*fifth, path)->key, seq.samples[5].key);
  EXPECT_EQ(reader->Seek(index.size() + 1).status().code(), StatusCode::kOutOfRange);

  // A stale index (the file grew) is refused, naming why.
  WriteFileOrDie(path, ReadFileOrDie(path) + std::string(512, '\0'));
  Result<RecordIndex> stale = LoadTarIndex(path);
  EXPECT_EQ(stale.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(stale.status().message().find("stale"), std::string::npos);
}

TEST(TarIndex, CompressedShardsAreReadInOrderOnly) {
  ScratchDir dir;
  const std::string path = dir.file("pax.tar.gz");
  WriteFileOrDie(path, ReadFileOrDie(TestDataPath("tar/pax.tar.gz")));
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, BuildAndSaveTarIndex(path));
  EXPECT_EQ(index.size(), 7u);
  EXPECT_EQ(OpenIndexedTar(path).status().code(), StatusCode::kInvalidArgument);
  // Seek inflates forward to the sample.
  SLUICE_ASSERT_OK_AND_ASSIGN(auto reader, TarReader::Open(path));
  EXPECT_EQ(reader->compression(), Compression::kGzip);
  SLUICE_ASSERT_OK_AND_ASSIGN(bool sought, reader->Seek(4));
  EXPECT_TRUE(sought);
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Record> rec, reader->Next());
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(ToSample(*rec, path)->key, "a.b/c");
}

// ------------------------------------------------------------------ hostile

// A tar of samples k0..k3 with members jpg and cls (1000 bytes each).
std::string CleanTar(const ScratchDir& dir, std::vector<Member> extra = {}) {
  std::vector<Member> members;
  for (int i = 0; i < 4; ++i) {
    members.push_back({"k" + std::to_string(i), "jpg", std::string(1000, char('a' + i))});
    members.push_back({"k" + std::to_string(i), "cls", std::to_string(i)});
  }
  members.insert(members.end(), extra.begin(), extra.end());
  return ReadFileOrDie(WriteTar(dir, members));
}

// Offsets of each member's header in a tar of plain ustar members.
std::vector<size_t> HeaderOffsets(const std::string& tar) {
  std::vector<size_t> out;
  size_t p = 0;
  while (p + 512 <= tar.size() && tar[p] != '\0') {
    out.push_back(p);
    const uint64_t size = std::stoull(tar.substr(p + tar::kSizeOffset, 11), nullptr, 8);
    p += 512 + tar::Padded(size);
  }
  return out;
}

void FixChecksum(std::string* tar, size_t header) {
  char* h = tar->data() + header;
  std::memset(h + tar::kChecksumOffset, ' ', 8);
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(h[i]);
  snprintf(h + tar::kChecksumOffset, 8, "%06o", sum);
}

void SetSize(std::string* tar, size_t header, uint64_t size) {
  snprintf(tar->data() + header + tar::kSizeOffset, 12, "%011llo",
           static_cast<unsigned long long>(size));
  FixChecksum(tar, header);
}

void ExpectNames(const Status& s, const std::string& what, size_t offset) {
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("bad.tar"), std::string::npos) << s;
  EXPECT_NE(s.message().find("offset " + std::to_string(offset)), std::string::npos) << s;
  EXPECT_NE(s.message().find(what), std::string::npos) << s;
}

TEST(TarHostile, BadChecksumStopsThereNamingTheOffset) {
  ScratchDir dir;
  std::string tar = CleanTar(dir);
  const size_t bad = HeaderOffsets(tar)[4];  // k2.jpg
  tar[bad + 10] ^= 0x20;
  Outcome got = ReadBytes(tar);
  EXPECT_EQ(got.samples.size(), 2u);
  ExpectNames(got.stop, "checksum", bad);
}

TEST(TarHostile, SizePastTheEndIsRefusedBeforeAllocating) {
  ScratchDir dir;
  std::string tar = CleanTar(dir);
  const size_t h = HeaderOffsets(tar)[2];  // k1.jpg
  SetSize(&tar, h, uint64_t{1} << 32);      // 4 GiB in a 20 KiB file
  TarReaderOptions opts;
  opts.max_sample_size = uint64_t{1} << 40;
  Outcome got = ReadBytes(tar, opts);
  EXPECT_EQ(got.samples.size(), 1u);
  ExpectNames(got.stop, "past the end of the file", h);
  // Base-256 sizes too (GNU's large-size encoding), and in a gzip stream
  // the size is bounded by max_sample_size.
  char* f = tar.data() + h + tar::kSizeOffset;
  std::memset(f, 0, 12);
  f[0] = static_cast<char>(0x80);
  f[7] = 0x01;
  FixChecksum(&tar, h);
  ExpectNames(ReadBytes(tar, opts).stop, "past the end of the file", h);
}

TEST(TarHostile, HugePaxRecordIsRefused) {
  ScratchDir dir;
  const std::string long_name = std::string(300, 'p');
  std::string tar = CleanTar(dir, {{long_name, "jpg", "x"}});
  const size_t pax = HeaderOffsets(tar)[8];
  ASSERT_EQ(tar[pax + tar::kTypeOffset], 'x');
  SetSize(&tar, pax, 64 << 20);
  Outcome got = ReadBytes(tar);
  EXPECT_EQ(got.samples.size(), 4u);
  ExpectNames(got.stop, "extended header of 67108864 bytes", pax);
}

TEST(TarHostile, MalformedPaxRecordIsRefused) {
  ScratchDir dir;
  std::string tar = CleanTar(dir, {{std::string(300, 'p'), "jpg", "x"}});
  const size_t pax = HeaderOffsets(tar)[8];
  tar[pax + 512] = 'z';  // the record's length digits
  Outcome got = ReadBytes(tar);
  ExpectNames(got.stop, "malformed pax", pax);
}

TEST(TarHostile, NameWithoutKeyIsSkippedExactly) {
  ScratchDir dir;
  std::vector<Member> members = {{"k0", "jpg", "0"}, {"", "jpg", "no key"}, {"k1", "jpg", "1"}};
  const std::string tar = ReadFileOrDie(WriteTar(dir, members));
  Outcome got = ReadBytes(tar);
  SLUICE_EXPECT_OK(got.stop);
  ASSERT_EQ(got.samples.size(), 2u);
  EXPECT_EQ(got.samples[1].key, "k1");
  ASSERT_EQ(got.errors.size(), 1u);
  ExpectNames(got.errors[0], "has no key", 1024);
}

TEST(TarHostile, DuplicateExtensionIsSkippedExactly) {
  ScratchDir dir;
  std::vector<Member> members = {
      {"k0", "jpg", "0"}, {"k1", "jpg", "1"}, {"k1", "JPG", "1"}, {"k2", "jpg", "2"}};
  Outcome got = ReadBytes(ReadFileOrDie(WriteTar(dir, members)));
  SLUICE_EXPECT_OK(got.stop);
  ASSERT_EQ(got.samples.size(), 2u);
  EXPECT_EQ(got.samples[1].key, "k2");
  ASSERT_EQ(got.errors.size(), 1u);
  ExpectNames(got.errors[0], "twice", 1024);
}

TEST(TarHostile, SampleOverTheLimitIsSkipped) {
  ScratchDir dir;
  for (bool gzip : {false, true}) {
    std::string tar = CleanTar(dir);
    if (gzip) {
      // gzip the archive (zlib's gz* stream functions, through a file).
      gzFile gz = gzopen(dir.file("c.tar.gz").c_str(), "wb");
      gzwrite(gz, tar.data(), static_cast<unsigned>(tar.size()));
      gzclose(gz);
      tar = ReadFileOrDie(dir.file("c.tar.gz"));
    }
    TarReaderOptions opts;
    opts.max_sample_size = 2000;  // k*: 512 + 1024 + 512 + 512 = 2560
    Outcome got = ReadBytes(tar, opts);
    SLUICE_EXPECT_OK(got.stop);
    EXPECT_EQ(got.samples.size(), 0u);
    ASSERT_EQ(got.errors.size(), 4u);
    ExpectNames(got.errors[1], "max_sample_size", 2560);
    opts.max_sample_size = 2560;
    EXPECT_EQ(ReadBytes(tar, opts).samples.size(), 4u);
  }
}

TEST(TarHostile, TruncationAnywhereIsAnErrorOrACleanEnd) {
  ScratchDir dir;
  const std::string tar = CleanTar(dir);
  const size_t data_end = HeaderOffsets(tar).back() + 1024;
  for (size_t cut = 0; cut < data_end; cut += 37) {
    Outcome got = ReadBytes(tar.substr(0, cut));
    if (cut % 512 == 0 && !got.stop.ok()) {
      // At a block boundary the archive may end cleanly or inside a payload.
      EXPECT_EQ(got.stop.code(), StatusCode::kDataLoss);
    } else if (!got.stop.ok()) {
      EXPECT_EQ(got.stop.code(), StatusCode::kDataLoss) << got.stop;
      EXPECT_NE(got.stop.message().find("bad.tar"), std::string::npos);
    }
    EXPECT_LE(got.samples.size(), 4u);
    if (cut >= 512 && cut % 512 != 0) {
      EXPECT_FALSE(got.stop.ok()) << cut;
    }
  }
}

TEST(TarHostile, GarbageIsNotATar) {
  Outcome got = ReadBytes(std::string(2048, 'g'));
  ExpectNames(got.stop, "checksum", 0);
  SLUICE_EXPECT_OK(ReadBytes("").stop);
  SLUICE_EXPECT_OK(ReadBytes(std::string(10240, '\0')).stop);
}

}  // namespace
}  // namespace sluice
