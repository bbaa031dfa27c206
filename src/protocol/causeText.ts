/**
 * How one message reads as the cause at the end of another, after a colon:
 * `Intercom not connected: broker failed to start: cannot use the intercom
 * directory …` is one sentence, where each error's own message, said alone,
 * starts with a capital (`Broker failed to start: …`).
 *
 * Why one helper: errors are chained in every layer (a spawn failure inside
 * a connection failure, a database error inside a store failure), and the
 * rule for which first words may be lower-cased must be the same
 * everywhere. Only an ordinary capitalised word is lower-cased — a capital
 * and lower-case letters only (`Cannot`, `Broker's`, `Read-only`), or the
 * article `A`. Anything else is left as it is: an acronym or code (`EACCES`,
 * `E_TARGET_NOT_FOUND`, `JSON`), a word with a capital or digit inside
 * (`SQLite`, `IntercomClient`, `V8`), one with a dot (`Node.js`), a path
 * (`/tmp/…`, `~/…`), a quoted or bracketed value (`"Planner"`), and the
 * proper nouns in {@link KEPT_WORDS}. A cause that starts with a name a user
 * chose (a session name) must quote it, as every message here does: a bare
 * `Planner` cannot be told from a word.
 */

/** Capitalised words that stay capitalised mid-sentence: proper nouns the messages start with. */
const KEPT_WORDS: ReadonlySet<string> = new Set(["I", "Node", "Unix", "Linux", "Windows", "Effect", "Ctrl"])

/** An ordinary capitalised word: one capital, then lower-case letters (hyphenated parts, a possessive `'s`). */
const ORDINARY_WORD = /^[A-Z][a-z]*(?:-[a-z]+)*(?:'s)?$/

/** The first word: up to a space or the punctuation that ends a word in a sentence. */
const FIRST_WORD = /^[^\s:;,()]+/

/**
 * `text` as the cause after another message's colon: its first letter
 * lower-cased when its first word is an ordinary capitalised word (see the
 * module header); otherwise `text` unchanged. Idempotent.
 *
 * @example
 * causeText("Broker failed to start: the broker exited") // "broker failed to start: the broker exited"
 * causeText("A file is in the way") // "a file is in the way"
 * causeText("EACCES: permission denied") // unchanged
 * causeText("SQLite could not open the file") // unchanged
 * causeText("/tmp/a is not a directory") // unchanged
 */
export const causeText = (text: string): string => {
  const word = FIRST_WORD.exec(text)?.[0]
  if (word === undefined || !ORDINARY_WORD.test(word) || KEPT_WORDS.has(word)) return text
  // A single capital is a word only as the article `A` (`I` is kept above; `X`, `C:` are not words).
  if (word.length === 1 && word !== "A") return text
  return text.charAt(0).toLowerCase() + text.slice(1)
}
