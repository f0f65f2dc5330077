"""How two next-token distributions over the same token ids compare: the measure the closed loop
(full cache against evicted) and the llama.cpp check (llama.cpp against ours) share. Pure torch."""

from __future__ import annotations

import math


def next_token_metrics(full_logp, logp, ids):
    """Perplexity, mean and largest KL(full || evicted) and top-1 agreement over the n - 1 predicted
    positions (float64 sums of float32 log-probabilities), and each position's log-probability of
    its token. full_logp, logp: log-probabilities [n, vocab]; ids: int64 [n]."""
    target = ids[1:].unsqueeze(-1)
    token_logp = logp[:-1].gather(-1, target).squeeze(-1).double()
    kl = (full_logp[:-1].exp() * (full_logp[:-1] - logp[:-1])).sum(-1).double()
    agree = (full_logp[:-1].argmax(-1) == logp[:-1].argmax(-1)).double()
    nll = float(-token_logp.mean())
    return {"perplexity": math.exp(nll), "nll": nll, "mean_kl": float(kl.mean()), "max_kl": float(kl.max()),
            "top1_agreement": float(agree.mean()), "token_logprob": token_logp.numpy()}
