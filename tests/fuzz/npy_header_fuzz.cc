// libFuzzer target for the .npy header parser and the .npz directory.
//
// The first input byte picks what the rest is: an .npy (header parsed, then
// its rows read) or an .npz (members listed and opened with a small inflate
// limit, then their headers parsed). Every outcome must be values or an
// error Status naming the file: never a crash, a hang, or an allocation
// larger than the input can justify.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sluice/records/npy.h"
#include "sluice/records/npy_rows_file.h"
#include "sluice/records/npz.h"

namespace {

void CheckError(const sluice::Status& s) {
  if (s.ok()) return;
  if (s.message().find("fuzz") == std::string::npos) __builtin_trap();
}

void ReadRows(std::shared_ptr<sluice::ReadableFile> file, uint64_t base, uint64_t size,
              int64_t window) {
  auto array = sluice::ReadNpyArray(std::move(file), base, size);
  CheckError(array.status());
  if (!array.ok()) return;
  auto rows = sluice::NpyRowsFile::Make("fuzz", {*array}, window);
  if (!rows.ok()) return;
  for (uint64_t i = 0; i < (*rows)->num_records() && i < 64;) {
    auto run = (*rows)->ReadRun(i, 64, 1 + (i & 1));
    CheckError(run.status());
    if (!run.ok()) break;
    i = run->back().number + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const uint64_t n = bytes.size();
  std::shared_ptr<sluice::ReadableFile> file = sluice::NewMemoryFile("fuzz", std::move(bytes));
  if ((mode & 1) == 0) {
    ReadRows(file, 0, n, (mode >> 1) & 7);
    return 0;
  }
  auto members = sluice::ListNpzMembers(*file);
  CheckError(members.status());
  if (!members.ok()) return 0;
  for (const sluice::NpzMember& m : *members) {
    auto member = sluice::OpenNpzMember(file, m, 1 << 20);
    CheckError(member.status());
    if (member.ok()) ReadRows(member->file, member->offset, member->size, 0);
  }
  return 0;
}
