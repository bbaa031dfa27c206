/**
 * Client-supplied text (session names, groups, statuses, send targets, codes,
 * message ids) made safe to print on a terminal.
 */

/**
 * What a client could use to take over or spoof a terminal line:
 *
 * - C0 controls (U+0000–U+001F), DEL (U+007F) and C1 controls
 *   (U+0080–U+009F): escape sequences, newlines, tabs;
 * - bidirectional formatting characters: the embeddings and overrides
 *   U+202A–U+202E, the isolates U+2066–U+2069, the marks U+200E, U+200F and
 *   U+061C — they reorder the rest of a line, so a name could make a table
 *   row read differently from what it holds;
 * - zero-width characters: U+200B–U+200D, U+2060 and U+FEFF — invisible, so
 *   two names that look the same could differ, and a column would be narrower
 *   on screen than its length says;
 * - the line and paragraph separators U+2028 and U+2029, which some
 *   terminals and pagers break a line on.
 *
 * Every one is a single UTF-16 code unit.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/g

/** What each unsafe character is shown as: U+FFFD, the replacement character. */
export const CONTROL_REPLACEMENT = "\uFFFD"

/**
 * `text` with every C0 and C1 control character, DEL, bidirectional
 * formatting character, zero-width character and line or paragraph
 * separator replaced by U+FFFD (`�`),
 * one for one, so the length stays the same. A client-supplied string passed
 * through it can neither move the cursor, clear the screen, retitle the
 * terminal (ESC, CSI, OSC, BEL) nor start a new line, nor reorder or hide
 * part of the line it is printed on. Apply it before any cut to a width, so
 * that a cut never lands inside an escape sequence.
 */
export const terminalSafe = (text: string): string => text.replace(UNSAFE, CONTROL_REPLACEMENT)

/**
 * What `terminalText` shows visibly: C0 controls but TAB and LF, DEL, C1
 * controls, the bidirectional embeddings, overrides and isolates (U+202A–U+202E,
 * U+2066–U+2069, which hold their direction over the rest of the output) and
 * the line and paragraph separators. A CR is kept only as part of a CRLF
 * line end, which becomes LF.
 */
const UNSAFE_IN_TEXT = /\r\n|[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028-\u202e\u2066-\u2069]/g

/** `\u001b` for ESC: the escape a JavaScript or JSON reader would write for it. */
const visible = (c: string): string =>
  c === "\r\n" ? "\n" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

/**
 * Peer-provided text (a message body, a topic's text, a name, a reply) as
 * the CLI prints it in text mode: lines and tabs kept, every other control
 * character shown as its escape (ESC as `\u001b`, BEL as `\u0007`, a lone
 * CR as `\u000d`; a CRLF becomes LF), and so are the bidirectional
 * embeddings, overrides and isolates and the line and paragraph separators.
 * Printed text can then neither move the cursor, clear the screen, retitle
 * the terminal nor overwrite a line, whatever a peer or a broker sent.
 * Printable text, marks and zero-width joiners (which natural text and emoji
 * use) are unchanged. Applying it twice changes nothing more.
 *
 * @example
 * ```ts
 * terminalText("ok\u001b[2J\n\tdone") // "ok\\u001b[2J\n\tdone"
 * ```
 */
export const terminalText = (text: string): string => text.replace(UNSAFE_IN_TEXT, visible)

/**
 * What `JSON.stringify` leaves raw and a terminal still acts on: DEL, the C1
 * controls (U+0080–U+009F, among them the 8-bit CSI), the bidirectional
 * embeddings, overrides and isolates, and the line and paragraph separators.
 */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028-\u202e\u2066-\u2069]/g

/**
 * `value` as one line of JSON that is safe on a terminal: `JSON.stringify`
 * escapes only U+0000–U+001F, so every character of `UNSAFE_IN_JSON` is
 * written as its `\uXXXX` escape too. Still valid JSON, and it parses to the
 * same value: those characters can only occur inside strings.
 *
 * @example
 * ```ts
 * terminalJson({ name: "x\u009b2J" }) // '{"name":"x\\u009b2J"}'
 * ```
 */
export const terminalJson = (value: unknown): string =>
  JSON.stringify(value).replace(UNSAFE_IN_JSON, visible)

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
