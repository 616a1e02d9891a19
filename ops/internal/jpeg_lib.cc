#include "sluice/ops/internal/jpeg_lib.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include <jerror.h>

namespace sluice::ops_internal {
namespace {

JpegErrorManager* ErrorManagerOf(j_common_ptr cinfo) {
  // pub is the first member, as libjpeg's own examples do it.
  return reinterpret_cast<JpegErrorManager*>(cinfo->err);
}

void ErrorExit(j_common_ptr cinfo) {
  JpegErrorManager* err = ErrorManagerOf(cinfo);
  err->error_code = err->pub.msg_code;
  (*err->pub.format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// level < 0: a warning (recoverable corruption); level >= 0: trace output.
void EmitMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  JpegErrorManager* err = ErrorManagerOf(cinfo);
  ++err->pub.num_warnings;
  if (err->first_warning == 0) err->first_warning = err->pub.msg_code;
  if (err->warnings == JpegWarnings::kFail || (err->warnings == JpegWarnings::kFailUnlessHarmless &&
                                               !HarmlessJpegWarning(err->pub.msg_code))) {
    ErrorExit(cinfo);
  }
}

// libjpeg's default prints to stderr; messages go into the Status instead.
void OutputMessage(j_common_ptr) {}

// --- Memory source -----------------------------------------------------------

const JOCTET kFakeEoi[2] = {0xFF, JPEG_EOI};

JpegMemorySource* SourceOf(j_decompress_ptr cinfo) {
  return reinterpret_cast<JpegMemorySource*>(cinfo->src);
}

void InitSource(j_decompress_ptr cinfo) {
  JpegMemorySource* src = SourceOf(cinfo);
  src->pub.next_input_byte = src->data;
  src->pub.bytes_in_buffer = src->size;
}

boolean FillInputBuffer(j_decompress_ptr cinfo) {
  JpegMemorySource* src = SourceOf(cinfo);
  if (!src->recover) {
    // Suspend: libjpeg returns to the caller with what it could decode.
    src->suspended = true;
    return FALSE;
  }
  WARNMS(cinfo, JWRN_JPEG_EOF);
  src->pub.next_input_byte = kFakeEoi;
  src->pub.bytes_in_buffer = sizeof(kFakeEoi);
  return TRUE;
}

void SkipInputData(j_decompress_ptr cinfo, long num_bytes) {
  JpegMemorySource* src = SourceOf(cinfo);
  if (num_bytes <= 0) return;
  if (static_cast<unsigned long>(num_bytes) <= src->pub.bytes_in_buffer) {
    src->pub.next_input_byte += num_bytes;
    src->pub.bytes_in_buffer -= static_cast<size_t>(num_bytes);
    return;
  }
  // Skipping past the end: the next read finds no data.
  src->pub.next_input_byte += src->pub.bytes_in_buffer;
  src->pub.bytes_in_buffer = 0;
  if (src->recover) {
    (void)FillInputBuffer(cinfo);
  } else {
    src->suspended = true;
  }
}

void TermSource(j_decompress_ptr) {}

// --- Memory destination ------------------------------------------------------

JpegMemoryDestination* DestinationOf(j_compress_ptr cinfo) {
  return reinterpret_cast<JpegMemoryDestination*>(cinfo->dest);
}

void InitDestination(j_compress_ptr cinfo) {
  JpegMemoryDestination* dest = DestinationOf(cinfo);
  dest->data = static_cast<JOCTET*>(std::malloc(dest->capacity));
  if (dest->data == nullptr)
    JpegFail(reinterpret_cast<j_common_ptr>(cinfo), "cannot allocate the output buffer");
  dest->pub.next_output_byte = dest->data;
  dest->pub.free_in_buffer = dest->capacity;
}

boolean EmptyOutputBuffer(j_compress_ptr cinfo) {
  JpegMemoryDestination* dest = DestinationOf(cinfo);
  // Called when the buffer is full, whatever free_in_buffer says.
  const size_t grown = dest->capacity * 2;
  auto* bigger = static_cast<JOCTET*>(std::realloc(dest->data, grown));
  if (bigger == nullptr)
    JpegFail(reinterpret_cast<j_common_ptr>(cinfo), "cannot grow the output buffer");
  dest->data = bigger;
  dest->pub.next_output_byte = bigger + dest->capacity;
  dest->pub.free_in_buffer = grown - dest->capacity;
  dest->capacity = grown;
  return TRUE;
}

void TermDestination(j_compress_ptr cinfo) {
  JpegMemoryDestination* dest = DestinationOf(cinfo);
  dest->size = dest->capacity - dest->pub.free_in_buffer;
}

void ProgressMonitor(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  const auto* dinfo = reinterpret_cast<j_decompress_ptr>(cinfo);
  const auto* progress = reinterpret_cast<const JpegProgress*>(cinfo->progress);
  if (dinfo->input_scan_number > progress->max_scans) {
    JpegFail(cinfo, "too many progressive scans (the limit is 500)");
  }
}

bool HoldsTables(const jpeg_decompress_struct& cinfo) {
  for (const JQUANT_TBL* t : cinfo.quant_tbl_ptrs) {
    if (t != nullptr) return true;
  }
  for (int i = 0; i < NUM_HUFF_TBLS; ++i) {
    if (cinfo.dc_huff_tbl_ptrs[i] != nullptr || cinfo.ac_huff_tbl_ptrs[i] != nullptr) return true;
  }
  return false;
}

struct CreateArgs {
  j_decompress_ptr cinfo;
};

void Create(void* p) { jpeg_create_decompress(static_cast<CreateArgs*>(p)->cinfo); }

}  // namespace

bool HarmlessJpegWarning(int msg_code) {
  switch (msg_code) {
    case JWRN_EXTRANEOUS_DATA:
    case JWRN_JFIF_MAJOR:
    case JWRN_ADOBE_XFORM:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_ICC: return true;
    default: return false;
  }
}

void InstallJpegErrorManager(j_common_ptr cinfo, JpegErrorManager* err) {
  cinfo->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = ErrorExit;
  err->pub.emit_message = EmitMessage;
  err->pub.output_message = OutputMessage;
  err->warnings = JpegWarnings::kIgnore;
  err->first_warning = 0;
  err->error_code = 0;
  err->message[0] = '\0';
}

void JpegFail(j_common_ptr cinfo, const char* message) {
  JpegErrorManager* err = ErrorManagerOf(cinfo);
  err->error_code = -1;
  std::strncpy(err->message, message, sizeof(err->message) - 1);
  err->message[sizeof(err->message) - 1] = '\0';
  std::longjmp(err->jump, 1);
}

bool JpegCall(JpegErrorManager* err, void (*fn)(void*), void* arg) {
  if (setjmp(err->jump) != 0) return false;
  fn(arg);
  return true;
}

void InstallJpegMemoryDestination(j_compress_ptr cinfo, JpegMemoryDestination* dest,
                                  size_t initial_capacity) {
  dest->data = nullptr;
  dest->capacity = initial_capacity > 0 ? initial_capacity : 1;
  dest->size = 0;
  dest->pub.init_destination = InitDestination;
  dest->pub.empty_output_buffer = EmptyOutputBuffer;
  dest->pub.term_destination = TermDestination;
  cinfo->dest = &dest->pub;
}

JpegDecompressor::~JpegDecompressor() {
  if (created) jpeg_destroy_decompress(&cinfo);
}

Result<JpegDecompressor*> ThreadJpegDecompressor() {
  thread_local std::unique_ptr<JpegDecompressor> decompressor;
  if (!decompressor) decompressor = std::make_unique<JpegDecompressor>();
  JpegDecompressor* d = decompressor.get();
  if (d->created) return d;
  InstallJpegErrorManager(reinterpret_cast<j_common_ptr>(&d->cinfo), &d->err);
  CreateArgs args{&d->cinfo};
  if (!JpegCall(&d->err, Create, &args)) {
    return Status::ResourceExhausted(std::string("jpeg: cannot create a libjpeg decompressor: ") +
                                     d->err.message);
  }
  d->created = true;
  return d;
}

void BeginJpegDecode(JpegDecompressor* d, std::string_view bytes, bool recover,
                     JpegWarnings warnings, int64_t max_memory) {
  InstallJpegErrorManager(reinterpret_cast<j_common_ptr>(&d->cinfo), &d->err);
  d->err.warnings = warnings;
  JpegMemorySource& src = d->src;
  src.pub.init_source = InitSource;
  src.pub.fill_input_buffer = FillInputBuffer;
  src.pub.skip_input_data = SkipInputData;
  src.pub.resync_to_restart = jpeg_resync_to_restart;
  src.pub.term_source = TermSource;
  src.data = reinterpret_cast<const JOCTET*>(bytes.data());
  src.size = bytes.size();
  src.pub.next_input_byte = src.data;
  src.pub.bytes_in_buffer = src.size;
  src.recover = recover;
  src.suspended = false;
  d->cinfo.src = &src.pub;
  d->progress.pub.progress_monitor = ProgressMonitor;
  d->progress.max_scans = kMaxJpegScans;
  d->cinfo.progress = &d->progress.pub;
  const int64_t cap = std::numeric_limits<long>::max();
  d->cinfo.mem->max_memory_to_use = static_cast<long>(max_memory < cap ? max_memory : cap);
}

void EndJpegDecode(JpegDecompressor* d) {
  // Frees the image's memory and returns to the start state; never fails.
  jpeg_abort_decompress(&d->cinfo);
  // libjpeg keeps quantization and Huffman tables across images (for
  // "abbreviated" streams that omit them). A later file using a table it
  // never defines would then decode with the previous file's table, so the
  // same bytes could decode differently (or warn) depending on what the
  // thread decoded before: jpeg_decode_fuzz found a strict crop failing on
  // a table left behind by the full decode just before it. Starting each
  // image from a fresh decompressor, as TensorFlow does, makes every decode
  // depend on its bytes alone; it costs about 0.1 us.
  if (HoldsTables(d->cinfo)) {
    jpeg_destroy_decompress(&d->cinfo);
    d->created = false;
  }
}

std::string JpegWhere(std::string_view op, std::string_view name, size_t size) {
  std::string where(op);
  where += ": ";
  if (name.empty()) {
    where += "<" + std::to_string(size) + "-byte input>";
  } else {
    where += name;
  }
  return where;
}

Status CheckJpegBlocksFit(const jpeg_decompress_struct& cinfo, size_t size,
                          std::string_view where) {
  if (cinfo.arith_code) return Status::OK();
  int64_t blocks = 0;
  for (int ci = 0; ci < cinfo.num_components; ++ci) {
    blocks += int64_t{cinfo.comp_info[ci].width_in_blocks} * cinfo.comp_info[ci].height_in_blocks;
  }
  if (blocks <= 8 * static_cast<int64_t>(size)) return Status::OK();
  return Status::InvalidArgument(std::string(where) + ": the header claims a " +
                                 std::to_string(cinfo.image_width) + "x" +
                                 std::to_string(cinfo.image_height) + " image, more than " +
                                 std::to_string(size) + " bytes can hold (truncated or corrupt)");
}

Status JpegError(const JpegErrorManager& err, std::string_view where) {
  std::string msg = std::string(where) + ": ";
  switch (err.error_code) {
    case JERR_BAD_PRECISION:
      msg += std::string(err.message) + " (only 8-bit JPEG is supported; 12-bit is not)";
      return Status::InvalidArgument(msg);
    case JERR_OUT_OF_MEMORY:
    case JERR_NO_BACKING_STORE:
      msg += std::string("libjpeg needs more memory than allowed for this image (") + err.message +
             ")";
      return Status::ResourceExhausted(msg);
    case JERR_IMAGE_TOO_BIG:
    case JERR_WIDTH_OVERFLOW: return Status::ResourceExhausted(msg + err.message);
    default: return Status::InvalidArgument(msg + err.message);
  }
}

}  // namespace sluice::ops_internal
