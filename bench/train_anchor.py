"""The speed anchor of bench/train.sh: sentence-transformers' training step on the CPU
(CosineSimilarityLoss: the cosine of the mean-pooled pair against score / 5, MSE; AdamW lr 2e-5,
weight decay 0.01 except biases and LayerNorms; gradients clipped at 1), 16 pairs a step from
STS-B train in file order, dropout on. Prints steps per second over STEPS steps after one
warm-up step.

    python bench/train_anchor.py MODEL_FOLDER stsb-en-train.csv STEPS
"""
import csv
import sys
import time

import torch
from sentence_transformers import InputExample, SentenceTransformer, losses

folder, train_csv, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.manual_seed(1)
model = SentenceTransformer(folder, device="cpu")
model.train()
loss_fn = losses.CosineSimilarityLoss(model)
with open(train_csv, encoding="utf-8") as f:
    rows = [InputExample(texts=[a, b], label=float(s) / 5) for a, b, s in csv.reader(f)]
no_decay = ("bias", "LayerNorm.bias", "LayerNorm.weight")
groups = [
    {"params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)], "weight_decay": 0.01},
    {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)], "weight_decay": 0.0},
]
opt = torch.optim.AdamW(groups, lr=2e-5, eps=1e-6)


def step(i):
    batch = rows[i * 16 : (i + 1) * 16]
    features = [model.tokenize([ex.texts[j] for ex in batch]) for j in (0, 1)]
    labels = torch.tensor([ex.label for ex in batch])
    loss = loss_fn(features, labels)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad()


step(0)
start = time.perf_counter()
for i in range(1, steps + 1):
    step(i)
print(steps / (time.perf_counter() - start))
