/* libgd, loaded on first use. libgd pulls in some sixty shared libraries
 * (codecs, fontconfig, X11); linking it would make every sandbox start pay
 * for loading them, while only a read of an oversized image needs it.
 * Sandbox (cordon-agent) or host context. */
#pragma once

#include <gd.h>
#include <stdbool.h>

struct gd_api {
    gdImagePtr (*create_from_png)(int size, void *data);
    gdImagePtr (*create_from_jpeg)(int size, void *data);
    gdImagePtr (*create_from_gif)(int size, void *data);
    gdImagePtr (*create_from_webp)(int size, void *data);
    gdImagePtr (*create_true_color)(int sx, int sy);
    void (*copy_resampled)(gdImagePtr dst, gdImagePtr src, int dstX, int dstY, int srcX, int srcY,
                           int dstW, int dstH, int srcW, int srcH);
    void *(*png_ptr)(gdImagePtr im, int *size);
    void *(*jpeg_ptr)(gdImagePtr im, int *size, int quality);
    void (*destroy)(gdImagePtr im);
    void (*free)(void *m);
};

/* The loaded API, or NULL when libgd cannot be loaded (the caller then
 * reports that the image could not be resized). */
const struct gd_api *gd_api_get(void);
