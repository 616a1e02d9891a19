// libjpeg glue shared by the JPEG decoder, encoder and transcoder: an error
// manager that never lets libjpeg print or exit(), a memory source with
// TensorFlow's truncation semantics, a growing memory destination, a
// progressive-scan limit, and the per-thread decompressor.
//
// libjpeg reports fatal errors by calling error_exit(), which must not
// return. Ours longjmp()s back into JpegCall(), so every libjpeg call that can
// fail runs inside JpegCall(). The function it runs must hold no C++ object
// with a destructor (longjmp would skip it): only plain pointers and ints.
#ifndef SLUICE_OPS_INTERNAL_JPEG_LIB_H_
#define SLUICE_OPS_INTERNAL_JPEG_LIB_H_

// jpeglib.h uses FILE and size_t without including their headers.
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <jpeglib.h>

#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/ops/jpeg.h"

namespace sluice::ops_internal {

// Most progressive scans a decode accepts (TurboJPEG's TJFLAG_LIMITSCANS
// uses the same number); more is a denial-of-service pattern, not a photo.
inline constexpr int kMaxJpegScans = 500;

// What a decode makes of libjpeg's warnings (recoverable corruption).
enum class JpegWarnings {
  kIgnore,              // TF's behavior: they are counted, nothing more
  kFailUnlessHarmless,  // an error unless HarmlessJpegWarning()
  kFail,                // every warning is an error
};

// libjpeg warnings that leave nothing made up: bytes between markers that
// belong to no segment, an unknown JFIF version, an unknown Adobe
// transform (the color space guess stays the same), sequential SOS
// parameters outside the standard's (ignored by every decoder), a malformed
// ICC marker. Every other warning means the decoder had to invent
// coefficients (a bad Huffman or arithmetic code, a segment that ends
// early, a lost restart marker, an inconsistent progression).
bool HarmlessJpegWarning(int msg_code);

struct JpegErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  JpegWarnings warnings = JpegWarnings::kIgnore;
  int first_warning = 0;  // msg_code of the first warning (0: none yet)
  int error_code = 0;     // msg_code of the error (-1: ours, see message)
  char message[JMSG_LENGTH_MAX] = {};
};

// Points cinfo->err at `err` and resets it.
void InstallJpegErrorManager(j_common_ptr cinfo, JpegErrorManager* err);
// Raises a fatal error with our own message (cinfo->err must be ours).
[[noreturn]] void JpegFail(j_common_ptr cinfo, const char* message);

// Runs fn(arg); false if libjpeg raised an error, whose text is then in
// err->message. See the file comment for what fn may hold.
bool JpegCall(JpegErrorManager* err, void (*fn)(void*), void* arg);

// A source over bytes in memory. Like TensorFlow's: at the end of the data
// it suspends (libjpeg then returns "no rows" or "suspended"), or, with
// `recover`, inserts one fake EOI marker with a warning so that libjpeg
// decodes the rest as blank.
struct JpegMemorySource {
  jpeg_source_mgr pub;
  const JOCTET* data = nullptr;
  size_t size = 0;
  bool recover = false;
  bool suspended = false;  // the decoder asked for bytes past the end
};

// A destination writing into a growing malloc() buffer, for the encoder and
// the restart-marker transcoder. The caller owns `data` whatever happens
// and frees it with std::free() (libjpeg's jpeg_mem_dest() leaves a stale
// pointer behind on errors).
struct JpegMemoryDestination {
  jpeg_destination_mgr pub;
  JOCTET* data = nullptr;
  size_t capacity = 0;  // of `data`; doubles when full
  size_t size = 0;      // bytes written, once compression finished
};

// Points cinfo->dest at `dest`, whose buffer starts at `initial_capacity`
// (> 0) bytes when compression starts.
void InstallJpegMemoryDestination(j_compress_ptr cinfo, JpegMemoryDestination* dest,
                                  size_t initial_capacity);

struct JpegProgress {
  jpeg_progress_mgr pub;
  int max_scans = kMaxJpegScans;
};

// One libjpeg decompressor with its managers. Lives on the heap (libjpeg
// keeps pointers into it) and is reused, image after image, by one thread;
// the libjpeg object inside is destroyed after any image that left tables
// in it (see EndJpegDecode) and made again for the next (`created`).
struct JpegDecompressor {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  JpegMemorySource src;
  JpegProgress progress;
  bool created = false;

  JpegDecompressor() = default;
  JpegDecompressor(const JpegDecompressor&) = delete;
  JpegDecompressor& operator=(const JpegDecompressor&) = delete;
  ~JpegDecompressor();
};

// The calling thread's decompressor, created on first use (and again after
// EndJpegDecode destroyed its libjpeg object) and destroyed at thread exit.
// ResourceExhausted if libjpeg cannot allocate its state.
Result<JpegDecompressor*> ThreadJpegDecompressor();

// Readies `d` for one image: resets the error manager (`warnings`),
// installs the source over `bytes`, the scan limit and a memory limit for
// libjpeg's own buffers. Pair with EndJpegDecode() (any state is fine),
// which leaves nothing of the image behind: the next image decodes as with
// a new decompressor.
void BeginJpegDecode(JpegDecompressor* d, std::string_view bytes, bool recover,
                     JpegWarnings warnings, int64_t max_memory);
void EndJpegDecode(JpegDecompressor* d);

// "<op>: <name or 'N-byte input'>" for messages.
std::string JpegWhere(std::string_view op, std::string_view name, size_t size);
// ReadJpegHeader with errors prefixed by `where` (JpegWhere of the calling
// op), for ops that check a header before their own work.
Result<ops::JpegHeader> ReadJpegHeaderAt(std::string_view bytes, const std::string& where);
// InvalidArgument if the header read into `cinfo` claims more 8x8 blocks
// than `size` bytes of Huffman-coded data can hold: every block of every
// component costs at least one bit (its DC code, in the first DC scan if
// progressive), so such a header is a lie (a file cut short, or a SOF
// edited to claim a larger image), caught before anything image-sized is
// allocated. Arithmetic-coded files (which can spend less than a bit on a
// block) always pass. REQUIRES: jpeg_read_header succeeded on cinfo.
Status CheckJpegBlocksFit(const jpeg_decompress_struct& cinfo, size_t size, std::string_view where);
// The Status for a failed JpegCall: ResourceExhausted for memory and size
// limits, InvalidArgument otherwise (corrupt, truncated or unsupported data).
Status JpegError(const JpegErrorManager& err, std::string_view where);

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_JPEG_LIB_H_
