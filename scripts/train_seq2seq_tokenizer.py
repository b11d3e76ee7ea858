#!/usr/bin/env python3
"""Trains examples/data/seq2seq/t5-unigram-8k: a T5-style Unigram (SentencePiece) tokenizer for the
seq2seq demos (run_translation, run_summarization), on the TRAIN splits of
examples/data/seq2seq/translation_en_de (English and German sides) and
examples/data/seq2seq/summarization (texts and summaries), nothing of validation or test.

  1. sentencepiece trains a Unigram model as T5's spiece.model was made: ids <pad>=0, </s>=1,
     <unk>=2, no <s>, SentencePiece's nmt_nfkc normalization; PIECES pieces (the most these
     ~0.5 MB of text allow is 7,554), character_coverage 1.0, every sentence used, one thread
     (sentencepiece is then deterministic).
  2. tokenizer.json is built with the `tokenizers` library with the settings transformers 5's
     T5Tokenizer gives a SentencePiece model (models/t5/tokenization_t5.py and T5Converter):
     model Unigram(pieces and scores, then <extra_id_99> ... <extra_id_0> at score 0, unk_id 2,
     no byte fallback); normalizer Precompiled(the model's nmt_nfkc character map); pre-tokenizer
     Sequence[WhitespaceSplit, Metaspace("▁", prepend_scheme "always", split true)]; decoder
     Metaspace (same settings); post-processor TemplateProcessing "$A </s>" / "$A </s> $B </s>";
     <pad>, </s>, <unk> and the 100 sentinels are special added tokens. PIECES + 100 = 7,600 ids.
  3. tokenizer_config.json: tokenizer_class T5Tokenizer, eos/unk/pad tokens, extra_ids 100, the
     sentinels as additional_special_tokens, model_max_length 512 (T5's).
  4. Unless --no-check: transformers' AutoTokenizer loads the folder (a T5Tokenizer), and its ids
     must equal those of the tokenizer transformers builds itself from the same SentencePiece
     model (spiece.model in a temporary folder) on every sentence of the validation and test
     splits; how many differ from sentencepiece's own segmentation is printed (a few do: equal-
     score segmentations, e.g. "999" as 9|99 or 99|9, that HF tokenizers' Unigram breaks
     otherwise than sentencepiece, with real T5's files too).

Usage (tests' venv: sentencepiece, tokenizers, transformers):
    python scripts/train_seq2seq_tokenizer.py [--out examples/data/seq2seq/t5-unigram-8k] [--no-check]
Running it again writes byte-identical files.
"""
import argparse
import json
import os
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "examples", "data", "seq2seq")
DEFAULT_OUT = os.path.join(DATA, "t5-unigram-8k")
PIECES = 7500
EXTRA_IDS = 100
PAD, EOS, UNK = "<pad>", "</s>", "<unk>"
MODEL_MAX_LENGTH = 512


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def sentences(split):
    out = []
    for row in read_jsonl(os.path.join(DATA, "translation_en_de", split + ".json")):
        out += [row["translation"]["en"], row["translation"]["de"]]
    for row in read_jsonl(os.path.join(DATA, "summarization", split + ".json")):
        out += [row["text"], row["summary"]]
    return out


def train_sentencepiece(lines):
    model = tempfile.SpooledTemporaryFile()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="unigram",
        vocab_size=PIECES, pad_id=0, eos_id=1, unk_id=2, bos_id=-1, pad_piece=PAD,
        eos_piece=EOS, unk_piece=UNK, character_coverage=1.0, input_sentence_size=0,
        normalization_rule_name="nmt_nfkc", num_threads=1, minloglevel=2)
    model.seek(0)
    return model.read()


def build_tokenizer(model_bytes):
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model_bytes)
    sentinels = [f"<extra_id_{i}>" for i in range(EXTRA_IDS - 1, -1, -1)]
    vocab = [(p.piece, p.score) for p in proto.pieces] + [(s, 0.0) for s in sentinels]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=2, byte_fallback=False))
    tokenizer.normalizer = normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)])
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                  for t in [PAD, EOS, UNK] + sentinels])
    tokenizer.post_processor = processors.TemplateProcessing(
        single=["$A", EOS], pair=["$A", EOS, "$B", EOS],
        special_tokens=[(EOS, tokenizer.token_to_id(EOS))])
    assert [tokenizer.token_to_id(t) for t in (PAD, EOS, UNK)] == [0, 1, 2]
    return tokenizer


def tokenizer_config():
    return {
        "tokenizer_class": "T5Tokenizer",
        "eos_token": EOS,
        "unk_token": UNK,
        "pad_token": PAD,
        "extra_ids": EXTRA_IDS,
        "additional_special_tokens": [f"<extra_id_{i}>" for i in range(EXTRA_IDS)],
        "model_max_length": MODEL_MAX_LENGTH,
        "clean_up_tokenization_spaces": False,
    }


def check(out, model_bytes, texts):
    from transformers import AutoTokenizer
    ours = AutoTokenizer.from_pretrained(out)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "spiece.model"), "wb") as f:
            f.write(model_bytes)
        with open(os.path.join(tmp, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "T5Tokenizer"}, f)
        theirs = AutoTokenizer.from_pretrained(tmp)
    sp = spm.SentencePieceProcessor(model_proto=model_bytes)
    print(f"transformers loads {out} as {type(ours).__name__}: {len(ours)} ids, "
          f"pad {ours.pad_token_id}, eos {ours.eos_token_id}, unk {ours.unk_token_id}, "
          f"<extra_id_0> {ours.convert_tokens_to_ids('<extra_id_0>')}")
    assert (ours.pad_token_id, ours.eos_token_id, ours.unk_token_id) == (0, 1, 2)
    differ = ties = 0
    for text in texts:
        ids = ours(text).input_ids
        differ += ids != theirs(text).input_ids
        ties += ids != sp.encode(text) + [1]
    print(f"{len(texts) - differ} of {len(texts)} validation/test sentences tokenize as "
          f"transformers' own T5Tokenizer built from the SentencePiece model does; {ties} differ "
          f"from sentencepiece's own segmentation (Viterbi ties that HF tokenizers' Unigram "
          f"breaks otherwise, as for any T5 tokenizer.json)")
    for text in ["Hello world", "Die Datei kann nicht geöffnet werden."]:
        ids = ours(text).input_ids
        print(f"  {text!r}: {ids} {ours.convert_ids_to_tokens(ids)}")
    return differ == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--no-check", action="store_true")
    args = parser.parse_args()
    train = sentences("train")
    model_bytes = train_sentencepiece(train)
    tokenizer = build_tokenizer(model_bytes)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tokenizer.to_str(pretty=True) + "\n")  # as Tokenizer.save, newline-terminated
    with open(os.path.join(args.out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(), f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"{len(train)} training sentences, {tokenizer.get_vocab_size()} ids")
    if not args.no_check and not check(args.out, model_bytes,
                                       sentences("validation") + sentences("test")):
        raise SystemExit("the saved tokenizer differs from transformers' T5Tokenizer")


if __name__ == "__main__":
    main()
