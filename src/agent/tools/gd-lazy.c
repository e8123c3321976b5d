/* Lazy binding of libgd (gd-lazy.h). Sandbox or host context. */
#include "agent/tools/gd-lazy.h"

#include <dlfcn.h>
#include <stddef.h>

const struct gd_api *gd_api_get(void)
{
    static struct gd_api api;
    static int state; /* 0: not tried, 1: loaded, -1: unavailable */
    if (state)
        return state > 0 ? &api : NULL;
    state = -1;
    void *lib = dlopen("libgd.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return NULL;
    static const struct {
        const char *name;
        size_t offset;
    } symbols[] = {
        {"gdImageCreateFromPngPtr", offsetof(struct gd_api, create_from_png)},
        {"gdImageCreateFromJpegPtr", offsetof(struct gd_api, create_from_jpeg)},
        {"gdImageCreateFromGifPtr", offsetof(struct gd_api, create_from_gif)},
        {"gdImageCreateFromWebpPtr", offsetof(struct gd_api, create_from_webp)},
        {"gdImageCreateTrueColor", offsetof(struct gd_api, create_true_color)},
        {"gdImageCopyResampled", offsetof(struct gd_api, copy_resampled)},
        {"gdImagePngPtr", offsetof(struct gd_api, png_ptr)},
        {"gdImageJpegPtr", offsetof(struct gd_api, jpeg_ptr)},
        {"gdImageDestroy", offsetof(struct gd_api, destroy)},
        {"gdFree", offsetof(struct gd_api, free)},
    };
    for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
        void *sym = dlsym(lib, symbols[i].name);
        if (!sym)
            return NULL;
        *(void **)((char *)&api + symbols[i].offset) = sym;
    }
    state = 1;
    return &api;
}
