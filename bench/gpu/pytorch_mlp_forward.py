# The network of examples/mlp-forward.mjs in PyTorch eager: 784 -> 512 -> 256 -> 10 (relu
# between), batch 256, float32, inputs staged through pinned host memory on a copy stream
# while the previous batch computes, logits copied back asynchronously. Prints samples per
# second as JSON, for bench/RESULTS.md beside the example's (goal: ours >= 1.0x).
#
#   python3 bench/gpu/pytorch_mlp_forward.py [batches]
import json
import math
import sys
import time

import torch

LAYERS, BATCH = [784, 512, 256, 10], 256
batches = int(sys.argv[1]) if len(sys.argv) > 1 else 200
dev = torch.device("cuda")
torch.manual_seed(12345)
layers = [torch.nn.Linear(LAYERS[i], LAYERS[i + 1]).to(dev) for i in range(len(LAYERS) - 1)]
copies, work = torch.cuda.Stream(), torch.cuda.Stream()
slots = [{"input": torch.empty(BATCH, LAYERS[0]).pin_memory(), "logits": torch.empty(BATCH, LAYERS[-1]).pin_memory(),
          "done": None} for _ in range(2)]


def forward(slot):
    with torch.cuda.stream(copies):
        x = slot["input"].to(dev, non_blocking=True)
    work.wait_stream(copies)
    with torch.cuda.stream(work):
        x.record_stream(work)
        for i, layer in enumerate(layers):
            x = layer(x)
            if i + 1 < len(layers):
                x = torch.relu(x)
        slot["logits"].copy_(x, non_blocking=True)
        done = torch.cuda.Event()
        done.record(work)
    return done


with torch.no_grad():
    t0 = time.perf_counter()
    for b in range(batches):
        slot = slots[b % 2]
        if slot["done"] is not None:
            slot["done"].synchronize()
        slot["input"].copy_(torch.sin(torch.arange(BATCH * LAYERS[0]) * 0.001 + b).view(BATCH, LAYERS[0]))
        slot["done"] = forward(slot)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "batches": batches,
                  "samplesPerSecond": round(batches * BATCH / seconds)}))
