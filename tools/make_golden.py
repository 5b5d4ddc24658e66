#!/usr/bin/python3
"""Golden values for the policy network, the loss, the gradient clip and one AdamW step.

Run on purpose only, with Debian's python3-torch (apt-get install python3-torch), under the system
interpreter:   /usr/bin/python3 tools/make_golden.py [--out tests/fixtures/golden_tiny.json]

It builds the spec's network (docs/spec/training.md) in PyTorch for a tiny configuration: hidden 16,
the default game (Fmax = 3, so D = 1 + 3*3 = 10), M = 5 samples, dropout off, with fixed seeded
weights that are NOT the spec's init: every parameter is drawn at a scale where its term matters
(gamma away from 1, beta, b1, b_out non-zero, W_out large enough that the policy is not
uniform). Observations are raw integer game vectors [sprite_x, x0, y0, a0, ...]; actions and
advantages are given (one advantage, 6.5, lies beyond the loss's clamp to [-5, 5]).

Everything is computed in FLOAT64, so the fixture is a first-principles reference (float32 code
is compared to it with the docs/design.md tolerances, e.g. relative L2 <= 1e-5).

Fixture format (JSON; every tensor is a flat list in row-major order, PyTorch's [out, in]):
  format        "grpo-golden-1"
  dtype         "float64"
  torch         the torch version that wrote it
  config        hidden (16), input (10), actions (3), samples (5), max_fruits (3),
                ln_eps (1e-5), dropout (0), entropy_coef (0.01), adv_clamp (5), max_norm (1.0),
                lr (1e-3), beta1 (0.9), beta2 (0.999), eps (1e-8), weight_decay (1e-5)
  param_order   the spec's parameter names in slab order: fc_in.weight, layer_norm.weight,
                layer_norm.bias, fc1.weight, fc1.bias, fc_out.weight, fc_out.bias
  shapes        name -> [rows, cols] or [n]
  inputs        x [M*D] observations; actions [M] ints in {0,1,2}; advantages [M] (raw: the loss
                applies clamp(A, -5, 5))
  params        name -> values before the step
  forward       h0 [M*Hd] = x W_in^T; ln_mean [M], ln_rstd [M] (LayerNorm of gelu(h0), biased
                variance); h1 [M*Hd] = h0 + LN(gelu(h0)); h2 [M*Hd] = gelu(h1 W1^T + b1);
                logits [M*3]; log_probs [M*3]; entropy [M]
  loss          L = mean(-log_pi(a) * clamp(A, -5, 5)) - 0.01 * mean(entropy)
  grads         name -> dL/dparam
  grad_norm     global L2 norm of all grads (before clipping)
  clip_scale    min(max_norm / (grad_norm + 1e-6), 1)   (< 1 here: clipping is active)
  adamw         after clip_grad_norm_(1.0) and one torch.optim.AdamW step (t = 1) from m = v = 0:
                params, exp_avg, exp_avg_sq: name -> values
"""
import argparse
import json
import math
import os

import torch

HD, FMAX, M, A = 16, 3, 5, 3
D = 1 + 3 * FMAX
SCREEN_W, SCREEN_H = 10, 15
CFG = dict(hidden=HD, input=D, actions=A, samples=M, max_fruits=FMAX, ln_eps=1e-5, dropout=0.0,
           entropy_coef=0.01, adv_clamp=5.0, max_norm=1.0, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
           weight_decay=1e-5)
ORDER = ["fc_in.weight", "layer_norm.weight", "layer_norm.bias", "fc1.weight", "fc1.bias",
         "fc_out.weight", "fc_out.bias"]


class Policy(torch.nn.Module):
    """The spec's network with the reference module's parameter names."""

    def __init__(self):
        super().__init__()
        self.fc_in = torch.nn.Linear(D, HD, bias=False)
        self.layer_norm = torch.nn.LayerNorm(HD, eps=CFG["ln_eps"])
        self.fc1 = torch.nn.Linear(HD, HD)
        self.fc_out = torch.nn.Linear(HD, A)

    def forward(self, x):
        gelu = lambda t: torch.nn.functional.gelu(t, approximate="tanh")
        h0 = self.fc_in(x)
        g0 = gelu(h0)
        h1 = h0 + self.layer_norm(g0)
        h2 = gelu(self.fc1(h1))  # dropout off
        z = self.fc_out(h2)
        return dict(h0=h0, g0=g0, h1=h1, h2=h2, logits=z, log_probs=torch.log_softmax(z, dim=-1))


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                                                  "golden_tiny.json"))
    args = ap.parse_args()
    torch.manual_seed(20240607)
    dt = torch.float64
    net = Policy().to(dt)
    with torch.no_grad():  # seeded weights at scales where every term matters (not the spec init)
        net.fc_in.weight.copy_(torch.randn(HD, D, dtype=dt) * 0.08)
        net.layer_norm.weight.copy_(1.0 + 0.3 * torch.randn(HD, dtype=dt))
        net.layer_norm.bias.copy_(0.3 * torch.randn(HD, dtype=dt))
        net.fc1.weight.copy_(torch.randn(HD, HD, dtype=dt) * 0.3)
        net.fc1.bias.copy_(0.2 * torch.randn(HD, dtype=dt))
        net.fc_out.weight.copy_(torch.randn(A, HD, dtype=dt) * 0.15)
        net.fc_out.bias.copy_(0.3 * torch.randn(A, dtype=dt))
    params0 = {n: p.detach().clone() for n, p in net.named_parameters()}
    assert list(params0) == ORDER, list(params0)

    # Raw observations of a game in progress: [sprite_x, (x, y, active) * Fmax].
    x = torch.zeros(M, D, dtype=dt)
    x[:, 0] = torch.randint(0, SCREEN_W, (M,)).to(dt)
    for j in range(FMAX):
        x[:, 1 + 3 * j] = torch.randint(0, SCREEN_W, (M,)).to(dt)
        x[:, 2 + 3 * j] = torch.randint(0, SCREEN_H, (M,)).to(dt)
        x[:, 3 + 3 * j] = torch.randint(0, 2, (M,)).to(dt)
    actions = torch.tensor([0, 2, 1, 2, 0])
    adv = torch.tensor([1.25, -0.75, 6.5, -1.9, 0.4], dtype=dt)

    out = net(x)
    logp = out["log_probs"]
    entropy = -(logp.exp() * logp).sum(-1)
    chosen = logp.gather(1, actions[:, None])[:, 0]
    loss = (-chosen * adv.clamp(-CFG["adv_clamp"], CFG["adv_clamp"])).mean() - CFG["entropy_coef"] * entropy.mean()
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in net.named_parameters()}
    for n, g in grads.items():
        assert g.abs().max() > 1e-6, f"gradient of {n} is negligible: pick other scales"

    ln = torch.nn.functional.layer_norm  # the saved statistics, for the LayerNorm op's tests
    g0 = out["g0"]
    ln_mean = g0.mean(-1)
    ln_rstd = 1.0 / torch.sqrt(g0.var(-1, unbiased=False) + CFG["ln_eps"])
    assert torch.allclose((g0 - ln_mean[:, None]) * ln_rstd[:, None] * net.layer_norm.weight + net.layer_norm.bias,
                          ln(g0, (HD,), net.layer_norm.weight, net.layer_norm.bias, CFG["ln_eps"]))

    grad_norm = float(torch.nn.utils.clip_grad_norm_(net.parameters(), CFG["max_norm"]))
    clip = min(CFG["max_norm"] / (grad_norm + 1e-6), 1.0)
    assert clip < 1.0, "the fixture should exercise clipping"
    opt = torch.optim.AdamW(net.parameters(), lr=CFG["lr"], betas=(CFG["beta1"], CFG["beta2"]), eps=CFG["eps"],
                            weight_decay=CFG["weight_decay"])
    opt.step()

    fixture = dict(
        format="grpo-golden-1", dtype="float64", torch=torch.__version__, config=CFG, param_order=ORDER,
        shapes={n: list(p.shape) for n, p in params0.items()},
        inputs=dict(x=flat(x), actions=[int(a) for a in actions], advantages=flat(adv)),
        params={n: flat(p) for n, p in params0.items()},
        forward=dict(h0=flat(out["h0"]), ln_mean=flat(ln_mean), ln_rstd=flat(ln_rstd), h1=flat(out["h1"]),
                     h2=flat(out["h2"]), logits=flat(out["logits"]), log_probs=flat(logp), entropy=flat(entropy)),
        loss=float(loss), grads={n: flat(g) for n, g in grads.items()}, grad_norm=grad_norm, clip_scale=clip,
        adamw=dict(params={n: flat(p) for n, p in net.named_parameters()},
                   exp_avg={n: flat(opt.state[p]["exp_avg"]) for n, p in net.named_parameters()},
                   exp_avg_sq={n: flat(opt.state[p]["exp_avg_sq"]) for n, p in net.named_parameters()}),
    )
    assert all(math.isfinite(v) for v in fixture["forward"]["log_probs"])
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: loss {float(loss):.6f}, grad norm {grad_norm:.6f}, clip {clip:.6f}")


if __name__ == "__main__":
    main()
