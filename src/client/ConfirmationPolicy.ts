/**
 * How far the client may confirm what it read (`received-v1`): the one rule
 * its connections ask before they send `received`, and its two switches.
 *
 * - When handled (`confirmWhenHandled`, or the client option of that name):
 *   only what came before the oldest message the consumer of `messages` has
 *   not handled, so a message whose checkpoint a stop cut short — and every
 *   one after it — stays the broker's (known issue 21), while what the
 *   consumer finished before it is confirmed as it goes.
 * - Held (`holdConfirmations` … `resumeConfirmations`): no session takes the
 *   client's messages, so what is read meanwhile is not handled, and the
 *   same bound keeps it unconfirmed (known issue 9), whatever the mode. What
 *   a retiring session still handles then (its host's last hand-offs) is
 *   confirmed, so the session's next client does not get it again.
 * - Withheld (the client option `withholdConfirmations` …
 *   `releaseConfirmations`): nothing read is confirmed, handled or not. For
 *   a consumer whose journal is not durable yet — a pi session whose file
 *   pi has not written yet keeps its checkpoints in memory only — so all of
 *   it stays the broker's, and a process that ends meanwhile leaves it to
 *   the session's next client. Released once, and from then on the other
 *   rules apply. It counts the messages it keeps back (`read`), and with a
 *   limit (`IntercomClientOptions.withholdLimit`) the first message past it
 *   releases, as `release` does: what is withheld stays bounded, in this
 *   process and in the broker (its custody and store), at the cost of
 *   confirming mail the consumer's journal does not hold durably yet.
 *
 * A connection turns the bound into a frame count: none while withheld,
 * else the frames before that message's, when this connection read it, else
 * none (Confirmations.ts).
 *
 * Owner: the client's synchronous code (its sinks, `handled`, the two
 * switches); the connections read it.
 *
 * @example
 * ```ts
 * const policy = new ConfirmationPolicy(true)
 * policy.bound(oldest) // oldest: confirm only the frames before it
 * policy.bound(undefined) // "all": nothing read is unhandled
 *
 * const plain = new ConfirmationPolicy()
 * plain.bound(oldest) // "all": confirmed as read
 * plain.hold()
 * plain.bound(oldest) // oldest, until resume(): no session takes it
 *
 * const withheld = new ConfirmationPolicy(true, true)
 * withheld.bound(undefined) // "none": nothing read may be confirmed yet
 * withheld.release()
 * withheld.bound(undefined) // "all"
 *
 * const bounded = new ConfirmationPolicy(true, true, 2)
 * bounded.read()
 * bounded.read() // two withheld: { withholding: true, messages: 2, limitReleased: undefined }
 * bounded.read() // past the limit: { withholding: false, messages: 0, limitReleased: 3 }
 * ```
 */
import type { InboundMessage } from "./events.ts"
import type { WithheldConfirmations } from "./models.ts"

/**
 * How far what was read may be confirmed: all of it, none of it (withheld),
 * or the frames before this message's (the oldest one not handled; none of a
 * connection's frames when another connection read it, Confirmations.ts).
 *
 * @category models
 * @since 0.1.0
 */
export type ConfirmBound = "all" | "none" | InboundMessage

/**
 * The client's rule for confirming what it read; see the module header.
 *
 * @category models
 * @since 0.1.0
 */
export class ConfirmationPolicy {
  private held = false
  private whenHandled: boolean
  private withheld: boolean
  private readonly withholdLimit: number
  /** Messages read while withheld (each once): 0 once released. */
  private withheldMessages = 0
  /** How many were withheld when the limit released them; undefined unless it did. */
  private limitReleased: number | undefined

  /**
   * @param whenHandled confirm only what the consumer handled, from the start (`IntercomClientOptions.confirmWhenHandled`).
   * @param withheld confirm nothing until `release` (`IntercomClientOptions.withholdConfirmations`).
   * @param withholdLimit release at the first message read past this many withheld (`IntercomClientOptions.withholdLimit`); no limit by default.
   */
  constructor(whenHandled = false, withheld = false, withholdLimit = Number.POSITIVE_INFINITY) {
    this.whenHandled = whenHandled
    this.withheld = withheld
    this.withholdLimit = withholdLimit
  }

  /** How far what was read may be confirmed, with `oldestUnhandled` the oldest message read and not handled. */
  bound(oldestUnhandled: InboundMessage | undefined): ConfirmBound {
    if (this.withheld) return "none"
    return !this.waitsForHandling || oldestUnhandled === undefined ? "all" : oldestUnhandled
  }

  /**
   * Whether confirmations wait for something (held, `confirmWhenHandled`,
   * withheld): handling a message, or `release`, may then confirm more, and
   * the connections note the frame each message came in.
   */
  get waitsForHandling(): boolean {
    return this.held || this.whenHandled || this.withheld
  }

  /** No session takes the messages: confirm only what came before the oldest unhandled one. */
  hold(): void {
    this.held = true
  }

  /** A session takes them again. */
  resume(): void {
    this.held = false
  }

  /** From now on, confirm only what the consumer handled. */
  confirmWhenHandled(): void {
    this.whenHandled = true
  }

  /** Withheld no more: from now on the other rules say how far to confirm. */
  release(): void {
    this.withheld = false
    this.withheldMessages = 0
  }

  /**
   * A message was read, for the first time (not a copy delivered again).
   * While withheld it is counted, and the first past the limit releases: the
   * connection's confirmation after the batch that carried it covers it and
   * everything before it (as far as the other rules let it).
   */
  read(): void {
    if (!this.withheld) return
    this.withheldMessages++
    if (this.withheldMessages <= this.withholdLimit) return
    this.limitReleased = this.withheldMessages
    this.release()
  }

  /** What is withheld now, and whether the limit ended it (`IntercomClientService.withheld`). */
  get state(): WithheldConfirmations {
    return { withholding: this.withheld, messages: this.withheldMessages, limitReleased: this.limitReleased }
  }
}
