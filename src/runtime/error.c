/*
** error.c -- raising errors from inside a task (device runtime, freestanding).
**
** Many threads may fail at once; the first one to move *ctx->error away from
** 0 owns error_info, so the host reports one coherent failure.
*/
#include "context.h"

static int claim(rt_context *ctx, int32_t code) {
  int32_t expected = RT_ERR_OK;
  return __atomic_compare_exchange_n(ctx->error, &expected, code, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST);
}

void rt_raise_index_error(rt_context *ctx, int32_t snode, int32_t axis, int64_t index,
                          int32_t line) {
  if (!claim(ctx, RT_ERR_INDEX)) return;
  ctx->error_info[0] = snode;
  ctx->error_info[1] = axis;
  ctx->error_info[2] = index;
  ctx->error_info[3] = line;
}

/* Debug builds only: a snode_append found its dynamic list full (the value
** was dropped). info: [0] the dynamic SNode, [3] the source line. */
void rt_raise_append_error(rt_context *ctx, int32_t snode, int32_t line) {
  if (!claim(ctx, RT_ERR_APPEND)) return;
  ctx->error_info[0] = snode;
  ctx->error_info[1] = 0;
  ctx->error_info[2] = 0;
  ctx->error_info[3] = line;
}

/* Debug builds only: an ndarray index out of range. info: [0] the kernel
** argument holding the array's address, [1] the axis, [2] the index, [3] the line. */
void rt_raise_ndarray_error(rt_context *ctx, int32_t arg, int32_t axis, int64_t index, int32_t line) {
  if (!claim(ctx, RT_ERR_NDINDEX)) return;
  ctx->error_info[0] = arg;
  ctx->error_info[1] = axis;
  ctx->error_info[2] = index;
  ctx->error_info[3] = line;
}

/* Debug builds only: lt.assert found its condition false. info: [0] the
** message's number in the kernel's string table, [3] the line. */
void rt_raise_assert(rt_context *ctx, int32_t message, int32_t line) {
  if (!claim(ctx, RT_ERR_ASSERT)) return;
  ctx->error_info[0] = message;
  ctx->error_info[1] = 0;
  ctx->error_info[2] = 0;
  ctx->error_info[3] = line;
}
