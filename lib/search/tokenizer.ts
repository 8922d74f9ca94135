/// <reference path="./wink-porter2-stemmer.d.ts" />
import stem from "wink-porter2-stemmer";

/**
 * English stop words left out of the keyword index and of keyword queries. They carry no ranking signal
 * and their postings are the longest, so dropping them is what keeps keyword search in milliseconds at
 * 100k chunks. The Typesense engine registers the same list as a stopwords set.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    "a about above after again against all am an and any are as at be because been before being below between both but by " +
    "can could did do does doing down during each few for from further had has have having he her here hers herself him " +
    "himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other " +
    "our ours ourselves out over own same she should so some such than that the their theirs them themselves then there " +
    "these they this those through to too under until up very was we were what when where which while who whom why will " +
    "with would you your yours yourself yourselves"
  ).split(" "),
);

/** Longest token kept; longer runs (hashes, base64) are cut so one token cannot bloat the vocabulary. */
const MAX_TOKEN_LENGTH = 40;

/** Stems by word: vocabularies are Zipfian, so nearly every lookup is a hit (bounded to cap memory). */
const STEM_CACHE_LIMIT = 200_000;
const stemCache = new Map<string, string>();

function stemOf(word: string): string {
  let s = stemCache.get(word);
  if (s === undefined) {
    s = stem(word);
    if (stemCache.size >= STEM_CACHE_LIMIT) stemCache.clear();
    stemCache.set(word, s);
  }
  return s;
}

/** Lower-cased words and numbers with accents removed, in order, stop words included. */
export function words(text: string): string[] {
  // eslint-disable-next-line no-control-regex
  const folded = /[^\x00-\x7f]/.test(text) ? text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "") : text;
  return folded.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Index terms of a text: words without stop words, Porter2-stemmed, truncated to a bounded length. */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const word of words(text)) {
    if (STOP_WORDS.has(word)) continue;
    out.push(stemOf(word.length > MAX_TOKEN_LENGTH ? word.slice(0, MAX_TOKEN_LENGTH) : word));
  }
  return out;
}

/** Text whose terms change whenever tokenising does (folding, stop words, stemming, the token length cap). */
const ANALYZER_PROBE =
  "Running runners ran; the QUICK brown foxes jumped over lazy dogs' kennels. Café naïve résumé Ångström " +
  "connection connected connecting generalizations arguing argued 12345 v2.0 e-mail it's they're " +
  `${"x".repeat(45)} ${"ab".repeat(30)} Straße ﬁnancial`;

/**
 * A fingerprint of the analyzer: snapshots of keyword postings are only valid under the analyzer that wrote
 * them, so a change here makes every snapshot rebuild from MongoDB instead of answering with stale terms.
 */
export function analyzerFingerprint(): string {
  return JSON.stringify([[...STOP_WORDS].sort().join(" "), terms(ANALYZER_PROBE)]);
}
