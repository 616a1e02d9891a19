// The LevelDB table builder and reader: round trips across block sizes and
// restart intervals, key order, the exact layout of a tiny table, and
// corruption (every truncation, every flipped byte) giving DataLoss.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sluice/records/crc32c.h"
#include "sluice/records/internal/sstable_builder.h"
#include "sluice/records/internal/sstable_format.h"
#include "sluice/records/internal/sstable_reader.h"
#include "test_util.h"

namespace sluice {
namespace {

using records_internal::ParseSSTable;
using records_internal::SSTableBuilder;
using records_internal::SSTableEntry;
using records_internal::SSTableOptions;

std::vector<SSTableEntry> MakeEntries(int n) {
  std::vector<SSTableEntry> out;
  out.push_back({"", "header"});
  for (int i = 0; i < n; ++i) {
    char key[64];
    std::snprintf(key, sizeof(key), "layer_%04d/kernel/.ATTRIBUTES/VARIABLE_VALUE", i);
    out.push_back({key, std::string(static_cast<size_t>(i % 37), static_cast<char>('a' + i % 26))});
  }
  return out;
}

std::string Build(const std::vector<SSTableEntry>& entries, SSTableOptions options) {
  SSTableBuilder b(options);
  for (const auto& e : entries) EXPECT_TRUE(b.Add(e.key, e.value).ok());
  return b.Finish();
}

TEST(SSTableTest, RoundTripsAcrossBlockSizesAndRestartIntervals) {
  for (int n : {0, 1, 17, 300}) {
    for (size_t block_size : {size_t{1}, size_t{64}, size_t{4096}, size_t{262144}}) {
      for (int restart : {1, 2, 16}) {
        const auto entries = MakeEntries(n);
        const std::string table = Build(entries, {block_size, restart});
        SLUICE_ASSERT_OK_AND_ASSIGN(auto got, ParseSSTable(table, "t"));
        ASSERT_EQ(got.size(), entries.size()) << n << " " << block_size << " " << restart;
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(got[i].key, entries[i].key);
          EXPECT_EQ(got[i].value, entries[i].value);
        }
      }
    }
  }
}

TEST(SSTableTest, EmptyTable) {
  SLUICE_ASSERT_OK_AND_ASSIGN(auto got, ParseSSTable(Build({}, {}), "t"));
  EXPECT_TRUE(got.empty());
}

TEST(SSTableTest, KeysMustIncrease) {
  SSTableBuilder b;
  SLUICE_EXPECT_OK(b.Add("b", "1"));
  SLUICE_EXPECT_ERROR(b.Add("b", "2"), StatusCode::kInvalidArgument, "increasing order");
  SLUICE_EXPECT_ERROR(b.Add("a", "2"), StatusCode::kInvalidArgument, "increasing order");
  SLUICE_EXPECT_OK(b.Add("ba", "3"));
}

// One entry "k" -> "v": the bytes follow docs/formats.md exactly.
TEST(SSTableTest, TinyTableLayout) {
  const std::string t = Build({{"k", "v"}}, {});
  std::string data("\x00\x01\x01kv", 5);
  sstable::PutFixed32(&data, 0);  // restart 0
  sstable::PutFixed32(&data, 1);  // one restart
  ASSERT_GE(t.size(), data.size() + 5);
  EXPECT_EQ(t.substr(0, data.size()), data);
  EXPECT_EQ(t[data.size()], '\0');  // no compression
  const uint32_t crc = crc32c::Extend(crc32c::Value(data), "\0", 1);
  EXPECT_EQ(sstable::LoadFixed32(t.data() + data.size() + 1), crc32c::Mask(crc));
  // data (13 + 5), empty metaindex (8 + 5), index with key "l" (successor of
  // "k") -> handle (0, 13): 3 + 1 + 2 + 8 = 14 bytes + 5, footer 48.
  EXPECT_EQ(t.size(), 18u + 13u + 19u + 48u);
  EXPECT_EQ(sstable::LoadFixed64(t.data() + t.size() - 8), sstable::kTableMagic);
}

TEST(SSTableTest, EveryTruncationIsDataLoss) {
  const std::string t = Build(MakeEntries(40), {256, 4});
  for (size_t n = 0; n < t.size(); ++n) {
    auto r = ParseSSTable(t.substr(0, n), "cut.index");
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << n << ": " << r.status();
    EXPECT_NE(r.status().message().find("cut.index"), std::string_view::npos);
  }
}

TEST(SSTableTest, EveryFlippedByteIsDetected) {
  const auto entries = MakeEntries(40);
  const std::string t = Build(entries, {256, 4});
  for (size_t i = 0; i < t.size(); ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::string bad = t;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      auto r = ParseSSTable(bad, "flip.index");
      if (r.ok()) {
        // Only the footer's zero padding is not covered by a checksum; a flip
        // there must not change what is read.
        ASSERT_EQ(r->size(), entries.size()) << i;
        for (size_t k = 0; k < entries.size(); ++k) ASSERT_EQ((*r)[k].value, entries[k].value);
        continue;
      }
      EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << i << ": " << r.status();
      EXPECT_NE(r.status().message().find("offset"), std::string_view::npos) << r.status();
    }
  }
}

TEST(SSTableTest, RejectsCompressedBlocks) {
  std::string t = Build({{"k", "v"}}, {});
  // Mark the data block as Snappy and fix its CRC.
  const size_t type_at = 13;
  t[type_at] = 1;
  const uint32_t crc = crc32c::Extend(crc32c::Value(t.data(), 13), "\x01", 1);
  std::string fixed;
  sstable::PutFixed32(&fixed, crc32c::Mask(crc));
  t.replace(type_at + 1, 4, fixed);
  SLUICE_EXPECT_ERROR(ParseSSTable(t, "snappy.index"), StatusCode::kDataLoss, "compression type 1");
}

}  // namespace
}  // namespace sluice
