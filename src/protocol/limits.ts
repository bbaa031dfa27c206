/**
 * Length limits on what a client sends, enforced by the broker on the way in
 * and by our client before it sends. Ids and free text that the broker only
 * echoes are limited in the frame Schemas (frames.ts): a frame over them is
 * garbage (P03). Identity fields, which a session chooses and the broker
 * re-broadcasts, are checked here instead, so an over-long one is refused
 * with a clear `error` frame (`registrationRefusal`, `presenceRefusal`), as
 * is an id or a name holding a control character (`LABEL_CONTROL`).
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
 * A control character a label may not hold: C0 (TAB, LF and CR included),
 * DEL, C1 (U+0000–U+001F, U+007F–U+009F). Labels are what a peer shows on
 * one line: ids, names, an attachment's `name` and `language`. The broker
 * refuses them (`registrationRefusal`, `presenceRefusal`,
 * `attachmentControlOf`) and our clients check them before sending
 * (session/validation.ts `isSafeLabel`), for two reasons: a name, id or
 * label is shown by every `list` consumer, where an ESC sequence or a line
 * break would forge what a user reads; and the broker joins ids with such
 * characters to build its keys (a session's key is its scope's key, NUL,
 * its id; a group's space adds U+0003; the mailbox identity joins scope,
 * name and cwd with NUL, P49), so an id holding one could spell another
 * scope's key (scope `a` with id `b\u0000c` against scope `a\u0000b` with id
 * `c`). No `g` flag: `test` and `exec` keep no state.
 */
export const LABEL_CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/**
 * A control character a text body may not hold (C-TOOL-6): C0 but TAB, LF
 * and CR, DEL, C1. A message's `content.text` and a topic publication's
 * `text` are refused when they hold one (the client before sending, the
 * broker again). No `g` flag: `test` and `exec` keep no state.
 */
export const TEXT_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/

/** A control character found in a field: its code (`U+001B`) and 1-based position. */
export interface ControlFound {
  readonly code: string
  readonly position: number
}

/** The first character of `value` that `forbidden` matches, as `U+001B` and its 1-based position; undefined when none. */
const firstControl = (value: string, forbidden: RegExp): ControlFound | undefined => {
  const found = forbidden.exec(value)
  if (found === null) return undefined
  return { code: `U+${found[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`, position: found.index + 1 }
}

/**
 * The first control character `text` may not hold (`TEXT_CONTROL`), as
 * `U+001B` and its 1-based position; undefined when there is none.
 */
export const textControlOf = (text: string): ControlFound | undefined => firstControl(text, TEXT_CONTROL)

/**
 * The first field of `attachments` holding a control character it may not
 * hold, named as in the frame (`message.content.attachments[0].name`), with
 * the character; undefined when there is none. An attachment's `name` and
 * `language` are labels, shown on one line (`LABEL_CONTROL`); its `content`
 * is a text body (`TEXT_CONTROL`, C-TOOL-6). One regex test per field.
 */
export const attachmentControlOf = (
  attachments: ReadonlyArray<{ readonly name: string; readonly content: string; readonly language?: string | undefined }>
): (ControlFound & { readonly field: string }) | undefined => {
  for (let index = 0; index < attachments.length; index++) {
    const attachment = attachments[index]
    if (attachment === undefined) continue
    const field = `message.content.attachments[${index}]`
    const name = firstControl(attachment.name, LABEL_CONTROL)
    if (name !== undefined) return { ...name, field: `${field}.name` }
    const language = attachment.language === undefined ? undefined : firstControl(attachment.language, LABEL_CONTROL)
    if (language !== undefined) return { ...language, field: `${field}.language` }
    const content = firstControl(attachment.content, TEXT_CONTROL)
    if (content !== undefined) return { ...content, field: `${field}.content` }
  }
  return undefined
}

/** The refusal of `value` when it holds a character `forbidden` matches (named in the message), else undefined. */
const characterRefusal = (what: string, field: string, value: string, forbidden: RegExp): string | undefined => {
  const found = firstControl(value, forbidden)
  return found === undefined
    ? undefined
    : `${what}: "${field}" contains the control character ${found.code}, which ${field} may not hold. Use a ${field} without control characters.`
}

/**
 * `value`'s refusal as an id (`sessionId`, `scopeId`, `group`, `stateId`):
 * too long, or holding a control character (`LABEL_CONTROL`). A scope or group is trimmed
 * before use (P17, C-GRP-1), so whitespace around it (a newline read with it)
 * is fine: `trimmed` checks only what the broker keeps.
 */
const idRefusal = (what: string, field: string, value: string | undefined, trimmed = false): string | undefined =>
  value === undefined
    ? undefined
    : value.length > MAX_ID_LENGTH
    ? overLimit(what, field, value.length, MAX_ID_LENGTH)
    : characterRefusal(what, field, trimmed ? value.trim() : value, LABEL_CONTROL)

/**
 * Whether the broker takes `group` as a session's group at registration: at
 * most `MAX_ID_LENGTH` characters, and no control character (`LABEL_CONTROL`)
 * once trimmed. The one rule `registrationRefusal` applies, for settings that
 * check a group before it is sent (config.json, the environment).
 */
export const isAcceptedGroup = (group: string): boolean => idRefusal("", "group", group, true) === undefined

/** `name`'s refusal: too long, or holding a control character (`LABEL_CONTROL`). */
const nameRefusal = (what: string, name: string | undefined): string | undefined =>
  name === undefined
    ? undefined
    : name.length > MAX_NAME_LENGTH
    ? overLimit(what, "name", name.length, MAX_NAME_LENGTH)
    : characterRefusal(what, "name", name, LABEL_CONTROL)

/**
 * The first identity field of a `register` the broker refuses, as a message
 * for the client; undefined when it takes them all. Refused: a field over its
 * length limit, an id (`sessionId`, `scopeId`, `group`, `stateId`) or a name
 * holding a control character (`LABEL_CONTROL`).
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

/** The first field of a `presence` the broker refuses (over its limit, or a name holding a control character), as a message for the client. */
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

/** Every `LABEL_CONTROL` character, for `replace` (which starts from 0 and leaves `lastIndex` at 0). */
const LABEL_CONTROLS = new RegExp(LABEL_CONTROL.source, "g")

/**
 * A name the broker takes: cut to `MAX_NAME_LENGTH`, each control character
 * (`LABEL_CONTROL`) replaced with U+FFFD, so that a session whose host gave
 * it such a name still registers rather than being refused.
 */
export const clampName = (name: string): string => clampText(name.replace(LABEL_CONTROLS, "\uFFFD"), MAX_NAME_LENGTH)

/** `text` cut to `max` UTF-16 units (ending with "…" when cut). */
export const clampText = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`

/**
 * A registration with every identity field cut to its limit, and the name
 * without control characters (`clampName`): a client sends this rather than
 * being refused (display fields; a cwd never reaches 4096).
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
  ...(registration.name === undefined ? {} : { name: clampName(registration.name) }),
  ...(registration.status === undefined ? {} : { status: clampText(registration.status, MAX_STATUS_LENGTH) }),
  ...(registration.tmuxPane === undefined ? {} : { tmuxPane: clampText(registration.tmuxPane, MAX_TMUX_PANE_LENGTH) })
})

/** A presence update with its name, status and model cut to their limits, the name as `clampName` makes it. */
export const clampPresence = <P extends {
  readonly name?: string | undefined
  readonly status?: string | undefined
  readonly model?: string | undefined
}>(update: P): P => ({
  ...update,
  ...(update.name === undefined ? {} : { name: clampName(update.name) }),
  ...(update.status === undefined ? {} : { status: clampText(update.status, MAX_STATUS_LENGTH) }),
  ...(update.model === undefined ? {} : { model: clampText(update.model, MAX_MODEL_LENGTH) })
})
