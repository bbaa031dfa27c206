/**
 * The client's inbound messages that no consumer has finished with yet
 * (known issue 15, docs/testing.md).
 *
 * The connection's reader adds each message it reads (`offer`); the consumer
 * of `IntercomClient.messages` gets them one at a time, oldest first. A
 * message leaves only when its consumer is done with it: when that consumer
 * asks for the next one, or earlier when it says so (`handled`). A consumer
 * that passed a message on but cannot vouch for it yet (its host has not
 * taken it, and nothing saved it) keeps it (`keep`) until `handled`: it
 * counts as unhandled meanwhile, and if the consumer's run ends first, the
 * next run gets it again, before anything read after it. A
 * interrupted in the middle of a message (a session generation that closes)
 * therefore leaves that message, and every one after it, to the next
 * consumer of the same client, instead of taking them out of the client and
 * dropping them. Unless the client confirms only what was handled
 * (`confirmWhenHandled`, as under `IntercomSession`), the broker was already
 * told they were read (`received-v1`), so this buffer is the only copy.
 *
 * Single consumer: each run of the stream starts at the oldest unhandled
 * message, and two runs at once would see the same messages.
 *
 * Messages and presence events are read by different fibers, but the broker
 * wrote them in one order: `caughtUp` lets a presence consumer wait until
 * the messages read before an event were handled (a peer's reply and then its
 * departure: the reply first, C-ASK-9).
 *
 * A consumer may also take a message as it is read (`takeOnOffer`): a
 * synchronous check `offer` asks first, whose message, once taken, is the
 * consumer's and never enters the buffer — it does not wait behind the
 * unhandled ones, nor hold `caughtUp` or the confirmations (a session's
 * reply to its live ask, C-ORD-32). The same check may also look back
 * (`takeWaiting`) through the messages read and not yet reached by the
 * consumer — behind the one it is at, kept ones aside — and take one
 * there, as if it were read now (a reply read before its ask's waiter was
 * bound). It looks only at the messages that answer the question it names
 * (`replyTo`), found through an index of the waiting messages by `replyTo`:
 * a look-back for a question nothing waiting answers — every brand-new ask
 * — costs the same with ten thousand messages waiting as with none.
 *
 * It owns the buffer: two FIFOs (Fifo.ts), the unhandled and the kept
 * messages, the index by `replyTo` of the messages in either, the read
 * number of each unhandled one, the `caughtUp`
 * waiters, the taker and the message the consumer is at, touched only by
 * synchronous code (the reader's `offer`, the consumer's pull, `keep`,
 * `handled`, `takeOnOffer`, `takeWaiting`).
 */
import { Array as Arr, Deferred, Effect, Queue, Stream } from "effect"
import type { InboundMessage } from "./events.ts"
import { Fifo } from "./Fifo.ts"

/**
 * The buffer of read, unhandled messages (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface UnhandledMessages {
  /** A message was read: the taker gets it if it takes it (`takeOnOffer`), else it waits behind every unhandled one. */
  readonly offer: (message: InboundMessage) => void
  /**
   * Installs `take`, which `offer` asks first about each message (plain
   * synchronous code, on the reader's path): one it takes (true) is its
   * caller's and is not buffered. One taker at a time: a later one replaces
   * it. Returns the removal, which leaves a later taker in place.
   */
  readonly takeOnOffer: (take: (message: InboundMessage) => boolean) => () => void
  /**
   * Asks `take` (plain synchronous code), oldest first, about the messages
   * read and not yet reached by the consumer whose `replyTo` is `replyTo`:
   * neither the one it is at (it decides about that one itself) nor a kept
   * one (passed on already). The first it takes (true) leaves, as a handled
   * one does, and is returned. Constant time when no such message waits.
   */
  readonly takeWaiting: (replyTo: string, take: (message: InboundMessage) => boolean) => InboundMessage | undefined
  /**
   * The messages, one at a time, starting at the oldest unhandled one; a
   * message leaves when this run pulls the next one.
   */
  readonly stream: Stream.Stream<InboundMessage>
  /**
   * The consumer is done with `message` (it handed it on): it leaves now, so
   * a consumer interrupted right after cannot leave it to the next one twice.
   */
  readonly handled: (message: InboundMessage) => void
  /**
   * The consumer passed `message` on but cannot vouch for it yet: it stays
   * unhandled (so unconfirmed) until `handled`, and a later run of the
   * stream starts with it if this run ends first.
   */
  readonly keep: (message: InboundMessage) => void
  /** The oldest message read and not handled (a kept one first), if any. */
  readonly oldest: () => InboundMessage | undefined
  /** How many messages wait (read and not handled, kept ones included). */
  readonly size: () => number
  /**
   * Completes once the consumer is done (handled, kept or pulled past) with
   * every message read before the call; at once when none waits. Kept
   * messages do not hold it: they were passed on already.
   */
  readonly caughtUp: Effect.Effect<void>
}

/**
 * Builds an empty buffer.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeUnhandledMessages: Effect.Effect<UnhandledMessages> = Effect.gen(function*() {
  /** Read and not handled, oldest first. */
  const unhandled = new Fifo<InboundMessage>()
  /** Passed on and kept (`keep`), oldest first; all of them were read before any in `unhandled`. */
  const kept = new Fifo<InboundMessage>()
  /** Wakes a consumer waiting for a message; one signal stands for any number of offers. */
  const wake = yield* Queue.sliding<true>(1)
  /** How many messages were offered; each one's number is its place in that count (`numbers`). */
  let offered = 0
  const numbers = new WeakMap<InboundMessage, number>()
  /** `caughtUp` calls waiting, oldest (lowest `through`) first: each for the messages numbered up to `through`. */
  const waiters: Array<{ readonly through: number; readonly done: Deferred.Deferred<void> }> = []
  /** Asked first about each offered message (`takeOnOffer`). */
  let taker: ((message: InboundMessage) => boolean) | undefined
  /** The message the consumer's run last emitted and has not pulled past: `takeWaiting` leaves it to the consumer. */
  let atConsumer: InboundMessage | undefined
  /**
   * The messages in `unhandled` or `kept` that answer a question, by its id (`replyTo`), each list in read order
   * (the order of `unhandled`, kept ones among them): exactly those two FIFOs' replies, a key dropped with its last
   * message. `takeWaiting` looks here, not through the buffer. A question nearly always has one reply waiting at
   * most: that one stands alone, and a list is made only for a second (this is on every reply's read path).
   */
  const byReplyTo = new Map<string, InboundMessage | Array<InboundMessage>>()
  /** Which of the indexed messages are in `kept` (`takeWaiting` leaves them). */
  const isKept = new WeakSet<InboundMessage>()

  const indexed = (message: InboundMessage): void => {
    const replyTo = message.message.replyTo
    if (replyTo === undefined) return
    const entry = byReplyTo.get(replyTo)
    if (entry === undefined) byReplyTo.set(replyTo, message)
    else if (Array.isArray(entry)) entry.push(message)
    else byReplyTo.set(replyTo, [entry, message])
  }

  /** `message` left both FIFOs. */
  const unindexed = (message: InboundMessage): void => {
    const replyTo = message.message.replyTo
    if (replyTo === undefined) return
    const entry = byReplyTo.get(replyTo)
    if (entry === message) {
      byReplyTo.delete(replyTo)
    } else if (Array.isArray(entry)) {
      const at = entry.indexOf(message)
      if (at >= 0) entry.splice(at, 1)
      if (entry.length === 0) byReplyTo.delete(replyTo)
    }
  }

  /**
   * Completes the waiters whose messages have all left `unhandled`. Its messages are in read order
   * (a kept one put back was read before any other), so the head's number says which are done.
   */
  const release = (): void => {
    if (waiters.length === 0) return
    const head = unhandled.peek()
    const oldest = head === undefined ? Number.POSITIVE_INFINITY : numbers.get(head) ?? 0
    while (waiters.length > 0 && (waiters[0]?.through ?? 0) < oldest) {
      const waiter = waiters.shift()
      if (waiter !== undefined) Deferred.doneUnsafe(waiter.done, Effect.void)
    }
  }

  const remove = (message: InboundMessage): void => {
    if (!unhandled.remove(message)) return
    unindexed(message)
    release()
  }

  /** A new run starts with what an earlier one kept and never saw handled, oldest first. */
  const requeueKept = (): void => {
    if (kept.size === 0) return
    const later = unhandled.takeAll()
    for (const message of kept.takeAll()) {
      isKept.delete(message)
      unhandled.push(message)
    }
    for (const message of later) unhandled.push(message)
  }

  const stream = Stream.fromPull(Effect.sync(() => {
    requeueKept()
    // A run that ended in the middle of a message left it here: this run starts with it.
    atConsumer = undefined
    /** The message this run last emitted; it leaves when the run asks for the next. */
    let current: InboundMessage | undefined
    const next: Effect.Effect<InboundMessage> = Effect.suspend(() => {
      if (current !== undefined) {
        remove(current)
        current = undefined
        atConsumer = undefined
      }
      const head = unhandled.peek()
      if (head === undefined) return Effect.andThen(Queue.take(wake), next)
      current = head
      atConsumer = head
      return Effect.succeed(head)
    })
    return Effect.map(next, Arr.of)
  }))

  return {
    offer: (message) => {
      if (taker !== undefined && taker(message)) return
      numbers.set(message, ++offered)
      unhandled.push(message)
      indexed(message)
      Queue.offerUnsafe(wake, true)
    },
    takeOnOffer: (take) => {
      taker = take
      return () => {
        if (taker === take) taker = undefined
      }
    },
    takeWaiting: (replyTo, take) => {
      const entry = byReplyTo.get(replyTo)
      if (entry === undefined) return undefined
      const waiting = (message: InboundMessage) => message !== atConsumer && !isKept.has(message) && take(message)
      const taken = Array.isArray(entry) ? entry.find(waiting) : waiting(entry) ? entry : undefined
      if (taken !== undefined) remove(taken)
      return taken
    },
    stream,
    handled: (message) => {
      if (unhandled.remove(message)) {
        unindexed(message)
        release()
      } else if (kept.remove(message)) {
        isKept.delete(message)
        unindexed(message)
      }
    },
    keep: (message) => {
      if (!unhandled.remove(message)) return
      kept.push(message)
      isKept.add(message)
      release()
    },
    oldest: () => kept.peek() ?? unhandled.peek(),
    size: () => unhandled.size + kept.size,
    caughtUp: Effect.suspend(() => {
      if (unhandled.size === 0) return Effect.void
      const waiter = { through: offered, done: Deferred.makeUnsafe<void>() }
      waiters.push(waiter)
      // An interrupted wait leaves the list at once rather than at its messages' handling.
      return Deferred.await(waiter.done).pipe(Effect.onInterrupt(() =>
        Effect.sync(() => {
          const at = waiters.indexOf(waiter)
          if (at >= 0) waiters.splice(at, 1)
        })
      ))
    })
  }
})
