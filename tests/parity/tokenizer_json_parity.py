"""tokenizer.json parity: ctrainer-tokenize against HF's Rust `tokenizers`, one tokenizer kind per run.

KIND (argv[1]) picks a tokenizer that the `tokenizers` package builds in the test: trained on the
bundled GLUE train sentences (byte-level BPE as GPT-2 and RoBERTa, BPE with byte_fallback and
Metaspace as Llama 2, Split + ByteLevel BPE as Llama 3, Unigram as T5, WordPiece as BERT, a
WordLevel model behind a Sequence of pre-tokenizers), or read from a bundled BERT vocabulary.
Each is saved as tokenizer.json; both sides encode every GLUE train and dev sentence and pair
plus edge cases (empty text, runs of spaces, tabs and newlines, emoji and ZWJ sequences, CJK,
Arabic, Devanagari, combining marks, control characters, a 1 MB word, added tokens inside
words). Two more kinds come from SentencePiece models trained here and converted as transformers
converts them (Precompiled character map + Metaspace + Unigram as T5, BPE with byte_fallback as
Llama 2). ids, type ids, attention mask, offsets (characters), special-token mask, tokens and
decode(ids) (with and without special tokens) must be equal. Then every truncation strategy and
side, the overflowing windows with a stride (nested as the Rust Encoding nests them), and every
padding mode on the pairs of MRPC dev and the edge cases, item by item (an item the Rust library
refuses must be refused by ours too). Finally the tokenizer.json we write back
(ctrainer-tokenize --save_to) must load in `tokenizers` and encode the edge cases the same.
"""
import json
import os
import sys
import tempfile
import time

from parity_support import EXAMPLES_DATA, GLUE_SPLITS, GLUE_TASKS, binary, fail_if, read_glue_task, run

import subprocess

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers,
                        processors, trainers)

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")

EDGE_CASES = [
    "",
    " ",
    "   leading and trailing   ",
    "runs   of  spaces\t\ttabs\n\nnewlines \r\n crlf",
    "emoji 😀👍🏽 family 👨‍👩‍👧‍👦 flag 🇫🇷 keycap 1️⃣",
    "中文字符测试 日本語のテキスト 한국어 텍스트",
    "العربية نص مع أرقام ١٢٣",
    "हिन्दी पाठ देवनागरी",
    "combining e\u0301 a\u0308 n\u0303 \u0915\u093f and precomposed é ä ñ",
    "controls \u0001\u0007\u001b[0m \u007f \u0085 zero\u200bwidth \ufeffbom soft\u00adhyphen",
    "ﬁne ﬂour straße ǅemal ΣΑΣ İstanbul",
    "numbers 1234567 3.14159 1,000,000 ½ ² ⅷ",
    "quotes “double” ‘single’ «guillemets» — dash – … it's don't we'll I'M",
    "added<|extra|>inside<|extra|>words and <|extra|> alone",
    "<s> </s> <unk> [CLS] [SEP] [MASK] <mask> <|endoftext|> <|begin_of_text|>",
    "x" * 300,
    ("Short one.", "A much longer second sentence with many more words than the first one."),
    ("", "empty first"),
    ("empty second", ""),
]
ONE_MB_WORD = "abcdefghij" * 100_000


def glue_rows():
    rows, names = [], []
    for folder in GLUE_TASKS:
        for split in GLUE_SPLITS:
            for row in read_glue_task(folder, split):
                rows.append(row)
                names.append(f"{folder}/{split}")
    return rows, names


def training_text():
    """The GLUE train sentences the tokenizers are trained on (a few seconds of training)."""
    texts = []
    for folder in GLUE_TASKS:
        for a, b in read_glue_task(folder, "train"):
            texts.append(a)
            if b is not None:
                texts.append(b)
    return texts[::2]


def byte_fallback_vocab(vocab, specials):
    """A trained BPE vocabulary with the 256 <0xNN> byte tokens (as Llama 2 has them)."""
    out = {token: i for i, token in enumerate(specials)}
    for b in range(256):
        out[f"<0x{b:02X}>"] = len(out)
    for token, _ in sorted(vocab.items(), key=lambda kv: kv[1]):
        if token not in out:
            out[token] = len(out)
    return out


def trained_bpe(texts, pre_tokenizer, specials, vocab_size=3000, **model_options):
    tok = Tokenizer(models.BPE(**model_options))
    tok.pre_tokenizer = pre_tokenizer
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return tok


def build(kind, texts):
    """The reference tokenizer of `kind`."""
    extra = AddedToken("<|extra|>", special=False, normalized=False)
    if kind in ("gpt2", "roberta"):
        prefix = kind == "roberta"
        specials = ["<|endoftext|>"] if kind == "gpt2" else ["<s>", "<pad>", "</s>", "<unk>"]
        tok = trained_bpe(texts, pre_tokenizers.ByteLevel(add_prefix_space=prefix), specials)
        tok.decoder = decoders.ByteLevel()
        if kind == "gpt2":
            tok.post_processor = processors.ByteLevel(trim_offsets=True)
        else:
            tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
            tok.post_processor = processors.RobertaProcessing(
                ("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")),
                trim_offsets=True, add_prefix_space=True)
        tok.add_tokens([extra])
        return tok
    if kind == "llama2":
        # As transformers' LlamaConverter writes a non-legacy Llama 2 tokenizer.json.
        specials = ["<unk>", "<s>", "</s>"]
        trained = trained_bpe(texts, pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                              split=False), [])
        model_json = json.loads(trained.to_str())["model"]
        vocab = byte_fallback_vocab(model_json["vocab"], specials)
        merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model_json["merges"]]
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True,
                                   byte_fallback=True))
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                         decoders.Fuse(), decoders.Strip(" ", 1, 0)])
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s>:1 $B:1", special_tokens=[("<s>", vocab["<s>"])])
        tok.add_tokens([extra])
        return tok
    if kind == "llama3":
        specials = ["<|begin_of_text|>", "<|end_of_text|>"]
        split = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
        tok = trained_bpe(texts, split, specials, ignore_merges=True)
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|>:1 $B:1",
                special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])])
        tok.add_tokens([extra])
        return tok
    if kind in ("t5_spm", "llama_spm"):
        # A SentencePiece model trained here, converted as transformers converts one with no
        # tokenizer.json: its Precompiled character map (NFKC), Metaspace, Unigram or BPE.
        import sentencepiece
        from transformers.convert_slow_tokenizer import SentencePieceExtractor, SpmConverter
        scratch = tempfile.mkdtemp()
        corpus = os.path.join(scratch, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(t.replace("\n", " ") for t in texts))
        unigram = kind == "t5_spm"
        ids = dict(pad_id=0, eos_id=1, unk_id=2, bos_id=-1) if unigram else dict(unk_id=0, bos_id=1, eos_id=2)
        sentencepiece.SentencePieceTrainer.train(
            input=corpus, model_prefix=os.path.join(scratch, "spm"), vocab_size=2000, character_coverage=1.0,
            model_type="unigram" if unigram else "bpe", byte_fallback=not unigram, minloglevel=2, **ids)
        proto = SentencePieceExtractor(os.path.join(scratch, "spm.model")).proto
        if unigram:
            vocab = [(p.piece, p.score) for p in proto.pieces]
        else:
            vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
        tok = SpmConverter.build_tokenizer_from_spm_proto(proto, vocab)
        marker = "</s>" if unigram else "<s>"
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t in (["<pad>", "</s>", "<unk>"] if unigram else ["<unk>", "<s>", "</s>"])])
        single, pair = ("$A </s>", "$A </s> $B </s>") if unigram else ("<s> $A", "<s> $A <s>:1 $B:1")
        tok.post_processor = processors.TemplateProcessing(
            single=single, pair=pair, special_tokens=[(marker, tok.token_to_id(marker))])
        if "Precompiled" not in tok.to_str():
            sys.exit("parity: the converted SentencePiece tokenizer has no Precompiled normalizer")
        return tok
    if kind == "t5":
        tok = Tokenizer(models.Unigram())
        tok.normalizer = normalizers.Sequence([normalizers.Nmt(), normalizers.NFKC(),
                                               normalizers.Replace(Regex(" {2,}"), " ")])
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
        trainer = trainers.UnigramTrainer(vocab_size=2000, special_tokens=["<pad>", "</s>", "<unk>"],
                                          unk_token="<unk>", show_progress=False)
        tok.train_from_iterator(texts, trainer)
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
        tok.post_processor = processors.TemplateProcessing(
            single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", tok.token_to_id("</s>"))])
        tok.add_tokens([AddedToken("<|extra|>", special=False, normalized=True)])
        return tok
    if kind in ("bert_trained", "bert_uncased", "bert_cased"):
        lower = kind != "bert_cased"
        if kind == "bert_trained":
            tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
            tok.normalizer = normalizers.BertNormalizer(lowercase=True)
            tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
            trainer = trainers.WordPieceTrainer(vocab_size=3000, show_progress=False,
                                                special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
            tok.train_from_iterator(texts, trainer)
        else:
            vocab_file = "bert-base-uncased-vocab.txt" if lower else "bert-base-cased-vocab.txt"
            tok = Tokenizer(models.WordPiece.from_file(os.path.join(EXAMPLES_DATA, "vocab", vocab_file),
                                                       unk_token="[UNK]"))
            tok.normalizer = normalizers.BertNormalizer(lowercase=lower)
            tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
            tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                    for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]])
        tok.decoder = decoders.WordPiece(prefix="##")
        cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
        tok.add_tokens([AddedToken("<|extra|>", single_word=True, normalized=False)])
        return tok
    if kind == "wordlevel":
        tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
        tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(),
                                               normalizers.Lowercase(), normalizers.Strip()])
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(),
            pre_tokenizers.Digits(individual_digits=True)])
        trainer = trainers.WordLevelTrainer(vocab_size=5000, special_tokens=["<unk>", "<pad>", "<cls>", "<sep>"],
                                            show_progress=False)
        tok.train_from_iterator(texts, trainer)
        tok.post_processor = processors.BertProcessing(("<sep>", tok.token_to_id("<sep>")),
                                                       ("<cls>", tok.token_to_id("<cls>")))
        tok.add_tokens([AddedToken("<|extra|>", rstrip=True, normalized=False)])
        return tok
    sys.exit(f"parity: unknown tokenizer kind {kind!r}")


def fields(e, overflowing=False):
    """An Encoding as ctrainer-tokenize prints it (its overflowing windows nested the same way)."""
    out = {"input_ids": e.ids, "token_type_ids": e.type_ids, "attention_mask": e.attention_mask,
           "tokens": e.tokens, "offsets": [list(o) for o in e.offsets],
           "special_tokens_mask": e.special_tokens_mask}
    if overflowing:
        out["overflowing"] = [fields(o, True) for o in e.overflowing]
    return out


def reference(tok, rows, batched=True, overflowing=False):
    """The Rust library's encoding of each row, as the dict ctrainer-tokenize prints (or an error).
    `batched`: one call for the singles and one for the pairs unless an item is refused (not with
    padding, which would pad to the batch's longest: ctrainer-tokenize encodes each line alone)."""
    try:
        if not batched:
            raise ValueError("one by one")
        encodings = [None] * len(rows)
        for paired in (False, True):
            index = [i for i, (_, b) in enumerate(rows) if (b is not None) == paired]
            batch = tok.encode_batch([rows[i] if paired else rows[i][0] for i in index])
            for i, e in zip(index, batch):
                encodings[i] = e
    except BaseException as error:  # some item is refused (or panics): one by one, to know which
        if isinstance(error, KeyboardInterrupt):
            raise
        encodings = []
        for a, b in rows:
            try:
                encodings.append(tok.encode(a, b) if b is not None else tok.encode(a))
            except BaseException as error:  # also the library's panics (a too wide stride)
                if isinstance(error, KeyboardInterrupt):
                    raise
                encodings.append(str(error))
    out = []
    for e in encodings:
        if isinstance(e, str):
            out.append({"error": e})
            continue
        out.append({**fields(e, overflowing), "decoded": tok.decode(e.ids, skip_special_tokens=False),
                    "decoded_without_special": tok.decode(e.ids, skip_special_tokens=True)})
    return out


def ours(path, rows, flags=()):
    stdin = "".join(json.dumps([a] if b is None else [a, b]) + "\n" for a, b in rows)
    result = subprocess.run([binary("ctrainer-tokenize"), "--tokenizer_name", path, "--input_format", "jsonl",
                             "--decode", "--continue_on_error", *flags],
                            input=stdin, capture_output=True, text=True, encoding="utf-8")
    lines = result.stdout.split("\n")[:-1]  # not splitlines(): texts hold U+2028 and U+0085
    if result.returncode not in (0, 1) or len(lines) != len(rows):
        sys.exit(f"parity: ctrainer-tokenize {' '.join(flags)} exited {result.returncode} with {len(lines)} "
                 f"lines for {len(rows)} inputs:\n{result.stderr}")
    return lines  # parsed by compare() only where they differ from the reference's text


def compare(what, names, rows, mine, theirs, differences):
    """`mine`: ctrainer-tokenize's output lines (or dicts). A line that is the reference's dict
    printed in the same layout is equal without parsing it (most of them: 100,000 per kind)."""
    keys = ("input_ids", "token_type_ids", "attention_mask", "tokens", "offsets", "special_tokens_mask",
            "decoded", "decoded_without_special", "overflowing")
    for name, row, m, t in zip(names, rows, mine, theirs):
        if isinstance(m, str):
            if m == json.dumps(t, ensure_ascii=False):
                continue
            m = json.loads(m)
        if "error" in t or "error" in m:
            if ("error" in t) != ("error" in m):
                differences.append(f"{what} {name} {row!r:.120}: ours {m.get('error', 'encoded')!r:.200}, "
                                   f"tokenizers {t.get('error', 'encoded')!r:.200}")
            continue
        for key in keys:
            if key in t and m.get(key) != t[key]:
                differences.append(f"{what} {name} {row!r:.160}\n      {key}: ours {m.get(key)!r:.400}\n"
                                   f"      {' ' * len(key)}  tokenizers {t[key]!r:.400}")
                break


MODES = [  # (ctrainer-tokenize flags, how the Rust tokenizer is configured)
    (["--max_length", "24"], dict(truncation=dict(max_length=24))),
    (["--max_length", "24", "--truncation", "only_first"],
     dict(truncation=dict(max_length=24, strategy="only_first"))),
    (["--max_length", "24", "--truncation", "only_second", "--truncation_side", "left"],
     dict(truncation=dict(max_length=24, strategy="only_second", direction="left"))),
    (["--max_length", "17", "--truncation_side", "left"],
     dict(truncation=dict(max_length=17, direction="left"))),
    (["--max_length", "64", "--padding", "max_length"],
     dict(truncation=dict(max_length=64), padding=dict(length=64))),
    (["--max_length", "40", "--padding", "max_length", "--padding_side", "left"],
     dict(truncation=dict(max_length=40), padding=dict(length=40, direction="left"))),
    (["--pad_to_multiple_of", "8"], dict(padding=dict(pad_to_multiple_of=8))),
    # Overflowing windows (HF's stride): nested windows of truncated pairs, windows from the left,
    # windows padded like their encoding, and a stride of 0.
    (["--max_length", "24", "--return_overflowing_tokens", "--stride", "4"],
     dict(truncation=dict(max_length=24, stride=4))),
    (["--max_length", "20", "--truncation", "only_first", "--truncation_side", "left",
      "--return_overflowing_tokens", "--stride", "2"],
     dict(truncation=dict(max_length=20, stride=2, strategy="only_first", direction="left"))),
    (["--max_length", "22", "--truncation", "only_second", "--return_overflowing_tokens", "--stride", "5"],
     dict(truncation=dict(max_length=22, stride=5, strategy="only_second"))),
    (["--max_length", "16", "--truncation_side", "left", "--return_overflowing_tokens",
      "--padding", "max_length", "--padding_side", "left"],
     dict(truncation=dict(max_length=16, direction="left"), padding=dict(length=16, direction="left"))),
]


def main():
    kind = sys.argv[1]
    start = time.time()
    texts = training_text()
    tok = build(kind, texts)
    pad = next(t for t in ("[PAD]", "<pad>", "<|endoftext|>", "<|end_of_text|>", "<unk>") if tok.token_to_id(t) is not None)
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "tokenizer.json")
        tok.save(path)
        with open(os.path.join(scratch, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "pad_token": pad}, f)
        print(f"parity: {kind}: {tok.get_vocab_size()} tokens, built in {time.time() - start:.1f} s")

        rows, names = glue_rows()
        edge = [r if isinstance(r, tuple) else (r, None) for r in EDGE_CASES] + [(ONE_MB_WORD, None)]
        rows += edge
        names += ["edge case"] * len(edge)
        differences = []
        t0 = time.time()
        mine = ours(path, rows)
        t1 = time.time()
        theirs = reference(tok, rows)
        print(f"parity: {kind}: {len(rows)} texts ({sum(b is not None for _, b in rows)} pairs): "
              f"ours {t1 - t0:.1f} s, tokenizers {time.time() - t1:.1f} s")
        compare("default", names, rows, mine, theirs, differences)
        cases = len(rows)

        subset = [r for r in zip(names, rows) if r[0] == "MRPC/dev" or r[0] == "edge case"][:-1]
        sub_names, sub_rows = [n for n, _ in subset], [r for _, r in subset]
        for flags, config in MODES:
            configured = Tokenizer.from_str(tok.to_str())
            if "truncation" in config:
                configured.enable_truncation(**config["truncation"])
            if "padding" in config:
                configured.enable_padding(pad_id=configured.token_to_id(pad), pad_token=pad, **config["padding"])
            theirs_configured = reference(configured, sub_rows, batched=False,
                                          overflowing="--return_overflowing_tokens" in flags)
            compare(" ".join(flags), sub_names, sub_rows, ours(path, sub_rows, flags), theirs_configured,
                    differences)
            cases += len(sub_rows) + sum(len(t.get("overflowing", ())) for t in theirs_configured)

        saved = os.path.join(scratch, "saved")
        run([binary("ctrainer-tokenize"), "--tokenizer_name", path, "--save_to", saved], input="")
        reloaded = Tokenizer.from_file(os.path.join(saved, "tokenizer.json"))
        compare("written back", ["edge case"] * len(edge), edge, reference(reloaded, edge), theirs[-len(edge):],
                differences)
        cases += len(edge)
        # Invalid UTF-8 cannot reach the Rust library from Python; ours must refuse it clearly.
        bad = subprocess.run([binary("ctrainer-tokenize"), "--tokenizer_name", path], input=b"ok\n\xc3(bad\n",
                             capture_output=True)
        message = bad.stderr.decode("utf-8", "replace")
        if bad.returncode != 2 or "stdin line 2" not in message or "invalid UTF-8 at byte 0" not in message:
            differences.append(f"invalid UTF-8: exit {bad.returncode}, stderr {message!r}")
        cases += 1
    if cases == 0:
        sys.exit("parity: no case was compared")
    fail_if(differences, f"{kind}: {cases} encodings compared")


if __name__ == "__main__":
    main()
