"""The reference forward of LLaMA-family GGUF files in the tests: transformers' LlamaForCausalLM
(eager attention, float32) loaded with the file's dequantized tensors, independent of
subevict.models' own forward (only the GGUF reading and the q/k row permutation are shared)."""

# GGUF tensor name (with {i} for the block) -> LlamaForCausalLM state-dict name.
TENSOR_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "blk.{i}.attn_norm.weight": "model.layers.{i}.input_layernorm.weight",
    "blk.{i}.ffn_norm.weight": "model.layers.{i}.post_attention_layernorm.weight",
    "blk.{i}.attn_q.weight": "model.layers.{i}.self_attn.q_proj.weight",
    "blk.{i}.attn_k.weight": "model.layers.{i}.self_attn.k_proj.weight",
    "blk.{i}.attn_v.weight": "model.layers.{i}.self_attn.v_proj.weight",
    "blk.{i}.attn_output.weight": "model.layers.{i}.self_attn.o_proj.weight",
    "blk.{i}.ffn_gate.weight": "model.layers.{i}.mlp.gate_proj.weight",
    "blk.{i}.ffn_up.weight": "model.layers.{i}.mlp.up_proj.weight",
    "blk.{i}.ffn_down.weight": "model.layers.{i}.mlp.down_proj.weight",
}


def build_model(models, reader):
    """(LlamaForCausalLM in eval mode with the file's weights, config dict of models.config_of)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from importlib import import_module

    gguf_file = import_module(models.__name__ + ".gguf_file")
    llama = import_module(models.__name__ + ".llama")
    config = models.config_of(reader)
    tensors = gguf_file.tensor_index(reader)
    heads = {"attn_q": config["num_attention_heads"], "attn_k": config["num_key_value_heads"]}
    weights = {}
    for gguf_name, hf_name in TENSOR_NAMES.items():
        blocks = range(config["num_hidden_layers"]) if "{i}" in gguf_name else [None]
        for i in blocks:
            name = gguf_name.format(i=i)
            if name not in tensors:
                continue  # output.weight: tied to token_embd.weight
            weight = gguf_file.dequantize(tensors[name])
            kind = name.split(".")[-2]
            if kind in heads:
                weight = llama.unpermute_qk(weight, heads[kind])
            weights[hf_name.format(i=i)] = weight
    if config["tie_word_embeddings"]:
        weights["lm_head.weight"] = weights["model.embed_tokens.weight"]
    arguments = {key: value for key, value in config.items() if key != "architecture"}
    model = LlamaForCausalLM(LlamaConfig(**arguments, attn_implementation="eager"))
    model.load_state_dict(weights, strict=True)
    return model.eval(), config
