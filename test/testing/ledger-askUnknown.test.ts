/**
 * The ledger's `answer-after-timeout` check on an ask that ended
 * `DeliveryUnknown` (`answersAfterTimeout`, ledger/asks.ts), fed by hand: A
 * asks D; the broker reads the question and D's reply to it, acknowledges
 * the reply to D, and writes A the question's acknowledgement and the reply;
 * A's ask ends `DeliveryUnknown` (its send timeout) before its client reads
 * them. Reported when A's client then reads the reply on a connection live
 * when the ask ended and the broker had read the reply by then; not when
 * the ask ended answered, its connection had ended, the broker read the
 * reply only after the ask ended, or the question was never acknowledged.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"

const A = "sim-1-a"
const D = "sim-4-d"
const info = (id: string, pid: number) => ({ id, cwd: "/", model: "m", pid, startedAt: 0, lastActivity: 0 })
const question: Message = { id: "m-0001", timestamp: 0, content: { text: "question" }, expectsReply: true }
const reply: Message = { id: "m-0002", timestamp: 0, content: { text: "answer" }, replyTo: question.id }
const client = { key: "client-a", rejoinGraceMs: 10_000, livenessTimeoutMs: 5_000 }

/** The scenario of the module header, varied by `variant`; returns what `answersAfterTimeout` reports. */
const unknownThenAnswerRead = (
  variant: "held" | "answered" | "connection ended" | "reply read after the end" | "question refused"
): ReadonlyArray<string> => {
  let now = 0
  const ledger = new Ledger({ now: () => now })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: D, name: "d", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 1)
  ledger.linkOpened(2, D, "client-d", 1)
  for (const [link, id, pid] of [[1, A, 1], [2, D, 4]] as const) {
    const { id: _, ...session } = info(id, pid)
    ledger.brokerRead(link, [JSON.stringify({ type: "register", sessionId: id, session })])
    ledger.clientRead(link, [JSON.stringify({ type: "registered", sessionId: id })])
  }
  now = 1_000
  const alias = ledger.askStarted(A, D, client)
  const ask = JSON.stringify({ type: "send", to: D, message: question, askTimeoutMs: 60_000 })
  ledger.clientWrote(1, [ask])
  ledger.brokerRead(1, [ask])
  const ack = variant === "question refused"
    ? JSON.stringify({ type: "delivery_failed", messageId: question.id, code: "E_TARGET_DISCONNECTED", reason: "gone" })
    : JSON.stringify({ type: "delivered", messageId: question.id, delivery: "socket_delivered" })
  ledger.brokerWrote(1, [ack])
  const answer = JSON.stringify({ type: "send", to: A, message: reply })
  const replyFrame = JSON.stringify({ type: "message", from: info(D, 4), message: reply })
  const brokerTakesReply = () => {
    ledger.clientWrote(2, [answer])
    ledger.brokerRead(2, [answer])
    ledger.clientRead(2, [JSON.stringify({ type: "delivered", messageId: reply.id, delivery: "socket_delivered" })])
    ledger.brokerWrote(1, [replyFrame])
  }
  now = 2_000
  if (variant !== "reply read after the end") brokerTakesReply()
  // A's send timeout, the acknowledgement and the reply still unread.
  now = 11_000
  if (variant === "connection ended") ledger.linkClosed(1)
  if (variant === "answered") ledger.askEnded(alias, "Replied", { questionId: question.id, fromId: D, message: reply })
  else ledger.askEnded(alias, "DeliveryUnknown")
  now = 12_000
  if (variant === "reply read after the end") brokerTakesReply()
  if (variant !== "connection ended") ledger.clientRead(1, [ack, replyFrame])
  return ledger.answersAfterTimeout()
}

describe("Ledger: an ask that ended DeliveryUnknown with its answer on its live connection (answer-after-timeout)", () => {
  it("an ask ended DeliveryUnknown, the broker having taken its question and a reply it then read on its live connection, is reported", () => {
    const found = unknownThenAnswerRead("held")
    expect(found).toHaveLength(1)
    expect(found[0]).toContain("ask1 of a ended DeliveryUnknown")
  })

  it("the same ask ended answered is not reported", () => {
    expect(unknownThenAnswerRead("answered")).toEqual([])
  })

  it("an ask whose connection ended before it did (the reply never read) is not reported", () => {
    expect(unknownThenAnswerRead("connection ended")).toEqual([])
  })

  it("a reply the broker read only after the ask ended is not reported", () => {
    expect(unknownThenAnswerRead("reply read after the end")).toEqual([])
  })

  it("an ask whose question the broker refused is not reported", () => {
    expect(unknownThenAnswerRead("question refused")).toEqual([])
  })
})
