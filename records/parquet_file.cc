// ParquetFile (parquet_file.h) on Arrow C++'s Parquet reader. Built only
// with Arrow; parquet_file_stub.cc stands in without it.
#include "sluice/records/parquet_file.h"

#include <arrow/api.h>
#include <arrow/array/concatenate.h>
#include <fmt/format.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <new>

#include "sluice/records/internal/arrow_readable_file.h"

namespace sluice {

bool ParquetAvailable() { return true; }

namespace {

constexpr uint32_t kDecodedMagic = 0x51524150;  // "PARQ", little-endian
// Records one run returns at most (rows of a few bytes would make runs of
// millions of Records).
constexpr uint64_t kMaxRecordsPerRun = 8192;

// One output of the elements: a column, or a struct's child (dotted name).
struct Leaf {
  std::string name;
  std::vector<int> path;  // struct child indices from the top-level column
  bool varlen = false;    // a list: values + row lengths
  DType dtype = DType::kString;
  std::vector<int64_t> dims;  // fixed-size list sizes, outermost first
  int64_t inner = 1;          // values per list item / row: product of dims
};

struct Column {
  std::string name;
  int field = 0;  // top-level field index (FileReader::RowGroup(i)->Column(field))
  std::vector<size_t> leaves;
  std::vector<int> chunks;  // Parquet leaf column indices (byte estimates)
};

struct Plan {
  std::string path;
  std::vector<Column> columns;
  std::vector<Leaf> leaves;
  std::vector<ParquetComponent> components;
  std::shared_ptr<const std::vector<std::string>> names;
  int64_t batch_rows = 0;
  bool fill_nulls = false;
  int64_t max_row_group_bytes = 0;
};

// A decoded row group: what the records of one row group view.
struct DecodedLeaf {
  Tensor values;                   // dense: [rows, dims...]; list: [values, dims...]
  std::vector<int64_t> offsets;    // list: rows + 1, from 0
  Tensor row_lengths;              // list: int64 [rows]
  std::vector<uint8_t> null_rows;  // non-empty: row r holds a null (an error)
};

struct Decoded {
  uint32_t magic = kDecodedMagic;
  std::shared_ptr<const Plan> plan;
  int row_group = 0;
  int64_t first_row = 0;  // of the file
  int64_t rows = 0;
  uint64_t first_record = 0;
  std::vector<DecodedLeaf> leaves;
};

Status FromArrow(const arrow::Status& s) {
  if (s.ok()) return Status::OK();
  if (s.IsOutOfMemory()) return Status::ResourceExhausted(s.ToString());
  return Status::DataLoss(s.ToString());
}

template <typename T>
Result<T> FromArrow(arrow::Result<T> r) {
  if (!r.ok()) return FromArrow(r.status());
  return std::move(r).ValueUnsafe();
}

// An arrow::MemoryPool over Arrow's default pool that refuses (OutOfMemory)
// any allocation that would take the bytes it holds past `cap`. One per
// row group decode, given to the page reader (decompression buffers) and
// to the Arrow reader (decoded arrays): a decompression bomb or a lying
// page header then fails with the row group's error instead of allocating
// what the input claims. Buffers from it hold its address, so it lives as
// long as any of them (decoded row groups and tensors keep a reference).
class CappedMemoryPool final : public arrow::MemoryPool {
 public:
  explicit CappedMemoryPool(int64_t cap) : cap_(cap) {}

  arrow::Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override {
    ARROW_RETURN_NOT_OK(Reserve(size));
    arrow::Status s = base_->Allocate(size, alignment, out);
    if (!s.ok()) held_.fetch_sub(size);
    return s;
  }
  arrow::Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                           uint8_t** ptr) override {
    const int64_t grow = new_size - old_size;
    if (grow > 0) ARROW_RETURN_NOT_OK(Reserve(grow));
    arrow::Status s = base_->Reallocate(old_size, new_size, alignment, ptr);
    if (!s.ok() && grow > 0) held_.fetch_sub(grow);
    if (s.ok() && grow < 0) held_.fetch_add(grow);
    return s;
  }
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override {
    base_->Free(buffer, size, alignment);
    held_.fetch_sub(size);
  }
  int64_t bytes_allocated() const override { return held_.load(); }
  int64_t max_memory() const override { return peak_.load(); }
  int64_t total_bytes_allocated() const override { return total_.load(); }
  int64_t num_allocations() const override { return count_.load(); }
  std::string backend_name() const override { return base_->backend_name(); }

  // The first refused allocation's size (0: none was refused).
  int64_t refused() const { return refused_.load(); }
  int64_t cap() const { return cap_; }

 private:
  arrow::Status Reserve(int64_t size) {
    if (size < 0) return arrow::Status::Invalid("a negative allocation");
    const int64_t before = held_.fetch_add(size);
    if (size > cap_ || before > cap_ - size) {
      held_.fetch_sub(size);
      int64_t none = 0;
      refused_.compare_exchange_strong(none, size);
      return arrow::Status::OutOfMemory("an allocation of ", size, " bytes with ", before,
                                        " held would pass the cap of ", cap_, " bytes");
    }
    int64_t peak = peak_.load();
    while (before + size > peak && !peak_.compare_exchange_weak(peak, before + size)) {
    }
    total_.fetch_add(size);
    count_.fetch_add(1);
    return arrow::Status::OK();
  }

  arrow::MemoryPool* const base_ = arrow::default_memory_pool();
  const int64_t cap_;
  std::atomic<int64_t> held_{0}, peak_{0}, total_{0}, count_{0}, refused_{0};
};

// The sluice dtype of an Arrow scalar type; InvalidArgument if none.
Result<DType> ScalarDType(const arrow::DataType& t) {
  switch (t.id()) {
    case arrow::Type::BOOL: return DType::kBool;
    case arrow::Type::UINT8: return DType::kUInt8;
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::UINT16:
    case arrow::Type::INT32:
    case arrow::Type::DATE32:
    case arrow::Type::TIME32: return DType::kInt32;
    case arrow::Type::UINT32:
    case arrow::Type::UINT64:
    case arrow::Type::INT64:
    case arrow::Type::DATE64:
    case arrow::Type::TIME64:
    case arrow::Type::TIMESTAMP:
    case arrow::Type::DURATION: return DType::kInt64;
    case arrow::Type::HALF_FLOAT: return DType::kFloat16;
    case arrow::Type::FLOAT: return DType::kFloat32;
    case arrow::Type::DOUBLE: return DType::kFloat64;
    case arrow::Type::STRING:
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::FIXED_SIZE_BINARY:
    case arrow::Type::STRING_VIEW:
    case arrow::Type::BINARY_VIEW: return DType::kString;
    case arrow::Type::DICTIONARY: {
      const auto& d = static_cast<const arrow::DictionaryType&>(t);
      SLUICE_ASSIGN_OR_RETURN(DType v, ScalarDType(*d.value_type()));
      if (v == DType::kString) return v;
      break;
    }
    default: break;
  }
  return Status::InvalidArgument("type " + t.ToString() + " has no tensor form");
}

bool IsBinary(const arrow::DataType& t) {
  return t.id() == arrow::Type::BINARY || t.id() == arrow::Type::LARGE_BINARY ||
         t.id() == arrow::Type::BINARY_VIEW;
}
bool IsString(const arrow::DataType& t) {
  return t.id() == arrow::Type::STRING || t.id() == arrow::Type::LARGE_STRING ||
         t.id() == arrow::Type::STRING_VIEW;
}

// Hugging Face's Image (and Audio) feature: struct<bytes: binary, path: string>.
int ImageBytesChild(const arrow::StructType& s) {
  if (s.num_fields() != 2) return -1;
  const int b = s.GetFieldIndex("bytes"), p = s.GetFieldIndex("path");
  if (b < 0 || p < 0 || !IsBinary(*s.field(b)->type()) || !IsString(*s.field(p)->type())) {
    return -1;
  }
  return b;
}

// Fixed-size lists down to a scalar: dims and dtype.
Status PlanValue(const arrow::DataType& type, Leaf* leaf) {
  const arrow::DataType* t = &type;
  while (t->id() == arrow::Type::FIXED_SIZE_LIST) {
    const auto& f = static_cast<const arrow::FixedSizeListType&>(*t);
    if (f.list_size() < 0 || leaf->inner > (int64_t{1} << 40) / std::max(1, f.list_size())) {
      return Status::InvalidArgument("fixed-size list too large");
    }
    leaf->dims.push_back(f.list_size());
    leaf->inner *= f.list_size();
    t = f.value_type().get();
  }
  SLUICE_ASSIGN_OR_RETURN(leaf->dtype, ScalarDType(*t));
  return Status::OK();
}

Status PlanType(const std::string& name, const arrow::DataType& type, std::vector<int> path,
                std::vector<Leaf>* leaves) {
  if (type.id() == arrow::Type::STRUCT) {
    const auto& s = static_cast<const arrow::StructType&>(type);
    if (const int b = ImageBytesChild(s); b >= 0) {
      path.push_back(b);
      Leaf leaf{.name = name, .path = path};
      leaf.dtype = DType::kString;
      leaves->push_back(std::move(leaf));
      return Status::OK();
    }
    if (s.num_fields() == 0) return Status::InvalidArgument("struct '" + name + "' has no fields");
    for (int i = 0; i < s.num_fields(); ++i) {
      std::vector<int> p = path;
      p.push_back(i);
      SLUICE_RETURN_IF_ERROR(
          PlanType(name + "." + s.field(i)->name(), *s.field(i)->type(), std::move(p), leaves));
    }
    return Status::OK();
  }
  Leaf leaf{.name = name, .path = std::move(path)};
  if (type.id() == arrow::Type::LIST || type.id() == arrow::Type::LARGE_LIST) {
    leaf.varlen = true;
    const auto& l = static_cast<const arrow::BaseListType&>(type);
    Status s = PlanValue(*l.value_type(), &leaf);
    if (!s.ok()) {
      return Status::InvalidArgument(fmt::format("column '{}' ({}): lists of {} are not read: {}",
                                                 name, type.ToString(), l.value_type()->ToString(),
                                                 s.message()));
    }
  } else if (Status s = PlanValue(type, &leaf); !s.ok()) {
    return Status::InvalidArgument(fmt::format("column '{}': {}", name, s.message()));
  }
  leaves->push_back(std::move(leaf));
  return Status::OK();
}

void LeafChunks(const parquet::arrow::SchemaField& f, std::vector<int>* out) {
  if (f.is_leaf()) out->push_back(f.column_index);
  for (const auto& c : f.children) LeafChunks(c, out);
}

// The pool a row group's Arrow buffers came from (CappedMemoryPool).
using PoolRef = std::shared_ptr<arrow::MemoryPool>;

// Wraps an Arrow buffer as a sluice Buffer that keeps `keep` alive, and the
// pool it was allocated from (freed into when the last view goes).
Buffer WrapArrow(const std::shared_ptr<arrow::Buffer>& b, std::shared_ptr<arrow::ArrayData> keep,
                 PoolRef pool) {
  // Members go in reverse order: the data, then its pool (a lambda's
  // captures have no stated order).
  struct Owner {
    PoolRef pool;
    std::shared_ptr<arrow::ArrayData> data;
  };
  return Buffer::Wrap(
      const_cast<uint8_t*>(b->data()), static_cast<size_t>(b->size()),
      [owner = std::make_shared<Owner>(Owner{std::move(pool), std::move(keep)})] {});
}

template <typename From, typename To>
Result<Tensor> Widen(const arrow::Array& a, DType dtype, bool check_int64) {
  const int64_t n = a.length();
  SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, Shape{n}));
  const auto& buf = a.data()->buffers[1];
  if (n > 0 &&
      (buf == nullptr || buf->size() / static_cast<int64_t>(sizeof(From)) < a.offset() + n)) {
    return Status::DataLoss("a values buffer shorter than its array");
  }
  To* dst = static_cast<To*>(t.raw_data());
  const From* src = n > 0 ? reinterpret_cast<const From*>(buf->data()) + a.offset() : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<From, uint64_t>) {
      if (check_int64 && src[i] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
          a.IsValid(i)) {
        return Status::InvalidArgument(
            fmt::format("uint64 value {} does not fit int64 (value {})", src[i], i));
      }
    }
    dst[i] = static_cast<To>(src[i]);
  }
  return t;
}

Result<Tensor> NumericView(const arrow::Array& a, DType dtype, const PoolRef& pool) {
  const int64_t n = a.length();
  const size_t width = DTypeSize(dtype);
  if (n == 0) return Tensor::Allocate(dtype, Shape{0});
  const auto& buf = a.data()->buffers[1];
  if (buf == nullptr ||
      static_cast<uint64_t>(buf->size()) < static_cast<uint64_t>(a.offset() + n) * width) {
    return Status::DataLoss("a values buffer shorter than its array");
  }
  return Tensor::FromBuffer(dtype, Shape{n}, WrapArrow(buf, a.data(), pool),
                            static_cast<size_t>(a.offset()) * width);
}

template <typename A>
Result<Tensor> StringViews(const A& a, const arrow::ArrayData& owner_data,
                           std::shared_ptr<arrow::ArrayData> keep, const arrow::Array* indices,
                           const PoolRef& pool) {
  const int64_t n = indices != nullptr ? indices->length() : a.length();
  SLUICE_ASSIGN_OR_RETURN(Buffer views,
                          Buffer::Allocate(static_cast<size_t>(n) * sizeof(std::string_view) + 1));
  auto* v = reinterpret_cast<std::string_view*>(views.data());
  if (indices == nullptr) {
    for (int64_t i = 0; i < n; ++i) new (&v[i]) std::string_view(a.GetView(i));
  } else {
    const int64_t m = a.length();
    for (int64_t i = 0; i < n; ++i) {
      int64_t k = 0;
      switch (indices->type_id()) {
        case arrow::Type::INT8: k = static_cast<const arrow::Int8Array&>(*indices).Value(i); break;
        case arrow::Type::INT16:
          k = static_cast<const arrow::Int16Array&>(*indices).Value(i);
          break;
        case arrow::Type::INT32:
          k = static_cast<const arrow::Int32Array&>(*indices).Value(i);
          break;
        case arrow::Type::INT64:
          k = static_cast<const arrow::Int64Array&>(*indices).Value(i);
          break;
        default:
          return Status::InvalidArgument("dictionary indices of type " +
                                         indices->type()->ToString());
      }
      if (indices->IsNull(i)) k = -1;
      if (k >= m) return Status::DataLoss(fmt::format("dictionary index {} of {}", k, m));
      new (&v[i]) std::string_view(k < 0 ? std::string_view() : a.GetView(k));
    }
  }
  std::vector<Buffer> owners;
  for (const auto& b : owner_data.buffers) {
    if (b != nullptr && b->size() > 0) owners.push_back(WrapArrow(b, keep, pool));
  }
  for (const auto& b : owner_data.child_data) {
    (void)b;  // strings have no children
  }
  return Tensor::FromStringViews(Shape{n}, std::move(views), std::move(owners));
}

Result<Tensor> StringTensor(const arrow::Array& a, const PoolRef& pool) {
  const arrow::Array* values = &a;
  const arrow::Array* indices = nullptr;
  std::shared_ptr<arrow::Array> dict;
  if (a.type_id() == arrow::Type::DICTIONARY) {
    const auto& d = static_cast<const arrow::DictionaryArray&>(a);
    dict = d.dictionary();
    values = dict.get();
    indices = d.indices().get();
  }
  const arrow::ArrayData& od = *values->data();
  std::shared_ptr<arrow::ArrayData> keep = a.data();
  if (dict != nullptr) {
    // Keep the dictionary too (it is a separate ArrayData).
    auto both = std::make_shared<arrow::ArrayData>(*a.data());
    both->dictionary = dict->data();
    keep = both;
  }
  switch (values->type_id()) {
    case arrow::Type::STRING:
    case arrow::Type::BINARY:
      return StringViews(static_cast<const arrow::BinaryArray&>(*values), od, keep, indices, pool);
    case arrow::Type::LARGE_STRING:
    case arrow::Type::LARGE_BINARY:
      return StringViews(static_cast<const arrow::LargeBinaryArray&>(*values), od, keep, indices,
                         pool);
    case arrow::Type::FIXED_SIZE_BINARY:
      return StringViews(static_cast<const arrow::FixedSizeBinaryArray&>(*values), od, keep,
                         indices, pool);
    case arrow::Type::STRING_VIEW:
    case arrow::Type::BINARY_VIEW:
      return StringViews(static_cast<const arrow::BinaryViewArray&>(*values), od, keep, indices,
                         pool);
    default: break;
  }
  return Status::InvalidArgument("type " + a.type()->ToString() + " has no string form");
}

// The values of a scalar array as a flat tensor [n] of `dtype`.
Result<Tensor> ScalarTensor(const arrow::Array& a, DType dtype, const PoolRef& pool) {
  switch (a.type_id()) {
    case arrow::Type::BOOL: {
      const auto& b = static_cast<const arrow::BooleanArray&>(a);
      SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(DType::kBool, Shape{a.length()}));
      auto* dst = static_cast<uint8_t*>(t.raw_data());
      for (int64_t i = 0; i < a.length(); ++i) dst[i] = b.Value(i) ? 1 : 0;
      return t;
    }
    case arrow::Type::INT8: return Widen<int8_t, int32_t>(a, dtype, false);
    case arrow::Type::INT16: return Widen<int16_t, int32_t>(a, dtype, false);
    case arrow::Type::UINT16: return Widen<uint16_t, int32_t>(a, dtype, false);
    case arrow::Type::UINT32: return Widen<uint32_t, int64_t>(a, dtype, false);
    case arrow::Type::UINT64: return Widen<uint64_t, int64_t>(a, dtype, true);
    default: break;
  }
  if (dtype == DType::kString) return StringTensor(a, pool);
  return NumericView(a, dtype, pool);
}

// Marks, in `vnull` (one per innermost value), the values under a null at
// any fixed-size-list level of `a` (length `count` items of `inner` values
// each), and returns the innermost values array.
Result<std::shared_ptr<arrow::Array>> Innermost(std::shared_ptr<arrow::Array> a, int64_t inner,
                                                std::vector<uint8_t>* vnull) {
  int64_t per = inner;  // innermost values per item at this level
  const int64_t total = a->length() * inner;
  while (true) {
    if (a->null_count() > 0) {
      if (vnull->empty()) vnull->assign(static_cast<size_t>(total), 0);
      for (int64_t j = 0; j < a->length(); ++j) {
        if (a->IsNull(j)) std::fill_n(vnull->begin() + j * per, per, uint8_t{1});
      }
    }
    if (a->type_id() != arrow::Type::FIXED_SIZE_LIST) break;
    const auto& f = static_cast<const arrow::FixedSizeListArray&>(*a);
    const int64_t k = f.list_type()->list_size();
    if (f.values()->length() < (f.offset() + f.length()) * k) {
      return Status::DataLoss("a fixed-size list shorter than its values");
    }
    a = f.values()->Slice(f.offset() * k, f.length() * k);
    per = k == 0 ? 1 : per / k;
  }
  return a;
}

Result<DecodedLeaf> DecodeLeaf(const Plan& plan, const Leaf& leaf, std::shared_ptr<arrow::Array> a,
                               int64_t rows, const PoolRef& pool) {
  // Down the struct path (a struct's nulls become its children's).
  for (int child : leaf.path) {
    if (a->type_id() != arrow::Type::STRUCT) return Status::DataLoss("not a struct");
    const auto& s = static_cast<const arrow::StructArray&>(*a);
    if (child >= s.num_fields()) return Status::DataLoss("a struct lacks a child");
    SLUICE_ASSIGN_OR_RETURN(a, FromArrow(s.GetFlattenedField(child, pool.get())));
  }
  if (a->length() != rows) {
    return Status::DataLoss(fmt::format("{} values for {} rows", a->length(), rows));
  }
  DecodedLeaf out;
  std::vector<uint8_t> vnull;
  int64_t count = rows;  // items
  std::vector<int64_t> offs;
  if (leaf.varlen) {
    const bool large = a->type_id() == arrow::Type::LARGE_LIST;
    if (!large && a->type_id() != arrow::Type::LIST) return Status::DataLoss("not a list");
    // Only the array's own class is named (a reference to the other is UB,
    // and UBSan's vptr check says so).
    std::shared_ptr<arrow::Array> values;
    const int32_t* off32 = nullptr;
    const int64_t* off64 = nullptr;
    if (large) {
      const auto& l = static_cast<const arrow::LargeListArray&>(*a);
      values = l.values();
      off64 = l.raw_value_offsets();
    } else {
      const auto& l = static_cast<const arrow::ListArray&>(*a);
      values = l.values();
      off32 = l.raw_value_offsets();
    }
    offs.resize(static_cast<size_t>(rows) + 1);
    const auto& ob = a->data()->buffers[1];
    const size_t ow = large ? 8 : 4;
    if (rows > 0 && (ob == nullptr || static_cast<uint64_t>(ob->size()) <
                                          static_cast<uint64_t>(a->offset() + rows + 1) * ow)) {
      return Status::DataLoss("list offsets shorter than the list");
    }
    for (int64_t r = 0; r <= rows && rows > 0; ++r) {
      offs[static_cast<size_t>(r)] = large ? off64[r] : static_cast<int64_t>(off32[r]);
    }
    const int64_t lo = rows > 0 ? offs[0] : 0, hi = rows > 0 ? offs[rows] : 0;
    if (lo < 0 || hi < lo || hi > values->length())
      return Status::DataLoss("list offsets out of range");
    SLUICE_ASSIGN_OR_RETURN(Tensor lengths, Tensor::Allocate(DType::kInt64, Shape{rows}));
    auto* len = static_cast<int64_t*>(lengths.raw_data());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t n = offs[r + 1] - offs[r];
      if (n < 0) return Status::DataLoss("list offsets out of order");
      if (a->IsNull(r) && n != 0) {
        return Status::InvalidArgument(fmt::format("row {}: a null list with values", r));
      }
      len[r] = n;
    }
    for (int64_t r = 0; r <= rows && rows > 0; ++r) offs[r] -= lo;
    if (rows == 0) offs[0] = 0;
    out.row_lengths = std::move(lengths);
    a = values->Slice(lo, hi - lo);
    count = hi - lo;
  }
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<arrow::Array> inner, Innermost(a, leaf.inner, &vnull));
  if (inner->length() != count * leaf.inner) return Status::DataLoss("values count mismatch");
  SLUICE_ASSIGN_OR_RETURN(Tensor flat, ScalarTensor(*inner, leaf.dtype, pool));
  if (!vnull.empty()) {
    if (plan.fill_nulls) {
      SLUICE_ASSIGN_OR_RETURN(flat, flat.Clone());
      const size_t w = DTypeSize(leaf.dtype);
      auto* p = static_cast<uint8_t*>(flat.raw_data());
      for (size_t i = 0; i < vnull.size(); ++i) {
        if (!vnull[i]) continue;
        if (leaf.dtype == DType::kString) {
          new (p + i * w) std::string_view();
        } else {
          std::memset(p + i * w, 0, w);
        }
      }
    } else {
      out.null_rows.assign(static_cast<size_t>(rows), 0);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t b = (leaf.varlen ? offs[r] : r) * leaf.inner;
        const int64_t e = (leaf.varlen ? offs[r + 1] : r + 1) * leaf.inner;
        out.null_rows[r] =
            std::any_of(vnull.begin() + b, vnull.begin() + e, [](uint8_t v) { return v != 0; });
      }
    }
  }
  std::vector<int64_t> dims{count};
  dims.insert(dims.end(), leaf.dims.begin(), leaf.dims.end());
  SLUICE_ASSIGN_OR_RETURN(out.values, flat.Reshape(Shape(dims)));
  out.offsets = std::move(offs);
  return out;
}

}  // namespace

struct ParquetFile::Impl {
  std::shared_ptr<ReadableFile> file;
  std::shared_ptr<arrow::io::RandomAccessFile> source;
  std::shared_ptr<parquet::FileMetaData> metadata;
  std::shared_ptr<const Plan> plan;
  int cached = 2;
  // Per row group: its first record and file row, its records, bytes per record.
  std::vector<uint64_t> first_record;  // num_row_groups + 1
  std::vector<int64_t> first_row;      // num_row_groups + 1
  std::vector<uint64_t> first_offset;  // estimated bytes before the row group
  std::vector<uint64_t> record_bytes;

  struct Slot {
    std::mutex mu;
    bool done = false;
    Result<Buffer> decoded = Buffer();
  };
  mutable std::mutex mu;
  mutable std::vector<std::pair<int, std::shared_ptr<Slot>>> cache;  // oldest first

  int RowGroupOf(uint64_t record) const {
    auto it = std::upper_bound(first_record.begin(), first_record.end(), record);
    return static_cast<int>(it - first_record.begin()) - 1;
  }
  Result<Buffer> Get(int rg) const;
  Result<Buffer> Decode(int rg) const;
};

Result<Buffer> ParquetFile::Impl::Get(int rg) const {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it =
        std::find_if(cache.begin(), cache.end(), [rg](const auto& e) { return e.first == rg; });
    if (it != cache.end()) {
      slot = it->second;
      std::rotate(it, it + 1, cache.end());  // most recent last
    } else {
      slot = std::make_shared<Slot>();
      cache.emplace_back(rg, slot);
      if (cache.size() > static_cast<size_t>(cached)) cache.erase(cache.begin());
    }
  }
  std::lock_guard<std::mutex> lock(slot->mu);
  if (!slot->done) {
    slot->decoded = Decode(rg);
    slot->done = true;
  }
  return slot->decoded;
}

Result<Buffer> ParquetFile::Impl::Decode(int rg) const {
  const Plan& p = *plan;
  auto d = std::make_shared<Decoded>();
  d->plan = plan;
  d->row_group = rg;
  d->first_row = first_row[rg];
  d->rows = first_row[rg + 1] - first_row[rg];
  d->first_record = first_record[rg];
  const std::string where = fmt::format("{}: row group {} (rows {}..{})", p.path, rg, d->first_row,
                                        d->first_row + d->rows);
  const int64_t cap = p.max_row_group_bytes;
  // What the footer says first: the asked columns' uncompressed bytes.
  try {
    std::unique_ptr<parquet::RowGroupMetaData> meta = metadata->RowGroup(rg);
    int64_t bytes = 0;
    for (const Column& c : p.columns) {
      for (int chunk : c.chunks) {
        if (chunk < 0 || chunk >= meta->num_columns()) continue;
        bytes += std::clamp<int64_t>(meta->ColumnChunk(chunk)->total_uncompressed_size(), 0,
                                     int64_t{1} << 62);
        if (bytes > cap) {
          return Status::ResourceExhausted(fmt::format(
              "{}, column '{}': the footer says the asked columns take {} bytes or more "
              "uncompressed, over max_row_group_bytes = {}",
              where, c.name, bytes, cap));
        }
      }
    }
  } catch (const std::exception& e) {
    return Status::DataLoss(where + ": a broken row group in the footer: " + e.what());
  }
  // Arrow holds this row group's bytes in `pool` (decoded buffers keep it alive).
  auto pool = std::make_shared<CappedMemoryPool>(cap);
  const auto refused = [&](const std::string& col) {
    return Status::ResourceExhausted(
        fmt::format("{}: decoding needs more than max_row_group_bytes = {} bytes (an allocation "
                    "of {} bytes was refused)",
                    col, cap, pool->refused()));
  };
  std::unique_ptr<parquet::arrow::FileReader> reader;
  try {
    std::unique_ptr<parquet::ParquetFileReader> pf =
        parquet::ParquetFileReader::Open(source, parquet::ReaderProperties(pool.get()), metadata);
    arrow::Result<std::unique_ptr<parquet::arrow::FileReader>> r = parquet::arrow::FileReader::Make(
        pool.get(), std::move(pf), parquet::default_arrow_reader_properties());
    if (!r.ok()) return FromArrow(r.status()).WithContext(where);
    reader = std::move(r).ValueUnsafe();
  } catch (const std::exception& e) {
    return Status::DataLoss(where + ": " + e.what());
  }
  std::shared_ptr<parquet::arrow::RowGroupReader> group = reader->RowGroup(rg);
  for (const Column& c : p.columns) {
    const std::string col = fmt::format("{}, column '{}'", where, c.name);
    std::shared_ptr<arrow::ChunkedArray> chunked;
    try {
      arrow::Status s = group->Column(c.field)->Read(&chunked);
      if (!s.ok()) return pool->refused() > 0 ? refused(col) : FromArrow(s).WithContext(col);
    } catch (const std::bad_alloc&) {
      return Status::ResourceExhausted(col + ": out of memory");
    } catch (const std::exception& e) {
      if (pool->refused() > 0) return refused(col);
      return Status::DataLoss(col + ": " + e.what());
    }
    std::shared_ptr<arrow::Array> a;
    if (chunked->num_chunks() == 1) {
      a = chunked->chunk(0);
    } else {
      Result<std::shared_ptr<arrow::Array>> joined =
          chunked->num_chunks() == 0 ? FromArrow(arrow::MakeEmptyArray(chunked->type()))
                                     : FromArrow(arrow::Concatenate(chunked->chunks(), pool.get()));
      if (!joined.ok()) {
        return pool->refused() > 0 ? refused(col) : joined.status().WithContext(col);
      }
      a = *std::move(joined);
    }
    for (size_t l : c.leaves) {
      const Leaf& leaf = p.leaves[l];
      Result<DecodedLeaf> dl = DecodeLeaf(p, leaf, a, d->rows, pool);
      if (!dl.ok()) {
        if (pool->refused() > 0) return refused(fmt::format("{}, column '{}'", where, leaf.name));
        return Status(dl.status().code(),
                      fmt::format("{}, column '{}': {}", where, leaf.name, dl.status().message()));
      }
      d->leaves.push_back(*std::move(dl));
    }
  }
  // Leaves were decoded column by column; put them in plan order.
  std::vector<DecodedLeaf> ordered(p.leaves.size());
  size_t k = 0;
  for (const Column& c : p.columns) {
    for (size_t l : c.leaves) ordered[l] = std::move(d->leaves[k++]);
  }
  d->leaves = std::move(ordered);
  Decoded* raw = d.get();
  return Buffer::Wrap(raw, sizeof(Decoded), [d = std::move(d)] {});
}

ParquetFile::ParquetFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ParquetFile::~ParquetFile() = default;

Result<std::shared_ptr<const ParquetFile>> ParquetFile::Open(const std::string& path,
                                                             const ParquetReadOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
  return Open(std::shared_ptr<ReadableFile>(std::move(file)), options);
}

Result<std::shared_ptr<const ParquetFile>> ParquetFile::Open(std::shared_ptr<ReadableFile> file,
                                                             const ParquetReadOptions& options) {
  const std::string path = file->name();
  if (options.batch_rows < 0) {
    return Status::InvalidArgument(
        fmt::format("{}: batch_rows must be >= 0, got {}", path, options.batch_rows));
  }
  if (options.max_row_group_bytes <= 0) {
    return Status::InvalidArgument(fmt::format("{}: max_row_group_bytes must be > 0, got {}", path,
                                               options.max_row_group_bytes));
  }
  if (file->is_stream()) {
    return Status::InvalidArgument(path + ": Parquet needs random access (a stream was given)");
  }
  auto impl = std::make_unique<Impl>();
  impl->file = file;
  impl->source = std::make_shared<records_internal::ArrowReadableFile>(file);
  impl->cached = std::max(1, options.cached_row_groups);
  auto plan = std::make_shared<Plan>();
  plan->path = path;
  plan->batch_rows = options.batch_rows;
  plan->fill_nulls = options.fill_nulls;
  plan->max_row_group_bytes = options.max_row_group_bytes;
  std::shared_ptr<arrow::Schema> schema;
  std::unique_ptr<parquet::arrow::FileReader> reader;
  try {
    std::unique_ptr<parquet::ParquetFileReader> pf = parquet::ParquetFileReader::Open(impl->source);
    impl->metadata = pf->metadata();
    arrow::Result<std::unique_ptr<parquet::arrow::FileReader>> r =
        parquet::arrow::FileReader::Make(arrow::default_memory_pool(), std::move(pf));
    if (!r.ok()) return FromArrow(r.status()).WithContext(path);
    reader = std::move(r).ValueUnsafe();
    arrow::Status s = reader->GetSchema(&schema);
    if (!s.ok()) return FromArrow(s).WithContext(path);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(path + ": out of memory reading the footer");
  } catch (const std::exception& e) {
    return Status::DataLoss(path + ": not a readable Parquet file: " + e.what());
  }
  const auto& manifest = reader->manifest();
  std::vector<std::string> names = options.columns;
  if (names.empty()) {
    for (const auto& f : schema->fields()) names.push_back(f->name());
  }
  for (const std::string& name : names) {
    const std::vector<int> found = schema->GetAllFieldIndices(name);
    if (found.size() != 1 || static_cast<size_t>(found[0]) >= manifest.schema_fields.size()) {
      std::vector<std::string> have;
      for (const auto& f : schema->fields()) have.push_back(f->name());
      return Status::NotFound(fmt::format("{}: {} column '{}' (it has: {})", path,
                                          found.empty() ? "no" : "more than one", name,
                                          fmt::join(have, ", ")));
    }
    Column c{.name = name, .field = found[0]};
    const size_t before = plan->leaves.size();
    Status s = PlanType(name, *schema->field(found[0])->type(), {}, &plan->leaves);
    if (!s.ok()) return Status::InvalidArgument(path + ": " + std::string(s.message()));
    for (size_t l = before; l < plan->leaves.size(); ++l) c.leaves.push_back(l);
    LeafChunks(manifest.schema_fields[static_cast<size_t>(found[0])], &c.chunks);
    plan->columns.push_back(std::move(c));
  }
  auto shared_names = std::make_shared<std::vector<std::string>>();
  for (const Leaf& l : plan->leaves) {
    std::vector<int64_t> dims;
    if (plan->batch_rows > 0 || l.varlen) dims.push_back(Shape::kUnknownDim);
    dims.insert(dims.end(), l.dims.begin(), l.dims.end());
    plan->components.push_back({l.name, l.dtype, Shape(dims)});
    shared_names->push_back(l.name);
    if (l.varlen && plan->batch_rows > 0) {
      plan->components.push_back(
          {l.name + ".row_lengths", DType::kInt64, Shape{Shape::kUnknownDim}});
      shared_names->push_back(l.name + ".row_lengths");
    }
  }
  for (size_t i = 0; i < shared_names->size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if ((*shared_names)[i] == (*shared_names)[j]) {
        return Status::InvalidArgument(
            fmt::format("{}: two components named '{}'", path, (*shared_names)[i]));
      }
    }
  }
  plan->names = std::move(shared_names);
  // Row groups: records, rows and byte estimates from the footer.
  const int groups = impl->metadata->num_row_groups();
  if (groups < 0) return Status::DataLoss(path + ": a negative row group count");
  impl->first_record.assign(1, 0);
  impl->first_row.assign(1, 0);
  impl->first_offset.assign(1, 0);
  try {
    for (int g = 0; g < groups; ++g) {
      std::unique_ptr<parquet::RowGroupMetaData> rg = impl->metadata->RowGroup(g);
      const int64_t rows = rg->num_rows();
      if (rows < 0 || impl->first_row.back() > std::numeric_limits<int64_t>::max() / 2 - rows) {
        return Status::DataLoss(fmt::format("{}: row group {} has {} rows", path, g, rows));
      }
      uint64_t bytes = 0;
      for (const Column& c : plan->columns) {
        for (int chunk : c.chunks) {
          if (chunk < 0 || chunk >= rg->num_columns()) continue;
          bytes += static_cast<uint64_t>(
              std::max<int64_t>(0, rg->ColumnChunk(chunk)->total_uncompressed_size()));
        }
      }
      const int64_t records =
          plan->batch_rows > 0 ? (rows + plan->batch_rows - 1) / plan->batch_rows : rows;
      impl->record_bytes.push_back(records > 0 ? std::max<uint64_t>(1, bytes / records) : 1);
      impl->first_record.push_back(impl->first_record.back() + static_cast<uint64_t>(records));
      impl->first_row.push_back(impl->first_row.back() + rows);
      impl->first_offset.push_back(impl->first_offset.back() + bytes);
    }
  } catch (const std::exception& e) {
    return Status::DataLoss(path + ": a broken row group in the footer: " + e.what());
  }
  impl->plan = std::move(plan);
  return std::shared_ptr<const ParquetFile>(new ParquetFile(std::move(impl)));
}

uint64_t ParquetFile::num_records() const { return impl_->first_record.back(); }
const std::string& ParquetFile::path() const { return impl_->plan->path; }
const std::vector<ParquetComponent>& ParquetFile::components() const {
  return impl_->plan->components;
}
int64_t ParquetFile::num_rows() const { return impl_->first_row.back(); }
int ParquetFile::num_row_groups() const { return static_cast<int>(impl_->record_bytes.size()); }
int64_t ParquetFile::batch_rows() const { return impl_->plan->batch_rows; }

RecordExtent ParquetFile::extent(uint64_t i) const {
  const int rg = impl_->RowGroupOf(i);
  const uint64_t per = impl_->record_bytes[rg];
  return {impl_->first_offset[rg] + (i - impl_->first_record[rg]) * per, per};
}

Result<std::vector<Record>> ParquetFile::ReadRun(uint64_t first, size_t max_bytes,
                                                 uint64_t stride) const {
  if (first >= num_records()) {
    return Status::OutOfRange(fmt::format("{}: record {} of {}", path(), first, num_records()));
  }
  stride = std::max<uint64_t>(stride, 1);
  const int rg = impl_->RowGroupOf(first);
  SLUICE_ASSIGN_OR_RETURN(Buffer owner, impl_->Get(rg));
  const uint64_t end = impl_->first_record[rg + 1];
  const uint64_t per = impl_->record_bytes[rg];
  std::vector<Record> run;
  for (uint64_t i = first; i < end && run.size() < kMaxRecordsPerRun; i += stride) {
    if (!run.empty() && (i - first + 1) * per > max_bytes) break;
    Record r;
    r.data = std::string_view(reinterpret_cast<const char*>(owner.data()), 0);
    r.owner = owner;
    r.offset = impl_->first_offset[rg] + (i - impl_->first_record[rg]) * per;
    r.number = i;
    run.push_back(std::move(r));
  }
  return run;
}

Result<Element> ParquetRecordToElement(const Record& rec) {
  if (rec.owner.size() != sizeof(Decoded) ||
      reinterpret_cast<const Decoded*>(rec.owner.data())->magic != kDecodedMagic) {
    return Status::InvalidArgument("ParquetRecordToElement: not a record of a ParquetFile");
  }
  const Decoded& d = *reinterpret_cast<const Decoded*>(rec.owner.data());
  const Plan& p = *d.plan;
  if (rec.number < d.first_record) return Status::Internal("a Parquet record out of its row group");
  const int64_t idx = static_cast<int64_t>(rec.number - d.first_record);
  const int64_t r0 = p.batch_rows > 0 ? idx * p.batch_rows : idx;
  const int64_t r1 = p.batch_rows > 0 ? std::min(r0 + p.batch_rows, d.rows) : idx + 1;
  if (r0 >= d.rows) return Status::Internal("a Parquet record out of its row group");
  std::vector<Tensor> parts;
  parts.reserve(p.components.size());
  for (size_t l = 0; l < p.leaves.size(); ++l) {
    const Leaf& leaf = p.leaves[l];
    const DecodedLeaf& dl = d.leaves[l];
    if (!dl.null_rows.empty()) {
      for (int64_t r = r0; r < r1; ++r) {
        if (dl.null_rows[r]) {
          return Status::InvalidArgument(fmt::format(
              "{}: row group {}, column '{}', row {} (row {} of the file): a null value (read "
              "nulls as 0 / \"\" with fill_nulls, or filter them out)",
              p.path, d.row_group, leaf.name, r, d.first_row + r));
        }
      }
    }
    if (!leaf.varlen) {
      if (p.batch_rows > 0) {
        SLUICE_ASSIGN_OR_RETURN(Tensor t, dl.values.Slice(r0, r1));
        parts.push_back(std::move(t));
      } else {
        SLUICE_ASSIGN_OR_RETURN(Tensor t, dl.values.Row(r0));
        parts.push_back(std::move(t));
      }
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(Tensor v, dl.values.Slice(dl.offsets[r0], dl.offsets[r1]));
    parts.push_back(std::move(v));
    if (p.batch_rows > 0) {
      SLUICE_ASSIGN_OR_RETURN(Tensor len, dl.row_lengths.Slice(r0, r1));
      parts.push_back(std::move(len));
    }
  }
  return Element(std::move(parts), p.names);
}

}  // namespace sluice
