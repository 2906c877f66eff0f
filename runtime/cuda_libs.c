/* cuda_libs.c: where a CUDA toolkit library that lorikeet dlopens (NVRTC, cuBLAS) is looked for, the same way for
 * each: the file or folder its environment variable names, then each of its versioned names on the loader's path,
 * then in $CUDA_PATH/lib64 and /usr/local/cuda/lib64 (a toolkit installed where the loader does not look). The
 * driver, libcuda.so.1, comes with the display driver and is on the loader's path: gpu_driver.c opens it by name. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpu_internal.h"

static void *open_lib(const char *file, char *path, size_t size)
{
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (h) snprintf(path, size, "%s", file);
    return h;
}

void *gpu_open_in_dir(const GpuLibrary *lib, const char *dir, char *path, size_t size)
{
    char file[1024];
    for (int i = 0; lib->names[i]; i++) {
        snprintf(file, sizeof file, "%s/%s", dir, lib->names[i]);
        void *h = open_lib(file, path, size);
        if (h) return h;
    }
    if (!lib->unversioned) return NULL;
    snprintf(file, sizeof file, "%s/%s", dir, lib->unversioned);
    return open_lib(file, path, size);
}

void *gpu_find_library(const GpuLibrary *lib, char *path, size_t size)
{
    const char *env = getenv(lib->env);
    if (env && *env) {
        void *h = open_lib(env, path, size);
        if (!h) h = gpu_open_in_dir(lib, env, path, size);
        if (h || lib->env_only) return h;
    }
    for (int i = 0; lib->names[i]; i++) {
        void *h = open_lib(lib->names[i], path, size);
        if (h) return h;
    }
    const char *cuda_path = getenv("CUDA_PATH");
    if (cuda_path && *cuda_path) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/lib64", cuda_path);
        void *h = gpu_open_in_dir(lib, dir, path, size);
        if (h) return h;
    }
    return gpu_open_in_dir(lib, "/usr/local/cuda/lib64", path, size);
}
