// sluice.io.parse_sequence_example / parse_single_sequence_example: the map
// function (ParseSequenceExampleFn) and the eager forms, which return
// tf.io's tuple of dicts (python/sluice/io/__init__.py gives them tf.io's
// signatures).
#include "sluice_py.h"
// (sluice_py.h first: every file sees the same casters.)
#include <string>
#include <utility>

#include "sluice/pipeline/parse_sequence_example.h"
#include "sluice/records/sequence_example_parser.h"

namespace sluice::python {
namespace {

SequenceExampleParser Parser(nb::handle context, nb::handle sequence) {
  Result<SequenceExampleParser> p =
      SequenceExampleParser::Create(SpecFromList(context), SpecFromList(sequence));
  if (!p.ok()) ThrowStatus(p.status().WithContext("parse_sequence_example"));
  return std::move(p).value();
}

// (context, feature_lists) for one example; (context, feature_lists,
// lengths) for a batch, each "<key>.length" moved into lengths["<key>"].
nb::object ParseEager(nb::handle serialized, nb::handle context, nb::handle sequence, bool single) {
  const char* what = single ? "parse_single_sequence_example" : "parse_sequence_example";
  SequenceExampleParser parser = Parser(context, sequence);
  Tensor input = SerializedFromPython(serialized, what, single);
  Result<ParsedSequenceExample> out = [&] {
    nb::gil_scoped_release release;
    return single ? parser.Parse(input) : parser.ParseBatch(input);
  }();
  if (!out.ok()) ThrowStatus(out.status().WithContext(what));
  nb::dict ctx;
  for (size_t i = 0; i < out->context.size(); ++i) {
    ctx[out->context.names()[i].c_str()] = ElementToPython(Element({out->context[i]}));
  }
  nb::dict lists;
  nb::dict lengths;
  const std::string suffix(kLengthSuffix);
  for (size_t i = 0; i < out->feature_lists.size(); ++i) {
    const std::string& name = out->feature_lists.names()[i];
    nb::object value = ElementToPython(Element({out->feature_lists[i]}));
    if (!single && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      lengths[name.substr(0, name.size() - suffix.size()).c_str()] = value;
    } else {
      lists[name.c_str()] = value;
    }
  }
  if (single) return nb::make_tuple(ctx, lists);
  return nb::make_tuple(ctx, lists, lengths);
}

}  // namespace

void RegisterIoSequence(nb::module_& m) {
  nb::module_ io = m.def_submodule("io_sequence_ops", "sluice.io's SequenceExample parsing");
  io.def(
      "parse_sequence_example_fn",
      [](nb::handle context, nb::handle sequence, std::string name) {
        ParseSequenceExampleFn fn(SpecFromList(context), SpecFromList(sequence));
        if (!fn.status().ok()) ThrowStatus(fn.status().WithContext("parse_sequence_example"));
        // The MapFn holds the ParseSequenceExampleFn itself, so that
        // Dataset.map recognizes it (map.cc, FuseWithBatch).
        return MakeMapFunction(MapFn(std::move(fn)),
                               name.empty() ? "parse_sequence_example" : name);
      },
      nb::arg("context"), nb::arg("sequence"), nb::arg("name"));
  io.def("parse_single", [](nb::handle serialized, nb::handle context, nb::handle sequence) {
    return ParseEager(serialized, context, sequence, /*single=*/true);
  });
  io.def("parse_batch", [](nb::handle serialized, nb::handle context, nb::handle sequence) {
    return ParseEager(serialized, context, sequence, /*single=*/false);
  });
}

}  // namespace sluice::python
