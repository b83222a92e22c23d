"""A user's LoRA fine-tune with peft: a pretrained-size causal language model
built from its config (random weights: nothing is downloaded), its base
frozen, low-rank adapters of rank --r on the attention projections, trained
for a fixed number of steps on token ids of the torch package's sources.
  gpt2-medium  355M, adapters on c_attn (query, key and value together);
  opt-350m     331M, adapters on q_proj and v_proj.

    python3 lora.py --base gpt2-medium --r 16 --seq 512 --batch 8 --bf16 --steps 1200

Builders for colo's [job.model] (input: [seq] token ids below the
vocabulary, 50257 for gpt2-medium, 50272 for opt-350m):
lora:build_gpt2_medium_r8, lora:build_gpt2_medium_r16, lora:build_opt_350m_r8,
lora:build_opt_350m_r16.
"""
import torch

import common

VOCAB = {"gpt2-medium": 50257, "opt-350m": 50272}


def _base(name):
    if name == "gpt2-medium":
        from transformers import GPT2Config, GPT2LMHeadModel

        return GPT2LMHeadModel(GPT2Config(n_embd=1024, n_layer=24, n_head=16, use_cache=False))
    from transformers import OPTConfig, OPTForCausalLM

    # facebook/opt-350m's config: its embeddings are projected from 512 wide.
    return OPTForCausalLM(OPTConfig(vocab_size=50272, hidden_size=1024, num_hidden_layers=24, ffn_dim=4096,
                                    num_attention_heads=16, word_embed_proj_dim=512, max_position_embeddings=2048,
                                    do_layer_norm_before=False, use_cache=False))


def build(base, r):
    """`base` with its weights frozen and LoRA adapters of rank `r`."""
    from peft import LoraConfig, get_peft_model

    gpt2 = base == "gpt2-medium"
    config = LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.05, task_type="CAUSAL_LM",
                        target_modules=["c_attn"] if gpt2 else ["q_proj", "v_proj"],
                        fan_in_fan_out=gpt2)  # GPT-2's projections are Conv1D, weights stored transposed
    return get_peft_model(_base(base), config)


def build_gpt2_medium_r8():
    return build("gpt2-medium", 8)


def build_gpt2_medium_r16():
    return build("gpt2-medium", 16)


def build_opt_350m_r8():
    return build("opt-350m", 8)


def build_opt_350m_r16():
    return build("opt-350m", 16)


def main():
    p = common.parser(__doc__.splitlines()[0], batch=8, opt="adamw", lr=2e-4)
    p.add_argument("--base", choices=sorted(VOCAB), default="gpt2-medium")
    p.add_argument("--r", type=int, choices=[8, 16], default=16, help="LoRA rank")
    p.add_argument("--seq", type=int, default=512, help="tokens per sample")
    args = p.parse_args()
    torch.manual_seed(args.seed)
    device = common.device_of(args)
    ids, _ = common.torch_source_tokens(VOCAB[args.base])
    ids = ids.to(device)
    with common.building_on(device):
        model = build(args.base, args.r)
    model = model.to(device).train()
    opt = common.optimizer(args.opt, model.parameters(), args.lr)  # the adapters alone
    common.train(model, opt, lambda: (common.token_windows(ids, args.batch, args.seq)[0], None),
                 lambda m, x, _: m(input_ids=x, labels=x).loss, args, device, args.batch)


if __name__ == "__main__":
    main()
