"""A tiny Llama GGUF file written in the tests (no download): what ``load_model`` of a
``.gguf`` path dequantises, in a fraction of a second instead of the default model's
16-30 s.

Two layers, hidden size 64, 4 query and 2 key/value heads, Q8_0 weights (so the load
really dequantises) and a byte-level BPE tokenizer of the 256 byte symbols and a few
merges, in the ``gpt2`` tokenizer model transformers' GGUF loader converts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HIDDEN, HEADS, KV_HEADS, FFN, LAYERS, CONTEXT = 64, 4, 2, 128, 2, 256
MERGES = ("Ġ t", "h e", "Ġt he", "a t", "Ġ c", "Ġc at")


def byte_symbols() -> list[str]:
    """GPT-2's byte-level alphabet: the printable character standing for each byte."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[byte] = chr(byte)
        else:
            chars[byte] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def vocabulary() -> tuple[list[str], list[int]]:
    """Tokens (three specials, the byte symbols, one per merge) and their GGUF types."""
    from gguf import TokenType

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    merged = ["".join(m.split(" ")) for m in MERGES]
    tokens = specials + byte_symbols() + merged
    types = [TokenType.CONTROL] * len(specials) + [TokenType.NORMAL] * (len(tokens) - 3)
    return tokens, [int(t) for t in types]


def _tensors(vocab: int, seed: int) -> dict[str, np.ndarray]:
    """GGUF-named weights, shapes as numpy holds them (rows = output features)."""
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.05).astype(np.float32)

    kv = HIDDEN // HEADS * KV_HEADS
    found = {"token_embd.weight": w(vocab, HIDDEN), "output.weight": w(vocab, HIDDEN)}
    found["output_norm.weight"] = np.ones(HIDDEN, dtype=np.float32)
    for i in range(LAYERS):
        block = {"attn_q": w(HIDDEN, HIDDEN), "attn_k": w(kv, HIDDEN), "attn_v": w(kv, HIDDEN)}
        block |= {"attn_output": w(HIDDEN, HIDDEN), "ffn_gate": w(FFN, HIDDEN)}
        block |= {"ffn_up": w(FFN, HIDDEN), "ffn_down": w(HIDDEN, FFN)}
        found |= {f"blk.{i}.{name}.weight": value for name, value in block.items()}
        found[f"blk.{i}.attn_norm.weight"] = np.ones(HIDDEN, dtype=np.float32)
        found[f"blk.{i}.ffn_norm.weight"] = np.ones(HIDDEN, dtype=np.float32)
    return found


def write_tiny_gguf(path: Path, seed: int = 0) -> Path:
    """Write the tiny model to ``path`` (a ``.gguf`` file); 1-D weights stay F32."""
    from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType
    from gguf.quants import quantize

    tokens, types = vocabulary()
    writer = GGUFWriter(str(path), "llama")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(HIDDEN // HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_file_type(LlamaFileType.MOSTLY_Q8_0)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(list(MERGES))
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_pad_token_id(2)
    q8 = GGMLQuantizationType.Q8_0
    for name, value in _tensors(len(tokens), seed).items():
        if value.ndim == 1:
            writer.add_tensor(name, value)
        else:
            writer.add_tensor(name, quantize(value, q8), raw_dtype=q8)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
