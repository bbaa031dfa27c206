/**
 * The ledger's `expired-after-answer` check (ledger/askExpiry.ts) on its
 * own, fed by hand: A asks D, the broker writes the question to D's
 * connection, whose client never reads it; D answers (as a restarted agent
 * answering from what it kept), the broker writes the reply to A. An asker
 * whose session read a reply for good must not afterwards be told the
 * question expired — its `expired` receipt read after the reply, or a retry
 * of it at the end hearing `E_DELIVERY_EXPIRED` — unless that reply was
 * lost before it was read for good (then the `expired` is owed). Helper
 * replyclose's gaps: a reply accepted while the question's copy sat on a
 * takeover's old connection left that copy to come back past its deadline
 * as expired.
 */
import { describe, expect, it } from "@effect/vitest"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const D = "sim-4-d"
const info = (id: string, pid: number) => ({ id, cwd: "/", model: "m", pid, startedAt: 0, lastActivity: 0 })
const RECEIVED_AT = 1_000
const TIMEOUT_MS = 2_000
const question: Message = { id: "m-0001", timestamp: 0, content: { text: "question" }, expectsReply: true }
const reply: Message = { id: "m-0002", timestamp: 0, content: { text: "answer" }, replyTo: question.id }

/** How A's session comes by the reply, and what it hears of the question afterwards. */
interface Script {
  /**
   * How A's session has the reply: read on a connection without
   * `received-v1` (for good); read unconfirmed on a `received-v1` one that
   * then closes (lost before it was read for good); or never (its sender
   * cancels it while A is away: lost).
   */
  readonly reply: "read" | "readUnconfirmed" | "cancelled"
  /** A reads the broker's `expired` receipt for the question, after the reply. */
  readonly receipt: boolean
}

/**
 * Runs `script` (link #1 is A's, #2 D's, #3 A's again); each question the
 * finish would ask the replay record about is answered `retrySays`. Returns
 * the violations' kinds and whether the question was asked about.
 */
const answered = (script: Script, retrySays: string): { readonly kinds: ReadonlyArray<string>; readonly retried: boolean } => {
  let now = 0
  const ledger = new Ledger({ now: () => now, durable: true })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: D, name: "d", scopeId: undefined })
  const register = (link: number, id: string, pid: number, features: ReadonlyArray<string>) => {
    const { id: _, ...session } = info(id, pid)
    brokerTook(ledger, link, [JSON.stringify({ type: "register", sessionId: id, session, features })])
    ledger.clientRead(link, [JSON.stringify({ type: "registered", sessionId: id, features })])
  }
  ledger.linkOpened(1, A, "client-a", 1)
  ledger.linkOpened(2, D, "client-d", 1)
  register(1, A, 1, script.reply === "readUnconfirmed" ? [RECEIVED_V1] : [])
  register(2, D, 4, [])
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
  now = RECEIVED_AT + 500
  if (script.reply === "cancelled") {
    // A is away: the reply is queued, and D cancels it before A is back.
    ledger.brokerEnded(1)
    ledger.linkClosed(1)
  }
  const answer = JSON.stringify({ type: "send", to: A, message: reply })
  ledger.clientWrote(2, [answer])
  brokerTook(ledger, 2, [answer])
  const written = JSON.stringify({ type: "message", from: info(D, 4), message: { ...reply, brokerReceivedAt: now, brokerDeliveredAt: now } })
  if (script.reply === "cancelled") {
    ledger.clientRead(2, [JSON.stringify({ type: "delivered", messageId: reply.id, delivery: "queued" })])
    const cancel = JSON.stringify({ type: "cancel_message", messageId: reply.id })
    ledger.clientWrote(2, [cancel])
    brokerTook(ledger, 2, [cancel])
    ledger.clientRead(2, [JSON.stringify({ type: "delivered", messageId: reply.id })])
    ledger.askEnded(ask, "ReplyTimeout")
  } else {
    ledger.clientRead(2, [JSON.stringify({ type: "delivered", messageId: reply.id, delivery: "socket_delivered" })])
    ledger.brokerWrote(1, [written])
    ledger.clientRead(1, [written])
    ledger.askEnded(ask, "Replied", { questionId: question.id, fromId: D, message: reply })
    if (script.reply === "readUnconfirmed") {
      // A's connection closes before the broker read a confirmation: the reply goes back, and is lost there.
      ledger.brokerEnded(1)
      ledger.linkClosed(1)
    }
  }
  // D's connection closes past the question's deadline, the question unread: its copy comes back.
  now = RECEIVED_AT + TIMEOUT_MS + 200
  ledger.brokerEnded(2)
  ledger.linkClosed(2)
  ledger.clientClosed("client-d")
  const reading = script.reply === "read" ? 1 : 3
  if (reading === 3) {
    ledger.linkOpened(3, A, "client-a", 1)
    register(3, A, 1, [])
  }
  if (script.receipt) {
    ledger.clientRead(reading, [JSON.stringify({
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

describe("Ledger: an asker whose session had a reply is not afterwards told the ask expired (expired-after-answer)", () => {
  it("an expired receipt the asker reads after it read the reply for good is expired-after-answer", () => {
    expect(answered({ reply: "read", receipt: true }, "delivered").kinds).toContain("expired-after-answer")
  })

  it("a retry of an answered question, never handed to its target, that hears E_DELIVERY_EXPIRED is expired-after-answer", () => {
    const { kinds, retried } = answered({ reply: "read", receipt: false }, "E_DELIVERY_EXPIRED")
    expect(retried).toBe(true)
    expect(kinds).toContain("expired-after-answer")
  })

  it("an answered question whose asker hears nothing of it and whose retry hears delivered passes", () => {
    const { kinds, retried } = answered({ reply: "read", receipt: false }, "delivered")
    expect(retried).toBe(true)
    expect(kinds).not.toContain("expired-after-answer")
  })

  it("a reply its sender cancelled before the asker read it was lost: the expired receipt is owed, and passes", () => {
    expect(answered({ reply: "cancelled", receipt: true }, "E_DELIVERY_EXPIRED").kinds).not.toContain("expired-after-answer")
  })

  it("a reply read unconfirmed on a received-v1 connection that then closed was lost: the expired receipt passes", () => {
    expect(answered({ reply: "readUnconfirmed", receipt: true }, "E_DELIVERY_EXPIRED").kinds).not.toContain("expired-after-answer")
  })
})
