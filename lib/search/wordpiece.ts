/**
 * BERT's uncased WordPiece tokenizer, as Hugging Face `tokenizers` runs it from a tokenizer.json with a
 * BertNormalizer (clean text, pad CJK ideographs, strip accents, lower-case), a BertPreTokenizer (split on
 * whitespace, every punctuation character a word of its own) and a WordPiece model (greedy longest match,
 * `##` continuation, [UNK] for a word with no match or longer than 100 characters). Pure: the vocabulary is
 * passed in, so the unit tests pin token ids without the model files.
 */

/** Token ids of one text, [CLS] first and [SEP] last, at most maxTokens long. */
export type TokenIds = number[];

export interface WordPieceVocabulary {
  /** Token → id, in the order of the model's vocabulary. */
  vocab: ReadonlyMap<string, number>;
  unkToken: string;
  clsToken: string;
  sepToken: string;
  continuingSubwordPrefix: string;
  maxInputCharsPerWord: number;
}

interface TokenizerJson {
  normalizer?: { type?: string; lowercase?: boolean };
  model?: {
    type?: string;
    vocab?: Record<string, number>;
    unk_token?: string;
    continuing_subword_prefix?: string;
    max_input_chars_per_word?: number;
  };
}

/** Reads the WordPiece part of a Hugging Face tokenizer.json (uncased BERT models only). */
export function vocabularyFromTokenizerJson(json: unknown): WordPieceVocabulary {
  const t = json as TokenizerJson;
  if (t.model?.type !== "WordPiece" || !t.model.vocab) throw new Error("tokenizer.json: not a WordPiece model");
  if (t.normalizer?.type !== "BertNormalizer" || t.normalizer.lowercase !== true) {
    throw new Error("tokenizer.json: only uncased BERT normalisation is supported");
  }
  return {
    vocab: new Map(Object.entries(t.model.vocab)),
    unkToken: t.model.unk_token ?? "[UNK]",
    clsToken: "[CLS]",
    sepToken: "[SEP]",
    continuingSubwordPrefix: t.model.continuing_subword_prefix ?? "##",
    maxInputCharsPerWord: t.model.max_input_chars_per_word ?? 100,
  };
}

const CONTROL = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}]/u;
const WHITESPACE = /\p{White_Space}/u;
const NONSPACING_MARK = /\p{Mn}/u;
const PUNCTUATION = /[\p{P}!-\/:-@\[-`{-~]/u;

function isCjkIdeograph(code: number): boolean {
  return (
    (code >= 0x4e00 && code <= 0x9fff) ||
    (code >= 0x3400 && code <= 0x4dbf) ||
    (code >= 0x20000 && code <= 0x2a6df) ||
    (code >= 0x2a700 && code <= 0x2b73f) ||
    (code >= 0x2b740 && code <= 0x2b81f) ||
    (code >= 0x2b920 && code <= 0x2ceaf) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0x2f800 && code <= 0x2fa1f)
  );
}

/** BertNormalizer with clean_text, handle_chinese_chars, lowercase and (so) strip_accents. */
export function bertNormalize(text: string): string {
  let cleaned = "";
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === "\t" || ch === "\n" || ch === "\r" || WHITESPACE.test(ch)) cleaned += " ";
    else if (code === 0 || code === 0xfffd || CONTROL.test(ch)) continue;
    else if (isCjkIdeograph(code)) cleaned += ` ${ch} `;
    else cleaned += ch;
  }
  let stripped = "";
  for (const ch of cleaned.normalize("NFD")) if (!NONSPACING_MARK.test(ch)) stripped += ch;
  return stripped.toLowerCase();
}

/** BertPreTokenizer: words split at whitespace; each punctuation character is a word of its own. */
export function bertPreTokenize(normalized: string): string[] {
  const words: string[] = [];
  let word = "";
  for (const ch of normalized) {
    if (WHITESPACE.test(ch)) {
      if (word) words.push(word);
      word = "";
    } else if (PUNCTUATION.test(ch)) {
      if (word) words.push(word);
      words.push(ch);
      word = "";
    } else word += ch;
  }
  if (word) words.push(word);
  return words;
}

/** WordPiece of one word: greedy longest match from the left; the whole word is [UNK] if a piece has no match. */
function wordPieces(word: string, v: WordPieceVocabulary, out: number[]) {
  const chars = [...word];
  const unk = v.vocab.get(v.unkToken)!;
  if (chars.length > v.maxInputCharsPerWord) {
    out.push(unk);
    return;
  }
  const pieces: number[] = [];
  let start = 0;
  while (start < chars.length) {
    let end = chars.length;
    let found: number | undefined;
    while (start < end) {
      const piece = (start > 0 ? v.continuingSubwordPrefix : "") + chars.slice(start, end).join("");
      found = v.vocab.get(piece);
      if (found !== undefined) break;
      end--;
    }
    if (found === undefined) {
      out.push(unk);
      return;
    }
    pieces.push(found);
    start = end;
  }
  out.push(...pieces);
}

/** Token ids of `text`: [CLS] pieces [SEP], the pieces cut so the whole is at most maxTokens (≥ 2). */
export function encodeWordPiece(text: string, v: WordPieceVocabulary, maxTokens: number): TokenIds {
  const ids = [v.vocab.get(v.clsToken)!];
  const limit = maxTokens - 1;
  for (const word of bertPreTokenize(bertNormalize(text))) {
    wordPieces(word, v, ids);
    if (ids.length >= limit) break;
  }
  ids.length = Math.min(ids.length, limit);
  ids.push(v.vocab.get(v.sepToken)!);
  return ids;
}
