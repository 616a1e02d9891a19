#include "sluice/records/tar_writer.h"

#include <cstring>

#include <fmt/format.h>

#include "sluice/records/tar_format.h"

namespace sluice {
namespace {

constexpr uint64_t kRecordSize = 20 * tar::kBlockSize;  // tar's default blocking
const char kZeros[tar::kBlockSize] = {};

// Octal digits, zero-padded, NUL-terminated in a field of `size` bytes.
void PutOctal(char* field, size_t size, uint64_t v) {
  std::memset(field, '0', size - 1);
  field[size - 1] = '\0';
  for (size_t i = size - 1; i-- > 0 && v > 0; v >>= 3) field[i] = static_cast<char>('0' + (v & 7));
}

// A pax record "<len> key=value\n", whose length counts its own digits.
std::string PaxRecord(std::string_view key, std::string_view value) {
  const size_t body = 1 + key.size() + 1 + value.size() + 1;  // " key=value\n"
  size_t len = body + 1;
  while (std::to_string(len).size() + body != len) len = std::to_string(len).size() + body;
  return fmt::format("{} {}={}\n", len, key, value);
}

}  // namespace

Result<std::unique_ptr<TarWriter>> TarWriter::Create(const std::string& path,
                                                     const TarWriterOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out,
                          OutputFile::Create(path, {.atomic = true, .sync = options.sync}));
  return std::unique_ptr<TarWriter>(new TarWriter(std::move(out), options));
}

TarWriter::TarWriter(std::unique_ptr<OutputFile> out, TarWriterOptions options)
    : out_(std::move(out)), options_(options) {}

TarWriter::~TarWriter() {
  if (!closed_) out_->Abandon();
}

Status TarWriter::Append(std::string_view data) {
  SLUICE_RETURN_IF_ERROR(out_->Append(data));
  bytes_ += data.size();
  return Status::OK();
}

Status TarWriter::Header(std::string_view name, uint64_t size, char type) {
  char h[tar::kBlockSize] = {};
  std::memcpy(h + tar::kNameOffset, name.data(), std::min(name.size(), tar::kNameSize));
  PutOctal(h + tar::kModeOffset, tar::kModeSize, 0644);
  PutOctal(h + tar::kUidOffset, tar::kIdSize, 0);
  PutOctal(h + tar::kGidOffset, tar::kIdSize, 0);
  PutOctal(h + tar::kSizeOffset, tar::kSizeSize, size);
  PutOctal(h + tar::kMtimeOffset, tar::kMtimeSize, options_.mtime & tar::kMaxOctalSize);
  h[tar::kTypeOffset] = type;
  std::memcpy(h + tar::kMagicOffset, "ustar\0", 6);
  std::memcpy(h + tar::kVersionOffset, "00", 2);
  std::memset(h + tar::kChecksumOffset, ' ', tar::kChecksumSize);
  uint64_t sum = 0;
  for (char c : h) sum += static_cast<uint8_t>(c);
  PutOctal(h + tar::kChecksumOffset, 7, sum);  // six digits, NUL, then the space kept
  return Append(std::string_view(h, sizeof(h)));
}

Status TarWriter::Add(std::string_view name, std::string_view data) {
  if (closed_) return Status::FailedPrecondition(out_->path() + ": the tar writer is closed");
  if (name.empty() || name.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("{}: a tar member needs a name without NUL bytes", out_->path()));
  }
  const bool long_name = name.size() > tar::kNameSize;
  const bool large = data.size() > tar::kMaxOctalSize;
  if (long_name || large) {
    std::string pax;
    if (long_name) pax += PaxRecord("path", name);
    if (large) pax += PaxRecord("size", std::to_string(data.size()));
    SLUICE_RETURN_IF_ERROR(Header("././@PaxHeader", pax.size(), tar::kPaxHeader));
    SLUICE_RETURN_IF_ERROR(Append(pax));
    SLUICE_RETURN_IF_ERROR(Append(std::string_view(kZeros, tar::Padded(pax.size()) - pax.size())));
  }
  // With a pax path, the ustar name is the name cut short (as Python writes).
  SLUICE_RETURN_IF_ERROR(Header(name.substr(0, tar::kNameSize),
                                large ? 0 : data.size(), tar::kRegular));
  SLUICE_RETURN_IF_ERROR(Append(data));
  return Append(std::string_view(kZeros, tar::Padded(data.size()) - data.size()));
}

Status TarWriter::Close() {
  if (closed_) return Status::OK();
  SLUICE_RETURN_IF_ERROR(Append(std::string_view(kZeros, tar::kBlockSize)));
  SLUICE_RETURN_IF_ERROR(Append(std::string_view(kZeros, tar::kBlockSize)));
  while (bytes_ % kRecordSize != 0) {
    SLUICE_RETURN_IF_ERROR(Append(std::string_view(kZeros, tar::kBlockSize)));
  }
  closed_ = true;
  return out_->Commit();
}

}  // namespace sluice
