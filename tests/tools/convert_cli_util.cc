#include "convert_cli_util.h"

#include <sys/wait.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>

#include "sluice/core/rng.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/png.h"

namespace sluice::testing {

namespace fs = std::filesystem;

CliRun Sluice(const ScratchDir& dir, const std::string& args, const std::string& env) {
  const std::string cmd = (env.empty() ? "" : env + " ") + SLUICE_BINARY + " " + args + " > " +
                          dir.file("stdout") + " 2> " + dir.file("stderr") + " < /dev/null";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFileOrDie(dir.file("stdout")),
          ReadFileOrDie(dir.file("stderr"))};
}

Tensor Pixels(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{h, w, c}).value();
  Rng rng(seed);
  for (uint8_t& v : t.flat<uint8_t>()) v = static_cast<uint8_t>(rng.NextU32());
  return t;
}

std::string Jpeg(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  return ops::EncodeJpeg(Pixels(h, w, c, seed)).value();
}

std::string Png(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  return ops::EncodePng(Pixels(h, w, c, seed)).value();
}

void Put(const std::string& path, std::string_view bytes) {
  fs::create_directories(fs::path(path).parent_path());
  WriteFileOrDie(path, bytes);
}

std::string Idx(uint32_t magic, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string out;
  auto be = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>(v >> s));
  };
  be(magic);
  for (uint32_t d : dims) be(d);
  return out + data;
}

std::string Gzip(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    files[e.path().filename().string()] = ReadFileOrDie(e.path().string());
  }
  return files;
}

}  // namespace sluice::testing
