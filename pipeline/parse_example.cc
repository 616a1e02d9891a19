// parse_example: ExampleParser as a map function (parse_example.h); its
// fusion with batch is MapNode::FuseWithBatch (map.cc).
#include "sluice/pipeline/parse_example.h"

namespace sluice {

ParseExampleFn::ParseExampleFn(const ParseSpec& spec)
    : parser_(std::make_shared<const Result<ExampleParser>>(ExampleParser::Create(spec))) {}

const Status& ParseExampleFn::status() const { return parser_->status(); }

const ExampleParser& ParseExampleFn::parser() const { return parser_->value(); }

Result<Element> ParseExampleFn::operator()(Element e, const MapContext&) const {
  SLUICE_RETURN_IF_ERROR(parser_->status());
  if (e.empty()) return Status::InvalidArgument("parse_example: an element with no components");
  const Tensor& serialized = e[0];
  Result<Element> features = serialized.shape().rank() == 0 ? parser().ParseSingle(serialized)
                                                            : parser().ParseBatch(serialized);
  if (!features.ok()) return features.status();
  for (size_t i = 1; i < e.size(); ++i) features->push_back(e[i], e.names()[i]);
  return features;
}

ParseExampleFn parse_example(const ParseSpec& spec) { return ParseExampleFn(spec); }

}  // namespace sluice
