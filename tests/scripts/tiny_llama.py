"""A tiny, randomly initialised, Llama-like causal LM for testing scripts/export_qkv.py.

Written for these tests (not Hugging Face code), but laid out with Hugging Face's module names
so that the exporter finds its way around it as it would in a real checkpoint:

    model.model.embed_tokens, model.model.layers[i].self_attn.{q_proj,k_proj,v_proj,o_proj},
    model.model.layers[i].{input_layernorm,post_attention_layernorm,mlp}, model.model.norm,
    model.model.rotary_emb (forward(x, position_ids) -> (cos, sin), [batch, tokens, head_dim]),
    model.lm_head, model.config.

Variants: rope_style="attention_legacy" puts the rotary module on each attention module with
the older forward(x, seq_len) -> cached [1, 1, seq_len, head_dim] signature; qk_norm=True adds
per-head RMSNorm q_norm/k_norm between projection and rotation (as Qwen 3 does).

Every attention module keeps what it computed in its last forward, for the tests to compare:
last_q, last_k (after RoPE), last_v, as [heads, tokens, head_dim] (batch 0), and last_q_raw,
last_k_raw (before RoPE). K and V keep kv_heads; the repeat for grouped-query attention happens
only inside the attention product.
"""

import math

import torch
from torch import nn


class TinyLlamaConfig:
    def __init__(self, vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=8, intermediate_size=64, rope_theta=10000.0,
                 rms_norm_eps=1e-6, max_position_embeddings=128, rope_style="model",
                 qk_norm=False):
        if rope_style not in ("model", "attention_legacy"):
            raise ValueError(f"unknown rope_style {rope_style!r}")
        self.model_type = "tiny_llama"
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.head_dim = head_dim
        self.intermediate_size = intermediate_size
        self.rope_theta = rope_theta
        self.rms_norm_eps = rms_norm_eps
        self.max_position_embeddings = max_position_embeddings
        self.rope_style = rope_style
        self.qk_norm = qk_norm


def rotate_half(x):
    half = x.shape[-1] // 2
    first, second = x[..., :half], x[..., half:]
    return torch.cat((-second, first), dim=-1)


def _inverse_frequencies(config):
    exponents = torch.arange(0, config.head_dim, 2, dtype=torch.float32) / config.head_dim
    return 1.0 / (config.rope_theta ** exponents)


class TinyRMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


class TinyRotaryEmbedding(nn.Module):
    """Current-transformers style: one module on the base model, called once per forward."""

    def __init__(self, config):
        super().__init__()
        self.rope_theta = config.rope_theta
        self.register_buffer("inv_freq", _inverse_frequencies(config), persistent=False)

    def forward(self, x, position_ids):
        angles = position_ids[..., None].float() * self.inv_freq.float()  # [b, T, D/2]
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos().to(x.dtype), angles.sin().to(x.dtype)


class TinyLegacyRotaryEmbedding(nn.Module):
    """Older-transformers style: one module per attention module, with a precomputed table."""

    def __init__(self, config):
        super().__init__()
        self.rope_theta = config.rope_theta
        steps = torch.arange(config.max_position_embeddings, dtype=torch.float32)
        angles = torch.outer(steps, _inverse_frequencies(config))
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos_cached", angles.cos()[None, None], persistent=False)
        self.register_buffer("sin_cached", angles.sin()[None, None], persistent=False)

    def forward(self, x, seq_len=None):
        return (self.cos_cached[:, :, :seq_len].to(x.dtype),
                self.sin_cached[:, :, :seq_len].to(x.dtype))


class TinyAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.num_heads = config.num_attention_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        self.scaling = self.head_dim ** -0.5
        q_size = self.num_heads * self.head_dim
        kv_size = self.num_key_value_heads * self.head_dim
        self.q_proj = nn.Linear(config.hidden_size, q_size, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, kv_size, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, kv_size, bias=False)
        self.o_proj = nn.Linear(q_size, config.hidden_size, bias=False)
        if config.qk_norm:
            self.q_norm = TinyRMSNorm(self.head_dim, config.rms_norm_eps)
            self.k_norm = TinyRMSNorm(self.head_dim, config.rms_norm_eps)
        if config.rope_style == "attention_legacy":
            self.rotary_emb = TinyLegacyRotaryEmbedding(config)

    def _heads(self, projected, heads, norm=None):
        batch, tokens, _ = projected.shape
        x = projected.view(batch, tokens, heads, self.head_dim)
        if norm is not None:
            x = norm(x)
        return x.transpose(1, 2)  # [b, heads, T, D]

    def forward(self, hidden, position_embeddings=None, position_ids=None):
        batch, tokens, _ = hidden.shape
        q = self._heads(self.q_proj(hidden), self.num_heads, getattr(self, "q_norm", None))
        k = self._heads(self.k_proj(hidden), self.num_key_value_heads,
                        getattr(self, "k_norm", None))
        v = self._heads(self.v_proj(hidden), self.num_key_value_heads)

        if self.config.rope_style == "attention_legacy":
            cos, sin = self.rotary_emb(v, seq_len=tokens)
            cos, sin = cos[0, 0][position_ids], sin[0, 0][position_ids]  # [b, T, D]
        else:
            cos, sin = position_embeddings
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        self.last_q_raw, self.last_k_raw = q[0].detach().clone(), k[0].detach().clone()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        self.last_q = q[0].detach().clone()
        self.last_k = k[0].detach().clone()
        self.last_v = v[0].detach().clone()

        group = self.num_heads // self.num_key_value_heads
        k_all = k.repeat_interleave(group, dim=1)
        v_all = v.repeat_interleave(group, dim=1)
        scores = torch.matmul(q, k_all.transpose(-1, -2)) * self.scaling
        future = torch.ones(tokens, tokens, dtype=torch.bool, device=hidden.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        out = torch.matmul(probs, v_all).transpose(1, 2).reshape(batch, tokens, -1)
        return self.o_proj(out), None


class TinyMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class TinyDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.input_layernorm = TinyRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = TinyAttention(config)
        self.post_attention_layernorm = TinyRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = TinyMLP(config)

    def forward(self, hidden, position_embeddings, position_ids):
        attended, _ = self.self_attn(self.input_layernorm(hidden), position_embeddings,
                                     position_ids)
        hidden = hidden + attended
        return hidden + self.mlp(self.post_attention_layernorm(hidden))


class TinyModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(TinyDecoderLayer(config)
                                    for _ in range(config.num_hidden_layers))
        self.norm = TinyRMSNorm(config.hidden_size, config.rms_norm_eps)
        if config.rope_style == "model":
            self.rotary_emb = TinyRotaryEmbedding(config)

    def forward(self, input_ids, position_ids=None):
        hidden = self.embed_tokens(input_ids)
        if position_ids is None:
            position_ids = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
        embeddings = None
        if hasattr(self, "rotary_emb"):
            embeddings = self.rotary_emb(hidden, position_ids)
        for layer in self.layers:
            hidden = layer(hidden, embeddings, position_ids)
        return self.norm(hidden)


class TinyLlamaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = TinyModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def get_decoder(self):
        return self.model

    def forward(self, input_ids, position_ids=None, use_cache=None):
        return self.lm_head(self.model(input_ids, position_ids))


def build_tiny_llama(seed=0, dtype=torch.float32, **config_args):
    """A TinyLlamaForCausalLM in eval mode whose weights depend only on `seed`."""
    config = TinyLlamaConfig(**config_args)
    model = TinyLlamaForCausalLM(config)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in sorted(model.named_parameters()):
            noise = torch.randn(parameter.shape, generator=generator, dtype=torch.float32)
            if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                parameter.copy_(1.0 + 0.1 * noise)
            else:
                parameter.copy_(noise * (1.0 / math.sqrt(parameter.shape[-1])))
    return model.to(dtype).eval()


class TinyTokenizer:
    """Bytes to ids: a BOS id 1, then each UTF-8 byte mapped into 2..vocab_size-1."""

    def __init__(self, vocab_size=64):
        self.vocab_size = vocab_size

    def __call__(self, text, return_tensors="pt"):
        ids = [1] + [2 + byte % (self.vocab_size - 2) for byte in text.encode("utf-8")]
        return {"input_ids": torch.tensor([ids], dtype=torch.long)}
