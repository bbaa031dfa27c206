/**
 * Client-supplied text (session names, groups, statuses, send targets, codes,
 * message ids) made safe to print on a terminal.
 */

/** C0 controls (U+0000–U+001F), DEL (U+007F) and C1 controls (U+0080–U+009F). */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g

/** What each control character is shown as: U+FFFD, the replacement character. */
export const CONTROL_REPLACEMENT = "\uFFFD"

/**
 * `text` with every C0 and C1 control character and DEL replaced by U+FFFD
 * (`�`), one for one, so the length stays the same. A client-supplied string
 * passed through it can neither move the cursor, clear the screen, retitle
 * the terminal (ESC, CSI, OSC, BEL) nor start a new line. Apply it before any
 * cut to a width, so that a cut never lands inside an escape sequence.
 */
export const terminalSafe = (text: string): string => text.replace(CONTROL, CONTROL_REPLACEMENT)
