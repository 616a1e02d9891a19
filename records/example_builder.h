// ExampleBuilder and SequenceExampleBuilder: write serialized
// tf.train.Example / SequenceExample protos directly in the wire format,
// without protobuf message objects.
//
//   ExampleBuilder b;
//   b.AddInt64("label", 3).AddFloatList("scores", {0.5f, 1.5f}).AddBytes("image", jpeg);
//   std::string record = b.Serialize();
//   b.Clear();  // reuse for the next example; capacity is kept
//
// Features are emitted sorted by key (bytewise), so the output is
// byte-identical to protobuf's deterministic serialization
// (SerializeToString(deterministic=True)), which is what TensorFlow's
// tools write. Adding a key that is already set replaces its value. An
// empty list is still a present feature (`int64_list {}`), which parsers
// do not treat as absent. A builder with no features serializes to an
// Example whose (empty) `features` field is set: bytes 0a 00.
//
// The builders copy what they are given; the caller's buffers may change
// afterwards. Not thread-safe: use one builder per thread.
#ifndef SLUICE_RECORDS_EXAMPLE_BUILDER_H_
#define SLUICE_RECORDS_EXAMPLE_BUILDER_H_

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

class ExampleBuilder {
 public:
  ExampleBuilder() = default;

  ExampleBuilder& AddInt64(std::string_view key, int64_t value);
  ExampleBuilder& AddInt64List(std::string_view key, std::span<const int64_t> values);
  ExampleBuilder& AddInt64List(std::string_view key, std::initializer_list<int64_t> values) {
    return AddInt64List(key, std::span<const int64_t>(values.begin(), values.size()));
  }
  ExampleBuilder& AddFloat(std::string_view key, float value);
  ExampleBuilder& AddFloatList(std::string_view key, std::span<const float> values);
  ExampleBuilder& AddFloatList(std::string_view key, std::initializer_list<float> values) {
    return AddFloatList(key, std::span<const float>(values.begin(), values.size()));
  }
  ExampleBuilder& AddBytes(std::string_view key, std::string_view value);
  ExampleBuilder& AddBytesList(std::string_view key, std::span<const std::string_view> values);
  ExampleBuilder& AddBytesList(std::string_view key,
                               std::initializer_list<std::string_view> values) {
    return AddBytesList(key, std::span<const std::string_view>(values.begin(), values.size()));
  }

  size_t num_features() const { return entries_.size(); }

  // The serialized Example.
  std::string Serialize() const;
  // Replaces *out with the serialized Example, reusing its capacity.
  void SerializeTo(std::string* out) const;
  // Size in bytes of the serialized Example.
  size_t SerializedSize() const;

  // Removes all features; keeps the allocated capacity.
  void Clear();

 private:
  friend class SequenceExampleBuilder;
  struct Entry {
    size_t key_offset, key_size;    // in arena_
    size_t body_offset, body_size;  // the list message body, in arena_
    uint8_t kind;                   // Feature oneof field number: 1 bytes, 2 float, 3 int64
  };
  // Starts a feature: finds or inserts `key`, returns its entry with the
  // body to be appended to arena_ by the caller (see SetBody).
  Entry& FindOrInsert(std::string_view key);
  void SetBody(Entry& e, uint8_t kind, size_t body_offset);
  std::string_view KeyOf(const Entry& e) const;
  // The Features message body (the map entries), and its size.
  size_t FeaturesBodySize() const;
  uint8_t* WriteFeaturesBody(uint8_t* p) const;

  std::string arena_;
  std::vector<Entry> entries_;  // sorted by key
};

class SequenceExampleBuilder {
 public:
  SequenceExampleBuilder() = default;

  // The context features (SequenceExample.context). Use it as an
  // ExampleBuilder; only its features are used.
  ExampleBuilder& context() { return context_; }

  // Starts the feature list `key` with no steps, dropping any steps it had.
  SequenceExampleBuilder& AddFeatureList(std::string_view key);
  // Append one step (one Feature) to the feature list `key`, creating the
  // list if needed.
  SequenceExampleBuilder& AppendInt64List(std::string_view key, std::span<const int64_t> values);
  SequenceExampleBuilder& AppendInt64List(std::string_view key,
                                          std::initializer_list<int64_t> values) {
    return AppendInt64List(key, std::span<const int64_t>(values.begin(), values.size()));
  }
  SequenceExampleBuilder& AppendFloatList(std::string_view key, std::span<const float> values);
  SequenceExampleBuilder& AppendFloatList(std::string_view key,
                                          std::initializer_list<float> values) {
    return AppendFloatList(key, std::span<const float>(values.begin(), values.size()));
  }
  SequenceExampleBuilder& AppendBytesList(std::string_view key,
                                          std::span<const std::string_view> values);
  SequenceExampleBuilder& AppendBytesList(std::string_view key,
                                          std::initializer_list<std::string_view> values) {
    return AppendBytesList(key, std::span<const std::string_view>(values.begin(), values.size()));
  }

  size_t num_feature_lists() const { return lists_.size(); }

  // The serialized SequenceExample: context (field 1) then feature_lists
  // (field 2), both always present, feature lists sorted by key.
  std::string Serialize() const;
  void SerializeTo(std::string* out) const;
  size_t SerializedSize() const;

  void Clear();

 private:
  struct Step {
    size_t body_offset, body_size;  // list message body in arena_
    uint8_t kind;
  };
  struct List {
    size_t key_offset, key_size;
    std::vector<Step> steps;
  };
  List& FindOrInsert(std::string_view key);
  void AppendStep(std::string_view key, uint8_t kind, size_t body_offset);
  size_t FeatureListsBodySize() const;

  ExampleBuilder context_;
  std::string arena_;
  std::vector<List> lists_;  // sorted by key
};

}  // namespace sluice

#endif  // SLUICE_RECORDS_EXAMPLE_BUILDER_H_
