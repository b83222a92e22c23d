"""How much memory one colo.fuse.Trainer step of a fused language model
holds beyond the model, against the size of all N models' logits: on this
machine's CPU, where PyTorch's large tensors come from mmap and go back at
once, so the process's peak resident set follows the tensors alive. Nothing
else runs in the process; two bf16 steps of a fused embedding-tanh-head LM
(vocabulary 32768, N=4, batch 4 x 128 tokens), SGD.

    PYTHONPATH=BUILD/python python3 bench/fusion/trainer_loss_memory.py [--out FILE]

Prints (and writes as JSON) the peak over the resident set before the first
step, in MiB and in units of all models' bf16 logits."""
import argparse
import json
import resource

import torch
import torch.nn as nn
import torch.nn.functional as F

import colo.fuse as cf

VOCAB, WIDTH, MODELS, BATCH, TOKENS = 32768, 64, 4, 4, 128


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, WIDTH)
        self.body = nn.Linear(WIDTH, WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, x):
        return self.head(torch.tanh(self.body(self.emb(x))))


def next_token_loss(logits, targets):
    """The loss bench/fusion/finetune_models.py's lm_loss takes: float32 cross-entropy of one model."""
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="write the figures as JSON here too")
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    fused = cf.fuse(LM, MODELS)
    trainer = cf.Trainer(fused, cf.optimizer(fused, "sgd", lr=0.1), next_token_loss, bf16=True)
    x = torch.randint(0, VOCAB, (BATCH, TOKENS))
    y = torch.randint(0, VOCAB, (BATCH, TOKENS))
    before = resident_bytes()
    for _ in range(2):
        losses = trainer.step(x, y)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    logits = MODELS * BATCH * TOKENS * VOCAB * 2
    result = {"peak_over_start_mib": round(peak / 2**20, 1), "all_logits_bf16_mib": round(logits / 2**20, 1),
              "peak_in_bf16_logits": round(peak / logits, 2), "losses": [round(v, 6) for v in losses.tolist()],
              "torch": torch.__version__}
    print(json.dumps(result))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
