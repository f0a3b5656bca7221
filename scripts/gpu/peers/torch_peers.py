"""The PyTorch peers of the GPU benchmarks, measured the same way on the same GPU (scripts/gpu/gpu-bundle-run runs
them in the same call as the Java benchmarks):

  add      torch.Tensor.add_ (in place, a += b) against ReduceBench's reduce kernel, and Tensor.copy_ (device to
           device) against its copy: GB/s (1e9 bytes/s) counting 3 x bytes per add, 2 x bytes per copy; same
           launch counts (about 32 GiB of traffic, at least 40), CUDA events over back-to-back launches on one stream
  copy     pinned host to device, device to host and device to device copies against CudaBench's table (GB/s,
           about 4 GiB moved per size, at least 5 copies, CUDA events)
  nccl     torch.distributed all-reduce with the NCCL backend at world size 1 against CudaBench's one-rank
           latency (8 B-1 MiB, us per call with a synchronize after each, median of 5 runs of 2000) and
           GpuAllReduceBench --ranks 1 --backend nccl (8 B-256 MiB in place, 5 warm-up and 20 timed calls, each
           waited for)

  python3 torch_peers.py [--sections add,copy,nccl] [--max-mib 1024] [--copy-max-mib 256] [--nccl-max-mib 256]
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

MIB = 1 << 20


def events_seconds(launches, work):
    work()
    work()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(launches):
        work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def add(max_mib):
    print("torch add_ vs copy_ (GB/s; add 3 x bytes, copy 2 x bytes per launch; CUDA events on one stream):")
    print("  %-9s %10s %9s %12s %12s %8s" % ("type", "operand", "launches", "add_", "copy_", "ratio"))
    for dtype, name in ((torch.float32, "float32"), (torch.bfloat16, "bfloat16")):
        size = 1
        while size <= max_mib:
            nbytes = size * MIB
            n = nbytes // torch.tensor([], dtype=dtype).element_size()
            a = torch.full((n,), 0.0115, dtype=dtype, device="cuda")
            b = torch.full((n,), 0.0115, dtype=dtype, device="cuda")
            z = torch.empty((n,), dtype=dtype, device="cuda")
            launches = int(max(40, min(10000, (32 << 30) // (3 * nbytes))))
            add_s = events_seconds(launches, lambda: a.add_(b))
            copy_s = events_seconds(launches, lambda: z.copy_(b))
            add_rate = 3.0 * nbytes * launches / add_s / 1e9
            copy_rate = 2.0 * nbytes * launches / copy_s / 1e9
            print("  %-9s %6d MiB %9d %12.1f %12.1f %8.2f" % (name, size, launches, add_rate, copy_rate,
                                                              add_rate / copy_rate), flush=True)
            del a, b, z
            size *= 2
    torch.cuda.empty_cache()


def copy(max_mib):
    print("torch copy bandwidth (GB/s, pinned host memory, CUDA events on one stream):")
    print("  %10s %10s %10s %10s" % ("size", "H->D", "D->H", "D->D"))
    host = torch.ones(max_mib * MIB, dtype=torch.uint8).pin_memory()
    a = torch.full((max_mib * MIB,), 2, dtype=torch.uint8, device="cuda")
    b = torch.empty((max_mib * MIB,), dtype=torch.uint8, device="cuda")
    size = 1
    while size <= max_mib:
        nbytes = size * MIB
        h, da, db = host[:nbytes], a[:nbytes], b[:nbytes]
        reps = int(max(5, min(1000, (4 << 30) // nbytes)))
        h2d = nbytes * reps / events_seconds(reps, lambda: da.copy_(h, non_blocking=True)) / 1e9
        d2h = nbytes * reps / events_seconds(reps, lambda: h.copy_(da, non_blocking=True)) / 1e9
        d2d = nbytes * reps / events_seconds(reps, lambda: db.copy_(da, non_blocking=True)) / 1e9
        print("  %6d MiB %10.1f %10.1f %10.1f" % (size, h2d, d2h, d2d), flush=True)
        size *= 2
    del host, a, b
    torch.cuda.empty_cache()


def nccl(max_mib):
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1,
                            device_id=torch.device("cuda", 0))
    print("torch.distributed NCCL %s, world size 1" % (".".join(str(v) for v in torch.cuda.nccl.version()),))
    print("one-rank all-reduce latency (float32 SUM, in place; us per call incl. synchronize, median of 5 runs):")
    print("  %10s %10s" % ("size", "us"))
    buf = torch.zeros(max(max_mib * MIB, MIB) // 4, dtype=torch.float32, device="cuda")
    nbytes = 8
    while nbytes <= MIB:
        t = buf[: nbytes // 4]
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(2000):
                dist.all_reduce(t)
                torch.cuda.synchronize()
            runs.append((time.perf_counter() - t0) / 2000 * 1e6)
        print("  %8d B %10.2f" % (nbytes, statistics.median(runs)), flush=True)
        nbytes *= 2
    print("# torch.distributed all-reduce, 1 rank, float32 sum, in place, 20 iterations after 5 warm-up")
    print("# %-11s %12s %12s %10s %8s %8s %7s" % ("algo", "size(B)", "count", "time(us)", "algbw", "busbw",
                                                 "#wrong"))
    nbytes = 8
    while nbytes <= max_mib * MIB:
        count = nbytes // 4
        t = buf[:count]
        for _ in range(5):
            dist.all_reduce(t)
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            dist.all_reduce(t)
            torch.cuda.synchronize()
        seconds = (time.perf_counter() - t0) / 20
        expected = (torch.arange(count, device="cuda") % 13 + 1).to(torch.float32)
        t.copy_(expected)
        dist.all_reduce(t)
        wrong = int((t != expected).sum().item())
        print("  %-11s %12d %12d %10.1f %8.2f %8.2f %7d" % ("torch-nccl", nbytes, count, seconds * 1e6,
                                                          nbytes / seconds / 1e9, 0.0, wrong), flush=True)
        nbytes *= 2
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sections", default="add,copy,nccl")
    p.add_argument("--max-mib", type=int, default=1024)
    p.add_argument("--copy-max-mib", type=int, default=256)
    p.add_argument("--nccl-max-mib", type=int, default=256)
    args = p.parse_args()
    print("torch %s on %s" % (torch.__version__, torch.cuda.get_device_name(0)), flush=True)
    sections = {"add": lambda: add(args.max_mib), "copy": lambda: copy(args.copy_max_mib),
                "nccl": lambda: nccl(args.nccl_max_mib)}
    failed = []
    for section in args.sections.split(","):
        try:
            sections[section]()
        except Exception as e:  # one failed section must not hide the others' figures
            print("torch_peers: section %s failed: %r" % (section, e), flush=True)
            failed.append(section)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    os.environ.setdefault("NCCL_DEBUG", "WARN")
    main()
