/**
 * The ledger's `handed-after-drop` check on its own, fed by hand
 * (ledger/dropped.ts): a message whose only copy B's `received-v1` client
 * took off a connection after it had dropped that connection itself is
 * reported when B's host, or B's ask, is handed it (seed 10425,
 * `--delivery`, with ConnectionReader's `dropped` guard reverted); not when
 * a client of B read a copy on a connection it held first, nor when the
 * broker had not granted that connection `received-v1` (then the broker
 * counts the message delivered, and handing it on is right).
 */
import { describe, expect, it } from "@effect/vitest"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const B = "sim-2-b"
const fromA = { id: A, cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
const one: Message = { id: "m-0001", timestamp: 0, content: { text: "one" } }
const send = JSON.stringify({ type: "send", to: B, message: one })
const acked = JSON.stringify({ type: "delivered", messageId: one.id, delivery: "socket_delivered" })
const message = JSON.stringify({ type: "message", from: fromA, message: one })
const register = JSON.stringify({
  type: "register",
  sessionId: B,
  session: { cwd: "/", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
})
const registered = (features: ReadonlyArray<string>) => JSON.stringify({ type: "registered", sessionId: B, features })

/**
 * A sends B `one` (acknowledged), which the broker writes to B's link #2; B's
 * client drops #2 itself and its stalled reader then returns the frame.
 * B registers again on link #3. `features`: what the broker granted B's connections.
 */
const world = (features: ReadonlyArray<string> = [RECEIVED_V1]) => {
  const ledger = new Ledger({ now: () => 0 })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 0)
  ledger.linkOpened(2, B, "client-b", 0)
  brokerTook(ledger, 2, [register])
  ledger.clientRead(2, [registered(features)])
  ledger.clientWrote(1, [send])
  brokerTook(ledger, 1, [send])
  ledger.clientRead(1, [acked])
  ledger.brokerWrote(2, [message])
  ledger.discarded(2, "client", [message])
  ledger.linkClosed(2)
  ledger.clientTookAfterDrop(2, [message])
  ledger.linkOpened(3, B, "client-b", 0)
  brokerTook(ledger, 3, [register])
  ledger.clientRead(3, [registered(features)])
  return ledger
}

const kinds = (ledger: Ledger): ReadonlyArray<string> => ledger.violations.map((violation) => violation.kind)

describe("handed-after-drop", () => {
  it("B's host handed a message its client took only off a connection it had dropped itself is reported", () => {
    const ledger = world()
    ledger.hostDelivered(B, A, one, "steer")
    expect(kinds(ledger)).toEqual(["handed-after-drop"])
    expect(ledger.violations[0]?.message).toContain("link #2")
  })

  it("B's host handed it after the broker sent it again to B's next connection, where B's client read it, is not", () => {
    const ledger = world()
    ledger.brokerWrote(3, [message])
    ledger.clientRead(3, [message])
    ledger.hostDelivered(B, A, one, "steer")
    expect(kinds(ledger)).toEqual([])
  })

  it("without received-v1 on that connection, handing it on is no violation (the broker counted it delivered)", () => {
    const ledger = world([])
    ledger.hostDelivered(B, A, one, "steer")
    expect(kinds(ledger)).toEqual([])
  })

  it("a reply taken only off a connection its asker's client had dropped, settling the ask, is reported", () => {
    const ledger = new Ledger({ now: () => 0 })
    ledger.addSession({ id: A, name: "a", scopeId: undefined })
    ledger.addSession({ id: B, name: "b", scopeId: undefined })
    const question: Message = { id: "q-0001", timestamp: 0, content: { text: "why?" }, expectsReply: true }
    const reply: Message = { id: "r-0001", timestamp: 0, content: { text: "because" }, replyTo: question.id }
    const fromB = { id: B, cwd: "/", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
    const replyFrame = JSON.stringify({ type: "message", from: fromB, message: reply })
    ledger.linkOpened(1, A, "client-a", 0)
    ledger.linkOpened(2, B, "client-b", 0)
    ledger.clientRead(1, [JSON.stringify({ type: "registered", sessionId: A, features: [RECEIVED_V1] })])
    const ask = ledger.askStarted(A, B)
    ledger.clientWrote(1, [JSON.stringify({ type: "send", to: B, message: question })])
    ledger.clientWrote(2, [JSON.stringify({ type: "send", to: A, message: reply })])
    ledger.brokerWrote(1, [replyFrame])
    ledger.linkClosed(1)
    ledger.clientTookAfterDrop(1, [replyFrame])
    ledger.askEnded(ask, "Replied", { questionId: question.id, fromId: B, message: reply })
    expect(kinds(ledger)).toEqual(["handed-after-drop"])
  })
})
