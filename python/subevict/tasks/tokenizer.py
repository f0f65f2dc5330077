"""The token ids a task is measured in: any tokenizer with encode_ids(text) -> ids (as
subevict.models' GGUF tokenizers) or encode(text) -> ids (or an object with .ids), and the BOS id
the model puts in front (attribute bos_id; None when it adds none)."""

from __future__ import annotations

from .errors import TaskError


class GgufTokenizer:
    """The tokenizer of a GGUF file as the model reads text: encode_ids(text) -> [id] without
    BOS, decode(ids) -> text, bos_id (None when the file does not add BOS)."""

    def __init__(self, reader):
        from ..models.tokenizer import load_tokenizer

        self._tokenizer, add_bos, bos = load_tokenizer(reader)
        self.bos_id = int(bos) if add_bos else None
        self.name = str(reader.data.filename)
        self._pieces = None

    def encode_ids(self, text):
        return [int(i) for i in self._tokenizer.encode_ids(text)]

    def decode(self, ids):
        """The text of token ids (byte-level BPE: its decoder; SentencePiece: the pieces with
        U+2581 as a space and <0xXX> tokens as their bytes)."""
        ids = [int(i) for i in ids]
        vocab = getattr(self._tokenizer, "vocab", None)
        if not isinstance(vocab, dict):
            return self._tokenizer.decode(ids, skip_special_tokens=False)
        if self._pieces is None:
            self._pieces = {i: token for token, i in vocab.items()}
        data = bytearray()
        for i in ids:
            piece = self._pieces[i]
            if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
                data.append(int(piece[3:5], 16))
            else:
                data += piece.replace("\u2581", " ").encode("utf-8")
        return data.decode("utf-8", errors="replace")


def tokenizer_of(source):
    """GgufTokenizer of a GGUF path, a loaded model (subevict.models.load) or an open reader."""
    from ..models.gguf_file import open_gguf

    reader = getattr(source, "reader", source)
    if isinstance(reader, (str, bytes)) or hasattr(reader, "__fspath__"):
        reader = open_gguf(reader)
    return GgufTokenizer(reader)


class Encoder:
    """encode(text) -> [int] of a tokenizer (without BOS) and its bos ([] or [id])."""

    def __init__(self, tokenizer):
        encode = getattr(tokenizer, "encode_ids", None) or getattr(tokenizer, "encode", None)
        if not callable(encode):
            raise TaskError(f"tokenizer: expected an object with encode_ids(text) or "
                            f"encode(text), got {type(tokenizer).__name__}")
        self._encode = encode
        bos = getattr(tokenizer, "bos_id", None)
        self.bos = [] if bos is None else [int(bos)]

    def __call__(self, text):
        ids = self._encode(text)
        ids = getattr(ids, "ids", ids)
        return [int(i) for i in ids]
