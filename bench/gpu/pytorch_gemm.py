# torch.mm / torch.bmm on the shapes and dtypes of bench/js-gemm.mjs, timed the same way (one
# warm-up, then REPS calls on one stream between two CUDA events), as JSON for
# bench/RESULTS.md beside ours. compute 'tf32' is torch.backends.cuda.matmul.allow_tf32.
#
#   python3 bench/gpu/pytorch_gemm.py [reps]
import json
import sys

import torch

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
SHAPES = [
    (4096, 4096, 4096, 1, "f32", "f32"),
    (4096, 4096, 4096, 1, "f32", "tf32"),
    (4096, 4096, 4096, 1, "f16", "f32"),
    (4096, 4096, 4096, 1, "bf16", "f32"),
    (256, 256, 256, 1, "f32", "f32"),
    (64, 256, 256, 1, "f32", "f32"),
    (512, 512, 64, 64, "f16", "f32"),
]
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
rows = []
for m, n, k, batch, dtype, comp in SHAPES:
    torch.backends.cuda.matmul.allow_tf32 = comp == "tf32"
    t = DTYPES[dtype]
    a = torch.zeros((batch, m, k) if batch > 1 else (m, k), dtype=t, device="cuda")
    b = torch.zeros((batch, k, n) if batch > 1 else (k, n), dtype=t, device="cuda")
    op = torch.bmm if batch > 1 else torch.mm
    op(a, b)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        c = op(a, b)
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end) / reps
    rows.append({"m": m, "n": n, "k": k, "batch": batch, "dtype": dtype, "compute": comp, "ms": round(ms, 4),
                 "tflops": round(2 * m * n * k * batch / (ms * 1e-3) / 1e12, 2)})
print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "reps": reps, "rows": rows}, indent=1))
