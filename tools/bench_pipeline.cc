#include "bench_pipeline.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "record_files.h"
#include "sluice/core/file.h"
#include "sluice/ops/decode_crop_resize.h"
#include "sluice/ops/decode_image.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/read_file.h"
#include "sluice/ops/resize.h"
#include "sluice/pipeline/image_folder.h"
#include "sluice/records/example_parser.h"
#include "wxh.h"

namespace sluice::tools {
namespace {

using json = nlohmann::json;

// ImageNet's per-channel mean and standard deviation, in 0..255.
constexpr float kMean[] = {123.675f, 116.28f, 103.53f};
constexpr float kStddev[] = {58.395f, 57.12f, 57.375f};

std::string OpName(const BenchImageOp& op) {
  switch (op.kind) {
    case BenchImageOp::kDecode: return "decode";
    case BenchImageOp::kFused: return "fused";
    case BenchImageOp::kCrop: return "crop";
    case BenchImageOp::kResize: return "resize";
    case BenchImageOp::kFlip: return "flip";
    case BenchImageOp::kNormalize: return "normalize";
  }
  return "?";
}

std::string MapName(const BenchStage& s) {
  std::string name;
  for (const BenchImageOp& op : s.ops) name += (name.empty() ? "" : "+") + OpName(op);
  return name;
}

bool IsEncoded(const Tensor& t) { return t.dtype() == DType::kString; }

// Folds the flips and normalizes that follow ops[*i] into `o` (one of
// each), moving *i to the last op folded.
void FoldFinish(const std::vector<BenchImageOp>& ops, size_t* i, ops::DecodeCropResizeOptions* o) {
  for (; *i + 1 < ops.size(); ++*i) {
    const BenchImageOp::Kind next = ops[*i + 1].kind;
    if (next == BenchImageOp::kFlip && o->mirror == ops::Mirror::kNever) {
      o->mirror = ops::Mirror::kRandom;
    } else if (next == BenchImageOp::kNormalize && o->mean.empty()) {
      o->mean.assign(std::begin(kMean), std::end(kMean));
      o->stddev.assign(std::begin(kStddev), std::end(kStddev));
    } else {
      break;
    }
  }
}

// Runs the decode-crop-resize op `o` on `bytes` (`window` null: a random
// resized crop), into the image's batch row when it is the last op.
Result<Tensor> DecodeCropResizeOp(std::string_view bytes, const ops::CropWindow* window,
                                  const ops::DecodeCropResizeOptions& o, bool last, Rng& rng,
                                  const MapContext& ctx) {
  Tensor image;
  if (last) {
    SLUICE_ASSIGN_OR_RETURN(
        image, ctx.AllocateOutput(0, DType::kFloat32, Shape{o.size.height, o.size.width, 3}));
    SLUICE_RETURN_IF_ERROR(window ? ops::DecodeCropResizeInto(bytes, *window, o, &image)
                                  : ops::DecodeRandomCropResizeInto(bytes, rng, o, &image));
    return image;
  }
  return window ? ops::DecodeCropResize(bytes, *window, o)
                : ops::DecodeRandomCropResize(bytes, rng, o);
}

// Runs `ops` on (image, label); the image may still be encoded bytes.
// Encoded bytes then go through one decode-crop-resize op where the list
// allows, which makes the pixels and Rng draws of the separate ops (tested)
// without holding a decoded image: `fused` (a random resized crop decoded
// from the window), or "decode? crop? resize" (every row decoded and
// resized as it comes, the crop's window drawn as RandomCrop draws it); a
// flip and a normalize right after are done row by row inside it.
// With `fold` false every op runs on its own (`--separate-ops`).
Result<Element> ApplyOps(const std::vector<BenchImageOp>& ops, bool fold, Element e,
                         const MapContext& ctx) {
  Tensor image = e[0];
  Rng rng = ctx.rng();
  for (size_t i = 0; i < ops.size(); ++i) {
    const BenchImageOp& op = ops[i];
    const bool encoded = IsEncoded(image);
    if (op.kind == BenchImageOp::kFused) {
      if (!encoded) {
        return Status::InvalidArgument(
            "fused decode_random_crop_resize needs encoded bytes, "
            "but the image is already decoded");
      }
      ops::DecodeCropResizeOptions o{.size = {op.height, op.width}};
      if (fold) FoldFinish(ops, &i, &o);
      SLUICE_ASSIGN_OR_RETURN(image, DecodeCropResizeOp(image.scalar<std::string_view>(), nullptr,
                                                        o, i + 1 == ops.size(), rng, ctx));
      continue;
    }
    size_t j = i + (op.kind == BenchImageOp::kDecode ? 1 : 0);
    const BenchImageOp* crop =
        j < ops.size() && ops[j].kind == BenchImageOp::kCrop ? &ops[j++] : nullptr;
    if (fold && encoded && j < ops.size() && ops[j].kind == BenchImageOp::kResize) {
      const std::string_view bytes = image.scalar<std::string_view>();
      SLUICE_ASSIGN_OR_RETURN(Shape full, ops::ImageOutputShape(bytes, {.channels = 3}));
      ops::CropWindow window{.height = full.dim(0), .width = full.dim(1)};
      if (crop != nullptr) {
        SLUICE_ASSIGN_OR_RETURN(
            std::vector<int64_t> begin,
            ops::SampleRandomCrop(full, Shape{crop->height, crop->width, full.dim(2)}, rng));
        window = {.y = begin[0], .x = begin[1], .height = crop->height, .width = crop->width};
      }
      ops::DecodeCropResizeOptions o{.size = {ops[j].height, ops[j].width}, .fused = false};
      i = j;
      FoldFinish(ops, &i, &o);
      // A given window takes no Rng: draw the flip here, after the crop's
      // draws, as RandomFlipLeftRight would.
      if (o.mirror == ops::Mirror::kRandom) {
        o.mirror = ops::SampleFlip(rng) ? ops::Mirror::kAlways : ops::Mirror::kNever;
      }
      SLUICE_ASSIGN_OR_RETURN(image,
                              DecodeCropResizeOp(bytes, &window, o, i + 1 == ops.size(), rng, ctx));
      continue;
    }
    if (encoded) {  // every other op works on pixels: decode first
      SLUICE_ASSIGN_OR_RETURN(image,
                              ops::DecodeImage(image.scalar<std::string_view>(), {.channels = 3}));
    }
    switch (op.kind) {
      case BenchImageOp::kDecode:
      case BenchImageOp::kFused: break;
      case BenchImageOp::kCrop: {
        const Shape& s = image.shape();
        SLUICE_ASSIGN_OR_RETURN(image,
                                ops::RandomCrop(image, Shape{op.height, op.width, s.dim(2)}, rng));
        break;
      }
      case BenchImageOp::kResize: {
        SLUICE_ASSIGN_OR_RETURN(image, ops::Resize(image, {op.height, op.width}));
        break;
      }
      case BenchImageOp::kFlip: {
        SLUICE_ASSIGN_OR_RETURN(image, ops::RandomFlipLeftRight(std::move(image), rng));
        break;
      }
      case BenchImageOp::kNormalize: {
        SLUICE_ASSIGN_OR_RETURN(image, ops::Normalize(std::move(image), kMean, kStddev));
        break;
      }
    }
  }
  e[0] = std::move(image);
  return e;
}

// A record of the common image schema -> (image bytes, label), the bytes
// viewing the record's buffer.
MapFn ParseFn() {
  ParseSpec spec = {{"image/encoded", FixedLenFeature(DType::kString, {})},
                    {"image/class/label", FixedLenFeature(DType::kInt64, {})}};
  auto parser = std::make_shared<ExampleParser>(ExampleParser::Create(spec).value());
  return [parser](Element e, const MapContext&) -> Result<Element> {
    SLUICE_ASSIGN_OR_RETURN(Element ex, parser->ParseSingle(e[0]));  // views, no copy
    return Element({ex[0], ex[1]}, {"image", "label"});
  };
}

Status SpecError(const std::string& file, const std::string& what) {
  return Status::InvalidArgument(fmt::format("spec {}: {}", file, what));
}

// [W, H] or "WxH".
bool JsonSize(const json& v, int64_t* w, int64_t* h) {
  if (v.is_string()) return ParseWxH(v.get<std::string>(), w, h);
  if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer()) {
    return false;
  }
  *w = v[0].get<int64_t>();
  *h = v[1].get<int64_t>();
  return *w >= 1 && *h >= 1 && *w <= 65500 && *h <= 65500;
}

// A number >= min or "autotune".
bool JsonCount(const json& v, int64_t min, int64_t* out) {
  if (v.is_string()) return ParseCountOrAutotune(v.get<std::string>(), min, out);
  if (!v.is_number_integer() || v.get<int64_t>() < min) return false;
  *out = v.get<int64_t>();
  return true;
}

// One image op: "decode", {"resize": [224, 224]}, {"flip": true}...
Result<BenchImageOp> JsonImageOp(const std::string& file, const json& v) {
  std::string key;
  json arg = true;
  if (v.is_string()) {
    key = v.get<std::string>();
  } else if (v.is_object() && v.size() == 1) {
    key = v.begin().key();
    arg = v.begin().value();
  } else {
    return SpecError(file, "an image op is a name or a one-key object, got " + v.dump());
  }
  BenchImageOp op;
  if (key == "decode") {
    op.kind = BenchImageOp::kDecode;
  } else if (key == "flip") {
    op.kind = BenchImageOp::kFlip;
  } else if (key == "normalize") {
    op.kind = BenchImageOp::kNormalize;
  } else if (key == "fused" || key == "crop" || key == "resize") {
    op.kind = key == "fused"  ? BenchImageOp::kFused
              : key == "crop" ? BenchImageOp::kCrop
                              : BenchImageOp::kResize;
    if (key == "fused" && arg.is_boolean()) {
      op.width = op.height = 224;
    } else if (!JsonSize(arg, &op.width, &op.height)) {
      return SpecError(file, fmt::format("\"{}\" takes [width, height], got {}", key, arg.dump()));
    }
  } else {
    return SpecError(file, fmt::format("unknown image op \"{}\" (expected decode, fused, crop, "
                                       "resize, flip or normalize)",
                                       key));
  }
  return op;
}

}  // namespace

bool ParseCountOrAutotune(std::string_view s, int64_t min, int64_t* out) {
  if (s == "autotune" || s == "AUTOTUNE") {
    *out = kAutotune;
    return true;
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < min) return false;
  *out = v;
  return true;
}

// A pipeline spec is a few lines of JSON.
constexpr int64_t kMaxSpecBytes = int64_t{1} << 20;

Result<BenchPipelineSpec> ReadBenchSpec(const std::string& path) {
  Result<std::string> text = ReadFileToString(path, kMaxSpecBytes);
  if (!text.ok()) return text.status().WithContext("cannot read the spec file");
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return SpecError(path, "not valid JSON");
  if (!j.is_object()) return SpecError(path, "expected a JSON object");
  BenchPipelineSpec spec;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "source") {
      if (!v.is_object() || v.size() != 1 || !v.begin().value().is_string()) {
        return SpecError(path,
                         "\"source\" is {\"tfrecord\": GLOB}, {\"images\": DIR} or "
                         "{\"records\": GLOB}");
      }
      const std::string kind = v.begin().key();
      spec.path = v.begin().value().get<std::string>();
      if (kind == "tfrecord") {
        spec.source = BenchSourceKind::kTFRecord;
      } else if (kind == "images") {
        spec.source = BenchSourceKind::kImages;
      } else if (kind == "records") {
        spec.source = BenchSourceKind::kRecords;
      } else {
        return SpecError(path, "unknown source \"" + kind + "\" (tfrecord, images or records)");
      }
    } else if (key == "parallelism") {
      if (!JsonCount(v, 1, &spec.parallelism)) {
        return SpecError(path, "\"parallelism\" is a number >= 1 or \"autotune\"");
      }
    } else if (key == "cores") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 4096) {
        return SpecError(path, "\"cores\" is a number >= 1");
      }
      spec.cores = v.get<int>();
    } else if (key == "map_and_batch_fusion") {
      if (!v.is_boolean()) return SpecError(path, "\"map_and_batch_fusion\" is true or false");
      spec.map_and_batch_fusion = v.get<bool>();
    } else if (key == "fold_ops") {
      if (!v.is_boolean()) return SpecError(path, "\"fold_ops\" is true or false");
      spec.fold_ops = v.get<bool>();
    } else if (key == "seed") {
      if (!v.is_number_unsigned()) return SpecError(path, "\"seed\" is a number >= 0");
      spec.seed = v.get<uint64_t>();
    } else if (key == "stages") {
      if (!v.is_array()) return SpecError(path, "\"stages\" is a list");
      for (const json& s : v) {
        if (!s.is_object() || s.empty()) {
          return SpecError(path, "a stage is an object such as {\"batch\": 128}, got " + s.dump());
        }
        BenchStage stage;
        const std::string name = s.begin().key();
        const json& arg = s.begin().value();
        if (s.contains("parallelism") && !JsonCount(s["parallelism"], 1, &stage.parallelism)) {
          return SpecError(path, "a stage's \"parallelism\" is a number >= 1 or \"autotune\"");
        }
        if (s.size() > (s.contains("parallelism") ? 2u : 1u)) {
          return SpecError(path, "a stage has one key (and \"parallelism\"), got " + s.dump());
        }
        if (name == "shuffle" || name == "batch" || name == "prefetch") {
          stage.kind = name == "shuffle" ? BenchStage::kShuffle
                       : name == "batch" ? BenchStage::kBatch
                                         : BenchStage::kPrefetch;
          if (!JsonCount(arg, name == "prefetch" ? 0 : 1, &stage.n) ||
              (name != "prefetch" && stage.n == kAutotune)) {
            return SpecError(path,
                             fmt::format("\"{}\" takes a number{}, got {}", name,
                                         name == "prefetch" ? " or \"autotune\"" : "", arg.dump()));
          }
        } else if (name == "map") {
          stage.kind = BenchStage::kMap;
          for (const json& op : arg.is_array() ? arg : json::array({arg})) {
            SLUICE_ASSIGN_OR_RETURN(BenchImageOp o, JsonImageOp(path, op));
            stage.ops.push_back(o);
          }
          if (stage.ops.empty()) return SpecError(path, "\"map\" needs at least one op");
        } else {
          json op = json::object();
          op[name] = arg;
          SLUICE_ASSIGN_OR_RETURN(BenchImageOp o, JsonImageOp(path, op));
          stage.ops.push_back(o);
        }
        spec.stages.push_back(std::move(stage));
      }
    } else {
      return SpecError(path, "unknown key \"" + key +
                                 "\" (expected source, stages, parallelism, cores, seed, "
                                 "map_and_batch_fusion, fold_ops)");
    }
  }
  if (spec.path.empty()) return SpecError(path, "no \"source\"");
  return spec;
}

std::string DescribeBenchPipeline(const BenchPipelineSpec& spec) {
  std::string d = spec.source == BenchSourceKind::kTFRecord ? "tfrecord"
                  : spec.source == BenchSourceKind::kImages ? "images"
                                                            : "records";
  d += "(" + spec.path + ")";
  size_t i = 0;  // leading shuffles run on the records, before parse/read
  for (; i < spec.stages.size() && spec.stages[i].kind == BenchStage::kShuffle; ++i) {
    d += fmt::format(" -> shuffle({})", spec.stages[i].n);
  }
  if (spec.source == BenchSourceKind::kTFRecord) d += " -> parse";
  if (spec.source == BenchSourceKind::kImages) d += " -> read";
  for (; i < spec.stages.size(); ++i) {
    const BenchStage& s = spec.stages[i];
    switch (s.kind) {
      case BenchStage::kMap: d += " -> " + MapName(s); break;
      case BenchStage::kShuffle: d += fmt::format(" -> shuffle({})", s.n); break;
      case BenchStage::kBatch:
        d += fmt::format(" -> batch({})", s.n);
        // Fused when a map feeds it (docs/pipeline.md); say so when off.
        if (!spec.map_and_batch_fusion && i > 0 && spec.stages[i - 1].kind == BenchStage::kMap) {
          d += " [no map-and-batch fusion]";
        }
        break;
      case BenchStage::kPrefetch:
        d += s.n == kAutotune ? " -> prefetch(autotune)" : fmt::format(" -> prefetch({})", s.n);
        break;
    }
  }
  return d;
}

Result<Dataset> BuildBenchPipeline(const BenchPipelineSpec& spec) {
  const int64_t par = spec.parallelism;
  Dataset ds = Dataset::range(0);
  switch (spec.source) {
    case BenchSourceKind::kTFRecord:
    case BenchSourceKind::kRecords: {
      SLUICE_ASSIGN_OR_RETURN(RecordFileMatch match, MatchRecordFiles(spec.path));
      std::vector<std::string> files = std::move(match.files);
      const int64_t reads = files.size() > 1 ? kAutotune : 1;
      ds = TFRecordDataset(std::move(files), {.num_parallel_reads = reads});
      break;
    }
    case BenchSourceKind::kImages: {
      SLUICE_ASSIGN_OR_RETURN(ImageFolder folder, ScanImageFolder(spec.path));
      if (folder.files.empty()) {
        return Status::NotFound(fmt::format(
            "{}: no images found; expected {}/<class>/<image>.jpg or .png", spec.path, spec.path));
      }
      std::vector<std::string> paths;
      std::vector<int64_t> labels;
      for (const ImageFile& f : folder.files) {
        paths.push_back(folder.root + "/" + f.relative);
        labels.push_back(f.label);
      }
      SLUICE_ASSIGN_OR_RETURN(Tensor path_tensor, Tensor::FromStrings(paths));
      SLUICE_ASSIGN_OR_RETURN(Tensor label_tensor, Tensor::FromVector(labels));
      ds = Dataset::from_tensor_slices({path_tensor, label_tensor}, {"path", "label"});
      break;
    }
  }
  // Shuffle records (before parsing and decoding) where the spec puts it
  // first, as input pipelines usually do.
  size_t next = 0;
  while (next < spec.stages.size() && spec.stages[next].kind == BenchStage::kShuffle) {
    ds = ds.shuffle(spec.stages[next].n, {.seed = spec.seed});
    ++next;
  }
  const bool has_maps = std::any_of(spec.stages.begin(), spec.stages.end(),
                                    [](const BenchStage& s) { return s.kind == BenchStage::kMap; });
  if (spec.source == BenchSourceKind::kRecords && has_maps) {
    return Status::InvalidArgument(
        "--records reads raw records only; image stages (decode, resize...) need --tfrecord");
  }
  if (spec.source == BenchSourceKind::kTFRecord) {
    ds = ds.map(ParseFn(), {.parallelism = par, .name = "parse"});
  } else if (spec.source == BenchSourceKind::kImages) {
    ds = ds.map(
        [](Element e) -> Result<Element> {
          auto path = std::make_shared<const std::string>(e[0].scalar<std::string_view>());
          SLUICE_ASSIGN_OR_RETURN(Tensor bytes, ops::ReadFile(*path));
          Element out({bytes, e[1]}, {"image", "label"});
          // Errors of the image stages then name the file.
          out.set_origin(std::move(path), -1);
          return out;
        },
        {.parallelism = par, .name = "read"});
  }
  std::vector<std::string> used_names;
  for (; next < spec.stages.size(); ++next) {
    const BenchStage& s = spec.stages[next];
    switch (s.kind) {
      case BenchStage::kMap: {
        std::string name = MapName(s);
        const int64_t n = std::count(used_names.begin(), used_names.end(), name);
        used_names.push_back(name);
        if (n > 0) name += "_" + std::to_string(n);
        ds = ds.map(
            [ops = s.ops, fold = spec.fold_ops](Element e, const MapContext& ctx) {
              return ApplyOps(ops, fold, std::move(e), ctx);
            },
            {.parallelism = s.parallelism != 0 ? s.parallelism : par, .name = name});
        break;
      }
      case BenchStage::kShuffle: ds = ds.shuffle(s.n, {.seed = spec.seed}); break;
      case BenchStage::kBatch: ds = ds.batch(s.n); break;
      case BenchStage::kPrefetch:
        if (s.n != 0) ds = ds.prefetch(s.n);
        break;
    }
  }
  Options options;
  options.seed = spec.seed;
  if (spec.cores > 0) options.cpu_budget = spec.cores;
  if (!spec.map_and_batch_fusion) options.map_and_batch_fusion = false;
  ds = ds.with_options(options);
  SLUICE_RETURN_IF_ERROR(ds.status());
  return ds;
}

}  // namespace sluice::tools
