"""The forward passes of the task loop (docs/tasks.md "Protocols"): a teacher-forced pass over a
sample's prompt and gold answer with a cache per layer, and a token-by-token greedy decode that
resumes from any position with the cache in place. Both run a subevict.models model in float32
torch, split at the attention as the closed loop does (evicted_forward.py).

A pass keeps its `Tape`: every layer's q, k, v at every position (the decode reads the keys and
values of the positions before it from there, and policies resume from the rows). A cache is
given per layer by a mask over (query, key) pairs in the teacher-forced pass and by the key
positions each decoded query attends over in the decode; both softmax over the kept keys only
(log-sum-exp, as models.attend)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Tape:
    """A pass's q [q_heads, n, d], k and v [kv_heads, n, d] per layer (float32 torch tensors, the
    positions [0, n) of the sequence it ran on), and each layer's input hidden states [n, hidden]
    where kept (`inputs`, for passes that recompute only later rows)."""

    q: list
    k: list
    v: list
    inputs: list = field(default_factory=list)
    last_prompt_logp: object = None


def full_pass(model, ids, logit_rows):
    """The full cache's pass over `ids` (int64 [n]): (log-probabilities [len(logit_rows), vocab] at
    the positions `logit_rows` (a slice), Tape with every layer's inputs)."""
    import torch

    from .models import attend, causal_keep

    n = int(ids.shape[0])
    positions = torch.arange(n)
    tape = Tape([], [], [], [])
    with torch.no_grad():
        hidden = model.embed(ids)
        for layer in range(model.layers):
            tape.inputs.append(hidden)
            q, k, v = model.attention_inputs(layer, hidden, positions)
            tape.q.append(q), tape.k.append(k), tape.v.append(v)
            keep = causal_keep(n, model.kv_heads, model.windows[layer])
            heads = attend(q, k, v, model.score_scale, keep)
            hidden = model.attention_output(layer, hidden, heads)
        logp = torch.log_softmax(model.logits(hidden[logit_rows]), dim=-1)
    return logp, tape


def cached_pass(model, ids, full, first_row, keep_of_layer, evict_layers):
    """A pass over `ids` whose rows [first_row, n) run with a cache in the layers `evict_layers`
    and the full cache elsewhere; rows before `first_row` are the full pass's (`full`, a Tape with
    inputs: they must not depend on the cache, as a prompt prefilled with the full cache or the
    steps before the first eviction). keep_of_layer(layer, q, k, v) gives the layer's keep mask
    [kv_heads, n - first_row, n] for the rows [first_row, n) from the layer's q, k, v (every
    row). Returns (the last layer's hidden states of the rows [first_row, n), Tape of the pass);
    `log_probabilities` turns rows of them into next-token log-probabilities."""
    import torch

    from .models import attend, causal_keep

    n = int(ids.shape[0])
    start = min(evict_layers)
    positions = torch.arange(first_row, n)
    tape = Tape(full.q[:start], full.k[:start], full.v[:start])
    with torch.no_grad():
        hidden = full.inputs[start][first_row:]
        for layer in range(start, model.layers):
            q, k, v = model.attention_inputs(layer, hidden, positions)
            if first_row:
                k = torch.cat([full.k[layer][:, :first_row], k], dim=1)
                v = torch.cat([full.v[layer][:, :first_row], v], dim=1)
                q = torch.cat([full.q[layer][:, :first_row], q], dim=1)
            tape.q.append(q), tape.k.append(k), tape.v.append(v)
            if layer in evict_layers:
                keep = keep_of_layer(layer, q, k, v)
            else:
                keep = causal_keep(n, model.kv_heads, model.windows[layer])[:, first_row:]
            heads = attend(q[:, first_row:], k, v, model.score_scale, keep, first_row)
            hidden = model.attention_output(layer, hidden, heads)
    return hidden, tape


# Rows per block of log_probabilities: a block's logits are rows x vocabulary floats (256 x 49152
# x 4 bytes = 50 MB for SmolLM2).
LOGIT_BLOCK_ROWS = 256


def log_probabilities(model, hidden, targets=None):
    """Next-token log-probabilities of the last layer's hidden states [m, hidden]: all of them
    [m, vocab] (targets None), or only each row's target token's (targets int64 [m]: float64 [m]),
    in blocks of LOGIT_BLOCK_ROWS rows."""
    import torch

    with torch.no_grad():
        if targets is None:
            return torch.log_softmax(model.logits(hidden), dim=-1)
        out = torch.empty(hidden.shape[0], dtype=torch.float64)
        for first in range(0, hidden.shape[0], LOGIT_BLOCK_ROWS):
            last = min(hidden.shape[0], first + LOGIT_BLOCK_ROWS)
            logp = torch.log_softmax(model.logits(hidden[first:last]), dim=-1)
            out[first:last] = logp.gather(-1, targets[first:last].view(-1, 1)).view(-1).double()
        return out


def row_attention(q_rows, k, scale, first_row, group):
    """Each KV head's attention from the query rows at positions [first_row, first_row + m) over
    every key up to the row (the full cache's softmax), summed over its query heads: float64
    [kv_heads, m, n] (zero after each row). q_rows [q_heads, m, d], k [kv_heads, n, d]."""
    import torch

    kv_heads, n = k.shape[0], k.shape[1]
    m = q_rows.shape[1]
    future = torch.arange(n).view(1, n) > torch.arange(first_row, first_row + m).view(m, 1)
    out = torch.zeros(kv_heads, m, n, dtype=torch.float64)
    for h in range(kv_heads):
        scores = torch.matmul(q_rows[h * group:(h + 1) * group], k[h].transpose(0, 1)).double() * scale
        scores.masked_fill_(future, float("-inf"))
        out[h] = torch.softmax(scores, dim=-1).sum(0)
    return out


def decode(model, tape, start, token, steps, keys_of_layer, evict_layers, stop=None, stop_after=0):
    """Greedy decoding with a cache: `token` goes in at position `start` (the first generated
    token that differs from the sequence the pass `tape` ran on), the positions before it are the
    tape's; each step runs one position through every layer and feeds the argmax back. Returns
    the `steps` tokens generated (the argmax at positions start, ..., start + steps - 1; the
    last one is not fed back), or fewer: the decode ends after a token equal to `stop` (a token
    id; None: never) once it has generated at least stop_after tokens.

    keys_of_layer(layer, i, q, k, v): the key positions (int64 tensor per KV head, ascending,
    ending with i) query i attends over in an evicting layer, from its q [q_heads, 1, d] and the
    layer's keys and values so far, k, v [kv_heads, i + 1, d] (row i is the new one); called once
    per (layer, step) in order, so a stateful cache may take the row then. Other layers attend over every key (the window's on a sliding-window layer). The tape's
    tensors are not changed."""
    import torch

    group = model.q_heads // model.kv_heads
    keys = [k[:, :start].clone() for k in tape.k]
    values = [v[:, :start].clone() for v in tape.v]
    token = int(token)
    generated = []
    with torch.no_grad():
        for i in range(start, start + steps):
            hidden = model.embed(torch.tensor([token]))
            for layer in range(model.layers):
                q, k, v = model.attention_inputs(layer, hidden, torch.tensor([i]))
                keys[layer] = torch.cat([keys[layer], k], dim=1)
                values[layer] = torch.cat([values[layer], v], dim=1)
                if layer in evict_layers:
                    kept = keys_of_layer(layer, i, q, keys[layer], values[layer])
                else:
                    window = model.windows[layer]
                    first = 0 if window is None else max(0, i + 1 - window)
                    kept = [torch.arange(first, i + 1)] * model.kv_heads
                heads = torch.empty(model.q_heads, 1, model.head_dim)
                for h in range(model.kv_heads):
                    rows = slice(h * group, (h + 1) * group)
                    scores = torch.matmul(q[rows, 0], keys[layer][h, kept[h]].transpose(0, 1))
                    weights = torch.softmax(scores * model.score_scale, dim=-1)
                    heads[rows, 0] = torch.matmul(weights, values[layer][h, kept[h]])
                hidden = model.attention_output(layer, hidden, heads)
            token = int(model.logits(hidden)[0].argmax())
            generated.append(token)
            if token == stop and len(generated) >= stop_after:
                break
    return generated
