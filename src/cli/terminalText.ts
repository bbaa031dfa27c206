/**
 * Client-supplied text (session names, groups, statuses, send targets, codes,
 * message ids) made safe to print on a terminal. How many columns text takes
 * is terminalWidth.ts's: only `intercom top` measures, and its grapheme
 * segmenter costs a process that loads it 17–21 ms of CPU (`send` loads this
 * module; docs/performance.md, "`intercom send`, sixty-ninth stop").
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
