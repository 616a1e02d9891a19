// cache(filename): the first complete pass over the input is kept, and later
// iterators read it back instead of running the input again.
//
// In memory (filename empty): the elements of the first pass that reaches
// the end of the input are stored in the node (shared by every iterator of
// the Dataset, under a mutex). They are charged to the RAM budget of the
// iterator that records them (a pass whose cache would exceed the whole
// budget is ResourceExhausted) and of every iterator that reads them, for
// its life, since they stay in memory while it runs. Until then,
// each new iterator runs the input and records what it sees; the first to
// finish publishes. A pass that stops early, fails, or was restored from a
// checkpoint mid-way publishes nothing.
//
// In a file: if `filename` exists when an iterator is made, the elements are
// read from it. Otherwise the pass runs the input and writes a header record
// (magic and a fingerprint of the input graph) and then each element
// (EncodeElement) as one record of a TFRecord file written through
// OutputFile (core/file.h): under a hidden temporary name beside `filename`,
// which globs on the cache's name do not match, renamed to `filename` (and
// its .idx after it) when the pass completes; a pass that stops early or
// fails leaves nothing, and the temporary files of a pass that was killed
// are removed by the next one. Errors from the OS carry its code (NotFound,
// FailedPrecondition for a folder it may not write, ...) and name the file.
// The TFRecord framing's checksums guard the encoded elements. A file made from
// another input graph is FailedPrecondition; a corrupt file is DataLoss
// naming the file, the record and its offset.
//
// Save/restore: a reading iterator saves its position; a memory-writing one
// its position and the input's state (restored, it finishes its pass but
// does not publish). A file-writing iterator cannot be saved
// (FailedPrecondition "cache: cannot save while the cache is being
// written").
#include <filesystem>
#include <mutex>

#include "sluice/core/element_codec.h"
#include "sluice/core/file.h"
#include "sluice/core/filesystem.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/fingerprint.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_reader.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice::pipeline_internal {
namespace {

using Elements = std::vector<Element>;

// The first record of a cache file: magic, then the input's fingerprint
// (little-endian), so a file made from another input is refused.
constexpr std::string_view kCacheMagic = "SLCACHE1";

// A hash of the input graph's structure (fingerprint.h).
uint64_t Fingerprint(const DatasetNode& node) { return GraphFingerprint(node); }

std::string CacheHeader(uint64_t fingerprint) {
  std::string h(kCacheMagic);
  for (int i = 0; i < 8; ++i) h.push_back(static_cast<char>(fingerprint >> (8 * i)));
  return h;
}

class CacheNode : public DatasetNode {
 public:
  CacheNode(const Dataset& input, std::string filename)
      : DatasetNode("cache", "", {input.node()}, input.element_spec(), input.cardinality()),
        filename_(std::move(filename)) {}
  std::string Describe() const override {
    return filename_.empty() ? "cache(memory)" : "cache(" + filename_ + ")";
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override;

  const std::string& filename() const { return filename_; }
  std::shared_ptr<const Elements> memory() const {
    std::lock_guard<std::mutex> l(mu_);
    return memory_;
  }
  // Keeps `elements` unless another pass published first.
  void Publish(Elements elements) const {
    std::lock_guard<std::mutex> l(mu_);
    if (!memory_) memory_ = std::make_shared<const Elements>(std::move(elements));
  }

 private:
  std::string filename_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Elements> memory_;
};

enum class Mode : uint64_t { kReadMemory = 1, kReadFile = 2, kWrite = 3 };

class CacheIterator : public IteratorNode {
 public:
  CacheIterator(IteratorContext& ctx, const CacheNode& node, const IteratorParams& params)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), node_(node), params_(params) {}
  ~CacheIterator() override {
    AbandonFile();
    ChargeTo(0);
  }

  // Chooses the mode for a fresh pass.
  Status Start() {
    if (node_.filename().empty()) {
      if ((memory_ = node_.memory())) {
        mode_ = Mode::kReadMemory;
        ChargeTo(Bytes(*memory_));
        return Status::OK();
      }
      mode_ = Mode::kWrite;
      publish_ = true;
      return MakeInput();
    }
    Result<bool> exists = PathExists(node_.filename());
    if (!exists.ok()) return exists.status().WithContext("cache");
    if (*exists) return OpenFile(0);
    mode_ = Mode::kWrite;
    publish_ = true;
    SLUICE_RETURN_IF_ERROR(MakeInput());
    // What a pass killed mid-way left (its writer's lock is gone with it).
    (void)RemoveAbandonedTemporaries(node_.filename());
    (void)RemoveAbandonedTemporaries(RecordIndex::PathFor(node_.filename()));
    TFRecordWriterOptions wo;
    wo.write_index = true;  // atomic: published by Close(), data then index
    Result<TFRecordWriter> w = TFRecordWriter::Open(node_.filename(), wo);
    if (!w.ok()) return w.status().WithContext("cache: cannot write " + node_.filename());
    writer_ = std::make_unique<TFRecordWriter>(std::move(w).value());
    Status hs = writer_->Write(CacheHeader(Fingerprint(*node_.inputs()[0])));
    if (!hs.ok()) {
      AbandonFile();
      return hs.WithContext("cache: writing " + node_.filename());
    }
    return Status::OK();
  }

  Status Save(StateWriter& w) override {
    if (mode_ == Mode::kWrite && !node_.filename().empty() && writer_) {
      return Status::FailedPrecondition("cache: cannot save while the cache is being written (" +
                                        node_.filename() + ")");
    }
    w.Tag("cache");
    w.U64(params_.iteration);  // inputs made later derive from it
    w.U64(static_cast<uint64_t>(mode_));
    w.I64(pos_);
    if (mode_ == Mode::kWrite) {
      w.Bool(input_ != nullptr);
      if (input_) return input_->Save(w);
    }
    return Status::OK();
  }

  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("cache"));
    SLUICE_ASSIGN_OR_RETURN(params_.iteration, r.U64());
    SLUICE_ASSIGN_OR_RETURN(uint64_t mode, r.U64());
    SLUICE_ASSIGN_OR_RETURN(int64_t pos, r.I64());
    if (pos < 0) return Status::DataLoss("iterator state: negative cache position");
    AbandonFile();
    reader_.reset();
    elements_.clear();
    ChargeTo(0);
    publish_ = false;
    switch (static_cast<Mode>(mode)) {
      case Mode::kReadMemory:
        if ((memory_ = node_.memory())) {
          if (pos > static_cast<int64_t>(memory_->size())) {
            return Status::DataLoss("iterator state: cache position " + std::to_string(pos) +
                                    " past the " + std::to_string(memory_->size()) +
                                    " cached elements");
          }
          mode_ = Mode::kReadMemory;
          pos_ = pos;
          ChargeTo(Bytes(*memory_));
          return Status::OK();
        }
        // The cache is gone (a new process): replay the input up to pos.
        mode_ = Mode::kWrite;
        SLUICE_RETURN_IF_ERROR(MakeInput());
        return SkipInput(pos);
      case Mode::kReadFile: return OpenFile(pos);
      case Mode::kWrite: {
        SLUICE_ASSIGN_OR_RETURN(bool has_input, r.Bool());
        mode_ = Mode::kWrite;
        pos_ = pos;
        if (!has_input) {
          input_.reset();
          return Status::OK();
        }
        SLUICE_RETURN_IF_ERROR(MakeInput());
        return input_->Restore(r);
      }
    }
    return Status::DataLoss("iterator state: unknown cache mode " + std::to_string(mode));
  }

 protected:
  NextResult GetNext() override {
    switch (mode_) {
      case Mode::kReadMemory:
        if (pos_ >= static_cast<int64_t>(memory_->size())) return std::optional<Element>();
        return std::optional<Element>((*memory_)[static_cast<size_t>(pos_++)]);
      case Mode::kReadFile: return NextFromFile();
      case Mode::kWrite: break;
    }
    if (!input_) return std::optional<Element>();
    NextResult e = input_->Next();
    if (!e.ok()) {
      publish_ = false;
      elements_.clear();
      ChargeTo(0);
      AbandonFile();
      return e;
    }
    if (!e->has_value()) {
      input_.reset();
      return Finish();
    }
    ++pos_;
    if (writer_) {
      encoded_.clear();
      SLUICE_RETURN_IF_ERROR(EncodeElement(**e, &encoded_));
      Status s = writer_->Write(encoded_);
      if (!s.ok()) {
        AbandonFile();
        return s.WithContext("cache: writing " + node_.filename());
      }
    } else if (publish_) {
      const int64_t b = ElementBytes(**e);
      if (charged_ + b > ctx()->memory().limit()) {
        const int64_t need = charged_ + b;
        publish_ = false;
        elements_.clear();
        ChargeTo(0);
        return Status::ResourceExhausted(
            "stage '" + node_.name() + "': cache() in memory would hold " + ByteSize(need) +
            " after " + std::to_string(pos_) + " elements, more than the whole ram_budget of " +
            ByteSize(ctx()->memory().limit()) +
            "; cache to a file (cache(filename)) or raise Options::ram_budget");
      }
      ChargeTo(charged_ + b);
      elements_.push_back(**e);
    }
    return e;
  }

 private:
  Status MakeInput() {
    SLUICE_ASSIGN_OR_RETURN(input_, MakeIteratorOf(*node_.inputs()[0], *ctx(), params_));
    return Status::OK();
  }

  Status SkipInput(int64_t n) {
    pos_ = 0;
    if (input_->positional() && node_.inputs()[0]->cardinality() >= n) {
      pos_ = n;
      return input_->SeekTo(n);
    }
    while (pos_ < n) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (!e)
        return Status::DataLoss("iterator state: the cache's input ended before position " +
                                std::to_string(n));
      ++pos_;
    }
    return Status::OK();
  }

  Result<std::optional<Element>> Finish() {
    if (writer_) {
      std::unique_ptr<TFRecordWriter> w = std::move(writer_);
      // A writer whose Close() fails removes its temporary files.
      Status s = w->Close();
      if (!s.ok()) return s.WithContext("cache: finishing " + node_.filename());
    } else if (publish_) {
      node_.Publish(std::move(elements_));
      elements_.clear();
    }
    publish_ = false;
    return std::optional<Element>();
  }

  Status OpenFile(int64_t pos) {
    mode_ = Mode::kReadFile;
    input_.reset();
    Result<TFRecordReader> r = TFRecordReader::Open(node_.filename());
    if (!r.ok()) return r.status().WithContext("cache: reading " + node_.filename());
    reader_ = std::make_unique<TFRecordReader>(std::move(r).value());
    SLUICE_RETURN_IF_ERROR(CheckHeader());
    pos_ = 0;
    if (pos > 0) {
      // Element i is record i + 1 (record 0 is the header).
      Result<RecordIndex> index = RecordIndex::LoadFor(node_.filename());
      if (index.ok() && static_cast<uint64_t>(pos) + 1 <= index->size() &&
          reader_->Seek(*index, static_cast<uint64_t>(pos) + 1).ok()) {
        pos_ = pos;
      }
      while (pos_ < pos) {
        SLUICE_ASSIGN_OR_RETURN(std::optional<Record> rec, reader_->Next());
        if (!rec) {
          return Status::DataLoss("iterator state: cache position " + std::to_string(pos) +
                                  " past the end of " + node_.filename());
        }
        ++pos_;
      }
    }
    return Status::OK();
  }

  Status CheckHeader() {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Record> rec, reader_->Next());
    const std::string want = CacheHeader(Fingerprint(*node_.inputs()[0]));
    if (!rec || rec->data.substr(0, kCacheMagic.size()) != kCacheMagic ||
        rec->data.size() != want.size()) {
      return Status::DataLoss("cache: " + node_.filename() +
                              " is not a sluice cache file (no header record); delete it to "
                              "rebuild the cache");
    }
    if (rec->data != want) {
      return Status::FailedPrecondition(
          "cache: " + node_.filename() +
          " was made from a different input (its stages, parameters, files or element spec "
          "changed); delete it, and its .idx, to rebuild the cache");
    }
    return Status::OK();
  }

  NextResult NextFromFile() {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Record> rec, reader_->Next());
    if (!rec) return std::optional<Element>();
    std::string_view data = rec->data;
    const std::string what = node_.filename() + " record " + std::to_string(rec->number) +
                             " at offset " + std::to_string(rec->offset);
    SLUICE_ASSIGN_OR_RETURN(Element e, DecodeElement(&data, what));
    if (!data.empty()) {
      return Status::DataLoss("cache: " + what + ": " + std::to_string(data.size()) +
                              " bytes after the element");
    }
    if (node_.spec().known()) {
      Status s = node_.spec().Check(e);
      if (!s.ok()) {
        return Status::DataLoss("cache: " + what + " does not match the dataset's spec (" +
                                std::string(s.message()) + "); delete the stale cache file");
      }
    }
    ++pos_;
    return std::optional<Element>(std::move(e));
  }

  static int64_t Bytes(const Elements& elements) {
    int64_t n = 0;
    for (const Element& e : elements) n += ElementBytes(e);
    return n;
  }
  // Sets what this iterator has charged for cached elements to `bytes`.
  void ChargeTo(int64_t bytes) {
    if (bytes > charged_) ctx()->memory().ChargeRequired(bytes - charged_);
    if (bytes < charged_) ctx()->memory().ReleaseRequired(charged_ - bytes);
    charged_ = bytes;
  }

  // A writer destroyed without Close() removes its temporary files.
  void AbandonFile() { writer_.reset(); }

  const CacheNode& node_;
  IteratorParams params_;  // iteration restored from saved state
  Mode mode_ = Mode::kWrite;
  int64_t pos_ = 0;
  // Reading from memory.
  std::shared_ptr<const Elements> memory_;
  // Reading from the file.
  std::unique_ptr<TFRecordReader> reader_;
  // Writing.
  std::unique_ptr<IteratorNode> input_;
  bool publish_ = false;
  Elements elements_;
  int64_t charged_ = 0;  // for elements_ (writing) or memory_ (reading)
  std::unique_ptr<TFRecordWriter> writer_;
  std::string encoded_;
};

Result<std::unique_ptr<IteratorNode>> CacheNode::MakeIterator(IteratorContext& ctx,
                                                              const IteratorParams& params) const {
  auto it = std::make_unique<CacheIterator>(ctx, *this, params);
  SLUICE_RETURN_IF_ERROR(it->Start());
  return std::unique_ptr<IteratorNode>(std::move(it));
}

}  // namespace

Dataset MakeCache(const Dataset& input, std::string filename) {
  return Dataset(std::make_shared<CacheNode>(input, std::move(filename)));
}

}  // namespace sluice::pipeline_internal
