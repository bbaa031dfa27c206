/**
 * Length limits on what a client sends, enforced by the broker on the way in
 * and by our client before it sends. Ids and free text that the broker only
 * echoes are limited in the frame Schemas (frames.ts): a frame over them is
 * garbage (P03). Identity fields, which a session chooses and the broker
 * re-broadcasts, are checked here instead, so an over-long one is refused
 * with a clear `error` frame (`registrationOverLimit`, `presenceOverLimit`).
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

/** The first identity field of a `register` over its limit, as a message for the client; undefined when none is. */
export const registrationOverLimit = (frame: {
  readonly sessionId?: string | undefined
  readonly scopeId?: string | undefined
  readonly stateId?: string | undefined
  readonly session: {
    readonly cwd: string
    readonly model: string
    readonly name?: string | undefined
    readonly status?: string | undefined
    readonly tmuxPane?: string | undefined
  }
}): string | undefined => {
  const check = (field: string, value: string | undefined, max: number) =>
    value !== undefined && value.length > max ? overLimit("Registration refused", field, value.length, max) : undefined
  const session = frame.session
  return check("sessionId", frame.sessionId, MAX_ID_LENGTH) ?? check("scopeId", frame.scopeId, MAX_ID_LENGTH) ??
    check("stateId", frame.stateId, MAX_ID_LENGTH) ?? check("cwd", session.cwd, MAX_CWD_LENGTH) ??
    check("model", session.model, MAX_MODEL_LENGTH) ?? check("name", session.name, MAX_NAME_LENGTH) ??
    check("status", session.status, MAX_STATUS_LENGTH) ?? check("tmuxPane", session.tmuxPane, MAX_TMUX_PANE_LENGTH)
}

/** The first field of a `presence` over its limit, as a message for the client; undefined when none is. */
export const presenceOverLimit = (frame: {
  readonly name?: string | undefined
  readonly status?: string | undefined
  readonly model?: string | undefined
}): string | undefined => {
  const check = (field: string, value: string | undefined, max: number) =>
    value !== undefined && value.length > max ? overLimit("Presence update refused", field, value.length, max) : undefined
  return check("name", frame.name, MAX_NAME_LENGTH) ?? check("status", frame.status, MAX_STATUS_LENGTH) ??
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
