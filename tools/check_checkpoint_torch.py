#!/usr/bin/env python3
"""Loads a grpo.cu checkpoint into the spec's PyTorch module and checks its forward pass.

Usage: check_checkpoint_torch.py CHECKPOINT EXPECTED_JSON
EXPECTED_JSON holds {"obs": [[...], ...], "logits": [[z0, z1, z2], ...]} from the engine's host
forward (dropout off). Exit 77 when torch cannot be imported. The safetensors file is parsed by hand (struct + json + torch.frombuffer),
so no safetensors package is needed. Exit 0 when every logit matches to 1e-5 + 1e-4 |ref|.
"""
import json
import struct
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("check_checkpoint_torch: torch is not installed", file=sys.stderr)
    sys.exit(77)  # "skipped", for the test that runs this script


class Policy(nn.Module):
    """docs/spec/training.md: h0 = W_in x; h1 = h0 + LN(gelu(h0)); h2 = dropout(gelu(W1 h1 + b1)); z = W_out h2 + b_out."""

    def __init__(self, obs_dim, hidden, dropout=0.1):
        super().__init__()
        self.fc_in = nn.Linear(obs_dim, hidden, bias=False)
        self.layer_norm = nn.LayerNorm(hidden, eps=1e-5)
        self.fc1 = nn.Linear(hidden, hidden)
        self.fc_out = nn.Linear(hidden, 3)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        h0 = self.fc_in(x)
        h1 = h0 + self.layer_norm(F.gelu(h0, approximate="tanh"))
        h2 = self.dropout(F.gelu(self.fc1(h1), approximate="tanh"))
        return self.fc_out(h2)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    tensors = {}
    for name, t in header.items():
        assert t["dtype"] == "F32", (name, t["dtype"])
        b, e = t["data_offsets"]
        buf = bytearray(data[base + b : base + e])  # writable copy: frombuffer warns on read-only memory
        tensors[name] = torch.frombuffer(buf, dtype=torch.float32).reshape(t["shape"]).clone()
    return tensors, meta


def main():
    ckpt, expected_path = sys.argv[1], sys.argv[2]
    tensors, meta = read_safetensors(ckpt)
    config = json.loads(meta["config"])
    hidden = config["hidden_size"]
    obs_dim = 1 + 3 * config["game"]["max_fruits"]
    model = Policy(obs_dim, hidden, config["dropout"])
    params = {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}
    model.load_state_dict(params, strict=True)  # names and shapes must match exactly
    model.eval()
    with open(expected_path) as f:
        expected = json.load(f)
    obs = torch.tensor(expected["obs"], dtype=torch.float32)
    want = torch.tensor(expected["logits"], dtype=torch.float32)
    with torch.no_grad():
        got = model(obs)
    bad = (got - want).abs() > 1e-5 + 1e-4 * want.abs()
    if bad.any():
        print(f"check_checkpoint_torch: {int(bad.sum())} of {want.numel()} logits differ; max |diff| "
              f"{(got - want).abs().max().item():.3g}", file=sys.stderr)
        return 1
    print(f"check_checkpoint_torch: {want.shape[0]} rows match (hidden {hidden}, obs {obs_dim}, epoch {meta['epoch']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
