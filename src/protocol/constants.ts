/** Protocol constants shared by broker and client (section 0 of the protocol spec). */

/** Largest frame payload accepted or sent, in bytes (P02). Exactly 1 MiB is allowed. */
export const MAX_FRAME_BYTES = 1_048_576

/** `health_ok` identity (P20): the `protocol` a broker must name for a health probe to count. */
export const PROTOCOL_NAME = "pi-intercom"
/** `health_ok` identity (P20): the protocol `version`; there is no other version negotiation on the wire. */
export const PROTOCOL_VERSION = 1

/**
 * How long the broker keeps, at least, the outcome of each send per sender
 * (P46): a retry with the same message id within this window is answered
 * from the record and never delivered twice. Longer than a client's send
 * timeout (10 s) plus its reconnect backoff (at most 30 s) and connect
 * timeout (10 s), with room to spare.
 */
export const REPLAY_WINDOW_MS = 120_000

/**
 * The longest ask timeout, in milliseconds: 30 days. The broker refuses an
 * announced `askTimeoutMs` above it (`ask-timeout-v1`, `E_INVALID_MESSAGE`),
 * so a session refuses such an ask before sending it, and `config.json`
 * refuses such an `askTimeoutMs`.
 */
export const MAX_ASK_TIMEOUT_MS = 30 * 86_400_000

/**
 * Whether `value` is an ask timeout the broker accepts: a whole number of
 * milliseconds from 1 to `MAX_ASK_TIMEOUT_MS`.
 */
export const isAskTimeoutMs = (value: unknown): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_ASK_TIMEOUT_MS
