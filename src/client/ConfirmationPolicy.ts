/**
 * When the client may confirm what it read (`received-v1`): the one rule its
 * connections ask before they send `received`, and its two switches.
 *
 * - Held (`holdConfirmations` … `resumeConfirmations`): no session takes the
 *   client's messages, so nothing read is confirmed (known issue 9).
 * - When handled (`confirmWhenHandled`, or the client option of that name):
 *   only once the consumer of `messages` has handled everything read, so a
 *   message whose checkpoint a stop cut short stays the broker's (known
 *   issue 21).
 *
 * Owner: the client's synchronous code (its sinks, `handled`, the two
 * switches); the connections read it.
 *
 * @example
 * ```ts
 * const policy = new ConfirmationPolicy(true)
 * policy.confirming(1) // false: a message read is not handled yet
 * policy.confirming(0) // true
 * policy.hold()
 * policy.confirming(0) // false until resume()
 * ```
 */

/**
 * The client's rule for confirming what it read; see the module header.
 *
 * @category models
 * @since 0.1.0
 */
export class ConfirmationPolicy {
  private held = false
  private whenHandled: boolean

  /** @param whenHandled confirm only what the consumer handled, from the start (`IntercomClientOptions.confirmWhenHandled`). */
  constructor(whenHandled = false) {
    this.whenHandled = whenHandled
  }

  /** Whether what was read may be confirmed, with `unhandled` messages read and not yet handled. */
  confirming(unhandled: number): boolean {
    return !this.held && (!this.whenHandled || unhandled === 0)
  }

  /** Whether handling the last unhandled message makes what was read confirmable, so it should be confirmed now. */
  drained(unhandled: number): boolean {
    return this.whenHandled && this.confirming(unhandled)
  }

  /** No session takes the messages: confirm nothing. */
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
}
