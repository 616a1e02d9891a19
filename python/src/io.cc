// sluice.io: parse_example (as a map function and eagerly), TFRecordWriter,
// serialize_example (ExampleBuilder) and read_file (python/sluice/io/ gives
// them tf.io's names and arguments).
#include "sluice_py.h"
// (sluice_py.h first: every file sees the same casters.)
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "component_op.h"
#include "sluice/ops/read_file.h"
#include "sluice/pipeline/parse_example.h"
#include "sluice/records/compression.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/example_parser.h"
#include "sluice/records/feature_spec.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice::python {
namespace {

// ---- Parse specs ------------------------------------------------------------------

// A composite (SparseFeature / RaggedFeature) entry's extra fields, from
// the Python side's dict (sluice.io's classes make it).
FeatureSpec CompositeFromDict(const std::string& key, const std::string& kind, DType dtype,
                              nb::dict extra) {
  if (kind == "SparseFeature") {
    return SparseFeature(nb::cast<std::vector<std::string>>(extra["index_keys"]),
                         nb::cast<std::string>(extra["value_key"]), dtype,
                         nb::cast<std::vector<int64_t>>(extra["size"]),
                         nb::cast<bool>(extra["already_sorted"]));
  }
  std::vector<RaggedPartition> parts;
  for (nb::handle p : extra["partitions"]) {
    nb::tuple t = nb::cast<nb::tuple>(p);
    const std::string pk = nb::cast<std::string>(t[0]);
    if (pk == "UniformRowLength") {
      parts.push_back(UniformRowLength(nb::cast<int64_t>(t[1])));
      continue;
    }
    const std::string pkey = nb::cast<std::string>(t[1]);
    if (pk == "RowSplits") {
      parts.push_back(RowSplits(pkey));
    } else if (pk == "RowLengths") {
      parts.push_back(RowLengths(pkey));
    } else if (pk == "RowStarts") {
      parts.push_back(RowStarts(pkey));
    } else if (pk == "RowLimits") {
      parts.push_back(RowLimits(pkey));
    } else if (pk == "ValueRowIds") {
      parts.push_back(ValueRowIds(pkey));
    } else {
      throw nb::value_error(("feature '" + key + "': unknown partition " + pk).c_str());
    }
  }
  return RaggedFeature(dtype, nb::cast<std::string>(extra["value_key"]), std::move(parts),
                       Unwrap(DTypeFromName(nb::cast<std::string>(extra["row_splits_dtype"]))),
                       nb::cast<bool>(extra["validate"]));
}

}  // namespace

// A ParseSpec from the Python side's [(key, kind, dtype, shape, default,
// allow_missing[, extra]), ...] (sluice.io's feature classes make them).
ParseSpec SpecFromList(nb::handle list) {
  ParseSpec spec;
  for (nb::handle item : list) {
    nb::tuple t = nb::cast<nb::tuple>(item);
    if (t.size() != 6 && t.size() != 7)
      throw nb::value_error("a feature spec entry has 6 or 7 fields");
    const std::string key = nb::cast<std::string>(t[0]);
    const std::string kind = nb::cast<std::string>(t[1]);
    const DType dtype = Unwrap(DTypeFromName(nb::cast<std::string>(t[2])));
    if (kind == "SparseFeature" || kind == "RaggedFeature") {
      if (t.size() != 7) throw nb::value_error("a composite feature spec entry has 7 fields");
      spec.emplace_back(key, CompositeFromDict(key, kind, dtype, nb::cast<nb::dict>(t[6])));
      continue;
    }
    const Shape shape(nb::cast<std::vector<int64_t>>(t[3]));
    const bool allow_missing = nb::cast<bool>(t[5]);
    std::optional<Tensor> default_value;
    nb::object given = t[4];
    if (!given.is_none()) {
      const std::string what = "default_value of feature '" + key + "'";
      Tensor d = Unwrap(TensorFromPython(given, what, dtype));
      // tf.io reshapes a FixedLen default to the feature's shape.
      if (kind == "FixedLenFeature" && !(d.shape() == shape) &&
          d.num_elements() == shape.num_elements()) {
        d = Unwrap(d.Reshape(shape));
      }
      default_value = std::move(d);
    }
    FeatureSpec f;
    if (kind == "FixedLenFeature") {
      f = FixedLenFeature(dtype, shape, std::move(default_value));
    } else if (kind == "VarLenFeature") {
      f = VarLenFeature(dtype);
    } else if (kind == "FixedLenSequenceFeature") {
      f = FixedLenSequenceFeature(dtype, shape, allow_missing, std::move(default_value));
    } else {
      throw nb::value_error(("unknown feature kind " + kind).c_str());
    }
    spec.emplace_back(key, std::move(f));
  }
  return spec;
}

static ExampleParser Parser(nb::handle spec_list) {
  Result<ExampleParser> parser = ExampleParser::Create(SpecFromList(spec_list));
  if (!parser.ok()) ThrowStatus(parser.status().WithContext("parse_example"));
  return std::move(parser).value();
}

// A string tensor of the serialized Examples: bytes (a scalar), a list or
// tuple of bytes, a NumPy array of them, or a sluice.Tensor.
Tensor SerializedFromPython(nb::handle value, const char* what, bool single) {
  if (nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value)) {
    // Not through NumPy: an 'S' array would drop each record's trailing
    // zero bytes (serialized protos often end in one).
    std::vector<std::string_view> views;  // copied by FromStrings, under the GIL
    for (nb::handle item : value) {
      if (!nb::isinstance<nb::bytes>(item)) {
        throw nb::type_error(
            (std::string(what) + ": the serialized Examples must be bytes, got " + TypeName(item))
                .c_str());
      }
      nb::bytes b = nb::borrow<nb::bytes>(item);
      views.emplace_back(b.c_str(), b.size());
    }
    return Unwrap(Tensor::FromStrings(views, Shape{static_cast<int64_t>(views.size())}));
  }
  Tensor t = Unwrap(TensorFromPython(value, what, DType::kString));
  if (single && t.shape().rank() != 0) {
    throw nb::value_error((std::string(what) + ": serialized must be one Example (bytes), got " +
                           t.shape().ToString() + "; use parse_example for a batch")
                              .c_str());
  }
  if (!single && t.shape().rank() != 1) {
    throw nb::value_error((std::string(what) +
                           ": serialized must be a list (a vector) of Examples, got shape " +
                           t.shape().ToString())
                              .c_str());
  }
  return t;
}

namespace {

nb::object ParseEager(nb::handle serialized, nb::handle spec_list, bool single) {
  const char* what = single ? "parse_single_example" : "parse_example";
  ExampleParser parser = Parser(spec_list);
  Tensor input = SerializedFromPython(serialized, what, single);
  Result<Element> out = [&] {
    nb::gil_scoped_release release;
    return single ? parser.ParseSingle(input) : parser.ParseBatch(input);
  }();
  if (!out.ok()) ThrowStatus(out.status().WithContext(what));
  return ElementToPython(*out);
}

// ---- serialize_example --------------------------------------------------------------

// A BytesList from an iterable of bytes / str.
void AddBytesList(ExampleBuilder& b, const std::string& key, nb::handle items,
                  const std::string& what) {
  std::vector<std::string> values;
  for (nb::handle item : items) {
    if (nb::isinstance<nb::bytes>(item)) {
      nb::bytes bytes = nb::borrow<nb::bytes>(item);
      values.emplace_back(bytes.c_str(), bytes.size());
    } else if (nb::isinstance<nb::str>(item)) {
      values.push_back(nb::cast<std::string>(item));
    } else {
      throw nb::type_error(
          (what + ": element of type " + TypeName(item) + " in a list of strings").c_str());
    }
  }
  std::vector<std::string_view> views(values.begin(), values.end());
  b.AddBytesList(key, views);
}

// One feature of serialize_example: the value's kind decides the list.
void AddFeature(ExampleBuilder& b, const std::string& key, nb::handle v) {
  const std::string what = "serialize_example: feature '" + key + "'";
  if (nb::isinstance<nb::bytes>(v)) {
    nb::bytes bytes = nb::borrow<nb::bytes>(v);
    b.AddBytes(key, std::string_view(bytes.c_str(), bytes.size()));
    return;
  }
  if (nb::isinstance<nb::str>(v)) {
    b.AddBytes(key, nb::cast<std::string>(v));
    return;
  }
  if (nb::isinstance<nb::bool_>(v) || nb::isinstance<nb::int_>(v)) {
    int64_t x;
    if (!nb::try_cast<int64_t>(v, x)) {
      throw nb::value_error(
          (what + ": " + nb::cast<std::string>(nb::repr(v)) + " does not fit in an int64").c_str());
    }
    b.AddInt64(key, x);
    return;
  }
  if (nb::isinstance<nb::float_>(v)) {
    b.AddFloat(key, static_cast<float>(nb::cast<double>(v)));
    return;
  }
  // Lists, tuples, NumPy arrays and scalars, through NumPy.
  if ((nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) && nb::len(v) == 0) {
    throw nb::value_error((what + ": an empty list has no type; pass an empty NumPy array of "
                                  "the type (np.array([], np.int64), np.float32 or object)")
                              .c_str());
  }
  if ((nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) &&
      nb::isinstance<nb::bytes>(v[0])) {
    // Bytes lists directly (NumPy would drop trailing zero bytes).
    AddBytesList(b, key, v, what);
    return;
  }
  nb::module_ np = nb::module_::import_("numpy");
  nb::object array = np.attr("asarray")(v);
  const std::string kind = nb::cast<std::string>(array.attr("dtype").attr("kind"));
  nb::object flat = array.attr("reshape")(-1);
  if (kind == "b" || kind == "i" || kind == "u") {
    if (kind == "u" && nb::cast<int64_t>(array.attr("size")) > 0 &&
        nb::cast<uint64_t>(np.attr("max")(flat).attr("item")()) >
            static_cast<uint64_t>(INT64_MAX)) {
      throw nb::value_error((what + ": a value does not fit in an int64").c_str());
    }
    nb::object ints = np.attr("ascontiguousarray")(flat, nb::arg("dtype") = "int64");
    std::vector<int64_t> values = nb::cast<std::vector<int64_t>>(ints.attr("tolist")());
    b.AddInt64List(key, values);
  } else if (kind == "f") {
    nb::object floats = np.attr("ascontiguousarray")(flat, nb::arg("dtype") = "float32");
    std::vector<double> d = nb::cast<std::vector<double>>(floats.attr("tolist")());
    std::vector<float> values(d.begin(), d.end());
    b.AddFloatList(key, values);
  } else if (kind == "S" || kind == "U" || kind == "O") {
    AddBytesList(b, key, flat.attr("tolist")(), what);
  } else {
    throw nb::type_error((what + ": " + TypeName(v) + " of NumPy kind '" + kind +
                          "' is not int (Int64List), float (FloatList) or bytes/str (BytesList)")
                             .c_str());
  }
}

nb::bytes SerializeExample(nb::dict features) {
  ExampleBuilder b;
  for (auto [k, v] : features) {
    if (!nb::isinstance<nb::str>(k)) {
      throw nb::type_error(
          ("serialize_example: feature keys must be str, got " + TypeName(k)).c_str());
    }
    AddFeature(b, nb::cast<std::string>(k), v);
  }
  const std::string out = b.Serialize();
  return nb::bytes(out.data(), out.size());
}

// ---- TFRecordWriter -------------------------------------------------------------------

// A writer's compression: ParseCompression's names, less "auto".
Compression WriterCompression(const std::string& name) {
  const Compression c = Unwrap(ParseCompression(name));
  if (c == Compression::kAuto) {
    throw nb::value_error(
        "TFRecordWriter: compression_type 'auto' is for readers; use '', 'GZIP' or 'ZLIB'");
  }
  return c;
}

// The writer behind sluice.io.TFRecordWriter. Calls from several Python
// threads are serialized by a mutex (the C++ writer is not thread-safe);
// writing happens without the GIL.
class PyWriter {
 public:
  PyWriter(const std::string& path, const std::string& compression, int level, int64_t buffer_size,
           bool write_index) {
    TFRecordWriterOptions o;
    o.compression = WriterCompression(compression);
    o.compression_level = level;
    if (buffer_size > 0) o.buffer_size = static_cast<size_t>(buffer_size);
    o.write_index = write_index;
    Result<TFRecordWriter> w = [&] {
      nb::gil_scoped_release release;
      return TFRecordWriter::Open(path, o);
    }();
    writer_ = std::make_unique<TFRecordWriter>(Unwrap(std::move(w)));
    path_ = path;
  }
  ~PyWriter() { Discard(); }

  void Write(nb::bytes record) {
    const std::string_view r(record.c_str(), record.size());
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      s = Live() ? writer_->Write(r) : Closed();
    }
    Check(s);
  }
  void Flush() {
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      s = Live() ? writer_->Flush() : Closed();
    }
    Check(s);
  }
  // Publishes the file. Closing twice is harmless (as tf's close()).
  void Close() {
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      if (!Live()) return;
      s = writer_->Close();
      records_ = writer_->records_written();
      bytes_ = writer_->bytes_written();
      writer_.reset();
    }
    Check(s);
  }
  // Drops the writer without publishing: PATH stays as it was.
  void Discard() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!Live()) return;
    records_ = writer_->records_written();
    bytes_ = writer_->bytes_written();
    writer_.reset();
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !Live();
  }
  uint64_t records_written() {
    std::lock_guard<std::mutex> lock(mu_);
    return Live() ? writer_->records_written() : records_;
  }
  uint64_t bytes_written() {
    std::lock_guard<std::mutex> lock(mu_);
    return Live() ? writer_->bytes_written() : bytes_;
  }
  const std::string& path() const { return path_; }

 private:
  bool Live() const { return writer_ != nullptr; }
  Status Closed() const {
    return Status::FailedPrecondition("TFRecordWriter " + path_ + " is closed");
  }
  std::mutex mu_;
  std::unique_ptr<TFRecordWriter> writer_;
  std::string path_;
  uint64_t records_ = 0, bytes_ = 0;
};

// ---- read_file --------------------------------------------------------------------------

ComponentOp ReadFileOp(int64_t max_bytes) {
  return ComponentOp{[max_bytes](Tensor in, ComponentContext&) -> Result<Tensor> {
                       if (in.dtype() != DType::kString || in.shape().rank() != 0) {
                         return Status::InvalidArgument(
                             "expected a file name (a string scalar), got " +
                             std::string(DTypeName(in.dtype())) + in.shape().ToString());
                       }
                       return ops::ReadFile(std::string(in.scalar<std::string_view>()), max_bytes);
                     },
                     "read_file", DType::kString, false};
}

}  // namespace

void RegisterIo(nb::module_& m) {
  nb::module_ io = m.def_submodule("io_ops", "sluice.io's C++ half");
  io.def(
      "parse_example_fn",
      [](nb::handle spec_list, std::string name) {
        ParseExampleFn fn(SpecFromList(spec_list));
        if (!fn.status().ok()) ThrowStatus(fn.status().WithContext("parse_example"));
        // The MapFn holds the ParseExampleFn itself, so that Dataset.map
        // recognizes it and parses after batch (map.cc, FuseWithBatch).
        return MakeMapFunction(MapFn(std::move(fn)), name.empty() ? "parse_example" : name);
      },
      nb::arg("spec"), nb::arg("name"));
  io.def("parse_single", [](nb::handle serialized, nb::handle spec) {
    return ParseEager(serialized, spec, /*single=*/true);
  });
  io.def("parse_batch", [](nb::handle serialized, nb::handle spec) {
    return ParseEager(serialized, spec, /*single=*/false);
  });
  io.def("batch_output_names", [](nb::handle spec) { return Parser(spec).batch_output_names(); });
  io.def("serialize_example", &SerializeExample);
  io.def("read_file", &ReadFileOp);

  nb::class_<PyWriter>(io, "TFRecordWriter")
      .def(nb::init<const std::string&, const std::string&, int, int64_t, bool>(), nb::arg("path"),
           nb::arg("compression"), nb::arg("level"), nb::arg("buffer_size"), nb::arg("write_index"))
      .def("write", &PyWriter::Write)
      .def("flush", &PyWriter::Flush)
      .def("close", &PyWriter::Close)
      .def("discard", &PyWriter::Discard)
      .def_prop_ro("closed", &PyWriter::closed)
      .def_prop_ro("path", &PyWriter::path)
      .def_prop_ro("records_written", &PyWriter::records_written)
      .def_prop_ro("bytes_written", &PyWriter::bytes_written);
}

}  // namespace sluice::python
