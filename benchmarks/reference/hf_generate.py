"""HF side of `ctrainer-bench generate_vs_hf`: transformers' generate() on an encoder-decoder
(benchmark-only; runs in the tests' venv).

    python hf_generate.py make --model_dir DIR --prompts FILE [--quick]
        a random T5 of T5-small's shape (6 + 6 layers, 512 wide, 8 heads, 2,048-wide feed-forward,
        32,128-token vocabulary; --quick: a tiny one) saved with save_pretrained, its weights
        scaled by 0.5 so that greedy search does not repeat one token, and 8 prompts of 64 random
        ids (seeded) as JSON;
    python hf_generate.py time --model_dir DIR --prompts FILE --batch B --num_beams N
        --new_tokens T --repeats R --threads 2
        generate(input_ids, attention_mask, num_beams=N, max_new_tokens=T, min_new_tokens=T,
        do_sample=False) on the first B prompts R times after one warm-up call; prints JSON with
        the seconds of each call and the generated ids of the first.
"""
import argparse
import json
import sys
import time

import torch
from transformers import T5Config, T5ForConditionalGeneration


def make(args):
    torch.manual_seed(0)
    if args.quick:
        config = T5Config(vocab_size=512, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                          decoder_start_token_id=0)
    else:  # t5-small's config.json, decoder_start_token_id included
        config = T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6,
                          num_heads=8, decoder_start_token_id=0)
    model = T5ForConditionalGeneration(config)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(0.5)
    model.save_pretrained(args.model_dir)
    generator = torch.Generator().manual_seed(1)
    prompts = torch.randint(2, config.vocab_size, (8, 64), generator=generator).tolist()
    with open(args.prompts, "w") as f:
        json.dump(prompts, f)


def timed(args):
    torch.set_num_threads(args.threads)
    model = T5ForConditionalGeneration.from_pretrained(args.model_dir).eval()
    with open(args.prompts) as f:
        ids = torch.tensor(json.load(f)[:args.batch])
    settings = dict(attention_mask=torch.ones_like(ids), num_beams=args.num_beams,
                    max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                    do_sample=False)
    with torch.inference_mode():
        first = model.generate(ids, **settings)  # warm-up
        seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            model.generate(ids, **settings)
            seconds.append(time.perf_counter() - start)
    json.dump({"seconds": seconds, "sequences": first.tolist()}, sys.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["make", "time"])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--prompts", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--num_beams", type=int, default=1)
    parser.add_argument("--new_tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    make(args) if args.command == "make" else timed(args)


if __name__ == "__main__":
    main()
