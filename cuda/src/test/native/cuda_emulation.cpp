// A host emulation of the part of the CUDA driver API (libcuda.so.1) that Panamax uses, for
// running the cuda module's GPU tests on a machine without a GPU. It is a test fixture, written to
// be strict: it refuses what the real driver refuses (and returns its error codes), and it makes
// the mistakes that a real device punishes visible here too:
//
//  - every call that needs a context fails with CUDA_ERROR_INVALID_CONTEXT on a thread that has
//    none current;
//  - device pointers are addresses in a reserved, inaccessible range (PROT_NONE), so the host
//    cannot dereference them; the bytes live in a memfd mapped elsewhere, which IPC shares;
//  - every copy, memset and kernel argument is checked against the allocation table;
//  - streams are asynchronous: each has a worker thread that runs its operations in order, each
//    after a delay (PANAMAX_CUDA_EMULATION_OP_DELAY_US, default 200), so that reading a result
//    before synchronizing reads stale data; the legacy default stream has one too, and the
//    synchronous calls follow the driver's documented synchronization rules (a device-to-device
//    copy or a memset returns before it ran);
//  - kernels are the 40 entry points of reduce.cu compiled for the host (cuda_kernels.cpp), run
//    thread index by thread index with the launch's grid and block, after the checks the driver
//    makes (dimensions, the PTX's .maxntid, parameters);
//  - a bad address found while an operation runs is, as on a device, a sticky error of the
//    context (CUDA_ERROR_ILLEGAL_ADDRESS) that every later call returns.
//
// What it cannot show: PTX compiled by a real driver, real timing and concurrency, real GPU
// memory and interconnects. See docs/reference/cuda.md, "Testing without a GPU: the driver emulation".
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cuda_driver.h"
#include "cuda_kernels.h"

namespace {

// ---------------------------------------------------------------------------------------------
// The emulated device
// ---------------------------------------------------------------------------------------------

constexpr int kDeviceCount = 1;
constexpr char kDeviceName[] = "Panamax emulated device";
constexpr int kDriverVersion = 13000;  // CUDA 13.0
constexpr int kMultiprocessors = 132;
constexpr int kComputeMajor = 9;
constexpr int kComputeMinor = 0;
constexpr int kMaxPtxMajor = 9;  // CUDA 13.0 reads PTX ISA up to 9.0
constexpr int kMaxPtxMinor = 0;
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxSharedPerBlock = 48 * 1024;
constexpr uint64_t kGranularity = 2ull << 20;     // allocations are accounted and mapped in 2 MiB
constexpr uint64_t kDeviceSpace = 256ull << 30;   // device virtual address space reserved
constexpr size_t kMaxImageBytes = 64u << 20;
constexpr char kIpcMagic[8] = {'P', 'N', 'X', 'C', 'U', 'I', 'P', 'C'};

struct Config {
    long opDelayMicros = 200;
    uint64_t capacityBytes = 4096ull << 20;
};

long envLong(const char* name, long fallback) {
    const char* v = getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    char* end = nullptr;
    long x = strtol(v, &end, 10);
    return end != nullptr && *end == '\0' && x >= 0 ? x : fallback;
}

void note(const char* format, ...) __attribute__((format(printf, 1, 2)));
void note(const char* format, ...) {
    char line[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    fprintf(stderr, "cuda emulation: %s\n", line);
    fflush(stderr);
}

uint64_t roundUp(uint64_t x, uint64_t to) {
    return (x + to - 1) / to * to;
}

int64_t nowNanos() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// ---------------------------------------------------------------------------------------------
// Error names, as cuGetErrorName and cuGetErrorString give them
// ---------------------------------------------------------------------------------------------

struct ErrorText {
    CUresult code;
    const char* name;
    const char* description;
};

const ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_MAP_FAILED, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* errorText(CUresult code) {
    for (const ErrorText& e : kErrors) {
        if (e.code == code) return &e;
    }
    return nullptr;
}

const char* errorName(CUresult code) {
    const ErrorText* e = errorText(code);
    return e != nullptr ? e->name : "CUresult ?";
}

// ---------------------------------------------------------------------------------------------
// Objects and their handles
// ---------------------------------------------------------------------------------------------

// Handles are opaque numbers, never reused and never host addresses: a handle used after it was
// destroyed is CUDA_ERROR_INVALID_HANDLE, and dereferencing one crashes at once.
enum class Kind : uint64_t { Context = 1, Stream = 2, Event = 3, Module = 4, Function = 5 };

uint64_t makeHandle(Kind kind, uint64_t serial) {
    return 0xC0DA000000000000ull | (static_cast<uint64_t>(kind) << 44) | serial;
}

struct Context;
struct Event;

// A device allocation (cuMemAlloc) or a mapping of another process's allocation (IPC).
struct Allocation {
    CUdeviceptr base = 0;
    uint64_t size = 0;         // as allocated; for a mapping, what was exported (rounded)
    uint64_t mappedBytes = 0;  // the memfd's size: size rounded up to kGranularity
    int fd = -1;
    char* shadow = nullptr;  // where the emulation reads and writes the bytes
    size_t shadowSpan = 0;   // with a guard page on either side
    Context* ctx = nullptr;
    bool ipc = false;
    uint64_t tag = 0;    // of the memfd (an allocation) or of the exported memfd (a mapping)
    pid_t exporter = 0;  // a mapping: the process that exported it
    int ipcOpens = 0;    // a mapping: cuIpcOpenMemHandle count
    std::atomic<bool> live{true};

    ~Allocation() {
        if (shadow != nullptr) munmap(shadow - getpagesize(), shadowSpan);
        if (fd >= 0) close(fd);
    }

    char* at(CUdeviceptr p) const { return shadow + (p - base); }
    bool contains(CUdeviceptr p, uint64_t bytes) const {
        return p >= base && p - base <= size && bytes <= size - (p - base);
    }
};

struct HostRange {
    uintptr_t base;
    size_t size;
    bool allocated;  // cuMemHostAlloc; else cuMemHostRegister
    Context* ctx;
};

struct Wait {
    uint64_t streamSerial;  // 0: none
    uint64_t seq;
    std::shared_ptr<Event> event;
    uint64_t gen;
};

struct Op {
    const char* what;
    std::function<void()> run;  // empty for markers
    bool work;                  // delayed, and skipped once the context has a sticky error
    std::vector<Wait> waits;
    std::shared_ptr<Event> record;  // a marker that completes this event's record `gen`
    uint64_t gen = 0;
};

struct Stream {
    uint64_t handle = 0;
    uint64_t serial = 0;
    Context* ctx = nullptr;
    bool legacy = false;
    bool blocking = false;  // synchronizes with the legacy stream
    // Guarded by Queues::m.
    std::deque<Op> queue;
    uint64_t enqueued = 0;
    uint64_t completed = 0;
    bool destroyed = false;
};

struct Event {
    uint64_t handle = 0;
    Context* ctx = nullptr;
    unsigned flags = 0;
    // Guarded by Queues::m.
    uint64_t recorded = 0;
    uint64_t completed = 0;
    int64_t timeNanos = 0;
};

struct Entry {
    std::string name;
    std::vector<unsigned> paramBytes;
    unsigned maxThreads = 0;  // .maxntid product; 0 when not declared
};

struct Module {
    uint64_t handle = 0;
    Context* ctx = nullptr;
    std::vector<Entry> entries;
    std::atomic<bool> loaded{true};
    std::map<std::string, uint64_t> functions;  // name -> handle
};

struct Function {
    uint64_t handle = 0;
    std::shared_ptr<Module> module;
    const Entry* entry = nullptr;
    const EmulatedKernel* kernel = nullptr;
};

struct Context {
    uint64_t handle = 0;
    int device = 0;
    // Guarded by Tables::m.
    int retains = 0;
    std::atomic<bool> active{false};
    std::atomic<int> sticky{0};
    // Guarded by Queues::m.
    std::shared_ptr<Stream> legacyStream;
    std::vector<std::shared_ptr<Stream>> streams;  // created ones, until destroyed and drained
};

// Allocations, host ranges and handles. Lock order: Tables::m before Queues::m.
struct Tables {
    std::mutex m;
    Config config;
    char* deviceSpace = nullptr;
    uint64_t cursor = 0;  // next allocation offset to try
    uint64_t usedBytes = 0;
    uint64_t serial = 0;
    std::map<CUdeviceptr, std::shared_ptr<Allocation>> allocations;
    std::map<uintptr_t, HostRange> pinned;
    std::unordered_map<uint64_t, std::shared_ptr<Stream>> streams;
    std::unordered_map<uint64_t, std::shared_ptr<Event>> events;
    std::unordered_map<uint64_t, std::shared_ptr<Module>> modules;
    std::unordered_map<uint64_t, std::shared_ptr<Function>> functions;
    Context contexts[kDeviceCount];
};

// The streams' queues and the events' states, and the condition every waiter waits on.
struct Queues {
    std::mutex m;
    std::condition_variable changed;
};

// Never destroyed: worker threads may still wait on them while the process exits.
Tables& T = *new Tables;
Queues& Q = *new Queues;
std::atomic<bool> gInitialized{false};
std::once_flag gInitOnce;
thread_local Context* tCurrent = nullptr;

// ---------------------------------------------------------------------------------------------
// Host memory access that survives bad addresses
// ---------------------------------------------------------------------------------------------

// process_vm_readv/writev on this process: an unmapped host address is an error, not a crash.
// Where the kernel refuses them (seccomp), plain memcpy.
std::atomic<bool> gVmCopy{true};

bool copyFromHost(void* dst, const void* src, size_t n) {
    size_t done = 0;
    while (done < n && gVmCopy.load(std::memory_order_relaxed)) {
        iovec local{static_cast<char*>(dst) + done, n - done};
        iovec remote{const_cast<char*>(static_cast<const char*>(src)) + done, n - done};
        ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        if (r > 0) {
            done += static_cast<size_t>(r);
        } else if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
            gVmCopy = false;
        } else {
            return false;
        }
    }
    if (done < n) memcpy(static_cast<char*>(dst) + done, static_cast<const char*>(src) + done, n - done);
    return true;
}

bool copyToHost(void* dst, const void* src, size_t n) {
    size_t done = 0;
    while (done < n && gVmCopy.load(std::memory_order_relaxed)) {
        iovec local{const_cast<char*>(static_cast<const char*>(src)) + done, n - done};
        iovec remote{static_cast<char*>(dst) + done, n - done};
        ssize_t r = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
        if (r > 0) {
            done += static_cast<size_t>(r);
        } else if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
            gVmCopy = false;
        } else {
            return false;
        }
    }
    if (done < n) memcpy(static_cast<char*>(dst) + done, static_cast<const char*>(src) + done, n - done);
    return true;
}

// ---------------------------------------------------------------------------------------------
// Contexts and streams
// ---------------------------------------------------------------------------------------------

CUresult requireInit() {
    return gInitialized.load() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

// The calling thread's context, active and without a sticky error.
CUresult current(Context*& ctx) {
    if (!gInitialized.load()) return CUDA_ERROR_NOT_INITIALIZED;
    ctx = tCurrent;
    if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx->active.load()) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    int sticky = ctx->sticky.load();
    return sticky != 0 ? sticky : CUDA_SUCCESS;
}

void setSticky(Context* ctx, CUresult code, const char* format, ...) __attribute__((format(printf, 3, 4)));
void setSticky(Context* ctx, CUresult code, const char* format, ...) {
    char what[768];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    int expected = 0;
    if (ctx->sticky.compare_exchange_strong(expected, code)) {
        note("%s: %s; the context is unusable from now on (every call returns it)", what, errorName(code));
    }
}

bool waitsSatisfied(const Op& op, Context* ctx) {
    for (const Wait& w : op.waits) {
        if (w.event != nullptr) {
            if (w.event->completed < w.gen) return false;
        } else if (w.streamSerial != 0) {
            // The stream may be one of ctx's; find it by serial.
            const Stream* s = nullptr;
            if (ctx->legacyStream != nullptr && ctx->legacyStream->serial == w.streamSerial) {
                s = ctx->legacyStream.get();
            } else {
                for (const auto& x : ctx->streams) {
                    if (x->serial == w.streamSerial) s = x.get();
                }
            }
            if (s != nullptr && s->completed < w.seq) return false;
        }
    }
    return true;
}

void workerLoop(std::shared_ptr<Stream> s) {
    Context* ctx = s->ctx;
    std::unique_lock<std::mutex> lock(Q.m);
    for (;;) {
        Q.changed.wait(lock, [&] { return !s->queue.empty() || s->destroyed; });
        if (s->queue.empty()) break;  // destroyed, and everything queued before has run
        Q.changed.wait(lock, [&] { return waitsSatisfied(s->queue.front(), ctx); });
        Op& op = s->queue.front();
        std::function<void()> run = std::move(op.run);
        bool work = op.work;
        lock.unlock();
        if (work && ctx->sticky.load() == 0) {
            long delay = T.config.opDelayMicros;
            if (delay > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay));
            run();
        }
        lock.lock();
        Op& done = s->queue.front();
        if (done.record != nullptr && done.gen > done.record->completed) {
            done.record->completed = done.gen;
            done.record->timeNanos = nowNanos();
        }
        s->queue.pop_front();
        s->completed++;
        Q.changed.notify_all();
    }
    Q.changed.notify_all();
}

// A new stream with its worker; the caller holds no lock.
std::shared_ptr<Stream> startStream(Context* ctx, bool legacy, bool blocking, uint64_t serial) {
    auto s = std::make_shared<Stream>();
    s->serial = serial;
    s->handle = legacy ? 0 : makeHandle(Kind::Stream, serial);
    s->ctx = ctx;
    s->legacy = legacy;
    s->blocking = blocking;
    std::thread(workerLoop, s).detach();
    return s;
}

// Queues op on s, with the legacy stream's implicit synchronization: work on the legacy stream
// waits for the blocking streams' earlier work, and work on a blocking stream for the legacy
// stream's. Returns the op's sequence number. Holds Queues::m.
uint64_t enqueueLocked(const std::shared_ptr<Stream>& s, Op op) {
    Context* ctx = s->ctx;
    if (s->legacy) {
        for (const auto& other : ctx->streams) {
            if (other->blocking && other->enqueued > other->completed) {
                op.waits.push_back(Wait{other->serial, other->enqueued, nullptr, 0});
            }
        }
    } else if (s->blocking) {
        const auto& legacy = ctx->legacyStream;
        if (legacy->enqueued > legacy->completed) {
            op.waits.push_back(Wait{legacy->serial, legacy->enqueued, nullptr, 0});
        }
    }
    s->queue.push_back(std::move(op));
    uint64_t seq = ++s->enqueued;
    Q.changed.notify_all();
    return seq;
}

uint64_t enqueue(const std::shared_ptr<Stream>& s, Op op) {
    std::lock_guard<std::mutex> lock(Q.m);
    return enqueueLocked(s, std::move(op));
}

void waitFor(const std::shared_ptr<Stream>& s, uint64_t seq) {
    std::unique_lock<std::mutex> lock(Q.m);
    Q.changed.wait(lock, [&] { return s->completed >= seq; });
}

// Waits until every stream of ctx has run what was queued on it so far.
void synchronizeContext(Context* ctx) {
    std::unique_lock<std::mutex> lock(Q.m);
    std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> targets;
    if (ctx->legacyStream != nullptr) targets.emplace_back(ctx->legacyStream, ctx->legacyStream->enqueued);
    for (const auto& s : ctx->streams) targets.emplace_back(s, s->enqueued);
    for (auto& t : targets) {
        Q.changed.wait(lock, [&] { return t.first->completed >= t.second; });
    }
    // Destroyed streams that have drained are gone for good.
    ctx->streams.erase(std::remove_if(ctx->streams.begin(), ctx->streams.end(),
                                      [](const std::shared_ptr<Stream>& s) {
                                          return s->destroyed && s->completed == s->enqueued;
                                      }),
                       ctx->streams.end());
}

// The stream a handle names in ctx: NULL and CU_STREAM_LEGACY are the legacy default stream.
CUresult resolveStream(Context* ctx, CUstream h, std::shared_ptr<Stream>& out) {
    if (h == nullptr || h == CU_STREAM_LEGACY) {
        std::lock_guard<std::mutex> lock(Q.m);
        out = ctx->legacyStream;
        return CUDA_SUCCESS;
    }
    if (h == CU_STREAM_PER_THREAD) {
        note("CU_STREAM_PER_THREAD is not emulated");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    std::lock_guard<std::mutex> lock(T.m);
    auto it = T.streams.find(reinterpret_cast<uint64_t>(h));
    if (it == T.streams.end() || it->second->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
    out = it->second;
    return CUDA_SUCCESS;
}

// The result of a call after its work: the sticky error if one arose meanwhile.
CUresult afterWork(Context* ctx) {
    int sticky = ctx->sticky.load();
    return sticky != 0 ? sticky : CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Device memory
// ---------------------------------------------------------------------------------------------

bool inDeviceSpace(uintptr_t p, size_t bytes) {
    uintptr_t start = reinterpret_cast<uintptr_t>(T.deviceSpace);
    uintptr_t end = start + kDeviceSpace;
    return p < end && p + std::max<size_t>(bytes, 1) > start;
}

// The live allocation that holds [p, p + bytes); holds Tables::m.
std::shared_ptr<Allocation> findLocked(CUdeviceptr p, uint64_t bytes) {
    auto it = T.allocations.upper_bound(p);
    if (it == T.allocations.begin()) return nullptr;
    --it;
    const auto& a = it->second;
    return a->contains(p, bytes) ? a : nullptr;
}

std::shared_ptr<Allocation> find(CUdeviceptr p, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(T.m);
    return findLocked(p, bytes);
}

// A free range of `span` bytes in the device address space, at a 2 MiB boundary and with a gap to
// its neighbours, searched from after the last one (so addresses are not soon reused).
bool reserveLocked(uint64_t span, CUdeviceptr& out) {
    uint64_t base = reinterpret_cast<uintptr_t>(T.deviceSpace);
    uint64_t start = roundUp(base, kGranularity) + kGranularity;
    uint64_t end = base + kDeviceSpace;
    uint64_t candidate = std::max(start, T.cursor);
    bool wrapped = false;
    for (;;) {
        if (candidate + span + kGranularity > end) {
            if (wrapped) return false;
            wrapped = true;
            candidate = start;
        }
        auto next = T.allocations.lower_bound(candidate);
        if (next != T.allocations.begin()) {
            auto prev = std::prev(next);
            uint64_t prevEnd = prev->first + prev->second->mappedBytes + kGranularity;
            if (prevEnd > candidate) {
                candidate = roundUp(prevEnd, kGranularity);
                continue;
            }
        }
        if (next != T.allocations.end() && next->first < candidate + span + kGranularity) {
            candidate = roundUp(next->first + next->second->mappedBytes + kGranularity, kGranularity);
            continue;
        }
        out = candidate;
        T.cursor = candidate + span + kGranularity;
        return true;
    }
}

// Maps fd's first `bytes` read-write between two inaccessible guard pages.
char* mapShadow(int fd, uint64_t bytes, size_t& span) {
    size_t page = getpagesize();
    span = bytes + 2 * page;
    void* region = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED) return nullptr;
    char* inner = static_cast<char*>(region) + page;
    if (mmap(inner, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
        munmap(region, span);
        return nullptr;
    }
    return inner;
}

std::string memfdName(uint64_t tag) {
    char name[64];
    snprintf(name, sizeof name, "panamax-cuda-emulation-%016llx", static_cast<unsigned long long>(tag));
    return name;
}

uint64_t randomTag() {
    static std::mutex m;
    static std::mt19937_64 random{std::random_device{}() ^ static_cast<uint64_t>(nowNanos())};
    std::lock_guard<std::mutex> lock(m);
    return random();
}

// ---------------------------------------------------------------------------------------------
// Modules: the PTX text
// ---------------------------------------------------------------------------------------------

std::string stripComments(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        if (text.compare(i, 2, "//") == 0) {
            while (i < text.size() && text[i] != '\n') i++;
        } else if (text.compare(i, 2, "/*") == 0) {
            size_t end = text.find("*/", i + 2);
            i = end == std::string::npos ? text.size() : end + 2;
            out.push_back(' ');
        } else {
            out.push_back(text[i++]);
        }
    }
    return out;
}

bool isIdentifierChar(char c) {
    return isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.';
}

unsigned typeBytes(const std::string& type) {
    // .u64 .s32 .b8 .f16 ... : the number after the letter, in bits
    if (type.size() < 3 || type[0] != '.') return 0;
    unsigned bits = static_cast<unsigned>(atoi(type.c_str() + 2));
    return bits % 8 == 0 ? bits / 8 : 0;
}

// Reads the PTX: version, target, and each .entry's parameter sizes and .maxntid.
CUresult parsePtx(const std::string& raw, std::vector<Entry>& entries) {
    std::string ptx = stripComments(raw);
    size_t v = ptx.find(".version");
    if (v == std::string::npos) {
        note("cuModuleLoadData: the PTX has no .version directive");
        return CUDA_ERROR_INVALID_PTX;
    }
    int major = 0, minor = 0;
    if (sscanf(ptx.c_str() + v, ".version %d.%d", &major, &minor) != 2) return CUDA_ERROR_INVALID_PTX;
    if (major > kMaxPtxMajor || (major == kMaxPtxMajor && minor > kMaxPtxMinor)) {
        note("cuModuleLoadData: PTX ISA %d.%d is newer than this driver's %d.%d", major, minor, kMaxPtxMajor,
             kMaxPtxMinor);
        return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    }
    size_t t = ptx.find(".target");
    if (t == std::string::npos) return CUDA_ERROR_INVALID_PTX;
    int sm = 0;
    if (sscanf(ptx.c_str() + t, ".target sm_%d", &sm) != 1) return CUDA_ERROR_INVALID_PTX;
    if (sm > kComputeMajor * 10 + kComputeMinor) {
        note("cuModuleLoadData: the PTX targets sm_%d, the device is sm_%d%d", sm, kComputeMajor, kComputeMinor);
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    for (size_t at = ptx.find(".entry"); at != std::string::npos; at = ptx.find(".entry", at + 6)) {
        size_t i = at + 6;
        if (i < ptx.size() && isIdentifierChar(ptx[i])) continue;  // e.g. ".entryx"
        while (i < ptx.size() && isspace(static_cast<unsigned char>(ptx[i]))) i++;
        size_t nameStart = i;
        while (i < ptx.size() && isIdentifierChar(ptx[i])) i++;
        Entry e;
        e.name = ptx.substr(nameStart, i - nameStart);
        if (e.name.empty()) return CUDA_ERROR_INVALID_PTX;
        while (i < ptx.size() && isspace(static_cast<unsigned char>(ptx[i]))) i++;
        if (i < ptx.size() && ptx[i] == '(') {
            size_t close = ptx.find(')', i);
            if (close == std::string::npos) return CUDA_ERROR_INVALID_PTX;
            std::string params = ptx.substr(i + 1, close - i - 1);
            size_t p = 0;
            while ((p = params.find(".param", p)) != std::string::npos) {
                p += 6;
                unsigned bytes = 0;
                // [.align N] .type name[[count]]
                char word[64];
                int used = 0;
                const char* s = params.c_str() + p;
                if (sscanf(s, " .align %*u%n", &used) >= 0 && used > 0) s += used;
                used = 0;
                if (sscanf(s, " %63s%n", word, &used) != 1) return CUDA_ERROR_INVALID_PTX;
                bytes = typeBytes(word);
                s += used;
                const char* bracket = strchr(s, '[');
                const char* comma = strchr(s, ',');
                if (bracket != nullptr && (comma == nullptr || bracket < comma)) bytes *= static_cast<unsigned>(atoi(bracket + 1));
                if (bytes == 0) return CUDA_ERROR_INVALID_PTX;
                e.paramBytes.push_back(bytes);
            }
            i = close + 1;
        }
        size_t body = ptx.find('{', i);
        size_t maxntid = ptx.find(".maxntid", i);
        if (maxntid != std::string::npos && (body == std::string::npos || maxntid < body)) {
            unsigned x = 1, y = 1, z = 1;
            int n = sscanf(ptx.c_str() + maxntid, ".maxntid %u , %u , %u", &x, &y, &z);
            if (n < 1) return CUDA_ERROR_INVALID_PTX;
            e.maxThreads = x * (n > 1 ? y : 1) * (n > 2 ? z : 1);
        }
        entries.push_back(std::move(e));
    }
    return CUDA_SUCCESS;
}

const EmulatedKernel* emulatedKernel(const std::string& name) {
    for (int i = 0; i < kEmulatedKernelCount; i++) {
        if (name == kEmulatedKernels[i].name) return &kEmulatedKernels[i];
    }
    return nullptr;
}

std::vector<unsigned> expectedParams(const EmulatedKernel& k) {
    return k.kind == KernelKind::Reduce ? std::vector<unsigned>{8, 8, 8} : std::vector<unsigned>{8, 8, 4};
}

// ---------------------------------------------------------------------------------------------
// Initialization and contexts
// ---------------------------------------------------------------------------------------------

void initialize() {
    std::lock_guard<std::mutex> lock(T.m);
    T.config.opDelayMicros = envLong("PANAMAX_CUDA_EMULATION_OP_DELAY_US", 200);
    T.config.capacityBytes = static_cast<uint64_t>(envLong("PANAMAX_CUDA_EMULATION_MEMORY_MIB", 4096)) << 20;
    void* space = mmap(nullptr, kDeviceSpace, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (space == MAP_FAILED) {
        note("cannot reserve the device address space: %s", strerror(errno));
        return;
    }
    T.deviceSpace = static_cast<char*>(space);
    for (int d = 0; d < kDeviceCount; d++) {
        T.contexts[d].handle = makeHandle(Kind::Context, static_cast<uint64_t>(d) + 1);
        T.contexts[d].device = d;
    }
    gInitialized = true;
}

Context* contextOf(CUcontext h) {
    for (Context& c : T.contexts) {
        if (c.handle == reinterpret_cast<uint64_t>(h)) return &c;
    }
    return nullptr;
}

// The primary context's last release: waits for its work and frees what it still owns, as the
// driver does; what the application left behind is reported, since it is usually a leak.
void destroyContext(Context* ctx) {
    synchronizeContext(ctx);
    std::vector<std::shared_ptr<Allocation>> freed;
    int allocations = 0, mappings = 0, pinned = 0, registered = 0, streams = 0, events = 0, modules = 0;
    {
        std::lock_guard<std::mutex> lock(T.m);
        // std::erase_if over a map returns how many it erased: what the context still owned.
        std::erase_if(T.allocations, [&](auto& e) {
            Allocation& a = *e.second;
            if (a.ctx != ctx) return false;
            a.live = false;
            if (a.ipc) {
                mappings++;
            } else {
                allocations++;
                T.usedBytes -= a.mappedBytes;
            }
            freed.push_back(e.second);
            return true;
        });
        std::erase_if(T.pinned, [&](auto& e) {
            if (e.second.ctx != ctx) return false;
            if (e.second.allocated) {
                pinned++;
                munmap(reinterpret_cast<void*>(e.second.base), roundUp(e.second.size, getpagesize()));
            } else {
                registered++;
            }
            return true;
        });
        streams = static_cast<int>(std::erase_if(T.streams, [&](auto& e) { return e.second->ctx == ctx; }));
        events = static_cast<int>(std::erase_if(T.events, [&](auto& e) { return e.second->ctx == ctx; }));
        modules = static_cast<int>(std::erase_if(T.modules, [&](auto& e) {
            if (e.second->ctx != ctx) return false;
            e.second->loaded = false;
            for (const auto& f : e.second->functions) T.functions.erase(f.second);
            return true;
        }));
        std::lock_guard<std::mutex> qlock(Q.m);
        for (auto& s : ctx->streams) s->destroyed = true;
        ctx->streams.clear();
        if (ctx->legacyStream != nullptr) ctx->legacyStream->destroyed = true;
        ctx->legacyStream = nullptr;
        ctx->active = false;
        ctx->sticky = 0;
        Q.changed.notify_all();
    }
    if (allocations + mappings + pinned + registered + streams + events + modules > 0) {
        note("the primary context of device %d was released for the last time with %d device allocation(s), %d IPC "
             "mapping(s), %d pinned allocation(s), %d registered host range(s), %d stream(s), %d event(s) and %d "
             "module(s) still alive; they are freed with it",
             ctx->device, allocations, mappings, pinned, registered, streams, events, modules);
    }
}

// ---------------------------------------------------------------------------------------------
// Copies
// ---------------------------------------------------------------------------------------------

enum class Sync { Wait, Return };

// A host range that is not device memory; NULL or a device address is CUDA_ERROR_INVALID_VALUE.
CUresult checkHost(const void* p, size_t bytes, const char* call) {
    if (p == nullptr) {
        note("%s: the host pointer is NULL", call);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (inDeviceSpace(reinterpret_cast<uintptr_t>(p), bytes)) {
        note("%s: the host pointer %p is a device address", call, p);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult checkDevice(CUdeviceptr p, size_t bytes, const char* call, std::shared_ptr<Allocation>& out) {
    out = find(p, bytes);
    if (out == nullptr) {
        note("%s: [0x%llx, +%zu) is not within a live device allocation", call, static_cast<unsigned long long>(p),
             bytes);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

bool isPinned(const void* p, size_t bytes) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(T.m);
    auto it = T.pinned.upper_bound(a);
    if (it == T.pinned.begin()) return false;
    --it;
    return a >= it->second.base && a + bytes <= it->second.base + it->second.size;
}

// The device side of an operation, checked again when it runs: freed or unmapped meanwhile is an
// illegal address, as it would be on the device.
bool stillLive(Context* ctx, const std::shared_ptr<Allocation>& a, const char* what) {
    if (a->live.load()) return true;
    setSticky(ctx, CUDA_ERROR_ILLEGAL_ADDRESS, "%s: device memory 0x%llx was freed before the operation ran", what,
              static_cast<unsigned long long>(a->base));
    return false;
}

CUresult hostToDevice(CUdeviceptr dst, const void* src, size_t n, CUstream hs, bool async, const char* call) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::shared_ptr<Stream> s;
    if ((rc = resolveStream(ctx, hs, s)) != CUDA_SUCCESS) return rc;
    if (n == 0) return CUDA_SUCCESS;
    std::shared_ptr<Allocation> d;
    if ((rc = checkHost(src, n, call)) != CUDA_SUCCESS || (rc = checkDevice(dst, n, call, d)) != CUDA_SUCCESS) {
        return rc;
    }
    char* to = d->at(dst);
    if (!async && !isPinned(src, n)) {
        // From pageable memory the driver first synchronizes the stream, copies the data to a
        // staging buffer and returns: the transfer itself may still be in flight.
        std::shared_ptr<std::vector<char>> staging = std::make_shared<std::vector<char>>(n);
        uint64_t seq;
        {
            std::lock_guard<std::mutex> lock(Q.m);
            seq = s->enqueued;
        }
        waitFor(s, seq);
        if (!copyFromHost(staging->data(), src, n)) {
            note("%s: host memory [%p, +%zu) is not readable", call, src, n);
            return CUDA_ERROR_INVALID_VALUE;
        }
        enqueue(s, Op{call, [ctx, d, to, staging, call] {
                          if (stillLive(ctx, d, call)) memcpy(to, staging->data(), staging->size());
                      },
                      true, {}, nullptr, 0});
        return afterWork(ctx);
    }
    uint64_t seq = enqueue(s, Op{call, [ctx, d, to, src, n, call] {
                                     if (!stillLive(ctx, d, call)) return;
                                     if (!copyFromHost(to, src, n)) {
                                         setSticky(ctx, CUDA_ERROR_ILLEGAL_ADDRESS,
                                                   "%s: host memory [%p, +%zu) was not readable when the copy ran",
                                                   call, src, n);
                                     }
                                 },
                                 true, {}, nullptr, 0});
    if (!async) waitFor(s, seq);  // from pinned memory: synchronous
    return afterWork(ctx);
}

CUresult deviceToHost(void* dst, CUdeviceptr src, size_t n, CUstream hs, bool async, const char* call) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::shared_ptr<Stream> s;
    if ((rc = resolveStream(ctx, hs, s)) != CUDA_SUCCESS) return rc;
    if (n == 0) return CUDA_SUCCESS;
    std::shared_ptr<Allocation> d;
    if ((rc = checkHost(dst, n, call)) != CUDA_SUCCESS || (rc = checkDevice(src, n, call, d)) != CUDA_SUCCESS) {
        return rc;
    }
    const char* from = d->at(src);
    uint64_t seq = enqueue(s, Op{call, [ctx, d, from, dst, n, call] {
                                     if (!stillLive(ctx, d, call)) return;
                                     if (!copyToHost(dst, from, n)) {
                                         setSticky(ctx, CUDA_ERROR_ILLEGAL_ADDRESS,
                                                   "%s: host memory [%p, +%zu) was not writable when the copy ran",
                                                   call, dst, n);
                                     }
                                 },
                                 true, {}, nullptr, 0});
    if (!async) waitFor(s, seq);  // to host memory the synchronous copy returns when done
    return afterWork(ctx);
}

CUresult deviceToDevice(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hs, const char* call) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::shared_ptr<Stream> s;
    if ((rc = resolveStream(ctx, hs, s)) != CUDA_SUCCESS) return rc;
    if (n == 0) return CUDA_SUCCESS;
    std::shared_ptr<Allocation> d, from;
    if ((rc = checkDevice(dst, n, call, d)) != CUDA_SUCCESS || (rc = checkDevice(src, n, call, from)) != CUDA_SUCCESS) {
        return rc;
    }
    char* to = d->at(dst);
    const char* source = from->at(src);
    // Device to device, even the synchronous call does not wait for the copy.
    enqueue(s, Op{call, [ctx, d, from, to, source, n, call] {
                      if (stillLive(ctx, d, call) && stillLive(ctx, from, call)) memmove(to, source, n);
                  },
                  true, {}, nullptr, 0});
    return afterWork(ctx);
}

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

struct KernelArgs {
    CUdeviceptr inout = 0;
    CUdeviceptr in = 0;
    unsigned long long count = 0;
    int divisor = 0;
};

// Checks an operand when the kernel runs: the kernel reads and writes `count` elements from `p`.
bool operandOk(Context* ctx, const std::shared_ptr<Allocation>& a, CUdeviceptr p, uint64_t bytes, unsigned align,
               const char* kernel, const char* role) {
    if (a == nullptr || !a->live.load() || !a->contains(p, bytes)) {
        setSticky(ctx, CUDA_ERROR_ILLEGAL_ADDRESS,
                  "kernel %s: %s [0x%llx, +%llu) is not within a live device allocation", kernel, role,
                  static_cast<unsigned long long>(p), static_cast<unsigned long long>(bytes));
        return false;
    }
    if (p % align != 0) {
        setSticky(ctx, CUDA_ERROR_MISALIGNED_ADDRESS, "kernel %s: %s 0x%llx is not aligned to %u bytes", kernel, role,
                  static_cast<unsigned long long>(p), align);
        return false;
    }
    return true;
}

}  // namespace

// =============================================================================================
// The exported API
// =============================================================================================

PANAMAX_CUDA_EXPORT int panamax_cuda_emulation(void) {
    return 1;
}

PANAMAX_CUDA_EXPORT CUresult cuGetErrorName(CUresult error, const char** pStr) {
    if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const ErrorText* e = errorText(error);
    *pStr = e != nullptr ? e->name : nullptr;
    return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

PANAMAX_CUDA_EXPORT CUresult cuGetErrorString(CUresult error, const char** pStr) {
    if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const ErrorText* e = errorText(error);
    *pStr = e != nullptr ? e->description : nullptr;
    return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

PANAMAX_CUDA_EXPORT CUresult cuInit(unsigned int Flags) {
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::call_once(gInitOnce, initialize);
    return gInitialized.load() ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
}

PANAMAX_CUDA_EXPORT CUresult cuDriverGetVersion(int* driverVersion) {
    if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = kDriverVersion;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuDeviceGetCount(int* count) {
    CUresult rc = requireInit();
    if (rc != CUDA_SUCCESS) return rc;
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *count = kDeviceCount;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
    CUresult rc = requireInit();
    if (rc != CUDA_SUCCESS) return rc;
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= kDeviceCount) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
    CUresult rc = requireInit();
    if (rc != CUDA_SUCCESS) return rc;
    if (dev < 0 || dev >= kDeviceCount) return CUDA_ERROR_INVALID_DEVICE;
    if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, static_cast<size_t>(len), "%s", kDeviceName);
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
    CUresult rc = requireInit();
    if (rc != CUDA_SUCCESS) return rc;
    if (dev < 0 || dev >= kDeviceCount) return CUDA_ERROR_INVALID_DEVICE;
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *bytes = T.config.capacityBytes;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
    CUresult rc = requireInit();
    if (rc != CUDA_SUCCESS) return rc;
    if (dev < 0 || dev >= kDeviceCount) return CUDA_ERROR_INVALID_DEVICE;
    if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // An H100-like device (SXM5, 132 multiprocessors); attributes not listed are refused.
    static const std::map<int, int> kAttributes = {
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, static_cast<int>(kMaxThreadsPerBlock)},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, static_cast<int>(kMaxSharedPerBlock)},
        {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
        {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
        {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},
        {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
        {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, kMultiprocessors},
        {CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, 0},
        {CU_DEVICE_ATTRIBUTE_INTEGRATED, 0},
        {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, 0},
        {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
        {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 1},
        {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0},
        {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
        {CU_DEVICE_ATTRIBUTE_TCC_DRIVER, 0},
        {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
        {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
        {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3},
        {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
        {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, kComputeMajor},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, kComputeMinor},
        {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
        {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0},
        {CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD, 0},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 0},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
        {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
        {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0},
        {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, 0},
        {CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, 0},
    };
    auto it = kAttributes.find(attrib);
    if (it == kAttributes.end()) return CUDA_ERROR_INVALID_VALUE;
    *pi = it->second;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
    CUresult rc = requireInit();
    if (rc != CUDA_SUCCESS) return rc;
    if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= kDeviceCount) return CUDA_ERROR_INVALID_DEVICE;
    std::lock_guard<std::mutex> lock(T.m);
    Context* ctx = &T.contexts[dev];
    if (ctx->retains++ == 0) {
        std::lock_guard<std::mutex> qlock(Q.m);
        ctx->legacyStream = startStream(ctx, true, true, ++T.serial);
        ctx->sticky = 0;
        ctx->active = true;
    }
    *pctx = reinterpret_cast<CUcontext>(ctx->handle);
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    CUresult rc = requireInit();
    if (rc != CUDA_SUCCESS) return rc;
    if (dev < 0 || dev >= kDeviceCount) return CUDA_ERROR_INVALID_DEVICE;
    Context* ctx = &T.contexts[dev];
    {
        std::lock_guard<std::mutex> lock(T.m);
        if (ctx->retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
        if (--ctx->retains > 0) return CUDA_SUCCESS;
    }
    destroyContext(ctx);
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuCtxSetCurrent(CUcontext h) {
    CUresult rc = requireInit();
    if (rc != CUDA_SUCCESS) return rc;
    if (h == nullptr) {
        tCurrent = nullptr;
        return CUDA_SUCCESS;
    }
    Context* ctx = contextOf(h);
    if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    tCurrent = ctx;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuCtxGetCurrent(CUcontext* pctx) {
    CUresult rc = requireInit();
    if (rc != CUDA_SUCCESS) return rc;
    if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pctx = tCurrent == nullptr ? nullptr : reinterpret_cast<CUcontext>(tCurrent->handle);
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *device = ctx->device;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuCtxSynchronize(void) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    synchronizeContext(ctx);
    return afterWork(ctx);
}

// ---- streams ----

PANAMAX_CUDA_EXPORT CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (phStream == nullptr || (Flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    std::lock_guard<std::mutex> lock(T.m);
    auto s = startStream(ctx, false, (Flags & CU_STREAM_NON_BLOCKING) == 0, ++T.serial);
    T.streams[s->handle] = s;
    {
        std::lock_guard<std::mutex> qlock(Q.m);
        ctx->streams.push_back(s);
    }
    *phStream = reinterpret_cast<CUstream>(s->handle);
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (hStream == nullptr || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    std::lock_guard<std::mutex> lock(T.m);
    auto it = T.streams.find(reinterpret_cast<uint64_t>(hStream));
    if (it == T.streams.end() || it->second->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
    {
        // The worker finishes what is queued, then ends: cuStreamDestroy does not wait.
        std::lock_guard<std::mutex> qlock(Q.m);
        it->second->destroyed = true;
        Q.changed.notify_all();
    }
    T.streams.erase(it);
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuStreamSynchronize(CUstream hStream) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::shared_ptr<Stream> s;
    if ((rc = resolveStream(ctx, hStream, s)) != CUDA_SUCCESS) return rc;
    uint64_t seq;
    {
        std::lock_guard<std::mutex> lock(Q.m);
        seq = s->enqueued;
    }
    waitFor(s, seq);
    return afterWork(ctx);
}

PANAMAX_CUDA_EXPORT CUresult cuStreamQuery(CUstream hStream) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::shared_ptr<Stream> s;
    if ((rc = resolveStream(ctx, hStream, s)) != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(Q.m);
    return s->completed < s->enqueued ? CUDA_ERROR_NOT_READY : afterWork(ctx);
}

PANAMAX_CUDA_EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (Flags != CU_EVENT_WAIT_DEFAULT) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Stream> s;
    if ((rc = resolveStream(ctx, hStream, s)) != CUDA_SUCCESS) return rc;
    std::shared_ptr<Event> e;
    {
        std::lock_guard<std::mutex> lock(T.m);
        auto it = T.events.find(reinterpret_cast<uint64_t>(hEvent));
        if (it == T.events.end() || it->second->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
        e = it->second;
    }
    std::lock_guard<std::mutex> lock(Q.m);
    if (e->recorded == 0) return CUDA_SUCCESS;  // never recorded: nothing to wait for
    enqueueLocked(s, Op{"cuStreamWaitEvent", {}, false, {Wait{0, 0, e, e->recorded}}, nullptr, 0});
    return CUDA_SUCCESS;
}

// ---- events ----

PANAMAX_CUDA_EXPORT CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & ~static_cast<unsigned>(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if ((Flags & CU_EVENT_INTERPROCESS) != 0) {
        if ((Flags & CU_EVENT_DISABLE_TIMING) == 0) return CUDA_ERROR_INVALID_VALUE;
        note("cuEventCreate: CU_EVENT_INTERPROCESS is not emulated");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    auto e = std::make_shared<Event>();
    e->ctx = ctx;
    e->flags = Flags;
    std::lock_guard<std::mutex> lock(T.m);
    e->handle = makeHandle(Kind::Event, ++T.serial);
    T.events[e->handle] = e;
    *phEvent = reinterpret_cast<CUevent>(e->handle);
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(T.m);
    auto it = T.events.find(reinterpret_cast<uint64_t>(hEvent));
    if (it == T.events.end() || it->second->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
    T.events.erase(it);  // a pending record still completes; the object lives until then
    return CUDA_SUCCESS;
}

namespace {

CUresult findEvent(Context* ctx, CUevent h, std::shared_ptr<Event>& out) {
    std::lock_guard<std::mutex> lock(T.m);
    auto it = T.events.find(reinterpret_cast<uint64_t>(h));
    if (it == T.events.end() || it->second->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
    out = it->second;
    return CUDA_SUCCESS;
}

}  // namespace

PANAMAX_CUDA_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::shared_ptr<Event> e;
    std::shared_ptr<Stream> s;
    if ((rc = findEvent(ctx, hEvent, e)) != CUDA_SUCCESS) return rc;
    if ((rc = resolveStream(ctx, hStream, s)) != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(Q.m);
    uint64_t gen = ++e->recorded;
    enqueueLocked(s, Op{"cuEventRecord", {}, false, {}, e, gen});
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuEventQuery(CUevent hEvent) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::shared_ptr<Event> e;
    if ((rc = findEvent(ctx, hEvent, e)) != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(Q.m);
    return e->completed < e->recorded ? CUDA_ERROR_NOT_READY : afterWork(ctx);
}

PANAMAX_CUDA_EXPORT CUresult cuEventSynchronize(CUevent hEvent) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::shared_ptr<Event> e;
    if ((rc = findEvent(ctx, hEvent, e)) != CUDA_SUCCESS) return rc;
    std::unique_lock<std::mutex> lock(Q.m);
    uint64_t gen = e->recorded;
    Q.changed.wait(lock, [&] { return e->completed >= gen; });
    return afterWork(ctx);
}

PANAMAX_CUDA_EXPORT CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (pMilliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Event> start, end;
    if ((rc = findEvent(ctx, hStart, start)) != CUDA_SUCCESS || (rc = findEvent(ctx, hEnd, end)) != CUDA_SUCCESS) {
        return rc;
    }
    if (((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) != 0) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard<std::mutex> lock(Q.m);
    if (start->recorded == 0 || end->recorded == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (start->completed < start->recorded || end->completed < end->recorded) return CUDA_ERROR_NOT_READY;
    *pMilliseconds = static_cast<float>(static_cast<double>(end->timeNanos - start->timeNanos) / 1e6);
    return CUDA_SUCCESS;
}

// ---- device memory ----

PANAMAX_CUDA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    uint64_t mapped = roundUp(bytesize, kGranularity);
    std::lock_guard<std::mutex> lock(T.m);
    if (mapped > T.config.capacityBytes - T.usedBytes) return CUDA_ERROR_OUT_OF_MEMORY;
    CUdeviceptr base;
    if (!reserveLocked(mapped, base)) return CUDA_ERROR_OUT_OF_MEMORY;
    auto a = std::make_shared<Allocation>();
    a->tag = randomTag();
    a->fd = memfd_create(memfdName(a->tag).c_str(), MFD_CLOEXEC);
    if (a->fd < 0 || ftruncate(a->fd, static_cast<off_t>(mapped)) != 0) {
        note("cuMemAlloc_v2(%zu): memfd: %s", bytesize, strerror(errno));
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->shadow = mapShadow(a->fd, mapped, a->shadowSpan);
    if (a->shadow == nullptr) {
        note("cuMemAlloc_v2(%zu): mmap: %s", bytesize, strerror(errno));
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->base = base;
    a->size = bytesize;
    a->mappedBytes = mapped;
    a->ctx = ctx;
    T.allocations[base] = a;
    T.usedBytes += mapped;
    *dptr = base;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    {
        std::lock_guard<std::mutex> lock(T.m);
        auto it = T.allocations.find(dptr);
        if (it == T.allocations.end() || it->second->ipc) {
            note("cuMemFree_v2: 0x%llx is not the base of a live allocation", static_cast<unsigned long long>(dptr));
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    // cuMemFree waits for the device: work queued before it may still use the memory.
    synchronizeContext(ctx);
    std::shared_ptr<Allocation> a;
    {
        std::lock_guard<std::mutex> lock(T.m);
        auto it = T.allocations.find(dptr);
        if (it == T.allocations.end() || it->second->ipc) return CUDA_ERROR_INVALID_VALUE;  // freed meanwhile
        a = it->second;
        a->live = false;
        T.usedBytes -= a->mappedBytes;
        T.allocations.erase(it);
    }
    return afterWork(ctx);
}

PANAMAX_CUDA_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(T.m);
    *free = T.config.capacityBytes - T.usedBytes;
    *total = T.config.capacityBytes;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::shared_ptr<Allocation> a = find(dptr, 1);
    if (a == nullptr) return CUDA_ERROR_NOT_FOUND;
    if (pbase != nullptr) *pbase = a->base;
    if (psize != nullptr) *psize = a->size;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (N == 0) return CUDA_SUCCESS;
    std::shared_ptr<Allocation> d;
    if ((rc = checkDevice(dstDevice, N, "cuMemsetD8_v2", d)) != CUDA_SUCCESS) return rc;
    std::shared_ptr<Stream> s;
    {
        std::lock_guard<std::mutex> lock(Q.m);
        s = ctx->legacyStream;
    }
    char* to = d->at(dstDevice);
    // A memset of device memory is asynchronous to the host, on the legacy stream.
    enqueue(s, Op{"cuMemsetD8_v2", [ctx, d, to, uc, N] {
                      if (stillLive(ctx, d, "cuMemsetD8_v2")) memset(to, uc, N);
                  },
                  true, {}, nullptr, 0});
    return afterWork(ctx);
}

PANAMAX_CUDA_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
    return hostToDevice(dstDevice, srcHost, ByteCount, nullptr, false, "cuMemcpyHtoD_v2");
}

PANAMAX_CUDA_EXPORT CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
    return deviceToHost(dstHost, srcDevice, ByteCount, nullptr, false, "cuMemcpyDtoH_v2");
}

PANAMAX_CUDA_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
    return deviceToDevice(dstDevice, srcDevice, ByteCount, nullptr, "cuMemcpyDtoD_v2");
}

PANAMAX_CUDA_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                                  CUstream hStream) {
    return hostToDevice(dstDevice, srcHost, ByteCount, hStream, true, "cuMemcpyHtoDAsync_v2");
}

PANAMAX_CUDA_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                                  CUstream hStream) {
    return deviceToHost(dstHost, srcDevice, ByteCount, hStream, true, "cuMemcpyDtoHAsync_v2");
}

PANAMAX_CUDA_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                                  CUstream hStream) {
    return deviceToDevice(dstDevice, srcDevice, ByteCount, hStream, "cuMemcpyDtoDAsync_v2");
}

// ---- pinned host memory ----

PANAMAX_CUDA_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    const unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if (pp == nullptr || bytesize == 0 || (Flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
    size_t span = roundUp(bytesize, getpagesize());
    void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    std::lock_guard<std::mutex> lock(T.m);
    uintptr_t base = reinterpret_cast<uintptr_t>(p);
    T.pinned[base] = HostRange{base, bytesize, true, ctx};
    *pp = p;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuMemFreeHost(void* p) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    uintptr_t base = reinterpret_cast<uintptr_t>(p);
    {
        std::lock_guard<std::mutex> lock(T.m);
        auto it = T.pinned.find(base);
        if (it == T.pinned.end() || !it->second.allocated) return CUDA_ERROR_INVALID_VALUE;
    }
    synchronizeContext(ctx);  // queued copies may still use it
    std::lock_guard<std::mutex> lock(T.m);
    auto it = T.pinned.find(base);
    if (it == T.pinned.end() || !it->second.allocated) return CUDA_ERROR_INVALID_VALUE;
    munmap(p, roundUp(it->second.size, getpagesize()));
    T.pinned.erase(it);
    return afterWork(ctx);
}

PANAMAX_CUDA_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |
                           CU_MEMHOSTREGISTER_READ_ONLY;
    if (p == nullptr || bytesize == 0 || (Flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_MEMHOSTREGISTER_IOMEMORY) != 0) return CUDA_ERROR_NOT_SUPPORTED;
    uintptr_t base = reinterpret_cast<uintptr_t>(p);
    if (inDeviceSpace(base, bytesize)) return CUDA_ERROR_INVALID_VALUE;
    // The whole range must be mapped host memory: msync fails with ENOMEM on a hole.
    uintptr_t page = static_cast<uintptr_t>(getpagesize());
    uintptr_t first = base / page * page;
    if (msync(reinterpret_cast<void*>(first), roundUp(base + bytesize, page) - first, MS_ASYNC) != 0) {
        note("cuMemHostRegister_v2: [%p, +%zu) is not mapped host memory", p, bytesize);
        return CUDA_ERROR_INVALID_VALUE;
    }
    std::lock_guard<std::mutex> lock(T.m);
    auto next = T.pinned.lower_bound(base);
    if (next != T.pinned.end() && next->first < base + bytesize) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    if (next != T.pinned.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second.size > base) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    T.pinned[base] = HostRange{base, bytesize, false, ctx};
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuMemHostUnregister(void* p) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(T.m);
    auto it = T.pinned.find(reinterpret_cast<uintptr_t>(p));
    if (it == T.pinned.end() || it->second.allocated) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    T.pinned.erase(it);
    return CUDA_SUCCESS;
}

// ---- inter-process memory ----

namespace {

// The 64 bytes of an emulated CUipcMemHandle.
struct IpcHandle {
    char magic[8];
    int32_t pid;
    int32_t fd;
    uint64_t bytes;
    uint64_t tag;
    char unused[CU_IPC_HANDLE_SIZE - 32];
};
static_assert(sizeof(IpcHandle) == CU_IPC_HANDLE_SIZE, "an IPC handle has 64 bytes");

}  // namespace

PANAMAX_CUDA_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (pHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(T.m);
    auto it = T.allocations.find(dptr);
    if (it == T.allocations.end() || it->second->ipc) {
        note("cuIpcGetMemHandle: 0x%llx is not the base of an allocation of this process",
             static_cast<unsigned long long>(dptr));
        return CUDA_ERROR_INVALID_VALUE;
    }
    IpcHandle h{};
    memcpy(h.magic, kIpcMagic, sizeof h.magic);
    h.pid = getpid();
    h.fd = it->second->fd;
    h.bytes = it->second->mappedBytes;
    h.tag = it->second->tag;
    memcpy(pHandle, &h, sizeof h);
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (pdptr == nullptr || Flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) return CUDA_ERROR_INVALID_VALUE;
    IpcHandle h;
    memcpy(&h, &handle, sizeof h);
    if (memcmp(h.magic, kIpcMagic, sizeof h.magic) != 0 || h.bytes == 0 || h.bytes % kGranularity != 0) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (h.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;  // as the driver: not in the exporting process
    std::lock_guard<std::mutex> lock(T.m);
    for (auto& entry : T.allocations) {
        Allocation& a = *entry.second;
        if (a.ipc && a.ctx == ctx && a.exporter == h.pid && a.tag == h.tag) {
            a.ipcOpens++;  // opened before by this context: the same mapping, counted
            *pdptr = a.base;
            return CUDA_SUCCESS;
        }
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", h.pid, h.fd);
    char target[256] = {0};
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0 || strstr(target, memfdName(h.tag).c_str()) == nullptr) {
        note("cuIpcOpenMemHandle_v2: the exported allocation is gone (%s: %s)", path,
             n < 0 ? strerror(errno) : target);
        return CUDA_ERROR_MAP_FAILED;
    }
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != h.bytes) {
        note("cuIpcOpenMemHandle_v2: cannot open %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return CUDA_ERROR_MAP_FAILED;
    }
    CUdeviceptr base;
    if (!reserveLocked(h.bytes, base)) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    auto a = std::make_shared<Allocation>();
    a->shadow = mapShadow(fd, h.bytes, a->shadowSpan);
    close(fd);
    if (a->shadow == nullptr) return CUDA_ERROR_MAP_FAILED;
    a->base = base;
    a->size = h.bytes;  // the mapping's size is the exported allocation's, rounded up
    a->mappedBytes = h.bytes;
    a->ctx = ctx;
    a->ipc = true;
    a->tag = h.tag;
    a->exporter = h.pid;
    a->ipcOpens = 1;
    T.allocations[base] = a;
    *pdptr = base;
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(T.m);
    auto it = T.allocations.find(dptr);
    if (it == T.allocations.end() || !it->second->ipc || it->second->ctx != ctx) return CUDA_ERROR_INVALID_VALUE;
    if (--it->second->ipcOpens == 0) {
        // Unmapped when no queued operation holds it any more; operations queued after this fail.
        it->second->live = false;
        T.allocations.erase(it);
    }
    return CUDA_SUCCESS;
}

// ---- modules and kernels ----

PANAMAX_CUDA_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const char* bytes = static_cast<const char*>(image);
    // PTX is NUL-terminated text: read up to the NUL (a page at a time, so that the read stops
    // at the end of readable memory), and refuse anything that is not text.
    std::string text;
    const size_t page = static_cast<size_t>(getpagesize());
    for (;;) {
        const char* at = bytes + text.size();
        size_t chunk = page - reinterpret_cast<uintptr_t>(at) % page;
        char buffer[65536];
        if (text.size() >= kMaxImageBytes || !copyFromHost(buffer, at, chunk)) {
            note("cuModuleLoadData: no terminating NUL within readable memory");
            return CUDA_ERROR_INVALID_IMAGE;
        }
        if (text.empty() && chunk >= 4) {
            static const unsigned char kFatbin[4] = {0x50, 0xed, 0x55, 0xba};
            if (memcmp(buffer, "\x7f" "ELF", 4) == 0 || memcmp(buffer, kFatbin, 4) == 0) {
                note("cuModuleLoadData: only PTX text is emulated, not cubin or fatbin images");
                return CUDA_ERROR_NOT_SUPPORTED;
            }
        }
        size_t n = strnlen(buffer, chunk);
        for (size_t i = 0; i < n; i++) {
            unsigned char c = static_cast<unsigned char>(buffer[i]);
            if (c >= 0x80 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t')) {
                note("cuModuleLoadData: byte %zu (0x%02x) is not PTX text (is the image NUL-terminated?)",
                     text.size() + i, c);
                return CUDA_ERROR_INVALID_PTX;
            }
        }
        text.append(buffer, n);
        if (n < chunk) break;
    }
    auto m = std::make_shared<Module>();
    if ((rc = parsePtx(text, m->entries)) != CUDA_SUCCESS) return rc;
    m->ctx = ctx;
    std::lock_guard<std::mutex> lock(T.m);
    m->handle = makeHandle(Kind::Module, ++T.serial);
    T.modules[m->handle] = m;
    *module = reinterpret_cast<CUmodule>(m->handle);
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(T.m);
    auto it = T.modules.find(reinterpret_cast<uint64_t>(hmod));
    if (it == T.modules.end() || it->second->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
    it->second->loaded = false;
    for (const auto& f : it->second->functions) T.functions.erase(f.second);
    T.modules.erase(it);
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(T.m);
    auto it = T.modules.find(reinterpret_cast<uint64_t>(hmod));
    if (it == T.modules.end() || it->second->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
    std::shared_ptr<Module> m = it->second;
    auto known = m->functions.find(name);
    if (known != m->functions.end()) {
        *hfunc = reinterpret_cast<CUfunction>(known->second);
        return CUDA_SUCCESS;
    }
    const Entry* entry = nullptr;
    for (const Entry& e : m->entries) {
        if (e.name == name) entry = &e;
    }
    if (entry == nullptr) return CUDA_ERROR_NOT_FOUND;
    const EmulatedKernel* kernel = emulatedKernel(name);
    if (kernel == nullptr) {
        note("cuModuleGetFunction: the PTX declares %s, but the emulation has no host version of it", name);
        return CUDA_ERROR_NOT_FOUND;
    }
    if (entry->paramBytes != expectedParams(*kernel)) {
        note("cuModuleGetFunction: the PTX's %s takes other parameters than the emulated reduce.cu", name);
        return CUDA_ERROR_NOT_FOUND;
    }
    auto f = std::make_shared<Function>();
    f->handle = makeHandle(Kind::Function, ++T.serial);
    f->module = m;
    f->entry = entry;
    f->kernel = kernel;
    T.functions[f->handle] = f;
    m->functions[name] = f->handle;
    *hfunc = reinterpret_cast<CUfunction>(f->handle);
    return CUDA_SUCCESS;
}

PANAMAX_CUDA_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                            unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                            unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                            void** kernelParams, void** extra) {
    Context* ctx;
    CUresult rc = current(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    std::shared_ptr<Function> fn;
    {
        std::lock_guard<std::mutex> lock(T.m);
        auto it = T.functions.find(reinterpret_cast<uint64_t>(f));
        if (it == T.functions.end() || !it->second->module->loaded.load()) return CUDA_ERROR_INVALID_HANDLE;
        if (it->second->module->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
        fn = it->second;
    }
    if (gridDimX == 0 || gridDimY == 0 || gridDimZ == 0 || gridDimY > 65535 || gridDimZ > 65535 ||
        gridDimX > 2147483647u) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (blockDimX == 0 || blockDimY == 0 || blockDimZ == 0 || blockDimX > 1024 || blockDimY > 1024 ||
        blockDimZ > 64) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t threads = static_cast<uint64_t>(blockDimX) * blockDimY * blockDimZ;
    if (threads > kMaxThreadsPerBlock) return CUDA_ERROR_INVALID_VALUE;
    if (fn->entry->maxThreads != 0 && threads > fn->entry->maxThreads) {
        note("cuLaunchKernel(%s): %llu threads per block, the kernel declares .maxntid %u", fn->entry->name.c_str(),
             static_cast<unsigned long long>(threads), fn->entry->maxThreads);
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    }
    if (sharedMemBytes > kMaxSharedPerBlock) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Stream> s;
    if ((rc = resolveStream(ctx, hStream, s)) != CUDA_SUCCESS) return rc;
    if (extra != nullptr) {
        if (kernelParams != nullptr) return CUDA_ERROR_INVALID_VALUE;
        note("cuLaunchKernel: parameters through `extra` are not emulated");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    const std::vector<unsigned>& sizes = fn->entry->paramBytes;
    if (kernelParams == nullptr && !sizes.empty()) return CUDA_ERROR_INVALID_VALUE;
    // The driver copies the argument values during the call: the caller may free them on return.
    unsigned char values[3][8] = {};
    for (size_t i = 0; i < sizes.size(); i++) {
        void* p = nullptr;
        if (!copyFromHost(&p, kernelParams + i, sizeof p) || p == nullptr || !copyFromHost(values[i], p, sizes[i])) {
            note("cuLaunchKernel(%s): kernelParams[%zu] does not point at a readable value", fn->entry->name.c_str(), i);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    KernelArgs args;
    memcpy(&args.inout, values[0], 8);
    if (fn->kernel->kind == KernelKind::Reduce) {
        memcpy(&args.in, values[1], 8);
        memcpy(&args.count, values[2], 8);
    } else {
        memcpy(&args.count, values[1], 8);
        memcpy(&args.divisor, values[2], 4);
    }
    // Operands are checked when the kernel runs, as the device would find them: a bad one is a
    // sticky CUDA_ERROR_ILLEGAL_ADDRESS at the next synchronization, not an error of the launch.
    std::shared_ptr<Allocation> inout = find(args.inout, 0);
    std::shared_ptr<Allocation> in = fn->kernel->kind == KernelKind::Reduce ? find(args.in, 0) : nullptr;
    LaunchShape shape{{gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}};
    enqueue(s, Op{"cuLaunchKernel",
                  [ctx, fn, shape, args, inout, in] {
                      const char* name = fn->entry->name.c_str();
                      if (!fn->module->loaded.load()) {
                          setSticky(ctx, CUDA_ERROR_LAUNCH_FAILED, "kernel %s: its module was unloaded before it ran",
                                    name);
                          return;
                      }
                      const unsigned es = fn->kernel->elementBytes;
                      const uint64_t bytes = args.count * es;
                      if (args.count != 0 && (bytes / es != args.count ||
                                              !operandOk(ctx, inout, args.inout, bytes, es, name, "inout") ||
                                              (fn->kernel->kind == KernelKind::Reduce &&
                                               !operandOk(ctx, in, args.in, bytes, es, name, "in")))) {
                          return;
                      }
                      void* hostInout = args.count != 0 ? inout->at(args.inout) : nullptr;
                      const void* hostIn =
                          args.count != 0 && fn->kernel->kind == KernelKind::Reduce ? in->at(args.in) : nullptr;
                      fn->kernel->run(shape, hostInout, hostIn, args.count, args.divisor);
                  },
                  true, {}, nullptr, 0});
    return afterWork(ctx);
}
