# The network of examples/graph-forward.mjs in PyTorch, eager and captured with
# torch.cuda.graph: 24 layers of 256 -> 256 (relu between), batch 64, float32. Prints the
# CPU time to issue one forward and the forwards per second of each, as JSON, for
# bench/RESULTS.md beside ours. PyTorch's layer is two kernels (cuBLAS GEMM + bias/relu
# epilogue as cuBLAS runs it, or GEMM then relu): its forward issues >= 24 kernels, ours
# exactly 24 (a plain CUDA C++ kernel per layer, which does more arithmetic work per
# launch than cuBLAS); the issue cost per forward is the comparable figure.
#
#   python3 bench/gpu/pytorch_graph_forward.py [forwards]
import json
import resource
import sys
import time

import torch

LAYERS, WIDTH, BATCH = 24, 256, 64
forwards = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
torch.manual_seed(7)
dev = torch.device("cuda")
weights = [(torch.randn(WIDTH, WIDTH, device=dev) * 0.05, torch.randn(WIDTH, device=dev) * 0.05) for _ in range(LAYERS)]
x = torch.randn(BATCH, WIDTH, device=dev) * 0.05


def forward():
    y = x
    for i, (w, b) in enumerate(weights):
        y = torch.nn.functional.linear(y, w, b)
        if i != LAYERS - 1:
            y = torch.relu(y)
    return y


def cpu_us():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (r.ru_utime + r.ru_stime) * 1e6


def timed(run):
    for _ in range(min(10, forwards)):
        run()
    torch.cuda.synchronize()
    c0 = cpu_us()
    t0 = time.perf_counter()
    for _ in range(forwards):
        run()
    issued = time.perf_counter()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    return {
        "issueUsPerForward": (issued - t0) * 1e6 / forwards,
        "cpuUsPerForward": (cpu_us() - c0) / forwards,
        "forwardsPerSecond": forwards / (t1 - t0),
    }


with torch.no_grad():
    eager_out = forward()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up on a side stream, as PyTorch's docs do before capture
        for _ in range(3):
            forward()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = forward()
    g.replay()
    torch.cuda.synchronize()
    same = bool(torch.equal(static_out, eager_out))
    eager = timed(forward)
    graph = timed(g.replay)

print(json.dumps({
    "torch": torch.__version__, "layers": LAYERS, "batch": BATCH, "width": WIDTH, "forwards": forwards,
    "same": same, "eager": eager, "graph": graph,
    "issueRatio": eager["issueUsPerForward"] / graph["issueUsPerForward"],
}))
