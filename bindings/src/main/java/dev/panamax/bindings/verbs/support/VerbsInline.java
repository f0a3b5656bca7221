package dev.panamax.bindings.verbs.support;

import dev.panamax.bindings.verbs.ibv_context;
import dev.panamax.bindings.verbs.ibv_context_ops;
import dev.panamax.bindings.verbs.ibv_cq;
import dev.panamax.bindings.verbs.ibv_port_attr;
import dev.panamax.bindings.verbs.ibv_qp;
import dev.panamax.bindings.verbs.verbs_context;
import dev.panamax.bindings.verbs.verbs_h;

import java.lang.foreign.MemorySegment;

/**
 * The static inline functions of {@code infiniband/verbs.h} that Panamax uses, which jextract cannot
 * generate because libibverbs exports no symbol for them. Each method does what the quoted C does, through
 * the function pointers the provider installed in {@code struct ibv_context_ops} ({@code context->ops}) or in
 * the extended {@code struct verbs_context}.
 *
 * <p>Like the C, none of these touch errno: the provider functions return an error number (or, for
 * {@code poll_cq}, a negative value) directly.
 *
 * <p>Pointers may be passed as zero-length segments (as returned by the generated functions): each method
 * reinterprets them to the size of the struct it reads.
 */
public final class VerbsInline {
    private VerbsInline() {
    }

    /**
     * <pre>{@code
     * static inline int ibv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
     *                                 struct ibv_send_wr **bad_wr)
     * {
     *         return qp->context->ops.post_send(qp, wr, bad_wr);
     * }
     * }</pre>
     */
    public static int ibv_post_send(MemorySegment qp, MemorySegment wr, MemorySegment bad_wr) {
        MemorySegment ops = ops(ibv_qp.context(qp.reinterpret(ibv_qp.sizeof())));
        return ibv_context_ops.post_send.invoke(ibv_context_ops.post_send(ops), qp, wr, bad_wr);
    }

    /**
     * <pre>{@code
     * static inline int ibv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
     *                                 struct ibv_recv_wr **bad_wr)
     * {
     *         return qp->context->ops.post_recv(qp, wr, bad_wr);
     * }
     * }</pre>
     */
    public static int ibv_post_recv(MemorySegment qp, MemorySegment wr, MemorySegment bad_wr) {
        MemorySegment ops = ops(ibv_qp.context(qp.reinterpret(ibv_qp.sizeof())));
        return ibv_context_ops.post_recv.invoke(ibv_context_ops.post_recv(ops), qp, wr, bad_wr);
    }

    /**
     * <pre>{@code
     * static inline int ibv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
     * {
     *         return cq->context->ops.poll_cq(cq, num_entries, wc);
     * }
     * }</pre>
     */
    public static int ibv_poll_cq(MemorySegment cq, int num_entries, MemorySegment wc) {
        MemorySegment ops = ops(ibv_cq.context(cq.reinterpret(ibv_cq.sizeof())));
        return ibv_context_ops.poll_cq.invoke(ibv_context_ops.poll_cq(ops), cq, num_entries, wc);
    }

    /**
     * <pre>{@code
     * static inline int ibv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
     * {
     *         return cq->context->ops.req_notify_cq(cq, solicited_only);
     * }
     * }</pre>
     */
    public static int ibv_req_notify_cq(MemorySegment cq, int solicited_only) {
        MemorySegment ops = ops(ibv_cq.context(cq.reinterpret(ibv_cq.sizeof())));
        return ibv_context_ops.req_notify_cq.invoke(ibv_context_ops.req_notify_cq(ops), cq, solicited_only);
    }

    /**
     * The {@code ibv_query_port} of the header, a macro over a static inline function (the exported
     * {@code ibv_query_port} fills only the older, shorter {@code struct _compat_ibv_port_attr}):
     * <pre>{@code
     * static inline int ___ibv_query_port(struct ibv_context *context,
     *                                     uint8_t port_num,
     *                                     struct ibv_port_attr *port_attr)
     * {
     *         struct verbs_context *vctx = verbs_get_ctx_op(context, query_port);
     *
     *         if (!vctx) {
     *                 int rc;
     *
     *                 memset(port_attr, 0, sizeof(*port_attr));
     *
     *                 rc = ibv_query_port(context, port_num,
     *                                     (struct _compat_ibv_port_attr *)port_attr);
     *                 return rc;
     *         }
     *
     *         return vctx->query_port(context, port_num, port_attr,
     *                                 sizeof(*port_attr));
     * }
     *
     * #define ibv_query_port(context, port_num, port_attr) \
     *         ___ibv_query_port(context, port_num, port_attr)
     * }</pre>
     *
     * @param port_attr at least {@code ibv_port_attr.sizeof()} bytes
     */
    public static int ibv_query_port(MemorySegment context, byte port_num, MemorySegment port_attr) {
        MemorySegment vctx = verbs_get_ctx_op_query_port(context);
        if (vctx == null) {
            port_attr.asSlice(0, ibv_port_attr.sizeof()).fill((byte) 0);
            return verbs_h.ibv_query_port(context, port_num, port_attr);
        }
        return verbs_context.query_port.invoke(verbs_context.query_port(vctx), context, port_num, port_attr,
                ibv_port_attr.sizeof());
    }

    /**
     * <pre>{@code
     * static inline struct verbs_context *verbs_get_ctx(struct ibv_context *ctx)
     * {
     *         if (ctx->abi_compat != __VERBS_ABI_IS_EXTENDED)      // ((void *)UINTPTR_MAX)
     *                 return NULL;
     *
     *         // open code container_of to not pollute the global namespace
     *         return (struct verbs_context *)(((uint8_t *)ctx) -
     *                                         offsetof(struct verbs_context,
     *                                                  context));
     * }
     * }</pre>
     *
     * @return the extended context, or {@code null}
     */
    public static MemorySegment verbs_get_ctx(MemorySegment ctx) {
        MemorySegment c = ctx.reinterpret(ibv_context.sizeof());
        if (ibv_context.abi_compat(c).address() != -1L) { // UINTPTR_MAX
            return null;
        }
        long address = ctx.address() - verbs_context.context$offset();
        return MemorySegment.ofAddress(address).reinterpret(verbs_context.sizeof());
    }

    /**
     * {@code verbs_get_ctx_op(ctx, query_port)}:
     * <pre>{@code
     * #define verbs_get_ctx_op(ctx, op) ({ \
     *         struct verbs_context *__vctx = verbs_get_ctx(ctx); \
     *         (!__vctx || (__vctx->sz < sizeof(*__vctx) - offsetof(struct verbs_context, op)) || \
     *          !__vctx->op) ? NULL : __vctx; })
     * }</pre>
     *
     * @return the extended context, or {@code null} when the provider has no {@code query_port}
     */
    public static MemorySegment verbs_get_ctx_op_query_port(MemorySegment ctx) {
        MemorySegment vctx = verbs_get_ctx(ctx);
        if (vctx == null
                || verbs_context.sz(vctx) < verbs_context.sizeof() - verbs_context.query_port$offset()
                || verbs_context.query_port(vctx).address() == 0L) {
            return null;
        }
        return vctx;
    }

    private static MemorySegment ops(MemorySegment context) {
        return ibv_context.ops(context.reinterpret(ibv_context.sizeof()));
    }
}
