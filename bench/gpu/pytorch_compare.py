"""PyTorch's side of the GPU comparison, run on the same GPU as our benchmarks.

1. torch.cuda.caching_allocator_alloc / caching_allocator_delete, cached pair, for the
   sizes bench/native/gpu_bench.cpp uses (ns per pair, from Python).
2. PR #172672's workload: history on, a MemPool, 1000 x 4 KiB (torch.randn(1024)) allocated
   inside it and deleted; memory_snapshot with and without traces, 10 warm-up and 10 timed.
Prints one JSON object. Needs torch with CUDA; otherwise prints why and exits 0.
"""
import json
import sys
import time

from cuda_torch import cuda_torch


def main() -> None:
    torch = cuda_torch()
    if torch is None:
        return
    out = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0),
        "python": sys.version.split()[0],
        "pairs_ns": {},
    }
    stream = torch.cuda.Stream()
    for size in [512, 4096, 65536, 1 << 20, 4 << 20, 32 << 20]:
        p = torch.cuda.caching_allocator_alloc(size, 0, stream)
        torch.cuda.caching_allocator_delete(p)
        runs = []
        for _ in range(5):
            n = 200_000
            t0 = time.perf_counter_ns()
            for _ in range(n):
                torch.cuda.caching_allocator_delete(torch.cuda.caching_allocator_alloc(size, 0, stream))
            runs.append((time.perf_counter_ns() - t0) / n)
        out["pairs_ns"][str(size)] = sorted(runs)[2]

    torch.cuda.empty_cache()
    torch.cuda.memory._record_memory_history()
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        tensors = [torch.randn(1024, device="cuda") for _ in range(1000)]
    del tensors

    def timed(f):
        for _ in range(10):
            f()
        t0 = time.perf_counter()
        for _ in range(10):
            f()
        return (time.perf_counter() - t0) / 10 * 1000

    has_flag = "include_traces" in torch.cuda.memory.memory_snapshot.__code__.co_varnames
    out["snapshot_ms"] = {
        "global_with_traces": timed(lambda: torch.cuda.memory_snapshot()),
        "pool_with_traces": timed(lambda: pool.snapshot()),
    }
    if has_flag:
        out["snapshot_ms"]["global_without_traces"] = timed(lambda: torch.cuda.memory_snapshot(include_traces=False))
        out["snapshot_ms"]["pool_without_traces"] = timed(lambda: pool.snapshot(include_traces=False))
    else:
        out["snapshot_ms"]["note"] = "this torch has no include_traces option"
    out["trace_entries"] = len(torch.cuda.memory._snapshot()["device_traces"][0])
    torch.cuda.memory._record_memory_history(enabled=None)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
