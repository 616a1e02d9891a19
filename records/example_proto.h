// The protobuf message classes for Example and SequenceExample
// (sluice::proto::Example, SequenceExample, Features, Feature, ...),
// generated from records/proto/*.proto: TensorFlow's messages and field
// numbers in package sluice.proto, so they read and write the same bytes as
// tf.train.Example without clashing with TensorFlow's own classes.
//
// For users who want message objects (JSON conversion, reflection, tests).
// Parsing and writing on the data path need none of this: use
// ExampleParser and ExampleBuilder. Linking sluice::records brings in
// libprotobuf. Thread-safety: as any protobuf message.
#ifndef SLUICE_RECORDS_EXAMPLE_PROTO_H_
#define SLUICE_RECORDS_EXAMPLE_PROTO_H_

#include "sluice/records/proto/example.pb.h"  // IWYU pragma: export
#include "sluice/records/proto/feature.pb.h"  // IWYU pragma: export

#endif  // SLUICE_RECORDS_EXAMPLE_PROTO_H_
