/* Writes the JPEG inputs of the codec golden files that TensorFlow cannot
 * encode: CMYK and YCCK, and chroma subsamplings other than 4:2:0 and 4:4:4.
 * Built and run by make_codec_golden.py:
 *
 *   cc -O1 -o make_libjpeg_jpegs make_libjpeg_jpegs.c -ljpeg && ./make_libjpeg_jpegs OUT_DIR
 *
 * Writes, all quality 90:
 *   cmyk_adobe.jpg   24x16, 4 components, CMYK, Adobe APP14 marker (transform 0)
 *   cmyk_plain.jpg   the same without the Adobe marker
 *   ycck_adobe.jpg   24x16, YCCK (Adobe transform 2)
 *   rgb422.jpg       37x23 YCbCr 4:2:2 (luma 2x1)
 *   rgb440.jpg       37x23 YCbCr 4:4:0 (luma 1x2)
 *   rgb411.jpg       37x23 YCbCr 4:1:1 (luma 4x1)
 * Deterministic: the same libjpeg gives the same bytes. */
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>

static FILE* Open(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE* f = fopen(path, "wb");
  if (f == NULL) {
    perror(path);
    exit(1);
  }
  return f;
}

static void WriteCmyk(const char* dir, const char* name, J_COLOR_SPACE jpeg_space, int adobe) {
  enum { kWidth = 24, kHeight = 16 };
  FILE* f = Open(dir, name);
  struct jpeg_compress_struct cinfo;
  struct jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, f);
  cinfo.image_width = kWidth;
  cinfo.image_height = kHeight;
  cinfo.input_components = 4;
  cinfo.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  jpeg_set_colorspace(&cinfo, jpeg_space);
  cinfo.write_Adobe_marker = adobe ? TRUE : FALSE;
  jpeg_set_quality(&cinfo, 90, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  JSAMPLE row[kWidth * 4];
  while (cinfo.next_scanline < kHeight) {
    const int y = (int)cinfo.next_scanline;
    for (int x = 0; x < kWidth; ++x) {
      row[4 * x + 0] = (JSAMPLE)(x * 255 / (kWidth - 1));
      row[4 * x + 1] = (JSAMPLE)(y * 255 / (kHeight - 1));
      row[4 * x + 2] = (JSAMPLE)((x + y) * 255 / (kWidth + kHeight - 2));
      row[4 * x + 3] = (JSAMPLE)(((x * 7 + y * 13) % 64) + 96);
    }
    JSAMPROW rows[1] = {row};
    jpeg_write_scanlines(&cinfo, rows, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  fclose(f);
}

static void WriteSubsampled(const char* dir, const char* name, int h_samp, int v_samp) {
  enum { kWidth = 37, kHeight = 23 };
  FILE* f = Open(dir, name);
  struct jpeg_compress_struct cinfo;
  struct jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, f);
  cinfo.image_width = kWidth;
  cinfo.image_height = kHeight;
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 90, TRUE);
  cinfo.comp_info[0].h_samp_factor = h_samp;
  cinfo.comp_info[0].v_samp_factor = v_samp;
  jpeg_start_compress(&cinfo, TRUE);
  JSAMPLE row[kWidth * 3];
  while (cinfo.next_scanline < kHeight) {
    const int y = (int)cinfo.next_scanline;
    for (int x = 0; x < kWidth; ++x) {
      const int noise = (int)((((unsigned)x * 73856093u) ^ ((unsigned)y * 19349663u)) % 61u) - 30;
      const int v[3] = {x * 255 / (kWidth - 1), y * 255 / (kHeight - 1),
                        255 - x * 255 / (kWidth - 1)};
      for (int c = 0; c < 3; ++c) {
        const int s = v[c] + (c == 1 ? -noise : noise);
        row[3 * x + c] = (JSAMPLE)(s < 0 ? 0 : s > 255 ? 255 : s);
      }
    }
    JSAMPROW rows[1] = {row};
    jpeg_write_scanlines(&cinfo, rows, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  fclose(f);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  WriteCmyk(argv[1], "cmyk_adobe.jpg", JCS_CMYK, 1);
  WriteCmyk(argv[1], "cmyk_plain.jpg", JCS_CMYK, 0);
  WriteCmyk(argv[1], "ycck_adobe.jpg", JCS_YCCK, 1);
  WriteSubsampled(argv[1], "rgb422.jpg", 2, 1);
  WriteSubsampled(argv[1], "rgb440.jpg", 1, 2);
  WriteSubsampled(argv[1], "rgb411.jpg", 4, 1);
  return 0;
}
