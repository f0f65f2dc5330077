"""The tokenizer a GGUF file carries: byte-level BPE (`gpt2`) built from its tokens and merges, or
SentencePiece (`llama`) from its tokens and scores, as llama.cpp tokenizes; and the token ids of a
text."""

from __future__ import annotations

import hashlib

from .errors import ModelError
from .gguf_file import field

# Regular expressions of the byte-level BPE pre-tokenizers, by tokenizer.ggml.pre. Each list is
# applied in order (a split isolating each match), as llama.cpp's vocabulary code does.
GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# Qwen 2 and 3: Llama 3's expression with every digit a piece of its own.
QWEN2_REGEX = LLAMA3_REGEX.replace(r"\p{N}{1,3}", r"\p{N}")
BPE_PRE_TOKENIZERS = {
    "default": [GPT2_REGEX],
    "gpt2": [GPT2_REGEX],
    "smollm": [r"\p{N}", GPT2_REGEX],
    "llama-bpe": [LLAMA3_REGEX],
    "qwen2": [QWEN2_REGEX],
}


def load_tokenizer(reader):
    """(tokenizer of the file's vocabulary with encode_ids(text) -> [id], add_bos, bos_id). add_bos
    follows tokenizer.ggml.add_bos_token (llama.cpp adds BOS when the key is absent)."""
    kind = field(reader, "tokenizer.ggml.model")
    if kind == "gpt2":
        tokenizer = _byte_level_bpe(reader)
    elif kind == "llama":
        tokenizer = _sentencepiece(reader)
    else:
        raise ModelError(f"{reader.data.filename}: unsupported tokenizer.ggml.model {kind!r} "
                         "(expected gpt2 or llama)")
    add_bos = bool(field(reader, "tokenizer.ggml.add_bos_token", True, required=False))
    bos = field(reader, "tokenizer.ggml.bos_token_id", None, required=False)
    if add_bos and bos is None:
        raise ModelError(f"{reader.data.filename}: add_bos_token is set but bos_token_id is "
                         "missing")
    return tokenizer, add_bos, bos


def _byte_level_bpe(reader):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    pre = field(reader, "tokenizer.ggml.pre", "default", required=False)
    if pre not in BPE_PRE_TOKENIZERS:
        raise ModelError(f"{reader.data.filename}: unsupported tokenizer.ggml.pre {pre!r} "
                         f"(supported: {', '.join(sorted(BPE_PRE_TOKENIZERS))})")
    tokens = field(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in field(reader, "tokenizer.ggml.merges")]
    vocab = {token: i for i, token in enumerate(tokens)}
    tokenizer = Tokenizer(models.BPE(vocab, merges, fuse_unk=False, byte_fallback=False))
    splits = [pre_tokenizers.Split(Regex(r), behavior="isolated")
              for r in BPE_PRE_TOKENIZERS[pre]]
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        splits + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.encode_ids = lambda text: tokenizer.encode(text, add_special_tokens=False).ids
    return tokenizer


USER_DEFINED = 4  # tokenizer.ggml.token_type of a user-defined token (matched in the raw text)


class SentencePiece:
    """llama.cpp's SentencePiece tokenizer (`llama` vocabularies). First the text is split at every
    user-defined token (token type 4, e.g. Gemma's runs of spaces and newlines), longest first,
    each occurrence from the left: those pieces are their tokens. Each remaining piece: spaces
    become U+2581 (one more in front when add_space_prefix and the piece starts the text or follows
    a user-defined token), the piece starts as single characters, and the adjacent pair whose
    concatenation is a token with the highest score is merged until none is (ties: the leftmost
    pair); a character that is no token is written as its UTF-8 bytes' <0xXX> tokens."""

    def __init__(self, tokens, scores, add_space_prefix, token_types=None):
        self.vocab = {token: i for i, token in enumerate(tokens)}
        self.scores = scores
        self.add_space_prefix = add_space_prefix
        types = token_types or []
        self.user_defined = sorted(((tokens[i], i) for i, t in enumerate(types) if t == USER_DEFINED),
                                   key=lambda item: -len(item[0]))

    def partition(self, text):
        """[(piece, token id or None)]: the text split at its user-defined tokens."""
        pieces = [(text, None)]
        for special, token in self.user_defined:
            split = []
            for piece, known in pieces:
                if known is not None or special not in piece:
                    split.append((piece, known))
                    continue
                start = 0
                while (found := piece.find(special, start)) >= 0:
                    if found > start:
                        split.append((piece[start:found], None))
                    split.append((special, token))
                    start = found + len(special)
                if start < len(piece):
                    split.append((piece[start:], None))
            pieces = split
        return pieces

    def encode_ids(self, text):
        ids, after_special = [], True
        for piece, token in self.partition(text):
            if token is not None:
                ids.append(token)
                after_special = True
            else:
                ids += self._encode_piece(piece, self.add_space_prefix and after_special)
                after_special = False
        return ids

    def _encode_piece(self, text, space_prefix):
        import heapq

        text = text.replace(" ", "\u2581")
        if space_prefix:
            text = "\u2581" + text
        symbols = list(text)
        nxt = list(range(1, len(symbols) + 1))
        prv = list(range(-1, len(symbols) - 1))
        heap = []

        def push(left):
            right = nxt[left]
            if left < 0 or right >= len(symbols):
                return
            token = self.vocab.get(symbols[left] + symbols[right])
            if token is not None:
                heapq.heappush(heap, (-self.scores[token], left, symbols[left], symbols[right]))

        for i in range(len(symbols) - 1):
            push(i)
        while heap:
            _, left, a, b = heapq.heappop(heap)
            right = nxt[left]
            if symbols[left] != a or right >= len(symbols) or symbols[right] != b:
                continue  # stale: one side was merged since
            symbols[left] = a + b
            symbols[right] = None
            nxt[left] = nxt[right]
            if nxt[left] < len(symbols):
                prv[nxt[left]] = left
            if prv[left] >= 0:
                push(prv[left])
            push(left)
        ids = []
        i = 0
        while i < len(symbols):
            token = self.vocab.get(symbols[i])
            if token is not None:
                ids.append(token)
            else:
                ids += [self.vocab[f"<0x{byte:02X}>"] for byte in symbols[i].encode("utf-8")]
            i = nxt[i]
        return ids


def _sentencepiece(reader):
    tokens = field(reader, "tokenizer.ggml.tokens")
    scores = field(reader, "tokenizer.ggml.scores")
    add_space_prefix = bool(field(reader, "tokenizer.ggml.add_space_prefix", True, required=False))
    token_types = field(reader, "tokenizer.ggml.token_type", None, required=False)
    return SentencePiece(tokens, scores, add_space_prefix, token_types)


def tokenize(reader, text, tokens):
    """The first `tokens` token ids of `text` ([1, tokens] int64 torch tensor), BOS first when the
    model adds one; ModelError when the text has fewer."""
    import torch

    tokenizer, add_bos, bos = load_tokenizer(reader)
    ids = tokenizer.encode_ids(text)
    if add_bos:
        ids = [int(bos)] + ids
    if len(ids) < tokens:
        raise ModelError(f"the text has {len(ids)} tokens{' with BOS' if add_bos else ''}, "
                         f"fewer than --tokens {tokens}")
    return torch.tensor([ids[:tokens]], dtype=torch.int64)


def token_ids_sha256(input_ids):
    """SHA-256 of the token ids written as comma-separated decimals (e.g. '1,504,22')."""
    text = ",".join(str(int(i)) for i in input_ids.reshape(-1).tolist())
    return hashlib.sha256(text.encode("ascii")).hexdigest()
