// Writes a small TensorBoard events file with sluice::SummaryWriter for
// tests/interop/tensorboard_read.py to read with TensorBoard and TensorFlow.
//   tensorboard_write_events LOGDIR
// Prints the events file's path. The values are formulas the Python side
// recomputes:
//   scalar "loss":      1 / (1 + step) at steps 0..9
//   histogram "weights": ((i * 37) % 101) / 7 - 3, i = 0..100, at steps 0 and 5
//                        (30 buckets, and "weights/b7" with 7 buckets)
//   image "images":     uint8 [2, 5, 7, 3], pixel (n, y, x, c) =
//                        (n * 97 + y * 31 + x * 13 + c * 7) % 256, at step 3
//   text "note":        "sluice wrote this" at step 1
#include <cstdio>
#include <string>
#include <vector>

#include "sluice/core/tensor.h"
#include "sluice/records/summary_writer.h"

namespace {

int Fail(const sluice::Status& s) {
  std::fprintf(stderr, "tensorboard_write_events: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s LOGDIR\n", argv[0]);
    return 2;
  }
  auto w = sluice::SummaryWriter::Create(argv[1]);
  if (!w.ok()) return Fail(w.status());
  for (int step = 0; step < 10; ++step) {
    sluice::Status s = w->Scalar("loss", 1.0f / static_cast<float>(1 + step), step);
    if (!s.ok()) return Fail(s);
  }
  std::vector<double> values;
  for (int i = 0; i <= 100; ++i) values.push_back(((i * 37) % 101) / 7.0 - 3.0);
  auto hist = sluice::Tensor::FromVector(values);
  if (!hist.ok()) return Fail(hist.status());
  for (int step : {0, 5}) {
    sluice::Status s = w->Histogram("weights", *hist, step);
    if (s.ok()) s = w->Histogram("weights/b7", *hist, step, 7);
    if (!s.ok()) return Fail(s);
  }
  // Two images as one uint8 tensor [2, 5, 7, 3]; the writer encodes the PNGs.
  const int n = 2, h = 5, wd = 7, c = 3;
  auto batch = sluice::Tensor::Allocate(sluice::DType::kUInt8, sluice::Shape{n, h, wd, c});
  if (!batch.ok()) return Fail(batch.status());
  auto px = batch->flat<uint8_t>();
  for (int i = 0; i < n; ++i)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < wd; ++x)
        for (int k = 0; k < c; ++k)
          px[((i * h + y) * wd + x) * c + k] =
              static_cast<uint8_t>((i * 97 + y * 31 + x * 13 + k * 7) % 256);
  sluice::Status s = w->Image("images", *batch, 3);
  if (s.ok()) s = w->Text("note", "sluice wrote this", 1);
  if (s.ok()) s = w->Close();
  if (!s.ok()) return Fail(s);
  std::printf("%s\n", w->path().c_str());
  return 0;
}
