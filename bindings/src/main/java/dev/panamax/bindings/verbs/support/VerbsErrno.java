package dev.panamax.bindings.verbs.support;

import dev.panamax.bindings.Errno;
import dev.panamax.bindings.verbs.verbs_h;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * libibverbs calls that report failure through errno, with errno captured per call.
 *
 * <p>These functions return {@code NULL} (or {@code -1}) and set errno; the generated methods in
 * {@link verbs_h} do not capture it, and by the time Java code could call {@code errno} it may have been
 * overwritten. Each method here takes a capture segment from {@link Errno#allocate} as its first argument
 * and leaves the errno of that very call in it; read it with {@link Errno#errno(MemorySegment)}.
 * The downcall handles are created on first use (which loads libibverbs).
 */
public final class VerbsErrno {
    private VerbsErrno() {
    }

    private static MethodHandle capturing(MemorySegment address, FunctionDescriptor descriptor) {
        return Linker.nativeLinker().downcallHandle(address, descriptor, Errno.CAPTURE);
    }

    private static RuntimeException unexpected(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    /** {@code struct ibv_device **ibv_get_device_list(int *num_devices);} NULL and errno on failure. */
    public static MemorySegment ibv_get_device_list(MemorySegment errnoState, MemorySegment num_devices) {
        try {
            return (MemorySegment) GetDeviceList.H.invokeExact(errnoState, num_devices);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code struct ibv_context *ibv_open_device(struct ibv_device *device);} NULL and errno on failure. */
    public static MemorySegment ibv_open_device(MemorySegment errnoState, MemorySegment device) {
        try {
            return (MemorySegment) OpenDevice.H.invokeExact(errnoState, device);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code struct ibv_pd *ibv_alloc_pd(struct ibv_context *context);} NULL and errno on failure. */
    public static MemorySegment ibv_alloc_pd(MemorySegment errnoState, MemorySegment context) {
        try {
            return (MemorySegment) AllocPd.H.invokeExact(errnoState, context);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * {@code struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access);}
     * (the exported function that the header's {@code ibv_reg_mr} macro calls when
     * {@code IBV_ACCESS_OPTIONAL_RANGE} is not requested). NULL and errno on failure.
     */
    public static MemorySegment ibv_reg_mr(MemorySegment errnoState, MemorySegment pd, MemorySegment addr,
            long length, int access) {
        try {
            return (MemorySegment) RegMr.H.invokeExact(errnoState, pd, addr, length, access);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * {@code struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
     * unsigned int access);} NULL and errno on failure.
     */
    public static MemorySegment ibv_reg_mr_iova2(MemorySegment errnoState, MemorySegment pd, MemorySegment addr,
            long length, long iova, int access) {
        try {
            return (MemorySegment) RegMrIova2.H.invokeExact(errnoState, pd, addr, length, iova, access);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * {@code struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
     * struct ibv_comp_channel *channel, int comp_vector);} NULL and errno on failure.
     */
    public static MemorySegment ibv_create_cq(MemorySegment errnoState, MemorySegment context, int cqe,
            MemorySegment cq_context, MemorySegment channel, int comp_vector) {
        try {
            return (MemorySegment) CreateCq.H.invokeExact(errnoState, context, cqe, cq_context, channel, comp_vector);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * {@code struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context);}
     * NULL and errno on failure.
     */
    public static MemorySegment ibv_create_comp_channel(MemorySegment errnoState, MemorySegment context) {
        try {
            return (MemorySegment) CreateCompChannel.H.invokeExact(errnoState, context);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * {@code struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr);}
     * NULL and errno on failure.
     */
    public static MemorySegment ibv_create_qp(MemorySegment errnoState, MemorySegment pd, MemorySegment qp_init_attr) {
        try {
            return (MemorySegment) CreateQp.H.invokeExact(errnoState, pd, qp_init_attr);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * {@code int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context);}
     * -1 and errno on failure.
     */
    public static int ibv_get_cq_event(MemorySegment errnoState, MemorySegment channel, MemorySegment cq,
            MemorySegment cq_context) {
        try {
            return (int) GetCqEvent.H.invokeExact(errnoState, channel, cq, cq_context);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    // One holder per function: a handle is built (and the library loaded) on the first call only.

    private static final class GetDeviceList {
        static final MethodHandle H = capturing(verbs_h.ibv_get_device_list$address(),
                verbs_h.ibv_get_device_list$descriptor());
    }

    private static final class OpenDevice {
        static final MethodHandle H = capturing(verbs_h.ibv_open_device$address(),
                verbs_h.ibv_open_device$descriptor());
    }

    private static final class AllocPd {
        static final MethodHandle H = capturing(verbs_h.ibv_alloc_pd$address(), verbs_h.ibv_alloc_pd$descriptor());
    }

    private static final class RegMr {
        static final MethodHandle H = capturing(verbs_h.ibv_reg_mr$address(), verbs_h.ibv_reg_mr$descriptor());
    }

    private static final class RegMrIova2 {
        static final MethodHandle H = capturing(verbs_h.ibv_reg_mr_iova2$address(),
                verbs_h.ibv_reg_mr_iova2$descriptor());
    }

    private static final class CreateCq {
        static final MethodHandle H = capturing(verbs_h.ibv_create_cq$address(), verbs_h.ibv_create_cq$descriptor());
    }

    private static final class CreateCompChannel {
        static final MethodHandle H = capturing(verbs_h.ibv_create_comp_channel$address(),
                verbs_h.ibv_create_comp_channel$descriptor());
    }

    private static final class CreateQp {
        static final MethodHandle H = capturing(verbs_h.ibv_create_qp$address(), verbs_h.ibv_create_qp$descriptor());
    }

    private static final class GetCqEvent {
        static final MethodHandle H = capturing(verbs_h.ibv_get_cq_event$address(),
                verbs_h.ibv_get_cq_event$descriptor());
    }
}
