"""LoRA against the real PEFT (issue 33, item 4), fp32, CPU.

1. PEFT -> ours: tiny random BERT / GPT-2 / Llama models get adapters from peft.get_peft_model
   (target lists, "all-linear", a regular expression, exclude_modules, rsLoRA, SEQ_CLS's
   modules_to_save), their A and B perturbed so the update is not zero, saved with
   PeftModel.save_pretrained. ctrainer_parity_model_dump loads the base folder and the adapter
   (--lora_config): logits, loss and the gradient of every trainable tensor agree within 1e-5,
   and every tensor PEFT freezes gets no gradient on our side.
2. run_clm --lora_config <PEFT's fresh adapter> against HF Trainer training the same PeftModel
   (GPT-2 all-linear, Conv1D fan_in_fan_out, the bundled corpus): every step's loss, grad_norm and
   learning_rate and the eval loss within 1e-4 relative; output_dir holds only
   adapter_model.safetensors + adapter_config.json with PEFT's own keys, which
   PeftModel.from_pretrained loads with the logits of HF's trained model; --merge_lora's folder
   loads in transformers' AutoModelForCausalLM with the same logits.
3. run_glue --lora_r 4 --lora_target_modules query,key,value on a tiny BERT: PEFT loads its adapter
   (with the classifier as modules_to_save) onto the base folder and computes the logits, loss
   and gradients ours computes from base + adapter.
"""
import json
import os
import shutil
import tempfile

import torch
import transformers
from peft import LoraConfig, PeftModel, TaskType, get_peft_model
from safetensors.torch import load_file
from transformers import (AutoModelForCausalLM, AutoModelForSequenceClassification,
                          BertConfig, BertForMaskedLM, BertForSequenceClassification,
                          GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Trainer,
                          TrainingArguments, default_data_collator)

import bert_parity
import decoder_parity
import run_clm_vs_hf
from decoder_parity import TOLERANCE, VOCAB
from lm_run_parity import compare_runs
from parity_support import EXAMPLES_DATA, binary, fail_if, run

THREADS = 2
PREFIX = "base_model.model."


def ours_name(peft_name):
    """PEFT's in-memory parameter name -> ours (and the file's key without the prefix)."""
    name = peft_name[len(PREFIX):] if peft_name.startswith(PREFIX) else peft_name
    return (name.replace(".lora_A.default.", ".lora_A.").replace(".lora_B.default.", ".lora_B.")
            .replace(".modules_to_save.default.", ".").replace(".base_layer.", "."))


def perturb_adapter(model, seed):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.requires_grad:
                parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.1)


def theirs(model, batch):
    model.eval()
    model.zero_grad(set_to_none=True)
    result = model(**batch)
    result.loss.backward()
    out = {"logits": result.logits.detach(), "loss": result.loss.detach()}
    frozen = set()
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            out["grad." + ours_name(name)] = parameter.grad
        elif ".original_module." not in name:
            frozen.add("grad." + ours_name(name))
    return out, frozen


BERT = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=48, max_position_embeddings=32, pad_token_id=0)
GPT2 = dict(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=4)
LLAMA = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
# (tag, task, model, LoraConfig)
CASES = [
    ("bert_seq_cls_list", "sequence_classification",
     lambda: BertForSequenceClassification(BertConfig(**BERT, num_labels=3)),
     LoraConfig(task_type=TaskType.SEQ_CLS, r=4, lora_alpha=8, target_modules=["query", "value"])),
    ("bert_mlm_exclude", "masked_lm", lambda: BertForMaskedLM(BertConfig(**BERT)),
     LoraConfig(r=2, lora_alpha=5, target_modules=["dense"],
                exclude_modules=["attention.output.dense"])),
    ("gpt2_all_linear_rslora", "causal_lm",
     lambda: GPT2LMHeadModel(GPT2Config(**GPT2, tie_word_embeddings=False)),
     LoraConfig(task_type=TaskType.CAUSAL_LM, r=4, lora_alpha=16, use_rslora=True,
                target_modules="all-linear")),
    ("llama_gqa_regex", "causal_lm", lambda: LlamaForCausalLM(LlamaConfig(**LLAMA)),
     LoraConfig(task_type=TaskType.CAUSAL_LM, r=3, lora_alpha=6, lora_dropout=0.2,
                target_modules=r".*\.(k_proj|o_proj|down_proj)")),
]


def peft_to_ours(scratch):
    differences, compared = [], 0
    for index, (tag, task, make, config) in enumerate(CASES):
        torch.manual_seed(70 + index)
        base = make()
        bert_parity.perturb_parameters(base, 0.05, seed=80 + index)
        base_dir, adapter_dir = (os.path.join(scratch, f"{tag}-{x}") for x in ("base", "adapter"))
        base.save_pretrained(base_dir)
        model = get_peft_model(base, config)
        perturb_adapter(model, seed=90 + index)
        model.save_pretrained(adapter_dir)
        num_labels = getattr(base.config, "num_labels", 2)
        batch = decoder_parity.make_batch(task, num_labels, seed=index)
        reference, frozen = theirs(model, batch)
        mine, _ = decoder_parity.ours(batch, scratch, tag, task, model=base_dir,
                                      extra=["--lora_config", adapter_dir])
        differences += bert_parity.compare(f"{tag}: PEFT -> ours", mine, reference, None,
                                           keys=sorted(reference), tolerance=TOLERANCE)
        for key in sorted(frozen):
            if key in mine and mine[key].abs().max().item() != 0:
                differences.append(f"{tag}: {key} is frozen in PEFT but trains in ours")
        trainable = len(reference) - 2
        print(f"parity: {tag}: loss {reference['loss'].item():.6f} (ours "
              f"{mine['loss'].item():.6f}), {trainable} trainable tensors, {len(frozen)} frozen")
        compared += len(reference)
    return differences, compared


def run_clm_lora(scratch):
    """Part 2: run_clm with a PEFT-made adapter against HF Trainer training the same one."""
    differences = []
    init = os.path.join(scratch, "clm-init")
    run_clm_vs_hf.make_model(init)
    config = LoraConfig(task_type=TaskType.CAUSAL_LM, r=4, lora_alpha=16,
                        target_modules="all-linear")
    torch.manual_seed(1)
    fresh = os.path.join(scratch, "clm-fresh-adapter")
    get_peft_model(GPT2LMHeadModel.from_pretrained(init), config).save_pretrained(fresh)

    train_file = os.path.join(scratch, "train.txt")
    with open(run_clm_vs_hf.CORPUS, encoding="ascii") as f:
        head = [next(f) for _ in range(run_clm_vs_hf.LINES)]
    with open(train_file, "w", encoding="ascii") as f:
        f.writelines(head)
    shared = dict(run_clm_vs_hf.SHARED, learning_rate=5e-3)
    ours = os.path.join(scratch, "clm-ours")
    run([binary("run_clm"), "--model_name_or_path", init, "--train_file", train_file,
         "--block_size", str(run_clm_vs_hf.BLOCK), "--max_eval_samples",
         str(run_clm_vs_hf.EVAL_BLOCKS), "--do_train", "--do_eval", "--output_dir", ours,
         "--use_cpu", "true", "--disable_tqdm", "true", "--lora_config", fresh, "--merge_lora",
         *[f"--{k}={v}" for k, v in shared.items()]],
        env=dict(os.environ, OMP_NUM_THREADS=str(THREADS)))
    tokenizer = transformers.AutoTokenizer.from_pretrained(init)
    train_blocks, eval_blocks = run_clm_vs_hf.run_clm_blocks(train_file, tokenizer)
    eval_blocks = eval_blocks[:run_clm_vs_hf.EVAL_BLOCKS]
    peft_model = PeftModel.from_pretrained(GPT2LMHeadModel.from_pretrained(init), fresh,
                                           is_trainable=True)
    args = TrainingArguments(output_dir=os.path.join(scratch, "clm-hf"), use_cpu=True,
                             disable_tqdm=True, dataloader_num_workers=0, **shared)
    trainer = Trainer(model=peft_model, args=args,
                      train_dataset=run_clm_vs_hf.Blocks(train_blocks),
                      eval_dataset=run_clm_vs_hf.Blocks(eval_blocks),
                      data_collator=default_data_collator)
    trainer._loss_shifts_labels = True  # as parity.run_clm_vs_hf: GPT-2's targets are shifted
    trainer.train()
    differences += compare_runs("run_clm LoRA", ours, trainer, len(train_blocks),
                                len(eval_blocks), run_clm_vs_hf.STEPS, run_clm_vs_hf.RTOL)

    files = sorted(f for f in os.listdir(ours)
                   if f.endswith(".safetensors") or f in ("config.json", "adapter_config.json"))
    if files != ["adapter_config.json", "adapter_model.safetensors"]:
        differences.append(f"run_clm LoRA: output_dir's model files are {files}")
    peft_keys = sorted(load_file(os.path.join(fresh, "adapter_model.safetensors")))
    our_keys = sorted(load_file(os.path.join(ours, "adapter_model.safetensors")))
    if our_keys != peft_keys:
        differences.append(f"run_clm LoRA: adapter keys differ from PEFT's: "
                           f"{sorted(set(our_keys) ^ set(peft_keys))[:6]}")
    probe = torch.tensor([eval_blocks[0]])
    loaded = PeftModel.from_pretrained(GPT2LMHeadModel.from_pretrained(init), ours).eval()
    merged = AutoModelForCausalLM.from_pretrained(os.path.join(ours, "merged")).eval()
    with torch.no_grad():
        trained = trainer.model.eval()(probe).logits
        gaps = {"PEFT loading our adapter": (loaded(probe).logits - trained).abs().max().item(),
                "transformers loading --merge_lora's folder":
                    (merged(probe).logits - trained).abs().max().item()}
        base_gap = (GPT2LMHeadModel.from_pretrained(init)(probe).logits - trained).abs().max()
    for what, gap in gaps.items():
        print(f"parity: {what}: logits within {gap:.1e} of HF's trained PeftModel "
              f"(the adapter moved them by {base_gap.item():.2f})")
        if gap > 1e-4:
            differences.append(f"run_clm LoRA: {what}: logits differ by {gap}")
    return differences


def run_glue_lora(scratch):
    """Part 3: run_glue's --lora_* flags on a BERT classifier; PEFT loads the result."""
    base_dir = os.path.join(scratch, "glue-base")
    torch.manual_seed(5)
    vocab = os.path.join(EXAMPLES_DATA, "vocab", "bert-base-uncased-vocab.txt")
    BertForSequenceClassification(BertConfig(**dict(BERT, vocab_size=30522,
                                                     max_position_embeddings=64),
                                             num_labels=2)).save_pretrained(base_dir)
    shutil.copyfile(vocab, os.path.join(base_dir, "vocab.txt"))
    output_dir = os.path.join(scratch, "glue-lora")
    run([binary("run_glue"), "--task_name", "mrpc", "--model_name_or_path", base_dir,
         "--data_dir", os.path.join(EXAMPLES_DATA, "glue", "MRPC"), "--output_dir", output_dir,
         "--cache_dir", os.path.join(scratch, "cache"), "--do_train", "--max_train_samples", "24",
         "--max_steps", "3", "--per_device_train_batch_size", "8", "--max_seq_length", "64",
         "--learning_rate", "1e-2", "--seed", "3", "--save_strategy", "no", "--report_to", "none",
         "--disable_tqdm", "true", "--lora_r", "4", "--lora_alpha", "8",
         "--lora_target_modules", "query,key,value", "--lora_dropout", "0.1"])
    with open(os.path.join(output_dir, "adapter_config.json")) as f:
        saved = json.load(f)
    differences = []
    expected = {"r": 4, "lora_alpha": 8, "lora_dropout": 0.1, "task_type": "SEQ_CLS",
                "target_modules": ["query", "key", "value"],
                "modules_to_save": ["classifier", "score"], "base_model_name_or_path": base_dir}
    for key, value in expected.items():
        if saved.get(key) != value:
            differences.append(f"run_glue LoRA: adapter_config.json {key} {saved.get(key)} != "
                               f"{value}")
    model = PeftModel.from_pretrained(
        AutoModelForSequenceClassification.from_pretrained(base_dir), output_dir,
        is_trainable=True)
    from bert_model_parity import encode, mrpc_pairs
    tokenizer = transformers.BertTokenizerFast.from_pretrained(base_dir, do_lower_case=True)
    pairs, labels = mrpc_pairs("dev", 8)
    batch = dict(encode(tokenizer, pairs), labels=torch.tensor(labels))
    reference, _ = theirs(model, batch)
    mine, _ = decoder_parity.ours(batch, scratch, "glue-lora", "sequence_classification",
                                  model=base_dir, extra=["--lora_config", output_dir])
    differences += bert_parity.compare("run_glue's LoRA adapter in PEFT", mine, reference, None,
                                       keys=sorted(reference), tolerance=TOLERANCE)
    print(f"parity: run_glue's LoRA adapter: loss {reference['loss'].item():.6f} "
          f"(ours {mine['loss'].item():.6f})")
    return differences


def main():
    torch.set_num_threads(THREADS)
    transformers.logging.set_verbosity_error()
    with tempfile.TemporaryDirectory(prefix="ctrainer_parity_lora_") as scratch:
        differences, compared = peft_to_ours(scratch)
        differences += run_clm_lora(scratch)
        differences += run_glue_lora(scratch)
    fail_if(differences, f"LoRA against PEFT ({compared} tensors, run_clm and run_glue)")


if __name__ == "__main__":
    main()
