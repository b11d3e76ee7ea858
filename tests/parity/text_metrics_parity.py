"""ROUGE, BLEU and chrF against the Python packages: thousands of (prediction, reference) pairs
made from the bundled King James Bible (examples/data/text/kjv.txt) by seeded perturbations
(dropped, swapped and repeated words, case changes, punctuation, numbers, hyphens, HTML entities,
line breaks for rougeLsum, suffixes for the stemmer, Unicode words and spaces), plus hand-written
edge cases, go through rouge_score's RougeScorer (with and without the stemmer), sacrebleu's BLEU
and CHRF (corpus and sentence level, every smoothing, several reference streams, chrF++) and
through ours (ctrainer_parity_text_metrics). Every score must agree within 1e-9 and every count
exactly; nltk's Porter stems, sacrebleu's 13a tokenization and Python's str.lower() are compared
string for string.
"""
import json
import logging
import os
import random
import re
import tempfile

from nltk.stem import porter
from rouge_score import rouge_scorer
from rouge_score import tokenize as rouge_tokenize
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.utils import sum_of_lists

from parity_support import EXAMPLES_DATA, binary, fail_if, run

DUMP = binary("ctrainer_parity_text_metrics")
SEED = 1202
KJV_PAIRS = 2000
# The option variants of corpus BLEU and chrF run on the first pairs only (sacrebleu's chrF is
# slow in Python); the default settings run on all of them.
VARIANT_PAIRS = 600
SENTENCE_LEVEL_CASES = 300
TOLERANCE = 1e-9
ROUGE_TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]

UNICODE_WORDS = ["café", "naïve", "İstanbul", "İ", "ΟΔΟΣ", "ΟΔΟΣ.", "Σ", "ΑΣ'Β", "Σίσυφος",
                 "straße", "\u212a", "\u212aelvin", "Ελλάς", "日本語", "😀", "œuvre", "Ångström",
                 "ﬁne", "ǅemal", "Ⅻ", "ª", "\u0301", "e\u0301", "Ω", "\U0001f130"]
PUNCTUATION = [".", ",", ";", ":", "!", "?", "'", '"', "(", ")", "-", "--", "...", "&", "/", "[",
               "]", "$", "%", "—", "“", "”", "’", "«", "»", "`", "~", "{", "}", "@", "#", "*"]
NUMBERS = ["3", "42", "1,000", "3.14", "12-14", "2024", "0.5", "1.", ",5", "7th", "1990s", "4-",
           "-9", "10.000,5", "1/2", "$5", "50%"]
ENTITIES = ["&amp;", "&quot;", "&lt;", "&gt;", "&amp;lt;", "&", "&nbsp;", "<skipped>", "&amp;quot;"]
SUFFIXES = ["s", "es", "ed", "ing", "ly", "ness", "ation", "ational", "ful", "fulness", "ize",
            "izer", "ies", "ied", "able", "ment", "ence", "alli", "logi", "y", "eed", "bli", "ss"]
SPACES = ["  ", "\t", "\u00a0", "\u2009", "\u3000", " \n ", "\u200b"]

HAND_PAIRS = [
    ("", ""),
    ("", "the cat sat on the mat"),
    ("the cat sat on the mat", ""),
    ("the cat sat on the mat", "the cat sat on the mat"),
    ("The Cat SAT on the mat.", "the cat sat on the mat"),
    ("...", "!!!"),
    ("the the the the", "the cat the"),
    ("\n\n", "a\n\nb"),
    ("a b\nc d\n\n e", "c d\n a b"),
    ("first line\n\nsecond line\n", "second line\nfirst line"),
    (" \n ", "word"),
    ("running runners ran", "the runner runs quickly"),
    ("generalizations of operational relativity", "generalization operate relative"),
    ("happiness skies dying lying", "happy sky die lie"),
    ("3,000 men at 9.5 o'clock", "3000 men at 9 5 oclock"),
    ("İstanbul \u212aelvin", "istanbul kelvin"),
    ("café naïve straße", "cafe naive strasse"),
    ("日本語 text 😀", "text"),
    ("state-of-the-art 12-14", "state of the art 12 14"),
    ("AT&amp;T &lt;tag&gt; &quot;q&quot;", 'AT&T <tag> "q"'),
    ("an ex-\nample", "an example"),
    ("<skipped> word", "word"),
    ("yyyy yyyyy", "yyy"),
    ("ΟΔΟΣ Σίσυφος", "οδος σισυφος"),
    ("a.b,c 1.5 1,5 .5 5. ,x", "a . b , c"),
    ("tab\tseparated\u00a0nbsp\u3000ideographic", "tab separated nbsp ideographic"),
]

EXTRA_STEM_WORDS = [
    "caresses", "ponies", "ties", "caress", "cats", "feed", "agreed", "plastered", "bled",
    "motoring", "sing", "conflated", "troubled", "sized", "hopping", "tanned", "falling",
    "hissing", "fizzed", "failing", "filing", "happy", "sky", "relational", "conditional",
    "rational", "valenci", "hesitanci", "digitizer", "conformabli", "radicalli", "differentli",
    "vileli", "analogousli", "vietnamization", "predication", "operator", "feudalism",
    "decisiveness", "hopefulness", "callousness", "formaliti", "sensitiviti", "sensibiliti",
    "triplicate", "formative", "formalize", "electriciti", "electrical", "hopeful", "goodness",
    "revival", "allowance", "inference", "airliner", "gyroscopic", "adjustable", "defensible",
    "irritant", "replacement", "adjustment", "dependent", "adoption", "homologou", "communism",
    "activate", "angulariti", "homologous", "effective", "bowdlerize", "probate", "rate",
    "cease", "controll", "roll", "dies", "flies", "died", "spied", "enjoy", "by", "spy",
    "geology", "theology", "archaeology", "innings", "outings", "cannings", "howe", "proceed",
    "exceed", "succeed", "news", "dying", "lying", "tying", "skies", "generously",
    "fulli", "yyyy", "yyyyyyy", "ay", "oy", "ies", "ied", "eed", "sses", "ing", "ed", "1990s",
    "3rd", "a1b2", "bb", "aa", "xyz", "abcdefghijklmnopqrstuvwxyz", "ational", "tional",
    "Running", "CAPS",
]

EXTRA_13A_LINES = [
    "", " ", "a", "Hello, world.", "3.14 and 1,000.", "a.b", "1.a", "a.1", "..", ",,", ".,.,",
    "x-\ny", "x -\n y", "line\nbreak", "&amp;&amp;", "&amp;lt;", "<skipped>", "<<skipped>>",
    "12-14", "a-b", "-1", "1-", "1--2", "é.", ".é", "1.é", "é,1", "\u00a0a\u00a0.\u00a0",
    "tab\there", "'quoted'", "(paren) [bracket] {brace}", "$5 50% #1 @x ^y _z `w ~v |u",
    "trailing   \n", "日本語。", "end.\u3000", "a,b,c", "9,999.99", "a . b , c",
]

EXTRA_LOWER = [
    "ΟΔΟΣ", "ΟΔΟΣ ΟΔΟΣ", "Σ", "ΑΣ", "ΑΣΑ", "ΑΣ'", "ΑΣ'Β", "Α.Σ", "ΑΣ\u0301", "ΑΣ\u0301Β",
    "1Σ", "ªΣ", "\U0001f130Σ", "ⒶΣ", "ΣΑ", "İ", "İstanbul", "\u212a", "Å", "ǅ", "ẞ", "Ⅻ",
    "MIXED Case ÀÉÎ", "\u0345Σ", "A\u0345Σ",
]


def read_verses():
    with open(os.path.join(EXAMPLES_DATA, "text", "kjv.txt"), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def perturb(text, rng):
    """`text` with a few random word-level edits."""
    words = text.split(" ")
    for _ in range(rng.randint(0, 5)):
        if not words:
            words = [""]
        i = rng.randrange(len(words))
        op = rng.randrange(13)
        if op == 0 and len(words) > 1:
            del words[i]
        elif op == 1 and i + 1 < len(words):
            words[i], words[i + 1] = words[i + 1], words[i]
        elif op == 2:
            words.insert(i, words[i])
        elif op == 3:
            words[i] = rng.choice([str.upper, str.lower, str.title, str.swapcase])(words[i])
        elif op == 4:
            mark = rng.choice(PUNCTUATION)
            words[i] = mark + words[i] if rng.random() < 0.3 else words[i] + mark
        elif op == 5:
            words.insert(i, rng.choice(NUMBERS))
        elif op == 6 and i + 1 < len(words):
            words[i:i + 2] = [words[i] + rng.choice(["-", "-\n", "–", "/"]) + words[i + 1]]
        elif op == 7:
            words.insert(i, rng.choice(ENTITIES))
        elif op == 8:
            words[i] += rng.choice(["\n", ".\n", "\n\n", " \n", "\n "])
        elif op == 9:
            words[i] = words[i].rstrip(".,;:!?") + rng.choice(SUFFIXES)
        elif op == 10:
            words.insert(i, rng.choice(UNICODE_WORDS))
        elif op == 11:
            words[i] = re.sub(r"[^\w\s]", "", words[i])
        elif op == 12 and len(words) > 2:
            words = words[:rng.randrange(1, len(words))]
    out = ""
    for k, word in enumerate(words):
        if k:
            out += rng.choice(SPACES) if rng.random() < 0.05 else " "
        out += word
    return out


def make_pairs(rng, verses):
    """(prediction, reference, second reference) triples."""
    triples = []
    for _ in range(KJV_PAIRS):
        start = rng.randrange(len(verses) - 3)
        verse = verses[start]
        kind = rng.random()
        if kind < 0.55:
            prediction, reference = perturb(verse, rng), verse
        elif kind < 0.7:
            prediction, reference = perturb(verse, rng), perturb(verse, rng)
        elif kind < 0.87:  # several sentences, one a line, for rougeLsum
            group = verses[start:start + rng.randint(2, 3)]
            reference = "\n".join(group)
            separator = rng.choice(["\n", "\n", " ", "\n\n"])
            prediction = separator.join(perturb(v, rng) for v in rng.sample(group, len(group)))
        elif kind < 0.94:
            prediction, reference = perturb(verses[rng.randrange(len(verses))], rng), verse
        else:
            cut = rng.randint(0, len(verse))
            prefix = verse[:cut]
            prediction, reference = (prefix, verse) if rng.random() < 0.5 else (verse, prefix)
        triples.append((prediction, reference, perturb(reference, rng)))
    for prediction, reference in HAND_PAIRS:
        triples.append((prediction, reference, perturb(reference, rng)))
    return triples


def bleu_cases(triples, rng):
    cases = [{"hypotheses": [t[0] for t in triples], "references": [[t[1] for t in triples]]}]
    predictions = [t[0] for t in triples[:VARIANT_PAIRS]]
    one_stream = [[t[1] for t in triples[:VARIANT_PAIRS]]]
    two_streams = one_stream + [[t[2] for t in triples[:VARIANT_PAIRS]]]
    for smooth in ["floor", "add-k", "none"]:
        cases.append({"hypotheses": predictions, "references": one_stream, "smooth_method": smooth})
    cases += [
        {"hypotheses": predictions, "references": one_stream, "smooth_method": "floor",
         "smooth_value": 0.25},
        {"hypotheses": predictions, "references": one_stream, "smooth_method": "add-k",
         "smooth_value": 2},
        {"hypotheses": predictions, "references": one_stream, "lowercase": True},
        {"hypotheses": predictions, "references": one_stream, "tokenize": "none"},
        {"hypotheses": predictions, "references": one_stream, "use_effective_order": True},
        {"hypotheses": predictions, "references": two_streams},
        {"hypotheses": predictions, "references": two_streams[::-1], "lowercase": True},
        {"hypotheses": [""] * 4, "references": [["a b c"] * 4]},
        {"hypotheses": ["a b c"] * 4, "references": [[""] * 4]},
        {"hypotheses": ["the cat"], "references": [["the cat sat on the mat"]]},
        {"hypotheses": ["the cat"], "references": [["the cat sat on the mat"]],
         "smooth_method": "none", "use_effective_order": True},
    ]
    smooths = ["exp", "floor", "add-k", "none"]
    for i in range(SENTENCE_LEVEL_CASES):
        prediction, reference, second = triples[rng.randrange(len(triples))]
        cases.append({"hypotheses": [prediction],
                      "references": [[reference], [second]] if i % 3 == 0 else [[reference]],
                      "smooth_method": smooths[i % 4], "use_effective_order": i % 2 == 0,
                      "lowercase": i % 5 == 0})
    return cases


def chrf_cases(triples, rng):
    cases = [{"hypotheses": [t[0] for t in triples], "references": [[t[1] for t in triples]]}]
    predictions = [t[0] for t in triples[:VARIANT_PAIRS]]
    one_stream = [[t[1] for t in triples[:VARIANT_PAIRS]]]
    two_streams = one_stream + [[t[2] for t in triples[:VARIANT_PAIRS]]]
    cases += [
        {"hypotheses": predictions, "references": one_stream, "word_order": 2},
        {"hypotheses": predictions, "references": one_stream, "eps_smoothing": True},
        {"hypotheses": predictions, "references": one_stream, "whitespace": True},
        {"hypotheses": predictions, "references": one_stream, "lowercase": True},
        {"hypotheses": predictions, "references": one_stream, "beta": 1, "char_order": 4},
        {"hypotheses": predictions, "references": two_streams, "word_order": 2},
        {"hypotheses": [""] * 3, "references": [["abc"] * 3]},
        {"hypotheses": ["abc"] * 3, "references": [[""] * 3]},
        {"hypotheses": ["abc", "xyz"], "references": [["abc", "uvw"]], "word_order": 2},
    ]
    for i in range(SENTENCE_LEVEL_CASES):
        prediction, reference, second = triples[rng.randrange(len(triples))]
        cases.append({"hypotheses": [prediction],
                      "references": [[reference], [second]] if i % 3 == 0 else [[reference]],
                      "word_order": 2 if i % 2 else 0, "eps_smoothing": i % 4 == 1,
                      "whitespace": i % 5 == 2, "lowercase": i % 7 == 3})
    return cases


def python_bleu(case, index):
    if index == 0:  # the defaults on every pair, through the function users call
        return sacrebleu.corpus_bleu(case["hypotheses"], case["references"])
    metric = BLEU(smooth_method=case.get("smooth_method", "exp"),
                  smooth_value=case.get("smooth_value"), lowercase=case.get("lowercase", False),
                  tokenize=case.get("tokenize", "13a"),
                  effective_order=case.get("use_effective_order", False))
    return metric.corpus_score(case["hypotheses"], case["references"])


def python_chrf(case, index):
    """The score and the summed statistics (None for case 0)."""
    if index == 0:  # the defaults on every pair, through the function users call
        return sacrebleu.corpus_chrf(case["hypotheses"], case["references"]).score, None
    metric = CHRF(char_order=case.get("char_order", 6), word_order=case.get("word_order", 0),
                  beta=case.get("beta", 2), lowercase=case.get("lowercase", False),
                  whitespace=case.get("whitespace", False),
                  eps_smoothing=case.get("eps_smoothing", False))
    # corpus_score is these two steps (and argument checks); taken apart to see the statistics.
    statistics = metric._extract_corpus_statistics(case["hypotheses"], case["references"])
    score = metric._aggregate_and_compute(statistics)
    return score.score, [int(x) for x in sum_of_lists(statistics)]


class Comparison:
    def __init__(self):
        self.differences = []
        self.largest = 0.0
        self.values = 0

    def number(self, what, ours, theirs):
        self.values += 1
        difference = abs(ours - theirs)
        self.largest = max(self.largest, difference)
        if not difference <= TOLERANCE:
            self.differences.append(f"{what}: ours {ours!r}, theirs {theirs!r}")

    def exact(self, what, ours, theirs):
        self.values += 1
        if ours != theirs:
            self.differences.append(f"{what}: ours {ours!r}, theirs {theirs!r}")


def main():
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)
    rng = random.Random(SEED)
    verses = read_verses()
    triples = make_pairs(rng, verses)
    bleu = bleu_cases(triples, rng)
    chrf = chrf_cases(triples, rng)
    stem_words = sorted({w for v in verses for w in rouge_tokenize.tokenize(v, None)}
                        | set(EXTRA_STEM_WORDS))
    lines_13a = sorted({t for triple in triples for t in triple[:2]} | set(EXTRA_13A_LINES))
    lower_texts = EXTRA_LOWER + [t[0] for t in triples]
    cases = {"rouge_pairs": [[p, r] for p, r, _ in triples], "stem_words": stem_words,
             "tokenize_13a": lines_13a, "lower": lower_texts, "bleu_cases": bleu,
             "chrf_cases": chrf}
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "cases.json"), "w", encoding="utf-8") as f:
            json.dump(cases, f)
        run([DUMP, os.path.join(tmp, "cases.json"), os.path.join(tmp, "ours.json")])
        with open(os.path.join(tmp, "ours.json"), encoding="utf-8") as f:
            ours = json.load(f)

    check = Comparison()
    for stemmed, key in [(True, "stemmed"), (False, "plain")]:
        scorer = rouge_scorer.RougeScorer(ROUGE_TYPES, use_stemmer=stemmed)
        sums = {t: 0.0 for t in ROUGE_TYPES}
        our_pairs = ours["rouge"][key]["pairs"]
        check.exact(f"ROUGE {key}: pair count", len(our_pairs), len(triples))
        for i, ((prediction, reference, _), our_scores) in enumerate(zip(triples, our_pairs)):
            theirs = scorer.score(reference, prediction)
            for rouge_type in ROUGE_TYPES:
                sums[rouge_type] += theirs[rouge_type].fmeasure
                for field, our_value, their_value in zip(
                        ("precision", "recall", "fmeasure"), our_scores[rouge_type],
                        theirs[rouge_type]):
                    check.number(f"ROUGE {key} pair {i} {rouge_type} {field} "
                                 f"({prediction!r} vs {reference!r})", our_value, their_value)
        for rouge_type in ROUGE_TYPES:
            check.number(f"ROUGE {key} corpus {rouge_type}",
                         ours["rouge"][key]["corpus"][rouge_type], sums[rouge_type] / len(triples))

    stemmer = porter.PorterStemmer()
    for word, our_stem in zip(stem_words, ours["stems"]):
        check.exact(f"stem of {word!r}", our_stem, stemmer.stem(word))
    check.exact("stem count", len(ours["stems"]), len(stem_words))
    tokenizer = Tokenizer13a()
    for line, our_tokens in zip(lines_13a, ours["tokens_13a"]):
        check.exact(f"13a of {line!r}", our_tokens, tokenizer(line))
    check.exact("13a count", len(ours["tokens_13a"]), len(lines_13a))
    for text, our_lower in zip(lower_texts, ours["lower"]):
        check.exact(f"lower of {text!r}", our_lower, text.lower())

    check.exact("BLEU case count", len(ours["bleu"]), len(bleu))
    for i, (case, our_score) in enumerate(zip(bleu, ours["bleu"])):
        theirs = python_bleu(case, i)
        what = f"BLEU case {i} ({len(case['hypotheses'])} segments, " \
               f"{ {k: v for k, v in case.items() if k not in ('hypotheses', 'references')} })"
        check.number(f"{what} score", our_score["score"], theirs.score)
        check.number(f"{what} bp", our_score["bp"], theirs.bp)
        for n, (ours_p, theirs_p) in enumerate(zip(our_score["precisions"], theirs.precisions)):
            check.number(f"{what} precision {n + 1}", ours_p, theirs_p)
        counts, totals = list(our_score["counts"]), list(our_score["totals"])
        if case.get("smooth_method") == "add-k" and any(counts):
            # sacrebleu's add-k returns its counts and totals with the smoothing added to orders 2+.
            k = case.get("smooth_value") or 1
            counts = counts[:1] + [c + k for c in counts[1:]]
            totals = totals[:1] + [t + k for t in totals[1:]]
        check.exact(f"{what} counts", counts, list(theirs.counts))
        check.exact(f"{what} totals", totals, list(theirs.totals))
        check.exact(f"{what} sys_len", our_score["sys_len"], theirs.sys_len)
        check.exact(f"{what} ref_len", our_score["ref_len"], theirs.ref_len)

    check.exact("chrF case count", len(ours["chrf"]), len(chrf))
    for i, (case, our_score) in enumerate(zip(chrf, ours["chrf"])):
        their_score, their_statistics = python_chrf(case, i)
        what = f"chrF case {i} ({len(case['hypotheses'])} segments, " \
               f"{ {k: v for k, v in case.items() if k not in ('hypotheses', 'references')} })"
        check.number(f"{what} score", our_score["score"], their_score)
        if their_statistics is not None:
            check.exact(f"{what} statistics", our_score["statistics"], their_statistics)

    print(f"parity: {len(triples)} pairs (ROUGE 1/2/L/Lsum with and without stemmer), "
          f"{len(stem_words)} stems, {len(lines_13a)} 13a lines, {len(lower_texts)} lower(), "
          f"{len(bleu)} BLEU and {len(chrf)} chrF cases: {check.values} values, "
          f"largest difference {check.largest:.3g}")
    fail_if(check.differences, "text metrics against rouge_score, nltk and sacrebleu")


if __name__ == "__main__":
    main()
