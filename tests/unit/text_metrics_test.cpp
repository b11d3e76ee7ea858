// ROUGE (rouge_score), BLEU and chrF (sacrebleu) on short texts whose scores are worked out by
// hand; tests/parity/text_metrics_parity.py compares thousands of pairs with the packages.
#include <gtest/gtest.h>

#include <ctrainer/examples/seq2seq/metrics/bleu.h>
#include <ctrainer/examples/seq2seq/metrics/chrf.h>
#include <ctrainer/examples/seq2seq/metrics/porter_stemmer.h>
#include <ctrainer/examples/seq2seq/metrics/python_text.h>
#include <ctrainer/examples/seq2seq/metrics/rouge.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace ctrainer {
namespace text_metrics_test {

using namespace ctrainer::text_metrics;

constexpr double kTolerance = 1e-12;

void expect_score(const RougeScore& score, double precision, double recall, double fmeasure,
                  const std::string& what) {
  EXPECT_NEAR(score.precision, precision, kTolerance) << what;
  EXPECT_NEAR(score.recall, recall, kTolerance) << what;
  EXPECT_NEAR(score.fmeasure, fmeasure, kTolerance) << what;
}

/// The message of the std::invalid_argument `call` throws ("" when it throws none).
template <typename Call>
std::string invalid_argument_message(Call call) {
  try {
    call();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(RougeTest, TokenizerLowersAndKeepsOnlyAsciiLettersAndDigits) {
  EXPECT_EQ(rouge_tokenize("Hello, World! It's 3.14", false),
            (std::vector<std::string>{"hello", "world", "it", "s", "3", "14"}));
  // Python lowers U+0130 to "i" + a combining dot (a separator) and the Kelvin sign to "k";
  // other non-ASCII letters separate tokens.
  EXPECT_EQ(rouge_tokenize("\u0130stanbul caf\u00e9 \u212a", false),
            (std::vector<std::string>{"i", "stanbul", "caf", "k"}));
  EXPECT_TRUE(rouge_tokenize(" ... \n ", false).empty());
}

TEST(RougeTest, OneWordDifferenceByHand) {
  // 6 tokens each; unigram overlap 5 (the x2, cat, on, mat); bigram overlap 3 of 5 (the cat,
  // on the, the mat); LCS "the cat on the mat" = 5.
  const auto scores = rouge_scores("the cat sat on the mat", "the cat was on the mat", false);
  expect_score(scores.at("rouge1"), 5.0 / 6, 5.0 / 6, 5.0 / 6, "rouge1");
  expect_score(scores.at("rouge2"), 0.6, 0.6, 0.6, "rouge2");
  expect_score(scores.at("rougeL"), 5.0 / 6, 5.0 / 6, 5.0 / 6, "rougeL");
  expect_score(scores.at("rougeLsum"), 5.0 / 6, 5.0 / 6, 5.0 / 6, "rougeLsum");
}

TEST(RougeTest, PrecisionAgainstPredictionRecallAgainstReference) {
  const auto scores = rouge_scores("the cat", "the cat sat on the mat", false);
  // F = 2 * 1 * (1/3) / (4/3) = 1/2 and 2 * 1 * (1/5) / (6/5) = 1/3.
  expect_score(scores.at("rouge1"), 1.0, 1.0 / 3, 0.5, "rouge1");
  expect_score(scores.at("rouge2"), 1.0, 0.2, 1.0 / 3, "rouge2");
  expect_score(scores.at("rougeL"), 1.0, 1.0 / 3, 0.5, "rougeL");
}

TEST(RougeTest, StemmerConflatesInflections) {
  // With the stemmer: [run, dog] vs [the, dog, run] ("the" and "dog" are too short to stem).
  EXPECT_EQ(rouge_tokenize("running dogs", true), (std::vector<std::string>{"run", "dog"}));
  const auto stemmed = rouge_scores("running dogs", "the dog runs", true);
  expect_score(stemmed.at("rouge1"), 1.0, 2.0 / 3, 0.8, "rouge1");
  expect_score(stemmed.at("rougeL"), 0.5, 1.0 / 3, 0.4, "rougeL");
  const auto plain = rouge_scores("running dogs", "the dog runs", false);
  expect_score(plain.at("rouge1"), 0.0, 0.0, 0.0, "rouge1 without the stemmer");
}

TEST(RougeTest, PorterStemmerAsNltk) {
  const std::vector<std::pair<std::string, std::string>> words = {{"caresses", "caress"},
                                                                  {"ponies", "poni"},
                                                                  {"running", "run"},
                                                                  {"happiness", "happi"},
                                                                  {"relational", "relat"},
                                                                  {"skies", "sky"},
                                                                  {"dies", "die"},
                                                                  {"generalizations", "gener"},
                                                                  {"hopping", "hop"},
                                                                  {"troubled", "troubl"},
                                                                  {"by", "by"},
                                                                  {"Running", "run"}};
  for (const auto& [word, stem] : words) EXPECT_EQ(porter_stem(word), stem) << word;
}

TEST(RougeTest, LsumScoresSentencesInAnyOrder) {
  // Two lines swapped: one LCS over the whole text covers half, but each reference line finds
  // its whole LCS in the other prediction line.
  const auto scores = rouge_scores("c d\na b", "a b\nc d", false);
  expect_score(scores.at("rougeL"), 0.5, 0.5, 0.5, "rougeL");
  expect_score(scores.at("rougeLsum"), 1.0, 1.0, 1.0, "rougeLsum");
  // Empty lines are dropped, a line of spaces is a sentence without tokens.
  const auto with_blank_lines = rouge_scores("c d\n \na b", "a b\n\n\nc d", false);
  expect_score(with_blank_lines.at("rougeLsum"), 1.0, 1.0, 1.0, "rougeLsum with blank lines");
}

TEST(RougeTest, LsumUnionIsOverReferencePositions) {
  // Reference [a, a], prediction lines [a] and [a]: both LCSs pick reference position 1, so
  // their union holds one token: 1 hit of 2.
  const auto scores = rouge_scores("a\na", "a a", false);
  expect_score(scores.at("rougeL"), 1.0, 1.0, 1.0, "rougeL");
  expect_score(scores.at("rougeLsum"), 0.5, 0.5, 0.5, "rougeLsum");
}

TEST(RougeTest, EmptyTextsScoreZero) {
  for (const auto& [prediction, reference] :
       std::vector<std::pair<std::string, std::string>>{{"", "a b"}, {"a b", ""}, {"", ""}}) {
    for (const auto& [rouge_type, score] : rouge_scores(prediction, reference, true))
      expect_score(score, 0.0, 0.0, 0.0,
                   rouge_type + " of '" + prediction + "' / '" + reference + "'");
  }
}

TEST(RougeTest, CorpusIsTheMeanFmeasure) {
  const auto corpus = rouge_corpus({"a b c", "x y"}, {"a b c", "p q"}, true);
  ASSERT_EQ(corpus.size(), 4u);
  for (const auto& [rouge_type, mean] : corpus) EXPECT_DOUBLE_EQ(mean, 0.5) << rouge_type;
}

TEST(RougeTest, RefusesMismatchedCountsAndUnknownTypes) {
  const std::string message = invalid_argument_message([] {
    rouge_corpus({"a", "b", "c"}, {"a", "b"}, false);
  });
  EXPECT_NE(message.find("3 predictions"), std::string::npos) << message;
  EXPECT_NE(message.find("2 references"), std::string::npos) << message;
  EXPECT_NE(invalid_argument_message([] { rouge_scores("a", "a", false, {"rougeX"}); }), "");
  EXPECT_NE(invalid_argument_message([] { rouge_scores("a", "a", false, {"rouge0"}); }), "");
}

TEST(BleuTest, Tokenizer13a) {
  EXPECT_EQ(tokenize_13a("Hello, world! It's 3.14 &amp; 1,000-2 (state-of-the-art)."),
            "Hello , world ! It's 3.14 & 1,000 - 2 ( state-of-the-art ) .");
  EXPECT_EQ(tokenize_13a("an ex-\nample\nnext"), "an example next");
  EXPECT_EQ(tokenize_13a("<skipped>  a\u00a0b "), "a b");  // U+00A0 is Python whitespace
}

TEST(BleuTest, PerfectMatchIs100) {
  const BleuScore score = corpus_bleu({"the cat sat on the mat"}, {{"the cat sat on the mat"}});
  EXPECT_NEAR(score.score, 100.0, 1e-9);
  EXPECT_EQ(score.counts, (std::vector<std::int64_t>{6, 5, 4, 3}));
  EXPECT_EQ(score.totals, (std::vector<std::int64_t>{6, 5, 4, 3}));
  EXPECT_EQ(score.bp, 1.0);
}

TEST(BleuTest, BrevityPenaltyOfAShortHypothesis) {
  // Every n-gram of "the cat sat on the" matches; 5 tokens against 6: BP = exp(1 - 6/5).
  const BleuScore score = corpus_bleu({"the cat sat on the"}, {{"the cat sat on the mat"}});
  EXPECT_EQ(score.counts, (std::vector<std::int64_t>{5, 4, 3, 2}));
  EXPECT_EQ(score.sys_len, 5);
  EXPECT_EQ(score.ref_len, 6);
  EXPECT_NEAR(score.bp, std::exp(-0.2), 1e-15);
  EXPECT_NEAR(score.score, 100 * std::exp(-0.2), 1e-9);
}

TEST(BleuTest, ExpSmoothingOfZeroMatches) {
  // "a b c d" vs "a b x d e": matches 3/4, 1/3, 0/2, 0/1; exp smoothing makes the zero
  // precisions 100 / (2 * 2) and 100 / (4 * 1); BP = exp(1 - 5/4).
  const BleuScore score = corpus_bleu({"a b c d"}, {{"a b x d e"}});
  EXPECT_EQ(score.counts, (std::vector<std::int64_t>{3, 1, 0, 0}));
  EXPECT_EQ(score.totals, (std::vector<std::int64_t>{4, 3, 2, 1}));
  EXPECT_NEAR(score.precisions[0], 75.0, 1e-12);
  EXPECT_NEAR(score.precisions[1], 100.0 / 3, 1e-12);
  EXPECT_NEAR(score.precisions[2], 25.0, 1e-12);
  EXPECT_NEAR(score.precisions[3], 25.0, 1e-12);
  // (75 * 100/3 * 25 * 25)^(1/4) = 1562500^(1/4).
  EXPECT_NEAR(score.score, std::exp(-0.25) * std::pow(1562500.0, 0.25), 1e-9);
  // Without smoothing a zero precision makes the score 0.
  BleuOptions no_smoothing;
  no_smoothing.smooth_method = BleuSmoothing::kNone;
  EXPECT_EQ(corpus_bleu({"a b c d"}, {{"a b x d e"}}, no_smoothing).score, 0.0);
}

TEST(BleuTest, ShortHypothesisWithoutFourGramsScoresZero) {
  const BleuScore score = corpus_bleu({"the cat"}, {{"the cat sat on the mat"}});
  EXPECT_EQ(score.score, 0.0);
  EXPECT_EQ(score.counts, (std::vector<std::int64_t>{2, 1, 0, 0}));
  EXPECT_EQ(score.totals, (std::vector<std::int64_t>{2, 1, 0, 0}));
  EXPECT_NEAR(score.bp, std::exp(-2.0), 1e-15);
}

TEST(BleuTest, ClosestReferenceLengthPrefersTheShorterOnATie) {
  // 4 hypothesis tokens, references of 3 and 5: both 1 away, the shorter counts.
  EXPECT_EQ(corpus_bleu({"a b c d"}, {{"a b c"}, {"a b c d e"}}).ref_len, 3);
}

TEST(BleuTest, RefusesMismatchedCounts) {
  const std::string message = invalid_argument_message([] {
    corpus_bleu({"a", "b"}, {{"a", "b", "c"}});
  });
  EXPECT_NE(message.find("2 hypotheses"), std::string::npos) << message;
  EXPECT_NE(message.find("3 references"), std::string::npos) << message;
  EXPECT_NE(invalid_argument_message([] { corpus_bleu({"a"}, {}); }), "");
}

TEST(ChrfTest, IdenticalIs100AndDisjointIs0) {
  EXPECT_NEAR(corpus_chrf({"the cat"}, {{"the cat"}}).score, 100.0, 1e-12);
  EXPECT_EQ(corpus_chrf({"abc"}, {{"xyz"}}).score, 0.0);
  // Whitespace is removed before the character n-grams.
  EXPECT_NEAR(corpus_chrf({"a b"}, {{"ab"}}).score, 100.0, 1e-12);
}

TEST(ChrfTest, EffectiveOrdersByHand) {
  // "ab" vs "abc": unigrams P 1, R 2/3; bigrams P 1, R 1/2; orders 3-6 have no hypothesis
  // n-gram and are left out. Mean P 1, mean R 7/12; F2 = 5 * 7/12 / (4 + 7/12) = 7/11.
  const ChrfScore score = corpus_chrf({"ab"}, {{"abc"}});
  EXPECT_NEAR(score.score, 700.0 / 11, 1e-12);
  ASSERT_EQ(score.statistics.size(), 18u);
  EXPECT_EQ(std::vector<std::int64_t>(score.statistics.begin(), score.statistics.begin() + 9),
            (std::vector<std::int64_t>{2, 3, 2, 1, 2, 1, 0, 1, 0}));
}

TEST(ChrfTest, CodePointsNotBytes) {
  // "é" is one character n-gram (two bytes): "é" vs "e" shares nothing, "é" vs "é" everything.
  EXPECT_EQ(corpus_chrf({"\u00e9"}, {{"e"}}).score, 0.0);
  EXPECT_NEAR(corpus_chrf({"\u00e9t\u00e9"}, {{"\u00e9t\u00e9"}}).score, 100.0, 1e-12);
}

TEST(ChrfTest, RefusesMismatchedCounts) {
  const std::string message = invalid_argument_message([] { corpus_chrf({"a"}, {{"a", "b"}}); });
  EXPECT_NE(message.find("1 hypotheses"), std::string::npos) << message;
  EXPECT_NE(message.find("2 references"), std::string::npos) << message;
}

TEST(PythonTextTest, LowerAndSplitAsPython) {
  EXPECT_EQ(python_lower(std::string("\u039f\u0394\u039f\u03a3 \u03a3\u0391")),
            "\u03bf\u03b4\u03bf\u03c2 \u03c3\u03b1");  // final sigma only at a word's end
  EXPECT_EQ(python_lower(std::string("\u0130")), "i\u0307");
  EXPECT_EQ(python_split("a\u3000b\u00a0 c\n"), (std::vector<std::string_view>{"a", "b", "c"}));
  EXPECT_EQ(python_rstrip("a b \u2009\n"), "a b");
}

}  // namespace text_metrics_test
}  // namespace ctrainer
