"""generate() against transformers 5's, token for token, on tiny random GPT-2 (tied head, 24
positions, so the default max_length is capped), Llama (grouped-query attention, untied head),
T5 (gated-GELU) and BART (pad id 1, forced_eos_token_id) models (for the last two the prompts are
the encoder's input and the decoder starts from decoder_start_token_id) that transformers makes and saves;
ctrainer_parity_generate_dump loads each folder through AutoModelForCausalLM or
AutoModelForSeq2SeqLM and generates from the same prompts with the same call settings.

A batch of three prompts of different lengths, left-padded, through greedy search (default and
explicit lengths, eos ids that stop rows early, repetition penalty, no-repeat n-grams,
min_new_tokens, without the cache, an attention mask inferred from pad_token_id), sampling
(top-k / top-p / temperature, min-p, several sequences per prompt; the same seed, both drawing
with torch.multinomial), beam search (num_return_sequences, length_penalty, early_stopping
true / false / "never", several eos ids, pad_token_id 0) and beam sampling. The sequences must be
equal; beam search's sequences_scores within 1e-5. Settings transformers refuses are refused.

Then ctrainer-generate on a GPT-2 and a T5 folder with the bundled KJV tokenizer: two prompts of
different lengths, beam search and seeded sampling from command-line flags, print the token ids
and text that transformers' generate() and batch_decode give after AutoTokenizer pads the prompts
on the left; unknown flags and bad values are refused by name.
"""
import json
import os
import shutil
import subprocess
import tempfile

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, BartConfig, \
    BartForConditionalGeneration, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, \
    T5Config, T5ForConditionalGeneration

import bert_parity
from parity_support import EXAMPLES_DATA, binary, fail_if, run

VOCAB, PAD, BOS, EOS = 97, 0, 1, 2
DUMP = binary("ctrainer_parity_generate_dump")
GENERATE = binary("ctrainer-generate")
KJV_TOKENIZER = os.path.join(EXAMPLES_DATA, "text", "kjv-bpe-8k")
KJV_PROMPTS = ["In the beginning God created", "And the earth was without form, and void; and"]
# (flags, generate() keyword arguments, seed)
COMMANDS = [
    (["--max_new_tokens", "12", "--num_beams", "3", "--no_repeat_ngram_size", "2"],
     {"max_new_tokens": 12, "num_beams": 3, "no_repeat_ngram_size": 2}, None),
    (["--max_new_tokens", "10", "--do_sample", "true", "--top_k", "30",
      "--num_return_sequences", "2", "--seed", "4"],
     {"max_new_tokens": 10, "do_sample": True, "top_k": 30, "num_return_sequences": 2}, 4),
]
BAD_COMMANDS = [
    (["--no_such_setting", "3"], "\"no_such_setting\" is not a setting"),
    (["--output_scores", "true"], "unknown flag --output_scores"),
    (["--num_beams", "many"], "num_beams"),
    (["--seed", "-1"], "--seed"),
]
PROMPT_LENGTHS = [6, 3, 8]

MODELS = {
    "gpt2": lambda: GPT2LMHeadModel(GPT2Config(
        vocab_size=VOCAB, n_positions=24, n_embd=32, n_layer=2, n_head=4, bos_token_id=BOS,
        eos_token_id=EOS)),
    "llama": lambda: LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, tie_word_embeddings=False)),
    "t5": lambda: T5ForConditionalGeneration(T5Config(
        vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=48, num_layers=2,
        num_heads=4, feed_forward_proj="gated-gelu", pad_token_id=PAD, eos_token_id=EOS,
        decoder_start_token_id=PAD)),
    # BART's own special ids (pad 1, bos 0) and its config's forced_eos_token_id.
    "bart": lambda: BartForConditionalGeneration(BartConfig(
        vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=48,
        decoder_ffn_dim=48, max_position_embeddings=32, pad_token_id=1, bos_token_id=0,
        eos_token_id=EOS, decoder_start_token_id=EOS, forced_eos_token_id=EOS)),
}


def cases(stop, stop2):
    """(name, call settings, pass the attention mask, seed). `stop` and `stop2` are tokens the
    model generates greedily, used as eos ids so that rows end at different steps."""
    return [
        ("greedy", {"max_new_tokens": 10}, True, None),
        ("greedy, default max_length", {}, True, None),
        ("greedy, max_length", {"max_length": 14}, True, None),
        ("greedy, eos stops rows", {"max_new_tokens": 10, "eos_token_id": stop}, True, None),
        ("greedy, processors", {"max_new_tokens": 10, "repetition_penalty": 1.5,
                                "no_repeat_ngram_size": 2, "min_new_tokens": 4,
                                "eos_token_id": [stop, stop2]}, True, None),
        ("greedy without the cache", {"max_new_tokens": 6, "use_cache": False}, True, None),
        ("greedy, mask inferred from padding", {"max_new_tokens": 6, "pad_token_id": PAD}, False,
         None),
        ("sampling", {"do_sample": True, "max_new_tokens": 10, "top_k": 20, "top_p": 0.9,
                      "temperature": 0.8, "num_return_sequences": 2}, True, 7),
        ("sampling, min-p", {"do_sample": True, "top_k": 0, "min_p": 0.05,
                             "max_new_tokens": 8, "eos_token_id": stop}, True, 3),
        ("beam search", {"num_beams": 3, "max_new_tokens": 8}, True, None),
        ("beam search, eos, early stopping", {
            "num_beams": 4, "num_return_sequences": 2, "eos_token_id": stop,
            "length_penalty": 0.7, "early_stopping": True, "max_new_tokens": 10}, True, None),
        ("beam search, never stop early", {
            "num_beams": 3, "early_stopping": "never", "eos_token_id": stop,
            "length_penalty": 1.5, "max_new_tokens": 10, "num_return_sequences": 3}, True, None),
        ("beam search, two eos, pad 0", {
            "num_beams": 3, "eos_token_id": [stop, stop2], "pad_token_id": PAD,
            "max_new_tokens": 9, "no_repeat_ngram_size": 3}, True, None),
        ("beam sampling", {"num_beams": 2, "do_sample": True, "max_new_tokens": 8,
                           "top_k": 10}, True, 5),
    ]


def refused_settings(encoder_decoder):
    """Settings transformers refuses: (name, call settings)."""
    return [
        ("greedy with two sequences", {"num_return_sequences": 2, "max_new_tokens": 4}),
        ("more sequences than beams", {"num_beams": 2, "num_return_sequences": 3,
                                       "max_new_tokens": 4}),
        # An encoder-decoder's prompt is the decoder's start token.
        ("prompt not shorter than max_length", {"max_length": 1 if encoder_decoder else 8}),
    ]


def prompts():
    g = torch.Generator().manual_seed(11)
    width = max(PROMPT_LENGTHS)
    ids = torch.full((len(PROMPT_LENGTHS), width), PAD, dtype=torch.int64)
    mask = torch.zeros_like(ids)
    for row, n in enumerate(PROMPT_LENGTHS):
        ids[row, width - n:] = torch.randint(3, VOCAB, (n,), generator=g)
        mask[row, width - n:] = 1
    return ids, mask


def their_generate(model, ids, mask, settings, seed):
    if seed is not None:
        torch.manual_seed(seed)
    kwargs = dict(settings)
    if mask is not None:
        kwargs["attention_mask"] = mask
    out = model.generate(ids, return_dict_in_generate=True, output_scores=True, **kwargs)
    return out.sequences, getattr(out, "sequences_scores", None)


def stop_tokens(model, ids, mask):
    """Two tokens greedy search generates, neither a special token: the most frequent ones."""
    sequences = model.generate(ids, attention_mask=mask, max_new_tokens=10)
    prompt = 1 if model.config.is_encoder_decoder else ids.shape[1]
    generated = sequences[:, prompt:].flatten().tolist()
    ranked = sorted(set(generated) - {PAD, BOS, EOS}, key=lambda t: (-generated.count(t), t))
    return ranked[0], ranked[1]


def kjv_models():
    """(name, model) pairs ctrainer-generate runs with the bundled KJV tokenizer."""
    torch.manual_seed(21)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=8192, n_positions=64, n_embd=32, n_layer=2,
                                      n_head=4, bos_token_id=0, eos_token_id=0))
    bert_parity.perturb_parameters(gpt2, 0.05, seed=22)
    t5 = T5ForConditionalGeneration(T5Config(
        vocab_size=8192, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=4,
        feed_forward_proj="gated-gelu", pad_token_id=0, eos_token_id=0, decoder_start_token_id=0))
    bert_parity.perturb_parameters(t5, 0.5, seed=23)
    return [("gpt2_kjv", gpt2), ("t5_kjv", t5)]


def check_command(tmp, differences):
    """ctrainer-generate against AutoTokenizer + generate() + batch_decode, on a GPT-2 (the
    prompt continued) and a T5 (a new text from the prompt) with the KJV tokenizer."""
    from transformers import AutoTokenizer
    checked = 0
    for name, model in kjv_models():
        folder = os.path.join(tmp, name)
        model.save_pretrained(folder)
        for file in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(KJV_TOKENIZER, file), folder)
        encoder_decoder = model.config.is_encoder_decoder
        auto = AutoModelForSeq2SeqLM if encoder_decoder else AutoModelForCausalLM
        theirs = auto.from_pretrained(folder).eval()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        tokenizer.pad_token, tokenizer.padding_side = tokenizer.eos_token, "left"
        batch = tokenizer(KJV_PROMPTS, padding=True, return_tensors="pt")
        skipped = 1 if encoder_decoder else batch["input_ids"].shape[1]
        for flags, settings, seed in COMMANDS:
            prompts = [a for p in KJV_PROMPTS for a in ("--prompt", p)]
            ours = run([GENERATE, "--model_name_or_path", folder, *prompts, *flags]).stdout
            ours = [json.loads(line) for line in ours.splitlines()]
            if seed is not None:
                torch.manual_seed(seed)
            generated = theirs.generate(**batch, **settings)[:, skipped:]
            texts = tokenizer.batch_decode(generated, skip_special_tokens=True)
            per_prompt = len(texts) // len(KJV_PROMPTS)
            expected = [{"prompt": KJV_PROMPTS[i // per_prompt],
                         "generated_text": texts[i] if encoder_decoder else
                         KJV_PROMPTS[i // per_prompt] + texts[i],
                         "continuation": texts[i], "generated_token_ids": generated[i].tolist()}
                        for i in range(len(texts))]
            if not all(len(e["generated_token_ids"]) > 2 for e in expected):
                differences.append(f"{name} {' '.join(flags)}: too short to compare {expected}")
            if ours != expected:
                differences.append(f"ctrainer-generate on {name} {' '.join(flags)}:\n ours "
                                   f"{ours}\n theirs {expected}")
            checked += 1
    for flags, message in BAD_COMMANDS:
        folder = os.path.join(tmp, "gpt2_kjv")
        result = subprocess.run([GENERATE, "--model_name_or_path", folder, "--prompt", "In",
                                 *flags], capture_output=True, text=True)
        if result.returncode != 2 or message not in result.stderr:
            differences.append(f"ctrainer-generate {' '.join(flags)}: exit {result.returncode}, "
                               f"{result.stderr!r} (expected exit 2 naming {message!r})")
        checked += 1
    return checked


def main():
    ids, mask = prompts()
    differences = []
    with tempfile.TemporaryDirectory() as tmp:
        dump_cases, expected = [], []
        for name, make in MODELS.items():
            torch.manual_seed(5)
            model = make()
            # A random T5 repeats one token; larger noise gives it varied continuations.
            bert_parity.perturb_parameters(model, 0.5 if name in ("t5", "bart") else 0.05,
                                           seed=9)
            folder = os.path.join(tmp, name)
            model.save_pretrained(folder)
            encoder_decoder = model.config.is_encoder_decoder
            auto = AutoModelForSeq2SeqLM if encoder_decoder else AutoModelForCausalLM
            theirs = auto.from_pretrained(folder).eval()
            save_file({"input_ids": ids, "attention_mask": mask}, os.path.join(tmp, "masked.st"))
            save_file({"input_ids": ids}, os.path.join(tmp, "unmasked.st"))
            stop, stop2 = stop_tokens(theirs, ids, mask)
            all_cases = [(c, False) for c in cases(stop, stop2)] + \
                        [((n, s, True, None), True) for n, s in refused_settings(encoder_decoder)]
            for i, ((case, settings, with_mask, seed), refused) in enumerate(all_cases):
                config = os.path.join(tmp, f"{name}_{i}.json")
                with open(config, "w", encoding="utf-8") as f:
                    json.dump(settings, f)
                entry = {"model": folder, "config": config,
                         "inputs": os.path.join(tmp, "masked.st" if with_mask else "unmasked.st"),
                         "output": os.path.join(tmp, f"{name}_{i}.out.st")}
                if seed is not None:
                    entry["seed"] = seed
                dump_cases.append(entry)
                label = f"{name}: {case}"
                if refused:
                    try:
                        their_generate(theirs, ids, mask, settings, seed)
                        differences.append(f"{label}: transformers did not refuse it")
                    except ValueError:
                        pass
                    expected.append((label, entry, None))
                else:
                    expected.append((label, entry,
                                     their_generate(theirs, ids, mask if with_mask else None,
                                                    settings, seed)))
        cases_file = os.path.join(tmp, "cases.json")
        with open(cases_file, "w", encoding="utf-8") as f:
            json.dump(dump_cases, f)
        lines = run([DUMP, "--cases", cases_file]).stdout.splitlines()
        if len(lines) != len(expected):
            differences.append(f"{len(lines)} results for {len(expected)} cases")
        checked = 0
        for (label, entry, theirs), line in zip(expected, lines):
            result = json.loads(line)
            if theirs is None:
                if "error" not in result:
                    differences.append(f"{label}: not refused")
                checked += 1
                continue
            if "error" in result:
                differences.append(f"{label}: {result['error']}")
                continue
            ours = load_file(entry["output"])
            sequences, scores = theirs
            if ours["sequences"].shape != sequences.shape or \
                    not torch.equal(ours["sequences"], sequences):
                differences.append(f"{label}: sequences differ\n ours {ours['sequences'].tolist()}"
                                   f"\n theirs {sequences.tolist()}")
            if scores is not None:
                if "sequence_scores" not in ours:
                    differences.append(f"{label}: no sequence_scores")
                elif not torch.allclose(ours["sequence_scores"], scores, atol=1e-5, rtol=0):
                    differences.append(f"{label}: sequence_scores {ours['sequence_scores']} vs "
                                       f"{scores}")
            checked += 1
        checked += check_command(tmp, differences)
    fail_if(differences, "generate() vs transformers")
    expected_count = len(MODELS) * (len(cases(0, 0)) + len(refused_settings(False))) + \
        2 * len(COMMANDS) + len(BAD_COMMANDS)
    if checked != expected_count:
        raise SystemExit(f"parity: checked {checked} cases of {expected_count}")
    print(f"generate: {checked} cases equal to transformers' generate()")


if __name__ == "__main__":
    main()
