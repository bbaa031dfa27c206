/**
 * The ledger's `ask-expired-untold` check (ledger/askExpiry.ts) on its own,
 * fed by hand: A asks D, the broker writes the question to D's connection,
 * which never reads it and closes after A's wait ended. A question never
 * handed to its target, whose ask ended without a reply past its deadline,
 * must end with its asker told it expired — the `expired` receipt read, or a
 * retry of it at the end hearing `E_DELIVERY_EXPIRED` — unless the ask
 * ended before its deadline (then its `cancel_ask` withdrew it: no notice
 * owed), or a reply answered it. Review revq Q1: the broker counted the
 * timed-out wait's `cancel_ask` as a withdrawal, and a retry heard
 * `delivered`.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const D = "sim-4-d"
const info = (id: string, pid: number) => ({ id, cwd: "/", model: "m", pid, startedAt: 0, lastActivity: 0 })
const RECEIVED_AT = 1_000
const TIMEOUT_MS = 2_000
const question: Message = { id: "m-0001", timestamp: 0, content: { text: "question" }, expectsReply: true }

/** How A's ask ends and what A hears of its question afterwards. */
interface Ending {
  /** The ask's outcome, and when A's wait ended (ms after A read the acknowledgement). */
  readonly outcome: "ReplyTimeout" | "Interrupted"
  readonly endedAfter: number
  /** A reads the broker's `expired` receipt for the question. */
  readonly receipt?: boolean
  /** D answers the question (its reply acknowledged) before its connection closes, unread. */
  readonly answered?: boolean
  /** The broker, memory-only, crashes after D's connection closed. */
  readonly crashed?: boolean
}

/**
 * A asks D (link #1 is A's, #2 D's); the broker writes the question to #2,
 * whose client never reads it, and A reads its acknowledgement. A's wait
 * ends as `ending` says, then #2 closes and D registers again on #3. The
 * ledger lists what the finish would ask the replay record about; each is
 * answered `retrySays`. Returns the violations' kinds once the ledger
 * finished, and whether the question was among those asked about.
 */
const staleQuestion = (ending: Ending, retrySays: string): { readonly kinds: ReadonlyArray<string>; readonly retried: boolean } => {
  let now = 0
  const ledger = new Ledger({ now: () => now, durable: ending.crashed !== true })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: D, name: "d", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 1)
  ledger.linkOpened(2, D, "client-d", 1)
  const register = (link: number, id: string, pid: number) => {
    const { id: _, ...session } = info(id, pid)
    brokerTook(ledger, link, [JSON.stringify({ type: "register", sessionId: id, session })])
    ledger.clientRead(link, [JSON.stringify({ type: "registered", sessionId: id })])
  }
  register(1, A, 1)
  register(2, D, 4)
  now = RECEIVED_AT
  const ask = ledger.askStarted(A, D)
  const send = JSON.stringify({ type: "send", to: D, message: question, askTimeoutMs: TIMEOUT_MS })
  ledger.clientWrote(1, [send])
  brokerTook(ledger, 1, [send])
  ledger.brokerWrote(2, [JSON.stringify({
    type: "message",
    from: info(A, 1),
    message: { ...question, brokerReceivedAt: RECEIVED_AT, brokerDeliveredAt: RECEIVED_AT },
    askTimeoutMs: TIMEOUT_MS
  })])
  ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: question.id, delivery: "socket_delivered" })])
  if (ending.answered === true) {
    const reply: Message = { id: "m-0002", timestamp: 0, content: { text: "answer" }, replyTo: question.id }
    const answer = JSON.stringify({ type: "send", to: A, message: reply })
    now = RECEIVED_AT + 500
    ledger.clientWrote(2, [answer])
    brokerTook(ledger, 2, [answer])
    ledger.clientRead(2, [JSON.stringify({ type: "delivered", messageId: reply.id, delivery: "socket_delivered" })])
  }
  now = RECEIVED_AT + ending.endedAfter
  ledger.askEnded(ask, ending.outcome)
  now += 200
  ledger.brokerEnded(2)
  ledger.linkClosed(2)
  ledger.clientClosed("client-d")
  if (ending.crashed === true) ledger.brokerCrashed(1)
  ledger.linkOpened(3, D, "client-d2", 1)
  register(3, D, 4)
  if (ending.receipt === true) {
    ledger.clientRead(1, [JSON.stringify({
      type: "message_receipt",
      from: info(D, 4),
      receipt: { messageId: question.id, status: "expired", timestamp: now, detail: "Mailbox delivery expired" }
    })])
  }
  const asked = ledger.unexplained()
  for (const lost of asked) ledger.recordSaid(lost.message.id, retrySays)
  ledger.finish()
  return {
    kinds: ledger.violations.map((violation) => violation.kind),
    retried: asked.some((lost) => lost.message.id === question.id)
  }
}

describe("Ledger: an ask nobody answered, past its deadline, ends with its asker told it expired (ask-expired-untold)", () => {
  it("a timed-out ask whose question a retry hears delivered, its asker told nothing, is ask-expired-untold", () => {
    const { kinds, retried } = staleQuestion({ outcome: "ReplyTimeout", endedAfter: TIMEOUT_MS }, "delivered")
    expect(retried).toBe(true)
    expect(kinds).toEqual(["ask-expired-untold"])
  })

  it("a wait that ended otherwise past the deadline (the cancel_ask after it) is owed the expiry too", () => {
    expect(staleQuestion({ outcome: "Interrupted", endedAfter: TIMEOUT_MS + 100 }, "no answer").kinds).toEqual(["ask-expired-untold"])
  })

  it("a timed-out ask whose retry hears E_DELIVERY_EXPIRED passes", () => {
    expect(staleQuestion({ outcome: "ReplyTimeout", endedAfter: TIMEOUT_MS }, "E_DELIVERY_EXPIRED").kinds).toEqual([])
  })

  it("a timed-out ask whose asker read the expired receipt passes, and is not asked about again", () => {
    const { kinds, retried } = staleQuestion({ outcome: "ReplyTimeout", endedAfter: TIMEOUT_MS, receipt: true }, "delivered")
    expect(retried).toBe(false)
    expect(kinds).toEqual([])
  })

  it("an ask withdrawn before its deadline (interrupted, its cancel_ask in time) owes no expiry: a retry may hear delivered", () => {
    expect(staleQuestion({ outcome: "Interrupted", endedAfter: TIMEOUT_MS - 500 }, "delivered").kinds).toEqual([])
  })

  it("a timed-out ask a memory-only broker accepted and then crashed owes no expiry: what it owed went with it", () => {
    expect(staleQuestion({ outcome: "ReplyTimeout", endedAfter: TIMEOUT_MS, crashed: true }, "delivered").kinds).not.toContain(
      "ask-expired-untold"
    )
  })

  it("a timed-out ask its target answered (the reply accepted) owes no expiry: the broker may have marked the copy answered", () => {
    expect(staleQuestion({ outcome: "ReplyTimeout", endedAfter: TIMEOUT_MS, answered: true }, "delivered").kinds).not.toContain(
      "ask-expired-untold"
    )
  })
})
