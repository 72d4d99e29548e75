#!/usr/bin/env python3
"""An independent PyTorch twin of the course's Rust Transformer.

It exists for two checks, and nothing in the course depends on it otherwise:

  * parity  -- `logits` loads a checkpoint written by the Rust VarStore
    (`vs.save("....safetensors")`) and runs the same forward pass, so
    tests/parity_pytorch.rs can compare the two outputs number by number;
  * speed   -- `train` runs the reversal-task recipe of chapter 09 (on the CPU
    in float32, or with --device cuda in bf16 autocast with TF32, as the Rust
    trainer does there), so scripts/bench-vs-pytorch.sh can time it beside the
    Rust binary. Each configuration of the Rust trainer has its twin here:
    --fused (Adam(fused=True), the Rust side's at::_fused_adam_), --precision
    bf16 (CPU autocast in bf16), --cuda-graph (the whole step captured once with
    torch.cuda.graph and replayed, as the Rust side's --cuda-graph does).

The model is written out by hand (no nn.Transformer, no nn.MultiheadAttention,
no scaled_dot_product_attention) and its module tree is laid out so that
`state_dict()` keys are exactly the Rust VarStore's variable names:

    encoder.embed.emb.weight
    encoder.layers.{i}.{ln1,ln2}.{weight,bias}
    encoder.layers.{i}.mha.{W_q,W_k,W_v,W_o}.{weight,bias}
    encoder.layers.{i}.ffn.{lin1,lin2}.{weight,bias}
    encoder.ln_final.{weight,bias}
    decoder.embed.emb.weight
    decoder.layers.{i}.{ln1,ln2,ln3}.{weight,bias}
    decoder.layers.{i}.{self_mha,cross_mha}.{W_q,W_k,W_v,W_o}.{weight,bias}
    decoder.layers.{i}.ffn.{lin1,lin2}.{weight,bias}
    decoder.ln_final.{weight,bias}
    out_proj.{weight,bias}

Conventions shared with the Rust code: PAD id 0; masks are bool with
True = "may not be looked at", and masked scores take the dtype's most
negative finite value; Pre-Norm residual blocks plus one LayerNorm closing
each stack; exact (erf) GELU; token embedding times sqrt(d_model) plus a
sinusoidal table whose even columns hold sines and odd columns cosines.

Usage:
    python scripts/torch_reference.py logits --weights W.safetensors \
        --inputs I.safetensors --out O.safetensors [--heads 4]
    python scripts/torch_reference.py train --steps 200 --threads 2
    python scripts/torch_reference.py train --epochs 10 --threads 2
    python scripts/torch_reference.py train --steps 200 --device cuda
    python scripts/torch_reference.py train --steps 200 --fused --precision bf16
    python scripts/torch_reference.py train --steps 200 --device cuda --cuda-graph
"""
from __future__ import annotations

import argparse
import math
import re
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

PAD = 0
BOS = 1
EOS = 2
DIGIT_BASE = 3  # digit k is token k + 3
VOCAB = DIGIT_BASE + 10  # 13
SHORTEST, LONGEST = 3, 12
SEQ_LEN = LONGEST + 2  # room for EOS on the source side, BOS and EOS on the target side


# --------------------------------------------------------------------------- model


@dataclass
class Config:
    src_vocab: int = VOCAB
    tgt_vocab: int = VOCAB
    d_model: int = 128
    num_heads: int = 4
    d_ff: int = 512
    enc_layers: int = 2
    dec_layers: int = 2
    max_len: int = SEQ_LEN
    dropout: float = 0.1


def position_table(length: int, width: int) -> torch.Tensor:
    """[length, width] float32; column 2i = sin(p * w_i), column 2i+1 = cos(p * w_i),
    with w_i = 10000^(-2i / width). Computed in float64, then rounded once."""
    half = width // 2
    freqs = torch.pow(10000.0, -torch.arange(half, dtype=torch.float64) * 2.0 / width)  # [half]
    phase = torch.outer(torch.arange(length, dtype=torch.float64), freqs)  # [length, half]
    table = torch.empty(length, half, 2, dtype=torch.float64)
    table[..., 0] = phase.sin()
    table[..., 1] = phase.cos()
    return table.view(length, width).to(torch.float32)


class Embed(nn.Module):
    """ids [B, L] -> emb(ids) * sqrt(d) + table[:L], then dropout."""

    def __init__(self, vocab: int, d: int, max_len: int, p_drop: float):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=PAD)
        self.scale = math.sqrt(d)
        # Not a parameter and not saved: the Rust side does not store it either.
        self.register_buffer("table", position_table(max_len, d), persistent=False)
        self.p_drop = p_drop

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        if n > self.table.shape[0]:
            raise ValueError(f"sequence of length {n} is longer than max_len {self.table.shape[0]}")
        x = self.emb(ids) * self.scale + self.table[:n]
        return F.dropout(x, self.p_drop, self.training)


class Attention(nn.Module):
    """Multi-head attention with separate Q, K, V and output projections."""

    def __init__(self, d: int, heads: int, p_drop: float):
        super().__init__()
        if d % heads:
            raise ValueError(f"d_model {d} is not a multiple of heads {heads}")
        self.heads, self.head_dim = heads, d // heads
        self.W_q = nn.Linear(d, d)
        self.W_k = nn.Linear(d, d)
        self.W_v = nn.Linear(d, d)
        self.W_o = nn.Linear(d, d)
        self.p_drop = p_drop

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape  # [B, N, d] -> [B, heads, N, head_dim]
        return x.reshape(b, n, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, query, key, value, blocked):
        """query [B, Lq, d], key/value [B, Lk, d], blocked broadcastable to
        [B, heads, Lq, Lk] (True = masked). Returns [B, Lq, d]."""
        q = self._heads(self.W_q(query))
        k = self._heads(self.W_k(key))
        v = self._heads(self.W_v(value))
        logits = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if blocked is not None:
            logits = logits.masked_fill(blocked, torch.finfo(logits.dtype).min)
        probs = torch.softmax(logits, dim=3)
        ctx = torch.matmul(F.dropout(probs, self.p_drop, self.training), v)  # [B, h, Lq, hd]
        b, _, n, _ = ctx.shape
        return self.W_o(ctx.permute(0, 2, 1, 3).reshape(b, n, self.heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, d: int, hidden: int, p_drop: float):
        super().__init__()
        self.lin1 = nn.Linear(d, hidden)
        self.lin2 = nn.Linear(hidden, d)
        self.p_drop = p_drop

    def forward(self, x):
        return F.dropout(self.lin2(F.gelu(self.lin1(x))), self.p_drop, self.training)


class EncLayer(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.ln1 = nn.LayerNorm(c.d_model, eps=1e-5)
        self.ln2 = nn.LayerNorm(c.d_model, eps=1e-5)
        self.mha = Attention(c.d_model, c.num_heads, c.dropout)
        self.ffn = MLP(c.d_model, c.d_ff, c.dropout)
        self.p_drop = c.dropout

    def forward(self, x, src_blocked):
        y = self.ln1(x)
        x = x + F.dropout(self.mha(y, y, y, src_blocked), self.p_drop, self.training)
        return x + self.ffn(self.ln2(x))


class DecLayer(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.ln1 = nn.LayerNorm(c.d_model, eps=1e-5)
        self.ln2 = nn.LayerNorm(c.d_model, eps=1e-5)
        self.ln3 = nn.LayerNorm(c.d_model, eps=1e-5)
        self.self_mha = Attention(c.d_model, c.num_heads, c.dropout)
        self.cross_mha = Attention(c.d_model, c.num_heads, c.dropout)
        self.ffn = MLP(c.d_model, c.d_ff, c.dropout)
        self.p_drop = c.dropout

    def forward(self, x, memory, tgt_blocked, src_blocked):
        y = self.ln1(x)
        x = x + F.dropout(self.self_mha(y, y, y, tgt_blocked), self.p_drop, self.training)
        y = self.ln2(x)
        x = x + F.dropout(self.cross_mha(y, memory, memory, src_blocked), self.p_drop, self.training)
        return x + self.ffn(self.ln3(x))


class Stack(nn.Module):
    """Embedding, N layers, closing LayerNorm. Used for both the encoder and the decoder."""

    def __init__(self, c: Config, vocab: int, n_layers: int, layer_cls):
        super().__init__()
        self.embed = Embed(vocab, c.d_model, c.max_len, c.dropout)
        self.layers = nn.ModuleList([layer_cls(c) for _ in range(n_layers)])
        self.ln_final = nn.LayerNorm(c.d_model, eps=1e-5)

    def forward(self, ids, *extra):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, *extra)
        return self.ln_final(x)


def pad_blocked(ids: torch.Tensor) -> torch.Tensor:
    """[B, L] -> [B, 1, 1, L], True at PAD keys."""
    return (ids == PAD).view(ids.shape[0], 1, 1, ids.shape[1])


def future_blocked(n: int, device) -> torch.Tensor:
    """[1, 1, n, n], True where key index > query index."""
    idx = torch.arange(n, device=device)
    return (idx.view(1, n) > idx.view(n, 1)).view(1, 1, n, n)


class Seq2Seq(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.config = c
        self.encoder = Stack(c, c.src_vocab, c.enc_layers, EncLayer)
        self.decoder = Stack(c, c.tgt_vocab, c.dec_layers, DecLayer)
        self.out_proj = nn.Linear(c.d_model, c.tgt_vocab)

    def init_paper(self) -> None:
        """Embeddings N(0, 1/d) with the PAD row zero, Linear weights Xavier-uniform,
        Linear biases zero. LayerNorms keep weight 1, bias 0."""
        with torch.no_grad():
            for mod in self.modules():
                if isinstance(mod, nn.Linear):
                    nn.init.xavier_uniform_(mod.weight)
                    nn.init.zeros_(mod.bias)
                elif isinstance(mod, nn.Embedding):
                    mod.weight.normal_(0.0, self.config.d_model ** -0.5)
                    mod.weight[PAD].zero_()

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        src_blocked = pad_blocked(src)
        memory = self.encoder(src, src_blocked)
        tgt_blocked = future_blocked(tgt_in.shape[1], tgt_in.device) | pad_blocked(tgt_in)
        return self.out_proj(self.decoder(tgt_in, memory, tgt_blocked, src_blocked))


def config_from_weights(weights: dict[str, torch.Tensor], heads: int, max_len: int) -> Config:
    def count_layers(prefix: str) -> int:
        pat = re.compile(re.escape(prefix) + r"\.layers\.(\d+)\.")
        found = {int(m.group(1)) for key in weights if (m := pat.match(key))}
        if found != set(range(len(found))):
            raise ValueError(f"{prefix}: layer indices {sorted(found)} are not 0..n-1")
        return len(found)

    src_vocab, d = weights["encoder.embed.emb.weight"].shape
    tgt_vocab, d_dec = weights["decoder.embed.emb.weight"].shape
    if d != d_dec:
        raise ValueError(f"encoder width {d} != decoder width {d_dec}")
    d_ff = weights["encoder.layers.0.ffn.lin1.weight"].shape[0]
    return Config(
        src_vocab=src_vocab,
        tgt_vocab=tgt_vocab,
        d_model=d,
        num_heads=heads,
        d_ff=d_ff,
        enc_layers=count_layers("encoder"),
        dec_layers=count_layers("decoder"),
        max_len=max_len,
        dropout=0.0,
    )


# --------------------------------------------------------------------------- logits


def cmd_logits(args) -> None:
    from safetensors.torch import load_file, save_file

    torch.set_num_threads(args.threads)
    weights = load_file(args.weights)
    inputs = load_file(args.inputs)
    src = inputs["src"].to(torch.int64)
    tgt_in = inputs["tgt_in"].to(torch.int64)
    max_len = args.max_len or max(src.shape[1], tgt_in.shape[1])
    cfg = config_from_weights(weights, args.heads, max_len)
    model = Seq2Seq(cfg)
    model.load_state_dict({k: v.to(torch.float32) for k, v in weights.items()}, strict=True)
    model.eval()
    with torch.no_grad():
        logits = model(src, tgt_in).contiguous()
    save_file({"logits": logits}, args.out)
    print(f"logits: config={cfg} src={tuple(src.shape)} tgt_in={tuple(tgt_in.shape)} "
          f"-> {tuple(logits.shape)}", file=sys.stderr)


# --------------------------------------------------------------------------- train


def reversal_data(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """src = digits, EOS, PAD...; tgt = BOS, digits reversed, EOS, PAD...; both [count, SEQ_LEN]."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(SHORTEST, LONGEST + 1, size=count)
    src = np.full((count, SEQ_LEN), PAD, dtype=np.int64)
    tgt = np.full((count, SEQ_LEN), PAD, dtype=np.int64)
    for row, n in enumerate(lengths):
        seq = DIGIT_BASE + rng.integers(0, 10, size=n)
        src[row, :n] = seq
        src[row, n] = EOS
        tgt[row, 0] = BOS
        tgt[row, 1:n + 1] = seq[::-1]
        tgt[row, n + 1] = EOS
    return torch.from_numpy(src), torch.from_numpy(tgt)


def noam(step: int, d: int, warmup: int) -> float:
    """d^-0.5 * min(step^-0.5, step * warmup^-1.5); step starts at 1."""
    return d ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def batches(src, tgt, batch: int, gen: torch.Generator):
    """Endless stream of shuffled, full batches; yields (epoch, src, tgt)."""
    per_epoch = src.shape[0] // batch
    epoch = 0
    while True:
        epoch += 1
        order = torch.randperm(src.shape[0], generator=gen)
        for i in range(per_epoch):
            idx = order[i * batch:(i + 1) * batch]
            yield epoch, src[idx], tgt[idx]


@torch.no_grad()
def greedy_exact_match(model: Seq2Seq, src: torch.Tensor, tgt: torch.Tensor) -> float:
    """Share of rows whose greedy decoding, up to and including EOS, equals the target."""
    model.eval()
    out = torch.full((src.shape[0], 1), BOS, dtype=torch.int64, device=src.device)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(SEQ_LEN - 1):
        nxt = model(src, out)[:, -1].argmax(-1)
        nxt = torch.where(finished, torch.full_like(nxt, PAD), nxt)
        out = torch.cat([out, nxt[:, None]], dim=1)
        finished |= nxt == EOS
        if bool(finished.all()):
            break
    width = out.shape[1]
    want = tgt[:, :width]
    got = out
    if width < tgt.shape[1]:
        got = F.pad(out, (0, tgt.shape[1] - width), value=PAD)
        want = tgt
    model.train()
    return (got == want).all(dim=1).float().mean().item()


GRAPH_WARMUP_STEPS = 3  # eager steps on the side stream before the capture


def graphed_step_fn(model, opt, cfg, device, args, set_lr, next_step, prof):
    """The training step as one CUDA graph, PyTorch's whole-network capture recipe:
    static input tensors, a few eager steps on a side stream, gradients set to None
    so that the capture allocates them in the graph's memory, then capture of
    forward, loss, backward and the fused Adam step. Returns a one_step(s, t) that
    copies the batch in, replays, and reads loss and accuracy back (one copy)."""
    static_src = torch.zeros(args.batch, SEQ_LEN, dtype=torch.int64, device=device)
    static_tgt = torch.zeros(args.batch, SEQ_LEN, dtype=torch.int64, device=device)

    def body() -> torch.Tensor:
        dec_in, labels = static_tgt[:, :-1], static_tgt[:, 1:]
        # No autocast cache: bf16 weights cast inside the capture must not outlive it.
        with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
            logits = model(static_src, dec_in)
        loss = F.cross_entropy(logits.float().reshape(-1, cfg.tgt_vocab), labels.reshape(-1), ignore_index=PAD)
        loss.backward()
        opt.step()
        with torch.no_grad():
            real = labels != PAD
            acc = ((logits.argmax(-1) == labels) & real).sum() / real.sum()
            return torch.stack([loss.detach(), acc.float()])

    side = torch.cuda.Stream()
    state = {"warmup_left": GRAPH_WARMUP_STEPS, "graph": None, "stats": None}

    def one_step(s, t) -> tuple[float, float]:
        t0 = time.perf_counter()
        set_lr(noam(next_step(), cfg.d_model, args.warmup))
        static_src.copy_(s)
        static_tgt.copy_(t)
        t1 = time.perf_counter()
        if state["graph"] is not None:
            state["graph"].replay()
            stats = state["stats"]
        elif state["warmup_left"] > 0:
            state["warmup_left"] -= 1
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                opt.zero_grad(set_to_none=True)
                stats = body()
            torch.cuda.current_stream().wait_stream(side)
        else:
            opt.zero_grad(set_to_none=True)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=side):
                stats = body()
            graph.replay()  # the capture only recorded: now run this batch
            state["graph"], state["stats"] = graph, stats
        t2 = time.perf_counter()
        loss, acc = stats.tolist()
        t3 = time.perf_counter()
        for i, dt in enumerate((t1 - t0, t2 - t1, t3 - t2)):
            prof[i] += dt
        return loss, acc

    return one_step


def cmd_train(args) -> None:
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda:
        if not torch.cuda.is_available():
            sys.exit("error: --device cuda was asked for, but torch sees no CUDA device")
        # The Rust trainer's CUDA precision (train::configure_precision): bf16 autocast
        # for the forward pass, TF32 for the float32 matrix products that remain.
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    elif args.cuda_graph:
        sys.exit("error: --cuda-graph needs a CUDA device")
    # The Rust side's default: bf16 autocast on CUDA, float32 on the CPU.
    precision = args.precision or ("bf16" if cuda else "fp32")
    if cuda and precision != "bf16":
        sys.exit("error: --precision fp32 is CPU-only, as on the Rust side")
    bf16 = precision == "bf16"
    fused = args.fused or args.cuda_graph  # a graph needs the device-side step count
    cfg = Config()
    model = Seq2Seq(cfg)
    model.init_paper()
    model.to(device)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    # A captured step must read the learning rate from the device: a float would be
    # baked into the graph. fused=True accepts a tensor lr.
    lr = torch.tensor(0.0, device=device) if args.cuda_graph else 0.0
    extra = {"fused": True} if fused else {}
    if args.cuda_graph:
        # Adam.step refuses to be captured unless capturable=True; its warning about
        # the eager warm-up steps before the capture is expected here.
        extra["capturable"] = True
        warnings.filterwarnings("ignore", message="This instance was constructed with capturable=True")
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9, **extra)
    src_all, tgt_all = reversal_data(args.train_size, args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    stream = batches(src_all, tgt_all, args.batch, gen)
    per_epoch = src_all.shape[0] // args.batch
    label = "bf16 autocast + TF32" if cuda else ("bf16 autocast" if bf16 else "fp32")
    optimizer = "fused" if fused else "default"
    print(f"pytorch: torch {torch.__version__}, device={device}, "
          f"precision={label}, threads={torch.get_num_threads()}, "
          f"params={n_params:,}, batches/epoch={per_epoch}, optimizer={optimizer}, "
          f"cuda_graph={'on' if args.cuda_graph else 'off'}", flush=True)

    step = 0
    # Wall time per phase, as the Rust bench reports it: forward+loss, backward,
    # optimizer, read-back (eager); copy-in, replay, read-back (graphed).
    phases = (["copy-in", "replay", "read-back"] if args.cuda_graph
              else ["forward+loss", "backward", "optimizer", "read-back"])
    prof = [0.0] * len(phases)

    def set_lr(value: float) -> None:
        for group in opt.param_groups:
            if torch.is_tensor(group["lr"]):
                group["lr"].fill_(value)
            else:
                group["lr"] = value

    def next_step() -> int:
        nonlocal step
        step += 1
        return step

    def one_step(s, t) -> tuple[float, float]:
        """One optimizer step; returns the batch's loss and token accuracy (the Rust
        trainer reads both back every step too, so the timed work is the same)."""
        t0 = time.perf_counter()
        set_lr(noam(next_step(), cfg.d_model, args.warmup))
        # Batches are cut on the CPU and copied over every step, as the Rust trainer does.
        s, t = s.to(device), t.to(device)
        dec_in, labels = t[:, :-1], t[:, 1:]  # teacher forcing
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(s, dec_in)
        # The loss in float32 whatever the forward pass ran in.
        loss = F.cross_entropy(logits.float().reshape(-1, cfg.tgt_vocab), labels.reshape(-1), ignore_index=PAD)
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        with torch.no_grad():
            real = labels != PAD
            acc = ((logits.argmax(-1) == labels) & real).sum().item() / real.sum().item()
        out = loss.item(), acc
        t4 = time.perf_counter()
        for i, dt in enumerate((t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            prof[i] += dt
        return out

    if args.cuda_graph:
        one_step = graphed_step_fn(model, opt, cfg, device, args, set_lr, next_step, prof)

    if args.steps is not None:
        for _ in range(args.warmup_steps):  # untimed: first-call allocations, thread pools
            _, s, t = next(stream)
            one_step(s, t)
        prof[:] = [0.0] * len(prof)  # profile the timed steps only
        start = time.perf_counter()
        for _ in range(args.steps):
            _, s, t = next(stream)
            loss, acc = one_step(s, t)
        seconds = time.perf_counter() - start
        print(f"after {args.warmup_steps + args.steps} steps: loss={loss:.4f} token_acc={acc:.4f}", flush=True)
        total = sum(prof)
        print("profile: " + ", ".join(
            f"{name} {1000 * secs / args.steps:.2f} ms ({100 * secs / total:.0f}%)"
            for name, secs in zip(phases, prof)), flush=True)
        print(f"bench: impl=pytorch steps={args.steps} seconds={seconds:.3f} "
              f"steps_per_s={args.steps / seconds:.2f} threads={args.threads} device={device.type} "
              f"optimizer={optimizer} precision={precision} cuda_graph={'on' if args.cuda_graph else 'off'}",
              flush=True)
        return

    src_val, tgt_val = reversal_data(500, args.seed + 1)
    src_val, tgt_val = src_val.to(device), tgt_val.to(device)
    start = time.perf_counter()
    total, count, current = 0.0, 0, 1
    for epoch, s, t in stream:
        if epoch != current:
            em = greedy_exact_match(model, src_val, tgt_val)
            print(f"epoch {current:2d}  loss={loss:.4f}  mean_loss={total / count:.4f}  token_acc={acc:.4f}  "
                  f"val_exact_match={em:.3f}  lr={noam(step + 1, cfg.d_model, args.warmup):.2e}  "
                  f"{time.perf_counter() - start:.0f}s", flush=True)
            if epoch > args.epochs:
                break
            total, count, current = 0.0, 0, epoch
        loss, acc = one_step(s, t)
        total += loss
        count += 1


# --------------------------------------------------------------------------- cli


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("logits", help="forward a batch through weights saved by the Rust VarStore")
    p.add_argument("--weights", required=True, help="safetensors file from VarStore::save")
    p.add_argument("--inputs", required=True, help="safetensors file with int64 'src' [B,Ls] and 'tgt_in' [B,Lt]")
    p.add_argument("--out", required=True, help="where to write 'logits' [B,Lt,tgt_vocab] (float32)")
    p.add_argument("--heads", type=int, default=4, help="number of attention heads (not visible in the weights)")
    p.add_argument("--max-len", type=int, default=None,
                   help="position table length (default: the longer of the two inputs; values do not depend on it)")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=cmd_logits)

    p = sub.add_parser("train", help="the reversal-task recipe (CPU fp32, or CUDA bf16 autocast)")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--steps", type=int, help="time exactly this many optimizer steps (after warm-up steps)")
    mode.add_argument("--epochs", type=int, help="train this many full epochs, one line per epoch")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup-steps", type=int, default=5, help="untimed steps before timing (--steps only)")
    p.add_argument("--train-size", type=int, default=20_000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--warmup", type=int, default=1000, help="warm-up length of the learning-rate schedule")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--fused", action="store_true", help="Adam(fused=True): the twin of the Rust side's at::_fused_adam_")
    p.add_argument("--precision", choices=["fp32", "bf16"], default=None,
                   help="autocast precision (default: fp32 on the CPU, bf16 on CUDA)")
    p.add_argument("--cuda-graph", action="store_true",
                   help="capture the whole training step once and replay it (CUDA only; implies --fused)")
    p.set_defaults(func=cmd_train)

    args = parser.parse_args(argv)
    if getattr(args, "steps", None) is not None and args.steps < 1:
        parser.error("--steps must be at least 1")
    if getattr(args, "epochs", None) is not None and args.epochs < 1:
        parser.error("--epochs must be at least 1")
    args.func(args)


if __name__ == "__main__":
    main()
