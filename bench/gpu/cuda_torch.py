"""PyTorch with a CUDA device, for the GPU runner's Python scripts, or None after printing
why not as the one JSON object those scripts print ({"skipped": reason})."""
import json


def cuda_torch():
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"skipped": f"no torch: {e}"}))
        return None
    if not torch.cuda.is_available():
        print(json.dumps({"skipped": "torch sees no CUDA device"}))
        return None
    return torch
