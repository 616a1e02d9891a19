#include "sluice/records/tensor_bundle.h"
#include "sluice/core/filesystem.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

#include "sluice/core/file.h"
#include "sluice/records/crc32c.h"
#include "sluice/records/internal/sstable_builder.h"
#include "sluice/records/internal/sstable_format.h"
#include "sluice/records/internal/sstable_reader.h"
#include "sluice/records/proto/tensor_bundle.pb.h"

namespace sluice {

static_assert(std::endian::native == std::endian::little,
              "tensor bundles are read and written as little-endian");

namespace {

// The bundle format version this code writes and reads (TensorFlow's
// kTensorBundleVersion); a bundle may exclude readers by min_consumer or
// bad_consumers.
constexpr int kBundleVersion = 1;
constexpr char kHeaderKey[] = "";

// TensorFlow's DataType numbers.
constexpr int kDtFloat = 1, kDtDouble = 2, kDtInt32 = 3, kDtUInt8 = 4, kDtString = 7, kDtInt64 = 9,
              kDtBool = 10, kDtBFloat16 = 14, kDtHalf = 19;

std::string Quote(std::string_view key) { return "\"" + std::string(key) + "\""; }

// Appends the lengths of a string tensor's elements the way TensorFlow
// checksums them: as little-endian uint32 when they fit, else uint64.
uint32_t ExtendWithLength(uint32_t crc, uint64_t length) {
  if (length <= 0xffffffffu) {
    const auto l32 = static_cast<uint32_t>(length);
    return crc32c::Extend(crc, &l32, sizeof(l32));
  }
  return crc32c::Extend(crc, &length, sizeof(length));
}

}  // namespace

std::string BundleIndexFilename(std::string_view prefix) { return std::string(prefix) + ".index"; }

std::string BundleDataFilename(std::string_view prefix, int shard, int num_shards) {
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), ".data-%05d-of-%05d", shard, num_shards);
  return std::string(prefix) + suffix;
}

int TFDataType(DType dtype) {
  switch (dtype) {
    case DType::kBool: return kDtBool;
    case DType::kUInt8: return kDtUInt8;
    case DType::kInt32: return kDtInt32;
    case DType::kInt64: return kDtInt64;
    case DType::kFloat16: return kDtHalf;
    case DType::kBFloat16: return kDtBFloat16;
    case DType::kFloat32: return kDtFloat;
    case DType::kFloat64: return kDtDouble;
    case DType::kString: return kDtString;
  }
  return 0;
}

std::optional<DType> DTypeFromTFDataType(int tf_dtype) {
  switch (tf_dtype) {
    case kDtBool: return DType::kBool;
    case kDtUInt8: return DType::kUInt8;
    case kDtInt32: return DType::kInt32;
    case kDtInt64: return DType::kInt64;
    case kDtHalf: return DType::kFloat16;
    case kDtBFloat16: return DType::kBFloat16;
    case kDtFloat: return DType::kFloat32;
    case kDtDouble: return DType::kFloat64;
    case kDtString: return DType::kString;
    default: return std::nullopt;
  }
}

// ---------------------------------------------------------------------------
// BundleWriter

struct BundleWriter::Impl {
  std::string prefix;
  bool sync = false;
  std::unique_ptr<OutputFile> data;
  std::map<std::string, proto::BundleEntryProto, std::less<>> entries;
  int64_t size = 0;
  Status status;
  bool finished = false;
};

BundleWriter::BundleWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BundleWriter::BundleWriter(BundleWriter&&) noexcept = default;
BundleWriter& BundleWriter::operator=(BundleWriter&&) noexcept = default;
BundleWriter::~BundleWriter() = default;

Result<BundleWriter> BundleWriter::Create(const std::string& prefix,
                                          const BundleWriterOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->prefix = prefix;
  impl->sync = options.sync;
  SLUICE_ASSIGN_OR_RETURN(impl->data, OutputFile::Create(BundleDataFilename(prefix, 0, 1),
                                                         {.atomic = true, .sync = options.sync}));
  return BundleWriter(std::move(impl));
}

Status BundleWriter::Add(std::string_view key, const Tensor& tensor) {
  Impl& w = *impl_;
  if (w.finished) return Status::InvalidArgument("BundleWriter::Add after Finish: " + w.prefix);
  if (!w.status.ok()) return w.status;
  if (key == kHeaderKey) {
    w.status = Status::InvalidArgument("BundleWriter " + w.prefix +
                                       ": the empty key is reserved for the header");
    return w.status;
  }
  if (w.entries.find(key) != w.entries.end()) {
    w.status =
        Status::InvalidArgument("BundleWriter " + w.prefix + ": duplicate key " + Quote(key));
    return w.status;
  }
  proto::BundleEntryProto entry;
  entry.set_dtype(TFDataType(tensor.dtype()));
  proto::BundleTensorShape* shape = entry.mutable_shape();  // present even for scalars, as TF
  for (int64_t d : tensor.shape().dims()) shape->add_dim()->set_size(d);
  entry.set_shard_id(0);
  entry.set_offset(w.size);

  uint32_t crc = 0;
  size_t written = 0;
  if (tensor.dtype() == DType::kString) {
    // [varint64 length]... [masked crc of the lengths] [bytes]...
    auto strings = tensor.flat<std::string_view>();
    std::string out;
    size_t total = 0;
    for (std::string_view s : strings) {
      sstable::PutVarint64(&out, s.size());
      crc = ExtendWithLength(crc, s.size());
      total += s.size();
    }
    const uint32_t length_crc = crc32c::Mask(crc);
    sstable::PutFixed32(&out, length_crc);
    crc = crc32c::Extend(crc, out.data() + out.size() - 4, 4);
    out.reserve(out.size() + total);
    for (std::string_view s : strings) {
      out.append(s);
      crc = crc32c::Extend(crc, s.data(), s.size());
    }
    written = out.size();
    w.status = w.data->Append(out);
  } else {
    written = tensor.byte_size();
    const auto* bytes = static_cast<const char*>(tensor.raw_data());
    crc = crc32c::Value(bytes, written);
    w.status = w.data->Append(std::string_view(bytes, written));
  }
  if (!w.status.ok()) return w.status;
  entry.set_size(static_cast<int64_t>(written));
  entry.set_crc32c(crc32c::Mask(crc));
  w.size += static_cast<int64_t>(written);
  w.entries.emplace(std::string(key), std::move(entry));
  return Status::OK();
}

Status BundleWriter::Finish() {
  Impl& w = *impl_;
  if (w.finished) return Status::InvalidArgument("BundleWriter::Finish called twice: " + w.prefix);
  w.finished = true;
  if (!w.status.ok()) {
    w.data->Abandon();
    return w.status;
  }
  records_internal::SSTableBuilder table;
  proto::BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(proto::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kBundleVersion);
  Status s = table.Add(kHeaderKey, header.SerializeAsString());
  for (const auto& [key, entry] : w.entries) {
    if (s.ok()) s = table.Add(key, entry.SerializeAsString());
  }
  if (!s.ok()) {
    w.data->Abandon();
    return w.status = s;
  }
  const std::string index_bytes = table.Finish();
  // Both files are complete under temporary names before either is renamed.
  Result<std::unique_ptr<OutputFile>> index =
      OutputFile::Create(BundleIndexFilename(w.prefix), {.atomic = true, .sync = w.sync});
  if (!index.ok()) {
    w.data->Abandon();
    return w.status = index.status();
  }
  s = (*index)->Append(index_bytes);
  if (!s.ok()) {
    w.data->Abandon();
    return w.status = s;
  }
  // The two renames cannot be one atomic step. Keep a hard link to an
  // earlier data file so that, if the index cannot be published after the
  // data was, the earlier bundle is put back as it was. (An object store
  // has no links: there the index, published last, is the commit point,
  // and numbered checkpoints never overwrite an earlier bundle.)
  namespace fs = std::filesystem;
  const std::string data_path = w.data->path();
  const bool remote = IsRemotePath(data_path);
  const std::string backup = data_path + ".sluice-previous";
  std::error_code ec;
  if (!remote) fs::remove(backup, ec);
  const Result<bool> data_exists = PathExists(data_path);
  const bool had_data = data_exists.ok() && *data_exists;
  const bool have_backup =
      !remote && had_data && (fs::create_hard_link(data_path, backup, ec), !ec);
  s = w.data->Commit();
  if (s.ok()) {
    s = (*index)->Commit();
    if (!s.ok()) {
      if (have_backup) {
        fs::rename(backup, data_path, ec);
      } else if (!had_data) {
        (void)DeletePath(data_path);
      }
    }
  }
  if (have_backup) fs::remove(backup, ec);
  if (!s.ok()) {
    (*index)->Abandon();
    return w.status = s;
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// BundleReader

struct BundleReader::Impl {
  std::string prefix;  // empty when opened from memory files
  std::string index_name;
  std::vector<records_internal::SSTableEntry> entries;  // [0] is the header
  int num_shards = 1;
  mutable std::mutex mu;
  mutable std::map<int, std::shared_ptr<ReadableFile>> shards;

  Status Corrupt(std::string_view key, const std::string& what) const {
    return Status::DataLoss(index_name + ": entry " + Quote(key) + ": " + what);
  }

  const records_internal::SSTableEntry* Find(std::string_view key) const {
    auto it = std::lower_bound(entries.begin() + 1, entries.end(), key,
                               [](const auto& e, std::string_view k) { return e.key < k; });
    return it != entries.end() && it->key == key ? &*it : nullptr;
  }

  Result<std::shared_ptr<ReadableFile>> Shard(int id) const {
    std::lock_guard<std::mutex> lock(mu);
    auto it = shards.find(id);
    if (it != shards.end()) return it->second;
    if (prefix.empty()) {
      return Status::NotFound(index_name + ": no data file for shard " + std::to_string(id));
    }
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> f,
                            OpenReadableFile(BundleDataFilename(prefix, id, num_shards)));
    std::shared_ptr<ReadableFile> shared = std::move(f);
    shards.emplace(id, shared);
    return shared;
  }
};

BundleReader::BundleReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BundleReader::BundleReader(BundleReader&&) noexcept = default;
BundleReader& BundleReader::operator=(BundleReader&&) noexcept = default;
BundleReader::~BundleReader() = default;

namespace {

Status ParseHeader(const std::string& name,
                   const std::vector<records_internal::SSTableEntry>& entries, int* num_shards) {
  if (entries.empty() || !entries[0].key.empty()) {
    return Status::DataLoss(name + ": no bundle header entry (the empty key)");
  }
  proto::BundleHeaderProto header;
  if (!header.ParseFromString(entries[0].value)) {
    return Status::DataLoss(name + ": unparseable bundle header");
  }
  if (header.num_shards() < 1) {
    return Status::DataLoss(name + ": bundle header has " + std::to_string(header.num_shards()) +
                            " shards");
  }
  if (header.endianness() != proto::BundleHeaderProto::LITTLE) {
    return Status::InvalidArgument(name + ": big-endian bundles are not supported");
  }
  const auto& v = header.version();
  if (v.min_consumer() > kBundleVersion ||
      std::find(v.bad_consumers().begin(), v.bad_consumers().end(), kBundleVersion) !=
          v.bad_consumers().end()) {
    return Status::FailedPrecondition(
        name + ": bundle format version (producer " + std::to_string(v.producer()) +
        ", min consumer " + std::to_string(v.min_consumer()) +
        ") cannot be read by this reader (version " + std::to_string(kBundleVersion) + ")");
  }
  *num_shards = header.num_shards();
  return Status::OK();
}

// Reads exactly `n` bytes at `offset`, or DataLoss.
Status ReadFully(ReadableFile& f, uint64_t offset, void* dst, size_t n) {
  size_t got = 0;
  while (got < n) {
    SLUICE_ASSIGN_OR_RETURN(size_t k,
                            f.ReadAt(offset + got, static_cast<char*>(dst) + got, n - got));
    if (k == 0) {
      return Status::DataLoss(f.name() + ": truncated: needed " + std::to_string(n) +
                              " bytes at offset " + std::to_string(offset) + ", file ends after " +
                              std::to_string(got));
    }
    got += k;
  }
  return Status::OK();
}

}  // namespace

Result<BundleReader> BundleReader::Open(const std::string& prefix) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> index,
                          OpenReadableFile(BundleIndexFilename(prefix)));
  auto impl = std::make_unique<Impl>();
  impl->prefix = prefix;
  impl->index_name = index->name();
  SLUICE_ASSIGN_OR_RETURN(impl->entries, records_internal::ReadSSTable(*index));
  SLUICE_RETURN_IF_ERROR(ParseHeader(impl->index_name, impl->entries, &impl->num_shards));
  return BundleReader(std::move(impl));
}

Result<BundleReader> BundleReader::Open(std::unique_ptr<ReadableFile> index,
                                        std::unique_ptr<ReadableFile> data) {
  auto impl = std::make_unique<Impl>();
  impl->index_name = index->name();
  SLUICE_ASSIGN_OR_RETURN(impl->entries, records_internal::ReadSSTable(*index));
  SLUICE_RETURN_IF_ERROR(ParseHeader(impl->index_name, impl->entries, &impl->num_shards));
  impl->shards.emplace(0, std::shared_ptr<ReadableFile>(std::move(data)));
  return BundleReader(std::move(impl));
}

std::vector<std::string> BundleReader::Keys() const {
  std::vector<std::string> keys;
  keys.reserve(impl_->entries.size() - 1);
  for (size_t i = 1; i < impl_->entries.size(); ++i) keys.push_back(impl_->entries[i].key);
  return keys;
}

int BundleReader::num_shards() const { return impl_->num_shards; }

Result<BundleEntry> BundleReader::Entry(std::string_view key) const {
  const records_internal::SSTableEntry* e = impl_->Find(key);
  if (e == nullptr) {
    return Status::NotFound(impl_->index_name + ": no tensor named " + Quote(key));
  }
  proto::BundleEntryProto p;
  if (!p.ParseFromString(e->value)) return impl_->Corrupt(key, "unparseable BundleEntryProto");
  BundleEntry out;
  out.tf_dtype = p.dtype();
  out.dtype = DTypeFromTFDataType(p.dtype());
  if (p.shape().unknown_rank()) return impl_->Corrupt(key, "shape of unknown rank");
  std::vector<int64_t> dims;
  for (const auto& d : p.shape().dim()) {
    if (d.size() < 0) return impl_->Corrupt(key, "negative dimension " + std::to_string(d.size()));
    dims.push_back(d.size());
  }
  out.shape = Shape(dims);
  if (!out.shape.CheckedNumElements()) {
    return impl_->Corrupt(key, "shape " + out.shape.ToString() + " has too many elements");
  }
  if (p.shard_id() < 0 || p.shard_id() >= impl_->num_shards || p.offset() < 0 || p.size() < 0) {
    return impl_->Corrupt(key, "bad location: shard " + std::to_string(p.shard_id()) + " of " +
                                   std::to_string(impl_->num_shards) + ", offset " +
                                   std::to_string(p.offset()) + ", size " +
                                   std::to_string(p.size()));
  }
  out.shard_id = p.shard_id();
  out.offset = p.offset();
  out.size = p.size();
  out.masked_crc32c = p.crc32c();
  out.num_slices = p.slices_size();
  return out;
}

Result<Tensor> BundleReader::Lookup(std::string_view key) const {
  SLUICE_ASSIGN_OR_RETURN(BundleEntry e, Entry(key));
  if (e.num_slices > 0) {
    return Status::InvalidArgument(impl_->index_name + ": tensor " + Quote(key) +
                                   " is partitioned into slices, which are not supported");
  }
  if (!e.dtype) {
    return Status::InvalidArgument(impl_->index_name + ": tensor " + Quote(key) +
                                   " has TensorFlow dtype " + std::to_string(e.tf_dtype) +
                                   ", which sluice does not support");
  }
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<ReadableFile> file, impl_->Shard(e.shard_id));
  SLUICE_ASSIGN_OR_RETURN(uint64_t file_size, file->Size());
  const auto offset = static_cast<uint64_t>(e.offset);
  const auto size = static_cast<uint64_t>(e.size);
  const std::string where = file->name() + ": tensor " + Quote(key) + " at offset " +
                            std::to_string(offset) + " (" + std::to_string(size) + " bytes)";
  if (offset > file_size || size > file_size - offset) {
    return Status::DataLoss(where + " extends past the end of the file (" +
                            std::to_string(file_size) + " bytes)");
  }
  const uint64_t n = static_cast<uint64_t>(e.shape.num_elements());
  const uint32_t want_crc = crc32c::Unmask(e.masked_crc32c);

  if (*e.dtype != DType::kString) {
    const uint64_t elem = DTypeSize(*e.dtype);
    if (n > size / std::max<uint64_t>(elem, 1) || n * elem != size) {
      return Status::DataLoss(where + ": size does not match shape " + e.shape.ToString() + " of " +
                              std::string(DTypeName(*e.dtype)));
    }
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(*e.dtype, e.shape));
    SLUICE_RETURN_IF_ERROR(ReadFully(*file, offset, t.raw_data(), size).WithContext(where));
    const uint32_t got_crc = crc32c::Value(t.raw_data(), size);
    if (got_crc != want_crc) return Status::DataLoss(where + ": checksum mismatch");
    if (*e.dtype == DType::kBool) {  // any nonzero byte is true
      auto* b = static_cast<uint8_t*>(t.raw_data());
      for (uint64_t i = 0; i < size; ++i) b[i] = b[i] != 0;
    }
    return t;
  }

  // Strings: n varint64 lengths, a 4-byte masked CRC of them, the bytes.
  if (size == 0 && n == 0) return Tensor::Zeros(DType::kString, e.shape);
  if (n > size || size - n < 4) {
    return Status::DataLoss(where + ": too small for " + std::to_string(n) + " strings");
  }
  SLUICE_ASSIGN_OR_RETURN(Buffer bytes, Buffer::Allocate(size));
  SLUICE_RETURN_IF_ERROR(ReadFully(*file, offset, bytes.data(), size).WithContext(where));
  std::string_view in(reinterpret_cast<const char*>(bytes.data()), size);
  SLUICE_ASSIGN_OR_RETURN(Buffer views, Buffer::Allocate(n * sizeof(std::string_view)));
  auto* view = reinterpret_cast<std::string_view*>(views.data());
  uint32_t crc = 0;
  uint64_t total = 0;
  std::vector<uint64_t> lengths(n);
  for (uint64_t i = 0; i < n; ++i) {
    if (!sstable::GetVarint64(&in, &lengths[i]) || lengths[i] > size) {
      return Status::DataLoss(where + ": bad length of string " + std::to_string(i));
    }
    crc = ExtendWithLength(crc, lengths[i]);
    total += lengths[i];
  }
  if (in.size() < 4 || crc32c::Unmask(sstable::LoadFixed32(in.data())) != crc) {
    return Status::DataLoss(where + ": string length checksum mismatch");
  }
  crc = crc32c::Extend(crc, in.data(), 4);
  in.remove_prefix(4);
  if (total != in.size()) {
    return Status::DataLoss(where + ": string lengths add up to " + std::to_string(total) +
                            " bytes, but " + std::to_string(in.size()) + " follow them");
  }
  crc = crc32c::Extend(crc, in.data(), in.size());
  if (crc != want_crc) return Status::DataLoss(where + ": checksum mismatch");
  for (uint64_t i = 0; i < n; ++i) {
    new (&view[i]) std::string_view(in.data(), lengths[i]);
    in.remove_prefix(lengths[i]);
  }
  return Tensor::FromStringViews(e.shape, std::move(views), {std::move(bytes)});
}

}  // namespace sluice
