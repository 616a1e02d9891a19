#include "idx_folder.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "progress.h"
#include "sluice/core/background.h"
#include "sluice/core/file.h"
#include "sluice/core/tensor.h"
#include "sluice/ops/png.h"

namespace sluice::tools {
namespace {

namespace fs = std::filesystem;

bool SafeByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '+' || c == '-';
}

// Checks DIR (empty or absent unless resuming) and creates the class folders.
Status PrepareFolder(const IdxFolderJob& job, std::vector<std::string>* foreign) {
  std::error_code ec;
  if (fs::exists(job.dir, ec)) {
    if (!fs::is_directory(job.dir, ec)) {
      return Status::InvalidArgument("--to-folder " + job.dir + " exists and is not a folder");
    }
    const std::set<std::string> classes(job.folders.begin(), job.folders.end());
    bool empty = true;
    for (auto it = fs::directory_iterator(job.dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      empty = false;
      const std::string name = it->path().filename().string();
      if (!name.empty() && name[0] != '.' && classes.count(name) == 0) foreign->push_back(name);
    }
    if (ec) {
      return Status::FailedPrecondition("cannot list " + job.dir + ": " + ec.message());
    }
    if (!empty && !job.resume) {
      return Status::FailedPrecondition(
          "--to-folder " + job.dir +
          " is not empty; give a new or empty folder, or --resume to complete an earlier run");
    }
    std::sort(foreign->begin(), foreign->end());
  }
  for (const std::string& folder : job.folders) {
    const std::string path = job.dir + "/" + folder;
    fs::create_directories(path, ec);
    std::error_code dir_ec;
    if (ec || !fs::is_directory(path, dir_ec)) {
      return Status::FailedPrecondition(fmt::format("cannot create the class folder {}: {}", path,
                                                    ec ? ec.message() : "not a folder"));
    }
    // A killed run leaves hidden temporaries (core/file.h's ".NAME.tmp-*").
    for (auto it = fs::directory_iterator(path, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.starts_with(".") && name.find(".tmp-") != std::string::npos) {
        fs::remove(it->path(), dir_ec);
      }
    }
  }
  return Status::OK();
}

}  // namespace

std::string SafeFolderName(std::string_view name) {
  if (name.empty()) return "_";
  std::string out(name);
  for (char& c : out) {
    if (!SafeByte(c)) c = '_';
  }
  if (out[0] == '.') out[0] = '_';
  return out;
}

std::vector<std::string> ClassFolderNames(const std::vector<std::string>& names) {
  std::vector<std::string> folders;
  folders.reserve(names.size());
  for (const std::string& name : names) folders.push_back(SafeFolderName(name));
  // Strictly increasing means sorted in label order and distinct.
  bool in_order = true;
  for (size_t i = 1; i < folders.size(); ++i) {
    if (!(folders[i - 1] < folders[i])) in_order = false;
  }
  if (in_order) return folders;
  const size_t width = names.empty() ? 1 : std::to_string(names.size() - 1).size();
  for (size_t i = 0; i < folders.size(); ++i) {
    folders[i] = fmt::format("{:0{}}_{}", i, width, folders[i]);
  }
  return folders;
}

std::string IdxImageFileName(std::string_view name_prefix, size_t index) {
  return fmt::format("{}-{:05d}.png", name_prefix, index);
}

IdxFolderReport WriteIdxFolder(const IdxFolderJob& job) {
  const auto start = std::chrono::steady_clock::now();
  IdxFolderReport report;
  report.status = PrepareFolder(job, &report.foreign);
  if (!report.status.ok()) return report;

  const IdxArray& images = *job.images;
  const IdxArray& labels = *job.labels;
  const int64_t rows = images.dims[1], cols = images.dims[2];
  const size_t pixels = static_cast<size_t>(rows * cols);
  const size_t n = static_cast<size_t>(images.count());

  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> processed{0}, written{0}, kept{0}, bytes_out{0};
  std::mutex mu;  // guards `first_error`
  Status first_error;

  const auto process = [&](size_t i) -> Status {
    const uint8_t label = static_cast<uint8_t>(labels.data[i]);
    const std::string folder = job.dir + "/" + job.folders[label];
    const std::string name = IdxImageFileName(job.name_prefix, i);
    std::error_code ec;
    if (job.resume && fs::is_regular_file(folder + "/" + name, ec)) {
      ++kept;
      return Status::OK();
    }
    Result<Tensor> image = Tensor::Allocate(DType::kUInt8, Shape{rows, cols, 1});
    if (!image.ok()) return image.status().WithContext(folder + "/" + name);
    std::memcpy(image->raw_data(), images.data.data() + i * pixels, pixels);
    Result<std::string> png = ops::EncodePng(*image);
    if (!png.ok()) return png.status().WithContext(folder + "/" + name);
    OutputFileOptions options;
    options.sync = job.sync;
    SLUICE_RETURN_IF_ERROR(WriteFileAtomically(folder + "/" + name, *png, options));
    ++written;
    bytes_out += png->size();
    return Status::OK();
  };
  const auto worker = [&](int) {
    while (!failed.load(std::memory_order_relaxed)) {
      const size_t i = next.fetch_add(1);
      if (i >= n) break;
      Status st = process(i);
      if (!st.ok()) {
        std::lock_guard<std::mutex> l(mu);
        if (first_error.ok()) first_error = std::move(st);
        failed = true;
      }
      ++processed;
    }
  };

  Progress progress("writing " + job.dir, "images", n, job.progress);
  RunWorkers(job.workers, worker, [&] { progress.Update(processed, processed * pixels); });
  progress.Done();

  report.status = first_error;
  report.written = written;
  report.kept = kept;
  report.bytes_out = bytes_out;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace sluice::tools
