import fs from "node:fs";
import path from "node:path";
import { bertNormalize, bertPreTokenize, encodeWordPiece, vocabularyFromTokenizerJson } from "../../../lib/search/wordpiece";
import { modelsDir } from "../../../lib/search/embeddings";

/**
 * Expected ids come from Hugging Face `tokenizers` (0.23) running the bundled model's tokenizer.json
 * (truncation 256, no padding), computed independently of this implementation.
 */
const KNOWN: [string, number[]][] = [
  ["Hello, world!", [101, 7592, 1010, 2088, 999, 102]],
  ["Café naïve résumé — “quoted” text; ok?", [101, 7668, 15743, 13746, 1517, 1523, 9339, 1524, 3793, 1025, 7929, 1029, 102]],
  ["unaffable transformers tokenization of IL-10 and TNF-α in mice", [101, 14477, 20961, 3468, 19081, 19204, 3989, 1997, 6335, 1011, 2184, 1998, 28286, 2546, 1011, 1155, 1999, 12328, 102]],
  ["中文字符 mixed with English 日本語", [101, 1746, 1861, 100, 100, 3816, 2007, 2394, 1864, 1876, 1950, 102]],
  ["price: $5.99 + tax = $6.50 <tag> a|b ~x ^y `z`", [101, 3976, 1024, 1002, 1019, 1012, 5585, 1009, 4171, 1027, 1002, 1020, 1012, 2753, 1026, 6415, 1028, 1037, 1064, 1038, 1066, 1060, 1034, 1061, 1036, 1062, 1036, 102]],
  ["tab\there\nnewline\u00a0nbsp\u200bzero width", [101, 21628, 2182, 2047, 4179, 1050, 5910, 2361, 6290, 2080, 9381, 102]],
  ["🙂 emoji and ©®™ symbols", [101, 100, 7861, 29147, 2072, 1998, 1075, 29656, 30108, 9255, 102]],
  [`${"a".repeat(101)} x`, [101, 100, 1060, 102]],
  ["ÅNGSTRÖM İstanbul ß straße", [101, 17076, 15687, 9960, 1096, 2358, 27807, 102]],
];

describe("WordPiece tokenizer (uncased BERT, as Hugging Face tokenizers runs tokenizer.json)", () => {
  const file = path.join(modelsDir(), "all-minilm-l6-v2", "tokenizer.json");
  const vocabulary = vocabularyFromTokenizerJson(JSON.parse(fs.readFileSync(file, "utf8")));

  it.each(KNOWN)("encodes %j to the reference ids", (text, ids) => {
    expect(encodeWordPiece(text, vocabulary, 256)).toEqual(ids);
  });

  it("cuts to maxTokens with [CLS] first and [SEP] last", () => {
    const ids = encodeWordPiece("word ".repeat(500), vocabulary, 128);
    expect(ids).toHaveLength(128);
    expect(ids[0]).toBe(101);
    expect(ids[127]).toBe(102);
    expect(encodeWordPiece("", vocabulary, 128)).toEqual([101, 102]);
  });

  it("normalises (control characters dropped, accents stripped, lower case) and splits punctuation", () => {
    expect(bertNormalize("A\u0000b\u0007 É\u00a0x")).toBe("ab e x");
    expect(bertPreTokenize("it's 3.5-fold")).toEqual(["it", "'", "s", "3", ".", "5", "-", "fold"]);
  });

  it("refuses a tokenizer.json that is not an uncased WordPiece model", () => {
    expect(() => vocabularyFromTokenizerJson({ model: { type: "BPE" } })).toThrow(/WordPiece/);
    expect(() => vocabularyFromTokenizerJson({ model: { type: "WordPiece", vocab: {} }, normalizer: { type: "BertNormalizer", lowercase: false } })).toThrow(/uncased/);
  });
});
