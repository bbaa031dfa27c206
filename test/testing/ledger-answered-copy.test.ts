/**
 * The ledger's `answered` outcome (ledger/fates.ts) on its own, fed by
 * hand, under `strictInFlight`: A asks D, the broker writes the question to
 * D's connection, whose session never takes it (its client never reads it,
 * or reads it and closes); D answers (as a restarted agent answering from
 * what it kept), and D's connection closes, so the copy goes back. When
 * A's session read the reply for good the broker drops that copy as
 * answered: the tally counts it `answered`, not `lostInFlight`, and no
 * `lost-in-flight` violation is raised. When the reply was lost before A
 * read it for good, the ask is open again and the copy is what it was
 * before: lost in flight.
 */
import { describe, expect, it } from "@effect/vitest"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import type { MessageTally } from "../../src/testing/ledger/types.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const D = "sim-4-d"
const info = (id: string, pid: number) => ({ id, cwd: "/", model: "m", pid, startedAt: 0, lastActivity: 0 })
const RECEIVED_AT = 1_000
const TIMEOUT_MS = 2_000
const question: Message = { id: "m-0001", timestamp: 0, content: { text: "question" }, expectsReply: true }
const reply: Message = { id: "m-0002", timestamp: 0, content: { text: "answer" }, replyTo: question.id }

/** How far D's client got with the question, and how A's session had the reply. */
interface Script {
  /** D's client never read the question (written only), or read it and closed before its session took it. */
  readonly question: "written" | "readByClient"
  /**
   * A's client read the reply on a connection without `received-v1` (for
   * good), or unconfirmed on a `received-v1` one that then closed (lost
   * before it was read for good).
   */
  readonly reply: "read" | "readUnconfirmed"
}

/**
 * Runs `script` under `strictInFlight` (link #1 is A's, #2 D's, #3 A's
 * again); every question the finish asks the replay record about hears
 * `delivered`. Returns the violations' kinds and the tally.
 */
const run = (script: Script): { readonly kinds: ReadonlyArray<string>; readonly tally: MessageTally } => {
  let now = 0
  const ledger = new Ledger({ now: () => now, durable: true, strictInFlight: true })
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
  const asked = JSON.stringify({
    type: "message",
    from: info(A, 1),
    message: { ...question, brokerReceivedAt: RECEIVED_AT, brokerDeliveredAt: RECEIVED_AT },
    askTimeoutMs: TIMEOUT_MS
  })
  ledger.brokerWrote(2, [asked])
  if (script.question === "readByClient") ledger.clientRead(2, [asked])
  ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: question.id, delivery: "socket_delivered" })])
  now = RECEIVED_AT + 500
  const answer = JSON.stringify({ type: "send", to: A, message: reply })
  ledger.clientWrote(2, [answer])
  brokerTook(ledger, 2, [answer])
  ledger.clientRead(2, [JSON.stringify({ type: "delivered", messageId: reply.id, delivery: "socket_delivered" })])
  const written = JSON.stringify({ type: "message", from: info(D, 4), message: { ...reply, brokerReceivedAt: now, brokerDeliveredAt: now } })
  ledger.brokerWrote(1, [written])
  ledger.clientRead(1, [written])
  ledger.askEnded(ask, "Replied", { questionId: question.id, fromId: D, message: reply })
  if (script.reply === "readUnconfirmed") {
    // A's connection closes before the broker read a confirmation: the reply goes back, and is lost there.
    ledger.brokerEnded(1)
    ledger.linkClosed(1)
    ledger.linkOpened(3, A, "client-a", 1)
    register(3, A, 1, [])
  }
  // D's connection closes, its session never having taken the question: the copy goes back.
  now = RECEIVED_AT + 800
  ledger.brokerEnded(2)
  ledger.linkClosed(2)
  ledger.clientClosed("client-d")
  for (const lost of ledger.unexplained()) ledger.recordSaid(lost.message.id, "delivered")
  const tally = ledger.finish()
  return { kinds: ledger.violations.map((violation) => violation.kind), tally }
}

describe("Ledger: a question's copy that went back after its asker's session read a reply is dropped as answered", () => {
  it("written to a connection that closed unread, answered: counted answered, not lost in flight, no violation under strict", () => {
    const { kinds, tally } = run({ question: "written", reply: "read" })
    expect(tally.answered).toBe(1)
    expect(tally.lostInFlight).toBe(0)
    expect(kinds).not.toContain("lost-in-flight")
  })

  it("read by a client that closed before its session took it, answered: counted answered, no violation under strict", () => {
    const { kinds, tally } = run({ question: "readByClient", reply: "read" })
    expect(tally.answered).toBe(1)
    expect(tally.lostInFlight).toBe(0)
    expect(kinds).not.toContain("lost-in-flight")
  })

  it("the reply lost before the asker's session read it for good: the copy is lost in flight (a violation under strict)", () => {
    const { kinds, tally } = run({ question: "written", reply: "readUnconfirmed" })
    expect(tally.answered).toBe(0)
    expect(tally.lostInFlight).toBe(1)
    expect(kinds).toContain("lost-in-flight")
  })
})
