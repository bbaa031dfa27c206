/**
 * One asker reusing an ask id past the replay window (an hour): alice asks
 * bob `q1` (`first`, answered by `reply1`), and again more than an hour
 * later under the same id (`second`, answered by `reply2`); each reply
 * closes its own ask's edge, whose deadline is the ask's receipt plus its
 * timeout (as Asks opens it). For the journal and StaleAsks tests of the
 * durable `expired` debt (review revac AC1, AC2).
 */
import type { AskEdge } from "../../src/broker/AskEdges.ts"
import type { Mail } from "../../src/broker/Peer.ts"

/** The replay window a reused id must outlive. */
export const HOUR = 3_600_000
/** Each ask's timeout. */
export const TIMEOUT = 3 * HOUR

/** Alice's ask `q1` to bob, received by the broker at `receivedAt`. */
export const askAt = (receivedAt: number): Mail => ({
  recordKey: "scope\u0000alice\u0001q1",
  senderKey: "scope\u0000alice",
  senderId: "alice",
  senderIdentity: undefined,
  fromJson: "{}",
  message: { id: "q1", timestamp: receivedAt, content: { text: "?" }, expectsReply: true },
  brokerReceivedAt: receivedAt,
  spaceKey: "scope",
  targetKey: "scope\u0000bob",
  targetId: "bob",
  targetIdentity: undefined,
  queuedAt: receivedAt,
  askTimeoutMs: TIMEOUT
})

/** Bob's reply `id` to `ask`, closing its edge (deadline brokerReceivedAt + timeout, as Asks opens it). */
export const replyTo = (ask: Mail, id: string): Mail => {
  const answers: AskEdge = {
    messageKey: ask.recordKey,
    messageId: ask.message.id,
    askerKey: ask.senderKey,
    targetKey: ask.targetKey,
    deadline: ask.brokerReceivedAt + TIMEOUT,
    openedAt: ask.brokerReceivedAt
  }
  return {
    ...ask,
    recordKey: `scope\u0000bob\u0001${id}`,
    senderKey: ask.targetKey,
    senderId: "bob",
    targetKey: ask.senderKey,
    targetId: "alice",
    message: { id, timestamp: ask.brokerReceivedAt + 1, content: { text: "!" }, replyTo: "q1" },
    askTimeoutMs: undefined,
    answers
  }
}

/** The first ask and its reply. */
export const first = askAt(10)
/** Bob's reply to the first ask. */
export const reply1 = replyTo(first, "r1")
/** The same id reused past the replay window, and its reply. */
export const second = askAt(10 + HOUR + 60_000)
/** Bob's reply to the second ask. */
export const reply2 = replyTo(second, "r2")
