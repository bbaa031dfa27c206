/**
 * Length limits on what a client sends, enforced by the broker on the way in
 * and by our client before it sends. Ids and free text that the broker only
 * echoes are limited in the frame Schemas (frames.ts): a frame over them is
 * garbage (P03). Identity fields, which a session chooses and the broker
 * re-broadcasts, are checked here instead, so an over-long one is refused
 * with a clear `error` frame (`registrationRefusal`, `presenceRefusal`), as
 * is an id holding a control character (the broker builds keys from ids).
 *
 * Why: the broker re-broadcasts identity fields (`session_joined`,
 * `presence_update`, `sessions`, every `message`'s `from`) and echoes ids in
 * answers, so without limits one client could make frames that other
 * sessions must refuse (over 1 MiB) or that cost every recipient time and
 * memory. Lengths count UTF-16 code units (JavaScript string length); a
 * field of N units is at most 3N bytes of UTF-8.
 *
 * With these limits a SessionInfo is at most about 15 KB, so a `sessions`
 * page holds at least 60 of the largest possible records.
 */

/** Session ids, message ids, request ids, scope ids, epochs, ids referred to (`replyTo`, …). */
export const MAX_ID_LENGTH = 256

/** A session's display name. */
export const MAX_NAME_LENGTH = 256

/** A session's working directory (PATH_MAX on Linux is 4096 bytes). */
export const MAX_CWD_LENGTH = 4096

/** A session's model name. */
export const MAX_MODEL_LENGTH = 256

/** A session's custom status. */
export const MAX_STATUS_LENGTH = 256

/** A tmux pane id. */
export const MAX_TMUX_PANE_LENGTH = 64

/** A `send`'s `to` (a name, an id or an id prefix). */
export const MAX_TARGET_LENGTH = 1024

/** The free-text `detail` of a receipt or a control notice. */
export const MAX_DETAIL_LENGTH = 1024

/** A reply's `replyError` (extension `reply-error-v1`): the failure text its asker sees. */
export const MAX_REPLY_ERROR_LENGTH = 16_384

/** A feature name in `register.features`. */
export const MAX_FEATURE_LENGTH = 64

/** An attachment's `name` and `language`. */
export const MAX_ATTACHMENT_LABEL_LENGTH = 1024

/** `field` is `length` long, over `max`: what to tell the client. */
const overLimit = (what: string, field: string, length: number, max: number): string =>
  `${what}: "${field}" is ${length} characters long; the limit is ${max}. Use a shorter ${field}.`

/**
 * A control character (U+0000–U+001F, U+007F). The broker joins ids with
 * such characters to build its keys (a session's key is its scope's key, NUL,
 * its id; a group's space adds U+0003), so an id holding one could spell
 * another scope's key (scope `a` with id `b\u0000c` against scope `a\u0000b`
 * with id `c`): ids may not hold them, and a name, which the mailbox identity
 * joins the same way (P49), may not hold NUL.
 */
const CONTROL = /[\u0000-\u001f\u007f]/

/**
 * A control character a text body may not hold (C-TOOL-6): C0 but TAB, LF
 * and CR, DEL, C1. A message's `content.text` and a topic publication's
 * `text` are refused when they hold one (the client before sending, the
 * broker again). No `g` flag: `test` and `exec` keep no state.
 */
export const TEXT_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/

/**
 * The first control character `text` may not hold (`TEXT_CONTROL`), as
 * `U+001B` and its 1-based position; undefined when there is none.
 */
export const textControlOf = (text: string): { readonly code: string; readonly position: number } | undefined => {
  const found = TEXT_CONTROL.exec(text)
  if (found === null) return undefined
  return { code: `U+${found[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`, position: found.index + 1 }
}

/** Only NUL: what a name may not hold. */
const NUL = /\u0000/

/** The refusal of `value` when it holds a character `forbidden` matches (named in the message), else undefined. */
const characterRefusal = (what: string, field: string, value: string, forbidden: RegExp): string | undefined => {
  const found = forbidden.exec(value)
  if (found === null) return undefined
  const code = found[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")
  return `${what}: "${field}" contains the control character U+${code}, which ${field} may not hold. Use a ${field} without control characters.`
}

/**
 * `value`'s refusal as an id (`sessionId`, `scopeId`, `group`, `stateId`):
 * too long, or holding a control character. A scope or group is trimmed
 * before use (P17, C-GRP-1), so whitespace around it (a newline read with it)
 * is fine: `trimmed` checks only what the broker keeps.
 */
const idRefusal = (what: string, field: string, value: string | undefined, trimmed = false): string | undefined =>
  value === undefined
    ? undefined
    : value.length > MAX_ID_LENGTH
    ? overLimit(what, field, value.length, MAX_ID_LENGTH)
    : characterRefusal(what, field, trimmed ? value.trim() : value, CONTROL)

/** `name`'s refusal: too long, or holding NUL (the mailbox identity's separator). */
const nameRefusal = (what: string, name: string | undefined): string | undefined =>
  name === undefined
    ? undefined
    : name.length > MAX_NAME_LENGTH
    ? overLimit(what, "name", name.length, MAX_NAME_LENGTH)
    : characterRefusal(what, "name", name, NUL)

/**
 * The first identity field of a `register` the broker refuses, as a message
 * for the client; undefined when it takes them all. Refused: a field over its
 * length limit, an id (`sessionId`, `scopeId`, `group`, `stateId`) holding a
 * control character, a name holding NUL.
 */
export const registrationRefusal = (frame: {
  readonly sessionId?: string | undefined
  readonly scopeId?: string | undefined
  readonly stateId?: string | undefined
  readonly group?: string | undefined
  readonly session: {
    readonly cwd: string
    readonly model: string
    readonly name?: string | undefined
    readonly status?: string | undefined
    readonly tmuxPane?: string | undefined
  }
}): string | undefined => {
  const what = "Registration refused"
  const check = (field: string, value: string | undefined, max: number) =>
    value !== undefined && value.length > max ? overLimit(what, field, value.length, max) : undefined
  const session = frame.session
  return idRefusal(what, "sessionId", frame.sessionId) ?? idRefusal(what, "scopeId", frame.scopeId, true) ??
    idRefusal(what, "group", frame.group, true) ?? idRefusal(what, "stateId", frame.stateId) ??
    check("cwd", session.cwd, MAX_CWD_LENGTH) ?? check("model", session.model, MAX_MODEL_LENGTH) ??
    nameRefusal(what, session.name) ?? check("status", session.status, MAX_STATUS_LENGTH) ??
    check("tmuxPane", session.tmuxPane, MAX_TMUX_PANE_LENGTH)
}

/** The first field of a `presence` the broker refuses (over its limit, or a name holding NUL), as a message for the client. */
export const presenceRefusal = (frame: {
  readonly name?: string | undefined
  readonly status?: string | undefined
  readonly model?: string | undefined
}): string | undefined => {
  const what = "Presence update refused"
  const check = (field: string, value: string | undefined, max: number) =>
    value !== undefined && value.length > max ? overLimit(what, field, value.length, max) : undefined
  return nameRefusal(what, frame.name) ?? check("status", frame.status, MAX_STATUS_LENGTH) ??
    check("model", frame.model, MAX_MODEL_LENGTH)
}

/** `text` cut to `max` UTF-16 units (ending with "…" when cut). */
export const clampText = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`

/**
 * A registration with every identity field cut to its limit: a client sends
 * this rather than being refused (display fields; a cwd never reaches 4096).
 */
export const clampRegistration = <R extends {
  readonly cwd: string
  readonly model: string
  readonly name?: string | undefined
  readonly status?: string | undefined
  readonly tmuxPane?: string | undefined
}>(registration: R): R => ({
  ...registration,
  cwd: clampText(registration.cwd, MAX_CWD_LENGTH),
  model: clampText(registration.model, MAX_MODEL_LENGTH),
  ...(registration.name === undefined ? {} : { name: clampText(registration.name, MAX_NAME_LENGTH) }),
  ...(registration.status === undefined ? {} : { status: clampText(registration.status, MAX_STATUS_LENGTH) }),
  ...(registration.tmuxPane === undefined ? {} : { tmuxPane: clampText(registration.tmuxPane, MAX_TMUX_PANE_LENGTH) })
})

/** A presence update with its name, status and model cut to their limits. */
export const clampPresence = <P extends {
  readonly name?: string | undefined
  readonly status?: string | undefined
  readonly model?: string | undefined
}>(update: P): P => ({
  ...update,
  ...(update.name === undefined ? {} : { name: clampText(update.name, MAX_NAME_LENGTH) }),
  ...(update.status === undefined ? {} : { status: clampText(update.status, MAX_STATUS_LENGTH) }),
  ...(update.model === undefined ? {} : { model: clampText(update.model, MAX_MODEL_LENGTH) })
})
