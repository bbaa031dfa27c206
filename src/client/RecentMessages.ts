/**
 * The messages a client received lately, by sender and message id, so that a
 * message delivered twice reaches the caller once.
 *
 * A durable broker (docs/store.md) keeps every acknowledged message until it
 * is written to its recipient's socket, and forgets it in its next commit; if
 * it is killed between the two, it delivers the message again after its
 * restart. The window is one commit, so a bounded memory of recent ids (the
 * last `capacity`, oldest forgotten first) is enough. Owned by one
 * `IntercomClient` and touched only by its synchronous inbound code.
 */

/** Remembers the last `capacity` (sender, message id) pairs seen. */
export class RecentMessages {
  private readonly seen = new Set<string>()
  private readonly capacity: number

  constructor(capacity = 1024) {
    this.capacity = capacity
  }

  /** Records the message; false when it was seen already (a redelivery: drop it). */
  firstTime(senderId: string, messageId: string): boolean {
    const key = `${senderId}\u0001${messageId}`
    if (this.seen.has(key)) return false
    this.seen.add(key)
    if (this.seen.size > this.capacity) {
      for (const oldest of this.seen) {
        this.seen.delete(oldest)
        break
      }
    }
    return true
  }
}
