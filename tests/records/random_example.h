// Random serialized Examples and SequenceExamples written by hand in the
// protobuf wire format, covering what protobuf accepts but simple writers
// never produce: repeated map keys, key after value, several `value` and
// `features` fields, oneof switches, packed and unpacked lists in one
// message, overlong varints, tags and lengths, unknown fields of every wire
// type including nested groups, empty Features and entries without a key.
// Test-only.
#ifndef SLUICE_TESTS_RECORDS_RANDOM_EXAMPLE_H_
#define SLUICE_TESTS_RECORDS_RANDOM_EXAMPLE_H_

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::testing {

// Appends protobuf wire-format pieces, optionally with overlong encodings.
class WireWriter {
 public:
  explicit WireWriter(std::mt19937_64* rng = nullptr, double overlong = 0)
      : rng_(rng), overlong_(overlong) {}
  void Varint(uint64_t v);
  void Tag(uint32_t field, uint32_t wire_type);
  void Fixed32(uint32_t v);
  void Fixed64(uint64_t v);
  // A length-delimited field: tag, length, body.
  void Delimited(uint32_t field, std::string_view body);
  void Raw(std::string_view bytes) { out_.append(bytes); }
  std::string& str() { return out_; }

 private:
  bool Overlong();
  std::mt19937_64* rng_;
  double overlong_;
  std::string out_;
};

// A key to draw, and what its values usually look like (so that random
// examples often fit the spec under test): kind is the Feature oneof field
// number (1 bytes, 2 float, 3 int64; 0 any), count the number of values
// (-1 any) and multiple the number they usually come in.
struct KeyHint {
  std::string key;
  int kind = 0;
  int count = -1;
  int multiple = 1;
};

struct RandomExampleOptions {
  // Keys to draw from (spec keys, "" and unrelated ones are typical).
  std::vector<KeyHint> keys = {{"a"}, {"b"}, {"c"}, {""}, {"zz"}};
  // Probability of weird encodings (overlong varints, unknown fields, ...).
  double weirdness = 0.15;
  // Probability that a key is replaced by invalid UTF-8.
  double bad_utf8 = 0.01;
};

std::string RandomExample(std::mt19937_64& rng, const RandomExampleOptions& options);
std::string RandomSequenceExample(std::mt19937_64& rng, const RandomExampleOptions& options);

// A random Feature message body (one list kind, sometimes several or none),
// usually shaped by `hint`.
std::string RandomFeature(std::mt19937_64& rng, const RandomExampleOptions& options,
                          const KeyHint& hint);

// A copy of `bytes` with a few random byte edits, truncations or inserts.
std::string Mutate(std::mt19937_64& rng, std::string bytes);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_RECORDS_RANDOM_EXAMPLE_H_
