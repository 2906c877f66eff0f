/* reshape.c: whether NumPy's reshape of an array is a view of it, and that view's strides, for compiled code
 * (the reshape and reshape_views intrinsics of ir.h). NumPy's rule (its _attempt_nocopy_reshape, C order): a
 * C-contiguous array (by NumPy's flag: axes of length 1 ignored, an empty array always) gives C strides; an
 * array of the new shape already keeps its strides; otherwise the axes of length 1 are dropped, the old and new
 * shapes are cut into runs of equal products, and each run of old axes must be one strided block
 * (stride[k] == shape[k+1] * stride[k+1]); the new axes of a run then take strides that walk that block. It
 * reads shapes and strides only, never the data, so the gpu backend's host code calls it on device arrays. */
#include "runtime.h"

#define MAX_DIMS 32 /* ir.h's IR_MAX_DIMS */

static bool c_contiguous(int64_t nd, const int64_t *shape, const int64_t *strides, int64_t itemsize)
{
    for (int64_t d = 0; d < nd; d++)
        if (shape[d] == 0) return true;
    int64_t want = itemsize;
    for (int64_t d = nd - 1; d >= 0; d--) {
        if (shape[d] != 1 && strides[d] != want) return false;
        want *= shape[d];
    }
    return true;
}

static void c_strides(int64_t nd, const int64_t *shape, int64_t itemsize, int64_t *strides)
{
    for (int64_t d = nd - 1; d >= 0; d--) {
        strides[d] = itemsize;
        itemsize *= shape[d];
    }
}

/* NumPy's _attempt_nocopy_reshape for C order: new_shape's product equals shape's and is not 0 */
static bool nocopy_strides(int64_t nd, const int64_t *shape, const int64_t *strides, int64_t itemsize,
                           int64_t new_nd, const int64_t *new_shape, int64_t *new_strides)
{
    int64_t od[MAX_DIMS], os[MAX_DIMS], ond = 0;
    for (int64_t d = 0; d < nd; d++)
        if (shape[d] != 1) {
            od[ond] = shape[d];
            os[ond++] = strides[d];
        }
    int64_t oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < new_nd && oi < ond) {
        int64_t np = new_shape[ni], op = od[oi];
        while (np != op) {
            if (np < op) np *= new_shape[nj++];
            else op *= od[oj++];
        }
        for (int64_t k = oi; k < oj - 1; k++)
            if (os[k] != od[k + 1] * os[k + 1]) return false;
        new_strides[nj - 1] = os[oj - 1];
        for (int64_t k = nj - 1; k > ni; k--) new_strides[k - 1] = new_strides[k] * new_shape[k];
        ni = nj++;
        oi = oj++;
    }
    int64_t last = ni >= 1 ? new_strides[ni - 1] : itemsize;
    for (int64_t k = ni; k < new_nd; k++) new_strides[k] = last; /* the new shape's trailing axes of length 1 */
    return true;
}

int32_t rt_reshape_view(int64_t nd, const int64_t *shape, const int64_t *strides, int64_t itemsize, int64_t new_nd,
                        const int64_t *new_shape, int64_t *new_strides, int32_t contiguous_only)
{
    int64_t size = 1, new_size = 1;
    for (int64_t d = 0; d < nd; d++) size *= shape[d];
    for (int64_t d = 0; d < new_nd; d++) {
        if (new_shape[d] < 0) return 0;
        new_size *= new_shape[d];
    }
    if (size != new_size) return 0;
    bool contiguous = c_contiguous(nd, shape, strides, itemsize);
    if (contiguous_only && !contiguous) return 0;
    bool same = new_nd == nd;
    for (int64_t d = 0; same && d < nd; d++) same = shape[d] == new_shape[d];
    if (same) {
        for (int64_t d = 0; d < nd; d++) new_strides[d] = strides[d];
        return 1;
    }
    if (contiguous) {
        c_strides(new_nd, new_shape, itemsize, new_strides);
        return 1;
    }
    return nocopy_strides(nd, shape, strides, itemsize, new_nd, new_shape, new_strides);
}
