/**
 * How many columns text takes on a terminal, and cutting or padding it to a
 * width, by grapheme cluster: what `intercom top` (top/view.ts) needs to keep
 * its rows aligned. A module of its own, apart from terminalText.ts's
 * escaping, because the `Intl.Segmenter` it builds when loaded (ICU's
 * grapheme rules) costs 17–21 ms of CPU, and the `send` path, which prints
 * through terminalText.ts but measures nothing, should not pay it
 * (docs/performance.md, "`intercom send`, sixty-ninth stop").
 */

/**
 * Code points a terminal gives no column: nonspacing and enclosing marks
 * (they combine with the character before), format characters, and the
 * Hangul medial vowels and final consonants that join a leading jamo.
 */
const ZERO_COLUMNS = /^[\p{Mn}\p{Me}\p{Cf}\u1160-\u11ff]$/u

/**
 * Code points a terminal gives two columns: the East Asian Wide and Fullwidth
 * ranges (Hangul jamo and syllables, CJK ideographs and punctuation, kana,
 * Yi, fullwidth forms, the supplementary ideographic planes) and emoji shown
 * as emoji. Ambiguous-width characters count as one, as most terminals show
 * them outside East Asian locales.
 */
const TWO_COLUMNS =
  /^[\p{Emoji_Presentation}\u1100-\u115f\u2329\u232a\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff\ufe10-\ufe19\ufe30-\ufe6f\uff00-\uff60\uffe0-\uffe6\u{20000}-\u{2fffd}\u{30000}-\u{3fffd}]$/u

/** The columns one code point takes on a terminal: 0, 1 or 2. */
const codePointColumns = (char: string): number => ZERO_COLUMNS.test(char) ? 0 : TWO_COLUMNS.test(char) ? 2 : 1

/** Splits text into what a terminal draws as one character (grapheme clusters); stateless, so shared. */
const GRAPHEMES = new Intl.Segmenter(undefined, { granularity: "grapheme" })

/**
 * The columns one grapheme cluster takes: its first code point's (the marks,
 * joiners and jamo after it add none), two when it asks for emoji
 * presentation (U+FE0F: "❤️"), and two for a flag (a pair of regional
 * indicators) or an emoji sequence joined by U+200D, drawn as one picture.
 */
const columnsOf = (cluster: string): number => {
  const first = String.fromCodePoint(cluster.codePointAt(0) ?? 0x20)
  const base = codePointColumns(first)
  return cluster.length > first.length && base > 0 && cluster.includes("\ufe0f") ? 2 : base
}

/** `text`'s grapheme clusters, in order. */
const clustersOf = (text: string): Iterable<string> => {
  const clusters: Array<string> = []
  for (const { segment } of GRAPHEMES.segment(text)) clusters.push(segment)
  return clusters
}

/**
 * The columns `text` takes on a terminal, one grapheme cluster at a time:
 * two for an East Asian wide or fullwidth character and for an emoji
 * (flags and joined sequences included), none for a combining mark, one
 * for any other character. For text already made `terminalSafe` (a control
 * character has no defined width).
 *
 * @example
 * ```ts
 * displayWidth("bob")    // 3
 * displayWidth("数据")   // 4
 * displayWidth("e\u0301") // 1
 * ```
 */
export const displayWidth = (text: string): number => {
  let columns = 0
  for (const cluster of clustersOf(text)) columns += columnsOf(cluster)
  return columns
}

/**
 * The longest start of `text` that fits in `columns` terminal columns
 * (`displayWidth`), cut between grapheme clusters — never inside a surrogate
 * pair, an emoji sequence or a flag — keeping the combining marks of the
 * last character it keeps.
 */
export const cutToWidth = (text: string, columns: number): string => {
  let used = 0
  let end = 0
  for (const cluster of clustersOf(text)) {
    used += columnsOf(cluster)
    if (used > columns) break
    end += cluster.length
  }
  return text.slice(0, end)
}

/**
 * `text` as exactly `columns` terminal columns: cut with `…` when it is
 * wider, padded with spaces when it is narrower (a wide character that would
 * straddle the edge is left out, and its column padded).
 *
 * @example
 * ```ts
 * fitToWidth("数据分析", 6) // "数据… " — five columns of text, one of padding
 * ```
 */
export const fitToWidth = (text: string, columns: number): string => {
  const width = displayWidth(text)
  if (width <= columns) return text + " ".repeat(columns - width)
  const cut = columns <= 0 ? "" : `${cutToWidth(text, columns - 1)}…`
  return cut + " ".repeat(Math.max(0, columns - displayWidth(cut)))
}
