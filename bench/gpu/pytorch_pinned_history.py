"""What PyTorch records for pinned host memory, where its torch has it: the signature of
_record_memory_history, and with record_pinned_host_memory=True (PyTorch #182407) a small
workload of pinned tensors copied to the GPU, the snapshot's host_segments and host_traces
printed and the snapshot pickled to argv[1], as a fixture for our writer and readers.
"""
import inspect
import json
import pickle
import sys


def main() -> None:
    import torch

    sig = inspect.signature(torch.cuda.memory._record_memory_history)
    print("torch", torch.__version__)
    print("_record_memory_history", sig)
    if "record_pinned_host_memory" not in sig.parameters:
        print("no record_pinned_host_memory in this torch")
        return
    torch.cuda.memory._record_memory_history(max_entries=1000, record_pinned_host_memory=True)
    stream = torch.cuda.Stream()
    keep = []
    for i in range(4):
        host = torch.empty(1000 * (i + 1), pin_memory=True)
        with torch.cuda.stream(stream):
            dev = host.to("cuda", non_blocking=True)
        keep.append(dev)
        del host
    big = torch.empty(5 << 20, dtype=torch.uint8, pin_memory=True)
    stream.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    print("snapshot keys", sorted(snap.keys()))
    for key in ("host_segments", "host_traces"):
        value = snap.get(key)
        print(key, type(value).__name__, len(value) if hasattr(value, "__len__") else "")
        sample = value[:3] if isinstance(value, list) else value
        if isinstance(value, list) and value and isinstance(value[0], list):
            sample = [v[:4] for v in value[:2]]
        print(json.dumps(sample, default=str)[:3000])
    with open(sys.argv[1], "wb") as f:
        pickle.dump(snap, f)
    del big, keep


if __name__ == "__main__":
    main()
