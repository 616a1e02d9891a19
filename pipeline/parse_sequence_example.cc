// parse_sequence_example: SequenceExampleParser as a map function
// (parse_sequence_example.h); its fusion with batch is in map.cc.
#include "sluice/pipeline/parse_sequence_example.h"

#include <unordered_set>

namespace sluice {

struct ParseSequenceExampleFn::State {
  Result<SequenceExampleParser> parser = Status::Internal("unset");
  Status status;
  // Context names then feature-list names, for one example and a batch.
  std::shared_ptr<const std::vector<std::string>> single_names;
  std::shared_ptr<const std::vector<std::string>> batch_names;
};

namespace {

Result<std::shared_ptr<const std::vector<std::string>>> Joined(
    const std::vector<std::string>& context, const std::vector<std::string>& lists) {
  auto names = std::make_shared<std::vector<std::string>>(context);
  names->insert(names->end(), lists.begin(), lists.end());
  std::unordered_set<std::string_view> seen;
  for (const std::string& n : *names) {
    if (!seen.insert(n).second) {
      return Status::InvalidArgument(
          "parse spec: two outputs are named '" + n +
          "' (a key in both the context and the sequence spec, or a feature named like "
          "another's '.row_lengths' / '.length' output); one Element holds both parts, so "
          "rename one");
    }
  }
  return std::shared_ptr<const std::vector<std::string>>(std::move(names));
}

Element Merge(ParsedSequenceExample parsed,
              const std::shared_ptr<const std::vector<std::string>>& names) {
  std::vector<Tensor> out = std::move(parsed.context.components());
  for (Tensor& t : parsed.feature_lists.components()) out.push_back(std::move(t));
  return Element(std::move(out), names);
}

}  // namespace

ParseSequenceExampleFn::ParseSequenceExampleFn(const ParseSpec& context_spec,
                                               const ParseSpec& sequence_spec) {
  auto state = std::make_shared<State>();
  state->parser = SequenceExampleParser::Create(context_spec, sequence_spec);
  state->status = state->parser.status();
  if (state->status.ok()) {
    const SequenceExampleParser& p = state->parser.value();
    Result<std::shared_ptr<const std::vector<std::string>>> single =
        Joined(p.context_names(), p.feature_list_names());
    Result<std::shared_ptr<const std::vector<std::string>>> batch =
        Joined(p.batch_context_names(), p.batch_feature_list_names());
    if (!single.ok()) {
      state->status = single.status();
    } else if (!batch.ok()) {
      state->status = batch.status();
    } else {
      state->single_names = *single;
      state->batch_names = *batch;
    }
  }
  state_ = std::move(state);
}

const Status& ParseSequenceExampleFn::status() const { return state_->status; }

const SequenceExampleParser& ParseSequenceExampleFn::parser() const {
  return state_->parser.value();
}

Result<Element> ParseSequenceExampleFn::operator()(Element e, const MapContext&) const {
  SLUICE_RETURN_IF_ERROR(state_->status);
  if (e.empty()) {
    return Status::InvalidArgument("parse_sequence_example: an element with no components");
  }
  const Tensor& serialized = e[0];
  const bool single = serialized.shape().rank() == 0;
  Result<ParsedSequenceExample> parsed =
      single ? parser().Parse(serialized) : parser().ParseBatch(serialized);
  if (!parsed.ok()) return parsed.status();
  Element out =
      Merge(std::move(parsed).value(), single ? state_->single_names : state_->batch_names);
  for (size_t i = 1; i < e.size(); ++i) out.push_back(e[i], e.names()[i]);
  return out;
}

ParseSequenceExampleFn parse_sequence_example(const ParseSpec& context_spec,
                                              const ParseSpec& sequence_spec) {
  return ParseSequenceExampleFn(context_spec, sequence_spec);
}

}  // namespace sluice
