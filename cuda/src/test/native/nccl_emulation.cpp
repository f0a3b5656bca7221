// A host emulation of NCCL (libnccl.so.2) for communicators of one rank, on top of the CUDA driver
// emulation (cuda_emulation.cpp, which it links against as libcuda.so.1): the API of the
// project's nccl.h (bindings/src/main/native/nccl/nccl.h, NCCL 2.18), strict like the real
// library where Panamax's use of it can go wrong:
//
//  - arguments are checked as NCCL checks them (communicator, data type, operator, root or peer,
//    device pointers that hold the elements: ncclInvalidArgument);
//  - a non-blocking communicator (config.blocking = 0) behaves as the NCCL documentation says:
//    creation, operations, ncclGroupEnd and ncclCommFinalize return ncclInProgress and are done
//    by a background thread; until ncclCommGetAsyncError reports ncclSuccess nothing has reached
//    the stream, and calling another NCCL function on the communicator is ncclInvalidUsage;
//  - operations are enqueued on the given CUstream through the CUDA emulation, so they are as
//    asynchronous as the kernels and copies there;
//  - ncclSend and ncclRecv to itself must be paired within a group.
//
// With one rank every collective is a copy (or nothing, in place), AVG included. A communicator
// of more ranks never completes its creation (the other ranks cannot join an emulation): a
// non-blocking one stays ncclInProgress until aborted, a blocking one is ncclInvalidUsage.
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cuda_driver.h"
// The project's nccl.h is a C header without C++ guards.
extern "C" {
#include "nccl.h"
}

#define PANAMAX_NCCL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr char kIdMagic[8] = {'P', 'N', 'X', 'N', 'C', 'C', 'L', 'I'};
constexpr int kNumTypes = 10;  // ncclInt8 .. ncclBfloat16: the data types of NCCL 2.18
constexpr int kNumOps = 5;     // ncclSum .. ncclAvg

// ncclGetLastError's text: one per process, as NCCL's.
std::mutex gLastErrorLock;
char gLastError[1024];

void setLastError(const char* format, ...) __attribute__((format(printf, 1, 2)));
void setLastError(const char* format, ...) {
    std::lock_guard<std::mutex> lock(gLastErrorLock);
    va_list args;
    va_start(args, format);
    vsnprintf(gLastError, sizeof gLastError, format, args);
    va_end(args);
}

long delayMicros() {
    static const long delay = [] {
        const char* v = getenv("PANAMAX_NCCL_EMULATION_DELAY_US");
        long x = v != nullptr && *v != '\0' ? strtol(v, nullptr, 10) : 1000;
        return x >= 0 ? x : 1000;
    }();
    return delay;
}

size_t typeBytes(int type) {
    switch (type) {
        case ncclInt8:
        case ncclUint8:
            return 1;
        case ncclFloat16:
        case ncclBfloat16:
            return 2;
        case ncclInt32:
        case ncclUint32:
        case ncclFloat32:
            return 4;
        default:
            return 8;  // ncclInt64, ncclUint64, ncclFloat64
    }
}

const char* cudaName(CUresult rc) {
    const char* name = nullptr;
    return cuGetErrorName(rc, &name) == CUDA_SUCCESS && name != nullptr ? name : "CUresult ?";
}

enum class Kind { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, Send, Recv };

const char* kindName(Kind k) {
    switch (k) {
        case Kind::AllReduce: return "ncclAllReduce";
        case Kind::ReduceScatter: return "ncclReduceScatter";
        case Kind::AllGather: return "ncclAllGather";
        case Kind::Broadcast: return "ncclBroadcast";
        case Kind::Reduce: return "ncclReduce";
        case Kind::Send: return "ncclSend";
        case Kind::Recv: return "ncclRecv";
    }
    return "?";
}

struct Comm;

struct Operation {
    Kind kind;
    std::shared_ptr<Comm> comm;
    CUdeviceptr send;
    CUdeviceptr recv;
    size_t bytes;  // of one rank's block
    int type;
    int peer;
    CUstream stream;
};

struct Comm {
    uint64_t handle = 0;
    int nranks = 0;
    int rank = 0;
    CUcontext ctx = nullptr;
    int device = 0;
    bool blocking = true;
    std::mutex m;
    std::condition_variable changed;
    std::deque<std::function<ncclResult_t()>> tasks;  // the background thread's work
    int pending = 0;                                  // queued or running tasks
    bool waitingForPeers = false;                     // more than one rank: never ready
    bool finalized = false;
    bool stop = false;
    ncclResult_t error = ncclSuccess;
    std::thread worker;

    ncclResult_t stateLocked() const {
        if (error != ncclSuccess) return error;
        return pending > 0 || waitingForPeers ? ncclInProgress : ncclSuccess;
    }
};

std::mutex gCommsLock;
std::unordered_map<uint64_t, std::shared_ptr<Comm>> gComms;
uint64_t gSerial = 0;

std::shared_ptr<Comm> findComm(ncclComm_t h) {
    std::lock_guard<std::mutex> lock(gCommsLock);
    auto it = gComms.find(reinterpret_cast<uint64_t>(h));
    return it == gComms.end() ? nullptr : it->second;
}

// Makes the communicator's context current on this thread for the duration, as NCCL sets its
// device: the caller's current context does not matter.
class ContextScope {
public:
    explicit ContextScope(CUcontext ctx) {
        cuCtxGetCurrent(&saved_);
        cuCtxSetCurrent(ctx);
    }
    ~ContextScope() { cuCtxSetCurrent(saved_); }
    ContextScope(const ContextScope&) = delete;
    ContextScope& operator=(const ContextScope&) = delete;

private:
    CUcontext saved_ = nullptr;
};

// The background thread of a non-blocking communicator: runs its tasks, each after a delay.
void workerLoop(std::shared_ptr<Comm> c) {
    cuCtxSetCurrent(c->ctx);
    std::unique_lock<std::mutex> lock(c->m);
    for (;;) {
        c->changed.wait(lock, [&] { return c->stop || !c->tasks.empty(); });
        if (c->stop) break;
        std::function<ncclResult_t()> task = std::move(c->tasks.front());
        c->tasks.pop_front();
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::microseconds(delayMicros()));
        ncclResult_t rc = task();
        lock.lock();
        if (rc != ncclSuccess && c->error == ncclSuccess) c->error = rc;
        c->pending--;
        c->changed.notify_all();
    }
}

void post(const std::shared_ptr<Comm>& c, std::function<ncclResult_t()> task) {
    std::lock_guard<std::mutex> lock(c->m);
    c->tasks.push_back(std::move(task));
    c->pending++;
    c->changed.notify_all();
}

void stopWorker(const std::shared_ptr<Comm>& c, bool drain) {
    {
        std::unique_lock<std::mutex> lock(c->m);
        if (drain) c->changed.wait(lock, [&] { return c->pending == 0; });
        c->pending -= static_cast<int>(c->tasks.size());
        c->tasks.clear();
        c->stop = true;
        c->changed.notify_all();
    }
    if (c->worker.joinable()) c->worker.join();
}

// The checks NCCL makes before it enqueues anything.
ncclResult_t checkComm(const std::shared_ptr<Comm>& c, const char* call) {
    if (c == nullptr) {
        setLastError("%s: invalid communicator", call);
        return ncclInvalidArgument;
    }
    std::lock_guard<std::mutex> lock(c->m);
    if (c->error != ncclSuccess) {
        setLastError("%s: the communicator has an error (%d); abort it", call, c->error);
        return ncclInvalidUsage;
    }
    if (c->pending > 0 || c->waitingForPeers) {
        setLastError("%s: the communicator is still ncclInProgress; wait until ncclCommGetAsyncError reports "
                     "ncclSuccess before the next call", call);
        return ncclInvalidUsage;
    }
    if (c->finalized) {
        setLastError("%s: the communicator is finalized", call);
        return ncclInvalidUsage;
    }
    return ncclSuccess;
}

ncclResult_t checkBuffer(const std::shared_ptr<Comm>& c, const void* p, size_t bytes, const char* call,
                         const char* role) {
    if (p == nullptr) {
        setLastError("%s: %s is NULL", call, role);
        return ncclInvalidArgument;
    }
    ContextScope scope(c->ctx);
    CUdeviceptr base = 0;
    size_t size = 0;
    CUdeviceptr at = reinterpret_cast<CUdeviceptr>(p);
    CUresult rc = cuMemGetAddressRange_v2(&base, &size, at);
    if (rc != CUDA_SUCCESS || at - base > size || bytes > size - (at - base)) {
        setLastError("%s: %s %p (%zu bytes) is not device memory of the communicator's context", call, role, p, bytes);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

ncclResult_t cudaFailed(const char* call, CUresult rc) {
    setLastError("%s: a CUDA call failed: %s", call, cudaName(rc));
    return ncclUnhandledCudaError;
}

CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
    if (dst == src || bytes == 0) return CUDA_SUCCESS;
    return cuMemcpyDtoDAsync_v2(dst, src, bytes, stream);
}

// Puts a group's (or a single call's) operations on their streams, with the communicator's context
// current. With one rank, each collective moves the rank's own block.
ncclResult_t issue(const std::vector<Operation>& ops) {
    std::vector<const Operation*> sends, recvs;
    for (const Operation& op : ops) {
        ContextScope scope(op.comm->ctx);
        CUresult rc = CUDA_SUCCESS;
        switch (op.kind) {
            case Kind::AllReduce:
            case Kind::ReduceScatter:
            case Kind::AllGather:
            case Kind::Broadcast:
            case Kind::Reduce:
                rc = copy(op.recv, op.send, op.bytes, op.stream);
                break;
            case Kind::Send:
                sends.push_back(&op);
                break;
            case Kind::Recv:
                recvs.push_back(&op);
                break;
        }
        if (rc != CUDA_SUCCESS) return cudaFailed(kindName(op.kind), rc);
    }
    // Point-to-point to itself: the i-th send of a communicator meets its i-th receive.
    for (const Operation* r : recvs) {
        const Operation* s = nullptr;
        for (auto it = sends.begin(); it != sends.end(); ++it) {
            if ((*it)->comm == r->comm) {
                s = *it;
                sends.erase(it);
                break;
            }
        }
        ContextScope scope(r->comm->ctx);
        CUresult rc;
        if (s->stream == r->stream) {
            rc = copy(r->recv, s->send, r->bytes, r->stream);
        } else {
            // Each side's stream waits for the other: the receive starts after the send's earlier
            // work, and the send completes with the copy.
            CUevent sent = nullptr, received = nullptr;
            rc = cuEventCreate(&sent, CU_EVENT_DISABLE_TIMING);
            if (rc == CUDA_SUCCESS) rc = cuEventCreate(&received, CU_EVENT_DISABLE_TIMING);
            if (rc == CUDA_SUCCESS) rc = cuEventRecord(sent, s->stream);
            if (rc == CUDA_SUCCESS) rc = cuStreamWaitEvent(r->stream, sent, 0);
            if (rc == CUDA_SUCCESS) rc = copy(r->recv, s->send, r->bytes, r->stream);
            if (rc == CUDA_SUCCESS) rc = cuEventRecord(received, r->stream);
            if (rc == CUDA_SUCCESS) rc = cuStreamWaitEvent(s->stream, received, 0);
            if (sent != nullptr) cuEventDestroy_v2(sent);
            if (received != nullptr) cuEventDestroy_v2(received);
        }
        if (rc != CUDA_SUCCESS) return cudaFailed("ncclSend/ncclRecv", rc);
    }
    return ncclSuccess;
}

// The calling thread's group: its depth and the operations collected in it.
struct Group {
    int depth = 0;
    std::vector<Operation> ops;
};
thread_local Group tGroup;

// Runs ops now (blocking communicator) or in the background (non-blocking).
ncclResult_t launch(const std::shared_ptr<Comm>& c, std::vector<Operation> ops) {
    if (c->blocking) return issue(ops);
    post(c, [ops] { return issue(ops); });
    return ncclInProgress;
}

ncclResult_t enqueue(Operation op) {
    const char* call = kindName(op.kind);
    ncclResult_t rc = checkComm(op.comm, call);
    if (rc != ncclSuccess) return rc;
    const std::shared_ptr<Comm>& c = op.comm;
    if (op.type < 0 || op.type >= kNumTypes) {
        setLastError("%s: invalid data type %d", call, op.type);
        return ncclInvalidArgument;
    }
    if (op.peer < 0 || op.peer >= c->nranks) {
        setLastError("%s: invalid %s %d (nranks %d)", call,
                     op.kind == Kind::Send || op.kind == Kind::Recv ? "peer" : "root", op.peer, c->nranks);
        return ncclInvalidArgument;
    }
    if (op.bytes != 0) {
        // One rank: every buffer holds one block, except reduce-scatter's input and all-gather's
        // output, which hold nranks blocks.
        size_t sendBytes = op.kind == Kind::ReduceScatter ? op.bytes * c->nranks : op.bytes;
        size_t recvBytes = op.kind == Kind::AllGather ? op.bytes * c->nranks : op.bytes;
        bool readsSend = op.kind != Kind::Recv && (op.kind != Kind::Broadcast || op.peer == c->rank);
        bool writesRecv = op.kind != Kind::Send && (op.kind != Kind::Reduce || op.peer == c->rank);
        if (readsSend && (rc = checkBuffer(c, reinterpret_cast<void*>(op.send), sendBytes, call, "sendbuff")) != ncclSuccess) {
            return rc;
        }
        if (writesRecv && (rc = checkBuffer(c, reinterpret_cast<void*>(op.recv), recvBytes, call, "recvbuff")) != ncclSuccess) {
            return rc;
        }
    }
    // The rank's own block: in place when sendbuff is that block of recvbuff (all-gather) or
    // recvbuff that block of sendbuff (reduce-scatter).
    if (op.kind == Kind::AllGather) op.recv += op.bytes * c->rank;
    if (op.kind == Kind::ReduceScatter) op.send += op.bytes * c->rank;
    if (tGroup.depth > 0) {
        tGroup.ops.push_back(std::move(op));
        return ncclSuccess;
    }
    if (op.kind == Kind::Send || op.kind == Kind::Recv) {
        // Outside a group a send to itself waits forever for its receive.
        setLastError("%s to itself outside ncclGroupStart/ncclGroupEnd can never match its counterpart "
                     "(NCCL would hang)", call);
        return ncclInvalidUsage;
    }
    if (op.bytes == 0) return ncclSuccess;
    return launch(c, {op});
}

ncclResult_t initialize(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config,
                        const char* call) {
    if (comm == nullptr) {
        setLastError("%s: comm is NULL", call);
        return ncclInvalidArgument;
    }
    *comm = nullptr;
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        setLastError("%s: invalid rank %d of %d", call, rank, nranks);
        return ncclInvalidArgument;
    }
    if (memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0) {
        setLastError("%s: the unique id was not made by ncclGetUniqueId", call);
        return ncclInvalidArgument;
    }
    bool blocking = true;
    if (config != nullptr) {
        if (config->magic != NCCL_CONFIG_MAGIC || config->size < offsetof(ncclConfig_t, blocking) + sizeof(int)) {
            setLastError("%s: the config was not initialized with NCCL_CONFIG_INITIALIZER", call);
            return ncclInvalidArgument;
        }
        if (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1) {
            setLastError("%s: config.blocking must be 0 or 1, not %d", call, config->blocking);
            return ncclInvalidArgument;
        }
        blocking = config->blocking != 0;
    }
    CUcontext ctx = nullptr;
    CUdevice device = 0;
    if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr || cuCtxGetDevice(&device) != CUDA_SUCCESS) {
        setLastError("%s: no CUDA context is current on this thread: NCCL binds the communicator to the current "
                     "device", call);
        return ncclInvalidUsage;
    }
    if (nranks > 1 && blocking) {
        setLastError("%s: the NCCL emulation is single-rank: a blocking communicator of %d ranks would wait forever "
                     "for ranks that cannot join", call, nranks);
        return ncclInvalidUsage;
    }
    auto c = std::make_shared<Comm>();
    c->nranks = nranks;
    c->rank = rank;
    c->ctx = ctx;
    c->device = device;
    c->blocking = blocking;
    {
        std::lock_guard<std::mutex> lock(gCommsLock);
        c->handle = 0xCC10000000000000ull | ++gSerial;
        gComms[c->handle] = c;
    }
    *comm = reinterpret_cast<ncclComm_t>(c->handle);
    if (blocking) return ncclSuccess;
    c->worker = std::thread(workerLoop, c);
    if (nranks > 1) {
        std::lock_guard<std::mutex> lock(c->m);
        c->waitingForPeers = true;
        setLastError("%s: the NCCL emulation is single-rank: rank %d of %d waits for ranks that cannot join", call,
                     rank, nranks);
        return ncclInProgress;
    }
    post(c, [] { return ncclSuccess; });  // the set-up, done in the background
    return ncclInProgress;
}

uint64_t randomBits() {
    static std::mutex m;
    static std::mt19937_64 random{std::random_device{}()};
    std::lock_guard<std::mutex> lock(m);
    return random();
}

}  // namespace

PANAMAX_NCCL_EXPORT ncclResult_t ncclGetVersion(int* version) {
    if (version == nullptr) return ncclInvalidArgument;
    // The libcuda.so.1 this library was loaded with must be the emulation: a real driver has no
    // such symbol, and with -z now the library would not even have loaded.
    if (panamax_cuda_emulation() != 1) return ncclSystemError;
    // The emulation implements the API level of the project's nccl.h.
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

PANAMAX_NCCL_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
    switch (result) {
        case ncclSuccess: return "no error";
        case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
        case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
        case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
        case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
        case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
        case ncclRemoteError: return "remote process exited or there was a network error";
        case ncclInProgress: return "NCCL operation in progress";
        default: return "unknown result code";
    }
}

PANAMAX_NCCL_EXPORT const char* ncclGetLastError(ncclComm_t) {
    return gLastError;
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
    if (uniqueId == nullptr) return ncclInvalidArgument;
    memset(uniqueId, 0, sizeof *uniqueId);
    memcpy(uniqueId->internal, kIdMagic, sizeof kIdMagic);
    int32_t pid = getpid();
    uint64_t a = randomBits(), b = randomBits();
    memcpy(uniqueId->internal + 8, &pid, sizeof pid);
    memcpy(uniqueId->internal + 16, &a, sizeof a);
    memcpy(uniqueId->internal + 24, &b, sizeof b);
    return ncclSuccess;
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
    return initialize(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                        ncclConfig_t* config) {
    return initialize(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
    std::shared_ptr<Comm> c = findComm(comm);
    if (c == nullptr || asyncError == nullptr) {
        setLastError("ncclCommGetAsyncError: invalid %s", c == nullptr ? "communicator" : "asyncError pointer");
        return ncclInvalidArgument;
    }
    std::lock_guard<std::mutex> lock(c->m);
    *asyncError = c->stateLocked();
    return ncclSuccess;
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    std::shared_ptr<Comm> c = findComm(comm);
    ncclResult_t rc = checkComm(c, "ncclCommFinalize");
    if (rc != ncclSuccess) return rc;
    if (c->blocking) {
        std::lock_guard<std::mutex> lock(c->m);
        c->finalized = true;
        return ncclSuccess;
    }
    {
        std::lock_guard<std::mutex> lock(c->m);
        c->finalized = true;  // no operation may follow; the flush completes in the background
    }
    post(c, [] { return ncclSuccess; });
    return ncclInProgress;
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    std::shared_ptr<Comm> c;
    {
        std::lock_guard<std::mutex> lock(gCommsLock);
        auto it = gComms.find(reinterpret_cast<uint64_t>(comm));
        if (it == gComms.end()) {
            setLastError("ncclCommDestroy: invalid communicator");
            return ncclInvalidArgument;
        }
        c = it->second;
        gComms.erase(it);
    }
    stopWorker(c, true);  // what was issued completes first
    return ncclSuccess;
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
    std::shared_ptr<Comm> c;
    {
        std::lock_guard<std::mutex> lock(gCommsLock);
        auto it = gComms.find(reinterpret_cast<uint64_t>(comm));
        if (it == gComms.end()) {
            setLastError("ncclCommAbort: invalid communicator");
            return ncclInvalidArgument;
        }
        c = it->second;
        gComms.erase(it);
    }
    stopWorker(c, false);  // what has not been issued yet never is
    return ncclSuccess;
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
    std::shared_ptr<Comm> c = findComm(comm);
    if (c == nullptr || count == nullptr) return ncclInvalidArgument;
    *count = c->nranks;
    return ncclSuccess;
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
    std::shared_ptr<Comm> c = findComm(comm);
    if (c == nullptr || device == nullptr) return ncclInvalidArgument;
    *device = c->device;
    return ncclSuccess;
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
    std::shared_ptr<Comm> c = findComm(comm);
    if (c == nullptr || rank == nullptr) return ncclInvalidArgument;
    *rank = c->rank;
    return ncclSuccess;
}

namespace {

bool validOp(ncclRedOp_t op) {
    return static_cast<int>(op) >= 0 && static_cast<int>(op) < kNumOps;
}

ncclResult_t reduction(Kind kind, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                       ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
    if (!validOp(op)) {
        setLastError("%s: invalid reduction operator %d", kindName(kind), static_cast<int>(op));
        return ncclInvalidArgument;
    }
    int type = static_cast<int>(datatype);
    size_t bytes = type >= 0 && type < kNumTypes ? count * typeBytes(type) : 0;
    return enqueue(Operation{kind, findComm(comm), reinterpret_cast<CUdeviceptr>(sendbuff),
                             reinterpret_cast<CUdeviceptr>(recvbuff), bytes, type, root,
                             reinterpret_cast<CUstream>(stream)});
}

}  // namespace

PANAMAX_NCCL_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                               cudaStream_t stream) {
    // With one rank the result of every operator is the input; root 0 is that rank.
    return reduction(Kind::AllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                                   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                                   cudaStream_t stream) {
    return reduction(Kind::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                            ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                                            cudaStream_t stream) {
    return reduction(Kind::Reduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                               ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
    return reduction(Kind::AllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream);
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                               ncclDataType_t datatype, int root, ncclComm_t comm,
                                               cudaStream_t stream) {
    return reduction(Kind::Broadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                          ncclComm_t comm, cudaStream_t stream) {
    return reduction(Kind::Send, sendbuff, nullptr, count, datatype, ncclSum, peer, comm, stream);
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                          ncclComm_t comm, cudaStream_t stream) {
    return reduction(Kind::Recv, nullptr, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclGroupStart(void) {
    tGroup.depth++;
    return ncclSuccess;
}

PANAMAX_NCCL_EXPORT ncclResult_t ncclGroupEnd(void) {
    if (tGroup.depth == 0) {
        setLastError("ncclGroupEnd: no group was started on this thread");
        return ncclInvalidUsage;
    }
    if (--tGroup.depth > 0) return ncclSuccess;
    std::vector<Operation> ops = std::move(tGroup.ops);
    tGroup.ops.clear();
    // Every send to itself needs a receive of the same size, and the other way round.
    std::vector<std::shared_ptr<Comm>> comms;
    for (const Operation& op : ops) {
        if (std::find(comms.begin(), comms.end(), op.comm) == comms.end()) comms.push_back(op.comm);
    }
    for (const auto& c : comms) {
        std::vector<size_t> sends, recvs;
        for (const Operation& op : ops) {
            if (op.comm != c) continue;
            if (op.kind == Kind::Send) sends.push_back(op.bytes);
            if (op.kind == Kind::Recv) recvs.push_back(op.bytes);
        }
        if (sends != recvs) {
            setLastError("ncclGroupEnd: the group's %zu send(s) and %zu receive(s) to itself do not pair up with "
                         "equal sizes (NCCL would hang or fail)", sends.size(), recvs.size());
            return ncclInvalidUsage;
        }
        ncclResult_t rc = checkComm(c, "ncclGroupEnd");
        if (rc != ncclSuccess) return rc;
    }
    bool inProgress = false;
    for (const auto& c : comms) {
        std::vector<Operation> mine;
        for (const Operation& op : ops) {
            if (op.comm == c && op.bytes != 0) mine.push_back(op);
        }
        if (mine.empty()) continue;
        ncclResult_t rc = launch(c, std::move(mine));
        if (rc == ncclInProgress) {
            inProgress = true;
        } else if (rc != ncclSuccess) {
            return rc;
        }
    }
    return inProgress ? ncclInProgress : ncclSuccess;
}
