"""A nanoGPT-style GPT in PyTorch (with biases, no dropout), written for halftape's comparisons:
the same architecture, parameter names and initialisation as halftape's --model gpt
(models/gpt.h), a reader of halftape's checkpoints, and the character-level text split of
--data text:FILE. Used by scripts/gpt_reference.py and scripts/pytorch_baseline.py.

Works with PyTorch 1.13 (Debian's python3-torch) and later."""
import json
import math
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd, classes=None):
        """vocab_size: the rows of wte (padded, as nanoGPT's 50304); classes: the real vocabulary,
        the logits' first columns (llm.c's V beside Vp), the rest padding that is never predicted."""
        super().__init__()
        self.block_size = block_size
        self.classes = classes or vocab_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer)),
            ln_f=nn.LayerNorm(n_embd)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        T = idx.size(1)
        pos = torch.arange(T, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))[..., :self.classes]
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.view(-1))

    def optimizer(self, lr, betas, weight_decay):
        """AdamW with weight decay on the 2-D parameters only, as nanoGPT (and halftape)."""
        params = [p for p in self.parameters() if p.requires_grad]
        decay = [p for p in params if p.dim() >= 2]
        no_decay = [p for p in params if p.dim() < 2]
        return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                  {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=betas)


def load_text(path):
    """--data text:FILE's split: the sorted distinct characters, the first 90% train."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    vocab = sorted(set(text))
    ids = {c: i for i, c in enumerate(vocab)}
    data = torch.tensor([ids[c] for c in text], dtype=torch.long)
    n = int(len(data) * 0.9)
    return vocab, data[:n], data[n:]


def eval_windows(val, block_size, windows):
    """The first `windows` non-overlapping windows of the validation text, as halftape evaluates."""
    count = min(windows, (len(val) - 1) // block_size)
    starts = torch.arange(count) * block_size
    x = torch.stack([val[s:s + block_size] for s in starts.tolist()])
    y = torch.stack([val[s + 1:s + 1 + block_size] for s in starts.tolist()])
    return x, y


@torch.no_grad()
def evaluate(model, x, y, batch=64):
    model.eval()
    total, rows = 0.0, 0
    for i in range(0, len(x), batch):
        logits, _ = model(x[i:i + batch])
        total += F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), y[i:i + batch].reshape(-1),
                                 reduction="sum").item()
        rows += y[i:i + batch].numel()
    model.train()
    return total / rows


def read_safetensors(path):
    """A safetensors file's F32 tensors and metadata (no dependency on the safetensors package)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = blob[8 + n:]
    tensors = {}
    for name, info in header.items():
        assert info["dtype"] == "F32", f"{path}: {name} is {info['dtype']}"
        begin, end = info["data_offsets"]
        tensors[name] = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.float32).reshape(info["shape"])
    return tensors, meta


def load_halftape_gpt(checkpoint_dir):
    """A halftape --model gpt checkpoint as this GPT; returns (model, vocab)."""
    tensors, meta = read_safetensors(f"{checkpoint_dir}/model.safetensors")
    config = json.loads(meta["model"])
    model = GPT(config.get("padded_vocab_size", config["vocab_size"]), config["block_size"], config["n_layer"], config["n_head"],
                config["n_embd"], classes=config["vocab_size"])
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    assert missing == ["lm_head.weight"] and not unexpected, (missing, unexpected)  # lm_head is tied to wte
    return model, list(meta["vocab"])
