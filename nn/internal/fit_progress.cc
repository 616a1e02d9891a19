#include "sluice/nn/internal/fit_progress.h"

#include <unistd.h>

#include <cmath>

namespace sluice::nn_internal {

FitProgress::FitProgress(FILE* out, int verbose) : out_(out) {
  silent_ = verbose == 0 || out == nullptr;
  bar_ = verbose == 1 || (verbose < 0 && out != nullptr && isatty(fileno(out)));
}

double FitProgress::Seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void FitProgress::StartEpoch(int epoch, int epochs, int64_t total_steps) {
  epoch_ = epoch;
  epochs_ = epochs;
  total_ = total_steps;
  start_ = std::chrono::steady_clock::now();
  last_draw_ = start_ - std::chrono::seconds(1);
  if (!silent_ && bar_) {
    std::fprintf(out_, "Epoch %d/%d\n", epoch + 1, epochs);
    std::fflush(out_);
  }
}

std::string FitProgress::Values(const std::vector<std::pair<std::string, double>>& values) const {
  std::string s;
  char buf[96];
  for (const auto& [name, v] : values) {
    std::snprintf(buf, sizeof buf, " - %s: %.4f", name.c_str(), v);
    s += buf;
  }
  return s;
}

std::string FitProgress::Bar(int64_t done) const {
  char buf[64];
  if (total_ <= 0) {
    std::snprintf(buf, sizeof buf, "%7lld/Unknown", static_cast<long long>(done));
    return buf;
  }
  const int width = 30;
  int filled = static_cast<int>(width * std::min<int64_t>(done, total_) / total_);
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < width) bar += '>';
  bar.resize(width, '.');
  int digits = static_cast<int>(std::to_string(total_).size());
  std::snprintf(buf, sizeof buf, "%*lld/%lld [", digits, static_cast<long long>(done),
                static_cast<long long>(total_));
  return buf + bar + "]";
}

void FitProgress::Step(int64_t done, const std::vector<std::pair<std::string, double>>& values,
                       int64_t examples) {
  if (silent_ || !bar_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  double s = Seconds();
  char buf[96];
  std::snprintf(buf, sizeof buf, " - %.0fs %.0fms/step", s, done > 0 ? 1000 * s / done : 0.0);
  std::string line = "\r" + Bar(done) + buf + Values(values);
  std::snprintf(buf, sizeof buf, " - %.0f ex/s", s > 0 ? examples / s : 0.0);
  std::fprintf(out_, "%s%s\033[K", line.c_str(), buf);
  std::fflush(out_);
}

void FitProgress::EndEpoch(int64_t done, const std::vector<std::pair<std::string, double>>& values,
                           int64_t examples, double wait) {
  if (silent_) return;
  double s = Seconds();
  char buf[160];
  std::snprintf(buf, sizeof buf, " - %.1fs %.1fms/step", s, done > 0 ? 1000 * s / done : 0.0);
  std::string tail = Values(values);
  char tail2[96];
  std::snprintf(tail2, sizeof tail2, " - %.0f ex/s - input wait %.1f%%", s > 0 ? examples / s : 0,
                100 * wait);
  if (bar_) {
    if (total_ <= 0) total_ = done;
    std::fprintf(out_, "\r%s%s%s%s\033[K\n", Bar(done).c_str(), buf, tail.c_str(), tail2);
  } else {
    std::fprintf(out_, "Epoch %d/%d - %lld steps%s%s%s\n", epoch_ + 1, epochs_,
                 static_cast<long long>(done), buf, tail.c_str(), tail2);
  }
  std::fflush(out_);
}

}  // namespace sluice::nn_internal
