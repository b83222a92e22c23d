"""A user's Hugging Face transformers job, built from a config (random
initialisation: nothing is downloaded) and trained for a fixed number of
steps on token ids of the torch package's own Python sources:
  gpt2        GPT-2 small (124M), causal language modelling;
  bert        BERT-base (110M), sequence classification (8 classes: the
              torch subpackage a window of code comes from);
  distilbert  DistilBERT (66M), the same classification.

    python3 hf_lm.py --model gpt2 --seq 512 --batch 16 --steps 1500
    python3 hf_lm.py --model bert --seq 128 --batch 64 --bf16 --steps 2000

Builders for colo's [job.model] (input: [seq] token ids below the vocabulary):
hf_lm:build_gpt2 (vocab 50257), hf_lm:build_bert and hf_lm:build_distilbert
(vocab 30522).
"""
import torch

import common

CLASSES = 8
VOCAB = {"gpt2": 50257, "bert": 30522, "distilbert": 30522}


def build_gpt2():
    """GPT-2 small from its config: 12 layers, width 768, vocabulary 50257."""
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(use_cache=False))  # training keeps no key/value cache


def build_bert():
    """BERT-base from its config, with a sequence-classification head."""
    from transformers import BertConfig, BertForSequenceClassification

    return BertForSequenceClassification(BertConfig(num_labels=CLASSES))


def build_distilbert():
    """DistilBERT from its config, with a sequence-classification head."""
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    return DistilBertForSequenceClassification(DistilBertConfig(num_labels=CLASSES))


BUILDERS = {"gpt2": build_gpt2, "bert": build_bert, "distilbert": build_distilbert}


def main():
    p = common.parser(__doc__.splitlines()[0], batch=16, opt="adamw")
    p.add_argument("--model", choices=sorted(BUILDERS), default="gpt2")
    p.add_argument("--seq", type=int, default=512, help="tokens per sample")
    args = p.parse_args()
    torch.manual_seed(args.seed)
    device = common.device_of(args)
    ids, classes = common.torch_source_tokens(VOCAB[args.model], CLASSES)
    ids, classes = ids.to(device), classes.to(device)
    with common.building_on(device):
        model = BUILDERS[args.model]()
    model = model.to(device).train()
    opt = common.optimizer(args.opt, model.parameters(), args.lr or (6e-4 if args.model == "gpt2" else 5e-5))
    causal = args.model == "gpt2"

    def next_batch():
        window, start = common.token_windows(ids, args.batch, args.seq)
        return window, (window if causal else classes[start])

    def loss_of(m, x, y):
        return m(input_ids=x, labels=y).loss  # GPT-2 shifts the labels itself

    common.train(model, opt, next_batch, loss_of, args, device, args.batch)


if __name__ == "__main__":
    main()
