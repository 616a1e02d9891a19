// AddJpegRestartMarkers and HasRowAlignedRestarts (jpeg_restart.h).
//
// The transcoder is libjpeg's: jpeg_read_coefficients reads every scan into
// whole-image coefficient arrays, jpeg_copy_critical_parameters sets up a
// compressor with the same dimensions, sampling, quantization tables and
// color space, and jpeg_write_coefficients + jpeg_finish_compress entropy
// code the same coefficients again, now in one interleaved sequential scan
// with a DRI. What this file adds is the strictness (libjpeg's warnings
// about made-up data are errors here: JpegWarnings::kFailUnlessHarmless),
// the checks that make "same pixels" hold (TrackScans, SmoothedWhenDecoded,
// CheckRange and the Adobe marker in Write), and the limits (max_pixels,
// the blocks a file's bytes can honestly hold, 500 scans).
#include "sluice/ops/jpeg_restart.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "sluice/ops/internal/jpeg_lib.h"
#include "sluice/ops/internal/jpeg_splice.h"
#include "sluice/ops/jpeg.h"

// After jpeglib.h (through jpeg_lib.h): its jconfig.h decides which codes
// jerror.h defines.
#include <jerror.h>

namespace sluice::ops {
namespace {

using ops_internal::JpegCall;
using ops_internal::JpegDecompressor;
using ops_internal::JpegErrorManager;

constexpr std::string_view kOp = "add_jpeg_restart_markers";
constexpr int kMaxInterval = 65535;

// The scan limit of the decoder (jpeg_lib's kMaxJpegScans), plus the set of
// components some scan has covered: a sequential file may code its
// components in separate scans, and one that never codes a component would
// otherwise transcode as if that component were blank.
struct ScanTracker {
  ops_internal::JpegProgress base;
  uint32_t seen = 0;  // bit i: comp_info[i] appeared in a scan
};

void TrackScans(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  const auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  auto* tracker = reinterpret_cast<ScanTracker*>(cinfo->progress);
  if (d->input_scan_number > tracker->base.max_scans) {
    ops_internal::JpegFail(cinfo, "too many scans (the limit is 500)");
  }
  for (int i = 0; i < d->comps_in_scan; ++i) {
    tracker->seen |= uint32_t{1} << d->cur_comp_info[i]->component_index;
  }
}

// Both libjpeg objects of one call, on the heap (libjpeg keeps pointers
// into them). The compressor reads the decompressor's coefficient arrays,
// so it goes first.
struct Transcoder {
  JpegDecompressor in;  // its destructor destroys the decompressor
  jpeg_compress_struct out;
  bool out_created = false;
  ops_internal::JpegMemoryDestination dest;
  ScanTracker tracker;

  Transcoder() = default;
  Transcoder(const Transcoder&) = delete;
  Transcoder& operator=(const Transcoder&) = delete;
  ~Transcoder() {
    if (out_created) jpeg_destroy_compress(&out);
    std::free(dest.data);
  }
};

void Create(void* p) {
  auto* t = static_cast<Transcoder*>(p);
  jpeg_create_decompress(&t->in.cinfo);
  t->in.created = true;
  t->out.err = &t->in.err.pub;  // one error manager, one longjmp target
  jpeg_create_compress(&t->out);
  t->out_created = true;
}

struct HeaderArgs {
  j_decompress_ptr cinfo;
  bool save_markers;
  int result;
};

void ReadHeader(void* p) {
  auto* a = static_cast<HeaderArgs*>(p);
  if (a->save_markers) {
    jpeg_save_markers(a->cinfo, JPEG_COM, 0xFFFF);
    for (int m = 0; m < 16; ++m) jpeg_save_markers(a->cinfo, JPEG_APP0 + m, 0xFFFF);
  }
  a->result = jpeg_read_header(a->cinfo, TRUE);
}

struct ReadArgs {
  j_decompress_ptr cinfo;
  jvirt_barray_ptr* coefficients;  // null: the data ended (suspended)
};

void ReadCoefficients(void* p) {
  auto* a = static_cast<ReadArgs*>(p);
  a->coefficients = jpeg_read_coefficients(a->cinfo);
}

// MCUs per row of the one interleaved scan the output has (a 1-component
// scan has 8x8 MCUs).
int64_t McusPerRow(const jpeg_decompress_struct& c) {
  if (c.num_components == 1) return (int64_t{c.image_width} + 7) / 8;
  const int64_t mcu_width = 8 * int64_t{c.max_h_samp_factor};
  return (int64_t{c.image_width} + mcu_width - 1) / mcu_width;
}

// Whether the saved marker `m` is the JFIF APP0 or Adobe APP14 marker the
// compressor writes itself.
bool WrittenByEncoder(const jpeg_marker_struct& m, const jpeg_compress_struct& out) {
  const auto starts = [&m](const char* id, unsigned int n) {
    return m.data_length >= n && std::memcmp(m.data, id, n) == 0;
  };
  if (m.marker == JPEG_APP0 && out.write_JFIF_header) return starts("JFIF", 5);  // with its NUL
  if (m.marker == JPEG_APP0 + 14 && out.write_Adobe_marker) return starts("Adobe", 5);
  return false;
}

struct WriteArgs {
  j_decompress_ptr in;
  j_compress_ptr out;
  jvirt_barray_ptr* coefficients;
  const JpegRestartOptions* options;
  unsigned int interval;  // out: the DRI written
};

void Write(void* p) {
  auto* a = static_cast<WriteArgs*>(p);
  j_decompress_ptr in = a->in;
  j_compress_ptr out = a->out;
  jpeg_copy_critical_parameters(in, out);
  out->arith_code = FALSE;
  out->optimize_coding = a->options->optimize_huffman ? TRUE : FALSE;
  a->interval =
      static_cast<unsigned int>(JpegRestartInterval(McusPerRow(*in), a->options->interval));
  out->restart_interval = a->interval;
  out->restart_in_rows = 0;
  // The compressor writes an Adobe marker for every CMYK image, and
  // DecodeJpeg (like TF) reads the CMYK of files with one as inverted: a
  // CMYK file without one must stay without.
  if (in->jpeg_color_space == JCS_CMYK && !in->saw_Adobe_marker) out->write_Adobe_marker = FALSE;
  jpeg_write_coefficients(out, a->coefficients);
  if (a->options->copy_markers) {
    for (jpeg_saved_marker_ptr m = in->marker_list; m != nullptr; m = m->next) {
      if (WrittenByEncoder(*m, *out)) continue;
      jpeg_write_marker(out, m->marker, m->data, m->data_length);
    }
  }
  jpeg_finish_compress(out);
}

struct RangeArgs {
  j_decompress_ptr cinfo;
  jvirt_barray_ptr* coefficients;
};

// Fails unless every coefficient fits 8-bit JPEG's Huffman coding: AC
// values within +-1023 (10 bits) and DC values within [-1024, 1023], so
// that any DC difference, wherever the restart markers fall, needs at most
// 11 bits. Real 8-bit data always does; corrupt or arithmetic-coded data
// need not, and libjpeg's SIMD Huffman encoder would then write an invalid
// stream without a word (its optimizing pass does check, the standard
// tables' path does not).
void CheckRange(void* p) {
  auto* a = static_cast<RangeArgs*>(p);
  j_decompress_ptr cinfo = a->cinfo;
  for (int ci = 0; ci < cinfo->num_components; ++ci) {
    const jpeg_component_info& comp = cinfo->comp_info[ci];
    for (JDIMENSION row = 0; row < comp.height_in_blocks; ++row) {
      JBLOCKARRAY rows = (*cinfo->mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(cinfo),
                                                           a->coefficients[ci], row, 1, FALSE);
      int bad = 0;
      for (JDIMENSION b = 0; b < comp.width_in_blocks; ++b) {
        const JCOEF* block = rows[0][b];
        bad |= block[0] < -1024 || block[0] > 1023;
        for (int k = 1; k < DCTSIZE2; ++k) bad |= block[k] < -1023 || block[k] > 1023;
      }
      if (bad) {
        ops_internal::JpegFail(
            reinterpret_cast<j_common_ptr>(cinfo),
            "a DCT coefficient is out of the range of 8-bit JPEG (corrupt data)");
      }
    }
  }
}

// A progressive file whose scans leave any of the first 10 coefficients
// (zigzag order) of a component unsent or approximate: libjpeg's decoder
// then smooths those blocks from their neighbors (do_block_smoothing, as in
// DecodeJpeg), which a sequential re-encoding cannot reproduce. The same
// conservative test as the decoder's IncompleteProgressive.
bool SmoothedWhenDecoded(const jpeg_decompress_struct& c) {
  if (!c.progressive_mode || c.coef_bits == nullptr) return false;
  for (int ci = 0; ci < c.num_components; ++ci) {
    for (int k = 0; k < 10; ++k) {
      if (c.coef_bits[ci][k] != 0) return true;
    }
  }
  return false;
}

// libjpeg's warnings that kFailUnlessHarmless made errors (raised with their
// own code).
bool MadeUpData(int msg_code) {
  switch (msg_code) {
    case JWRN_ARITH_BAD_CODE:
    case JWRN_BOGUS_PROGRESSION:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_JPEG_EOF:
    case JWRN_MUST_RESYNC: return true;
    default: return false;
  }
}

Status Fail(const JpegErrorManager& err, const std::string& where) {
  if (MadeUpData(err.error_code)) {
    return Status::InvalidArgument(where + ": " + err.message +
                                   " (a decoder would make up pixels here; not transcoded)");
  }
  return ops_internal::JpegError(err, where);
}

}  // namespace

Result<std::string> AddJpegRestartMarkers(std::string_view bytes, const JpegRestartOptions& o) {
  const std::string where = ops_internal::JpegWhere(kOp, o.name, bytes.size());
  if (o.interval < 1 || o.interval > kMaxInterval) {
    return Status::InvalidArgument(where + ": interval must be in [1, 65535], got " +
                                   std::to_string(o.interval));
  }
  if (o.max_pixels <= 0) return Status::InvalidArgument(where + ": max_pixels must be > 0");
  if (bytes.empty()) return Status::InvalidArgument(where + ": empty input");

  auto t = std::make_unique<Transcoder>();
  ops_internal::InstallJpegErrorManager(reinterpret_cast<j_common_ptr>(&t->in.cinfo), &t->in.err);
  if (!JpegCall(&t->in.err, Create, t.get())) {
    return Status::ResourceExhausted(where +
                                     ": cannot create the libjpeg objects: " + t->in.err.message);
  }
  // The whole-image coefficients take 2 bytes per sample: at most 8 per
  // pixel (4 components), plus edge padding.
  const int64_t max_memory = o.max_pixels > (int64_t{1} << 58) / 8
                                 ? int64_t{1} << 58
                                 : 8 * o.max_pixels + (int64_t{64} << 20);
  ops_internal::BeginJpegDecode(&t->in, bytes, /*recover=*/false,
                                ops_internal::JpegWarnings::kFailUnlessHarmless, max_memory);
  t->tracker.base.max_scans = ops_internal::kMaxJpegScans;
  t->tracker.base.pub.progress_monitor = TrackScans;
  t->in.cinfo.progress = &t->tracker.base.pub;
  t->out.mem->max_memory_to_use = t->in.cinfo.mem->max_memory_to_use;
  j_decompress_ptr in = &t->in.cinfo;

  HeaderArgs header{in, o.copy_markers, 0};
  if (!JpegCall(&t->in.err, ReadHeader, &header)) return Fail(t->in.err, where);
  if (header.result != JPEG_HEADER_OK) {
    return Status::InvalidArgument(where + ": the data ends before the first scan (truncated)");
  }
  if (in->data_precision != 8) {
    return Status::InvalidArgument(where + ": " + std::to_string(in->data_precision) +
                                   "-bit JPEG (only 8-bit is supported)");
  }
  const int64_t width = in->image_width, height = in->image_height;
  if (width * height > o.max_pixels) {
    return Status::ResourceExhausted(where + ": the image is " + std::to_string(width) + "x" +
                                     std::to_string(height) + ", more than max_pixels (" +
                                     std::to_string(o.max_pixels) + ")");
  }
  // A header claiming more blocks than the bytes can hold is caught before
  // the coefficient arrays are allocated.
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckJpegBlocksFit(*in, bytes.size(), where));

  ReadArgs read{in, nullptr};
  if (!JpegCall(&t->in.err, ReadCoefficients, &read)) return Fail(t->in.err, where);
  if (read.coefficients == nullptr) {
    // libjpeg's decoder fails here too (unless recovering, when it makes up
    // the rest); a missing EOI alone counts, as libjpeg's bit reader wants
    // bytes past the last code.
    return Status::InvalidArgument(where + ": the data ends before the EOI marker (truncated)");
  }
  const uint32_t all = (uint32_t{1} << in->num_components) - 1;
  if ((t->tracker.seen & all) != all) {
    return Status::InvalidArgument(where + ": a component is never coded in any scan");
  }
  if (SmoothedWhenDecoded(*in)) {
    return Status::InvalidArgument(
        where +
        ": the progressive scans leave low-frequency coefficients incomplete (libjpeg smooths "
        "such blocks when decoding, which a re-encoded file cannot reproduce)");
  }

  RangeArgs range{in, read.coefficients};
  if (!JpegCall(&t->in.err, CheckRange, &range)) return Fail(t->in.err, where);

  ops_internal::InstallJpegMemoryDestination(&t->out, &t->dest,
                                             bytes.size() + bytes.size() / 8 + 4096);
  WriteArgs write{in, &t->out, read.coefficients, &o, 0};
  if (!JpegCall(&t->in.err, Write, &write)) return Fail(t->in.err, where);
  return std::string(reinterpret_cast<const char*>(t->dest.data), t->dest.size);
}

Result<bool> HasRowAlignedRestarts(std::string_view bytes, std::string_view name) {
  const std::string where = ops_internal::JpegWhere("has_row_aligned_restarts", name, bytes.size());
  // A clear error for anything that is not a JPEG with a complete header.
  SLUICE_RETURN_IF_ERROR(ops_internal::ReadJpegHeaderAt(bytes, where).status());
  // The decoder's own rule (ops/internal/jpeg_splice.h), so the answer is
  // exactly whether DecodeAndCropJpeg can read only a window's segments.
  return ops_internal::ParseJpegSegments(bytes).has_value();
}

}  // namespace sluice::ops
