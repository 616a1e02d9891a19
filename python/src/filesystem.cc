// sluice.io.gfile and the remote cache's settings: core/filesystem.h and
// core/remote_cache.h for Python. Every call releases the GIL while it
// waits on a disk or a store.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "sluice/core/file.h"
#include "sluice/core/filesystem.h"
#include "sluice/core/remote_cache.h"
#include "sluice_py.h"

namespace sluice::python {
namespace {

// One entry of a listing or stat: (path, is_dir, size, mtime_ns).
using InfoTuple = std::tuple<std::string, bool, uint64_t, int64_t>;

InfoTuple ToTuple(const FileInfo& f) { return {f.path, f.is_dir, f.size, f.mtime_ns}; }

// Runs `f` without the GIL and returns its Status or Result, to be checked
// (and raised) once the GIL is held again.
template <typename F>
auto WithoutGil(F&& f) {
  nb::gil_scoped_release unlocked;
  return f();
}

// A file being written: bytes go to an OutputFile (a temporary name, or an
// upload) and appear at close().
class PyWritable {
 public:
  explicit PyWritable(const std::string& path)
      : out_(Unwrap(WithoutGil([&] { return OutputFile::Create(path); }))) {}
  void Write(nb::bytes data) {
    if (!out_) throw nb::value_error("write to a closed file");
    const std::string_view bytes(data.c_str(), data.size());
    Check(WithoutGil([&] { return out_->Append(bytes); }));
  }
  void Close() {
    if (!out_) return;
    std::unique_ptr<OutputFile> out = std::move(out_);
    Check(WithoutGil([&] { return out->Commit(); }));
  }
  void Discard() {
    if (out_) out_->Abandon();
    out_.reset();
  }

 private:
  std::unique_ptr<OutputFile> out_;
};

}  // namespace

void RegisterGfile(nb::module_& m) {
  nb::module_ fs = m.def_submodule("fs_ops", "sluice.io.gfile's C++ half");
  fs.def("exists", [](const std::string& path) {
    return Unwrap(WithoutGil([&] { return PathExists(path); }));
  });
  fs.def("stat", [](const std::string& path) -> std::optional<InfoTuple> {
    std::optional<FileInfo> info = Unwrap(WithoutGil([&] { return StatPath(path); }));
    if (!info) return std::nullopt;
    return ToTuple(*info);
  });
  fs.def("list", [](const std::string& dir, bool recursive) {
    std::vector<FileInfo> files = Unwrap(WithoutGil([&] { return ListFolder(dir, recursive); }));
    std::vector<InfoTuple> out;
    out.reserve(files.size());
    for (const FileInfo& f : files) out.push_back(ToTuple(f));
    return out;
  });
  fs.def("remove",
         [](const std::string& path) { Check(WithoutGil([&] { return DeletePath(path); })); });
  fs.def("makedirs",
         [](const std::string& path) { Check(WithoutGil([&] { return CreateDirs(path); })); });
  fs.def("read", [](const std::string& path) {
    const WholeFile file = Unwrap(WithoutGil([&] { return ReadWholeFile(path); }));
    return nb::bytes(file.bytes().data(), file.bytes().size());
  });
  nb::class_<PyWritable>(fs, "Writable")
      .def(nb::init<const std::string&>(), nb::arg("path"))
      .def("write", &PyWritable::Write)
      .def("close", &PyWritable::Close)
      .def("discard", &PyWritable::Discard);

  fs.def(
      "set_remote_cache",
      [](const std::string& dir, uint64_t max_bytes, const std::string& fill) {
        RemoteCacheOptions o;
        o.dir = dir;
        o.max_bytes = max_bytes;
        if (fill == "on_open") {
          o.fill = RemoteCacheOptions::Fill::kOnOpen;
        } else if (fill != "while_reading") {
          Check(Status::InvalidArgument("fill must be 'while_reading' or 'on_open', not '" + fill +
                                        "'"));
        }
        Check(SetRemoteCache(o));
      },
      nb::arg("dir"), nb::arg("max_bytes"), nb::arg("fill"));
  fs.def("remote_cache", [] {
    const RemoteCacheOptions o = GetRemoteCache();
    return std::make_tuple(
        o.dir, o.max_bytes,
        std::string(o.fill == RemoteCacheOptions::Fill::kOnOpen ? "on_open" : "while_reading"));
  });
  fs.def("remote_cache_stats", [] {
    const RemoteCacheStats s = GetRemoteCacheStats();
    nb::dict d;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["filled"] = s.filled;
    d["evicted"] = s.evicted;
    d["not_cached"] = s.not_cached;
    d["errors"] = s.errors;
    d["bytes_read_from_cache"] = s.bytes_read_from_cache;
    return d;
  });
  fs.def("parse_byte_size", [](const std::string& text) { return Unwrap(ParseByteSize(text)); });
}

}  // namespace sluice::python
