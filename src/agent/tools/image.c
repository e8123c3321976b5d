/* Image sniffing and resizing for read (image.h). pi resizes with photon
 * (Lanczos3); cordon uses libgd's resampling, so resized bytes differ while
 * the rule (dimensions, format order, quality steps, note text) is pi's.
 * Sandbox or host context. */
#include "agent/tools/image.h"
#include "config.h"
#include "util/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#if CORDON_HAVE_GD
#include "agent/tools/gd-lazy.h"
#endif

#define IMAGE_MAX_DIMENSION 2000
#define IMAGE_MAX_BASE64    (4.5 * 1024 * 1024)
/* Larger files are not decoded at all (bounded memory). */
#define IMAGE_MAX_FILE (64 * 1024 * 1024)

const char *image_sniff_mime(const char *head, size_t len)
{
    const unsigned char *b = (const unsigned char *)head;
    if (len >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
        return "image/jpeg";
    /* A PNG signature not followed by a chunk header is text to file-type. */
    if (len >= 16 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0 && memcmp(b + 12, "IHDR", 4) == 0) {
        /* file-type reports an animated PNG (acTL before IDAT) as image/apng,
         * which pi does not treat as an image. */
        size_t pos = 8;
        while (pos + 8 <= len) {
            unsigned int chunk_len = (unsigned)b[pos] << 24 | (unsigned)b[pos + 1] << 16 |
                                     (unsigned)b[pos + 2] << 8 | b[pos + 3];
            if (memcmp(b + pos + 4, "acTL", 4) == 0)
                return NULL;
            if (memcmp(b + pos + 4, "IDAT", 4) == 0)
                break;
            pos += 12 + (size_t)chunk_len;
        }
        return "image/png";
    }
    if (len >= 3 && memcmp(b, "GIF", 3) == 0)
        return "image/gif";
    if (len >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
        return "image/webp";
    return NULL;
}

static char *base64_encode(const unsigned char *data, size_t len, size_t *out_len)
{
    static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = (len + 2) / 3 * 4;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)data[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)data[i + 1] << 8;
        if (i + 2 < len)
            v |= data[i + 2];
        out[o++] = table[(v >> 18) & 63];
        out[o++] = table[(v >> 12) & 63];
        out[o++] = i + 1 < len ? table[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? table[v & 63] : '=';
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

static int image_set(struct tool_result *res, const char *note, char *data, const char *mime)
{
    tool_result_text(res, note, NULL);
    if (data)
        json_array_append_new(res->content, json_pack("{s:s, s:s, s:s}", "type", "image", "data",
                                                      data, "mimeType", mime));
    return 0;
}

static int image_omitted(struct tool_result *res, const char *mime)
{
    char note[256];
    snprintf(note, sizeof(note),
             "Read image file [%s]\n[Image omitted: could not be resized below the inline image "
             "size limit.]",
             mime);
    return image_set(res, note, NULL, NULL);
}

#if CORDON_HAVE_GD
static gdImagePtr image_decode(const struct gd_api *gd, const char *mime, unsigned char *data,
                               size_t len)
{
    if (strcmp(mime, "image/png") == 0)
        return gd->create_from_png((int)len, data);
    if (strcmp(mime, "image/jpeg") == 0)
        return gd->create_from_jpeg((int)len, data);
    if (strcmp(mime, "image/gif") == 0)
        return gd->create_from_gif((int)len, data);
    return gd->create_from_webp((int)len, data);
}
#endif

int image_read_result(int fd, const struct stat *st, const char *mime, struct tool_result *res)
{
    if (st->st_size > IMAGE_MAX_FILE)
        return image_omitted(res, mime);
    size_t len = (size_t)st->st_size;
    _cleanup_free_ unsigned char *data = malloc(len ? len : 1);
    if (!data)
        return tool_result_error(res, "out of memory");
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, data + got, len - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    len = got;
    size_t b64_len;
    _cleanup_free_ char *b64 = base64_encode(data, len, &b64_len);
    if (!b64)
        return tool_result_error(res, "out of memory");
    char note[512];
#if CORDON_HAVE_GD
    const struct gd_api *gd = gd_api_get();
    gdImagePtr im = gd ? image_decode(gd, mime, data, len) : NULL;
    if (!im)
        return image_omitted(res, mime);
    int width = gdImageSX(im), height = gdImageSY(im);
    if (width <= IMAGE_MAX_DIMENSION && height <= IMAGE_MAX_DIMENSION &&
        (double)b64_len < IMAGE_MAX_BASE64) {
        gd->destroy(im);
        snprintf(note, sizeof(note), "Read image file [%s]", mime);
        return image_set(res, note, b64, mime);
    }
    int tw = width, th = height;
    if (tw > IMAGE_MAX_DIMENSION) {
        th = (int)((double)th * IMAGE_MAX_DIMENSION / tw + 0.5);
        tw = IMAGE_MAX_DIMENSION;
    }
    if (th > IMAGE_MAX_DIMENSION) {
        tw = (int)((double)tw * IMAGE_MAX_DIMENSION / th + 0.5);
        th = IMAGE_MAX_DIMENSION;
    }
    static const int qualities[] = {80, 85, 70, 55, 40};
    for (;;) {
        gdImagePtr scaled = gd->create_true_color(tw, th);
        if (!scaled)
            break;
        gd->copy_resampled(scaled, im, 0, 0, 0, 0, tw, th, width, height);
        for (int c = -1; c < (int)(sizeof(qualities) / sizeof(qualities[0])); c++) {
            int size = 0;
            void *enc =
                c < 0 ? gd->png_ptr(scaled, &size) : gd->jpeg_ptr(scaled, &size, qualities[c]);
            if (!enc)
                continue;
            size_t out_len;
            _cleanup_free_ char *out = base64_encode(enc, (size_t)size, &out_len);
            gd->free(enc);
            if (out && (double)out_len < IMAGE_MAX_BASE64) {
                const char *out_mime = c < 0 ? "image/png" : "image/jpeg";
                snprintf(note, sizeof(note),
                         "Read image file [%s]\n[Image: original %dx%d, displayed at %dx%d. "
                         "Multiply coordinates by %.2f to map to original image.]",
                         out_mime, width, height, tw, th, (double)width / tw);
                gd->destroy(scaled);
                gd->destroy(im);
                return image_set(res, note, out, out_mime);
            }
        }
        gd->destroy(scaled);
        if (tw == 1 && th == 1)
            break;
        int nw = tw == 1 ? 1 : (tw * 3 / 4 > 1 ? tw * 3 / 4 : 1);
        int nh = th == 1 ? 1 : (th * 3 / 4 > 1 ? th * 3 / 4 : 1);
        if (nw == tw && nh == th)
            break;
        tw = nw;
        th = nh;
    }
    gd->destroy(im);
    return image_omitted(res, mime);
#else
    if ((double)b64_len >= IMAGE_MAX_BASE64)
        return image_omitted(res, mime);
    snprintf(note, sizeof(note), "Read image file [%s]", mime);
    return image_set(res, note, b64, mime);
#endif
}
