/**
 * The ledger's `cancel-unheard` and its excuse `cancelCutShort`
 * (src/testing/ledger/controls.ts), fed by hand: a control cancel the broker
 * began to write on the connection that read the message is excused only
 * when that connection was the last of a client closed for good (seed 16890
 * of `--custody-hold --delivery`, cancel-cut-short.test.ts). A client that
 * lost that connection, came back on another and read the message again with
 * no control, then closed only later, is `cancel-unheard`: the broker lost
 * the control with the dropped connection. So is a control cut short by its
 * broker's crash while that connection was live (seed 33035, plain mode,
 * cancel-cut-short-crash.test.ts): the control was in memory only, and the
 * next broker has no route to follow — unless the next broker hands the
 * message out again with no control (review revaf AF2): the crash excuses
 * only the last connection that read it. One lost with a connection that
 * dropped before the crash, the client back on another connection to the
 * same broker and reading the message again there with no control, is not.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const B = "sim-2-b"
const from = { id: A, cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
const one: Message = { id: "m-0001", timestamp: 0, content: { text: "one" } }
const send = JSON.stringify({ type: "send", to: B, message: one })
const acked = JSON.stringify({ type: "delivered", messageId: one.id, delivery: "socket_delivered" })
const cancel = JSON.stringify({ type: "cancel_message", messageId: one.id })
const cancelled = JSON.stringify({ type: "delivered", messageId: one.id })
const message = JSON.stringify({ type: "message", from, message: one })
const controlCancel = JSON.stringify({ type: "message_control", from, control: { messageId: one.id, action: "cancel", timestamp: 0 } })
const register = JSON.stringify({ type: "register", sessionId: B, session: { cwd: "/", model: "m", pid: 2, startedAt: 0, lastActivity: 0 } })
const registered = JSON.stringify({ type: "registered", sessionId: B })

/** A sends B `one`; A's cancel is acknowledged; B's client reads `one` on #2 and the control is begun there. */
const cutOnTwo = () => {
  const ledger = new Ledger({ now: () => 0 })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 0)
  ledger.linkOpened(2, B, "client-b", 0)
  brokerTook(ledger, 2, [register])
  ledger.clientRead(2, [registered])
  ledger.clientWrote(1, [send])
  brokerTook(ledger, 1, [send])
  ledger.clientRead(1, [acked])
  ledger.clientWrote(1, [cancel])
  brokerTook(ledger, 1, [cancel])
  ledger.clientRead(1, [cancelled])
  ledger.clientRead(2, [message])
  ledger.brokerWriteStarted(2, [controlCancel])
  return ledger
}

const cancelUnheard = (ledger: Ledger) => {
  ledger.finish()
  return ledger.violations.map((violation) => violation.kind).filter((kind) => kind === "cancel-unheard")
}

describe("cancel-unheard and a control cancel cut short", () => {
  it("the client closes for good while the control is on its way on its last connection #2: excused", () => {
    const ledger = cutOnTwo()
    ledger.clientClosed("client-b")
    ledger.linkClosed(2)
    ledger.brokerEnded(2)
    expect(cancelUnheard(ledger)).toEqual([])
  })

  it("#2 drops under a live client, which reads the message again on #3 with no control and closes only later: cancel-unheard", () => {
    const ledger = cutOnTwo()
    // The connection drops under the client; the control begun on #2 is lost with it.
    ledger.linkClosed(2)
    ledger.brokerEnded(2)
    // The same client instance reconnects: the broker gives the message back, and never the control.
    ledger.linkOpened(3, B, "client-b", 0)
    brokerTook(ledger, 3, [register])
    ledger.clientRead(3, [registered])
    ledger.clientRead(3, [message])
    // Long after, the session stops.
    ledger.clientClosed("client-b")
    ledger.linkClosed(3)
    ledger.brokerEnded(3)
    expect(cancelUnheard(ledger)).toEqual(["cancel-unheard"])
  })

  it("the broker crashes while #2, live to both sides, has the control on its way: excused", () => {
    const ledger = cutOnTwo()
    ledger.brokerCrashed(0)
    ledger.linkClosed(2)
    ledger.brokerEnded(2)
    // The client lives on and connects to the next broker, which has no route for the control.
    ledger.linkOpened(3, B, "client-b", 1)
    brokerTook(ledger, 3, [register])
    ledger.clientRead(3, [registered])
    expect(cancelUnheard(ledger)).toEqual([])
  })

  it("the broker crashes with no control begun on the connection that read the message: cancel-unheard", () => {
    const ledger = new Ledger({ now: () => 0 })
    ledger.addSession({ id: A, name: "a", scopeId: undefined })
    ledger.addSession({ id: B, name: "b", scopeId: undefined })
    ledger.linkOpened(1, A, "client-a", 0)
    ledger.linkOpened(2, B, "client-b", 0)
    brokerTook(ledger, 2, [register])
    ledger.clientRead(2, [registered])
    ledger.clientWrote(1, [send])
    brokerTook(ledger, 1, [send])
    ledger.clientRead(1, [acked])
    ledger.clientWrote(1, [cancel])
    brokerTook(ledger, 1, [cancel])
    ledger.clientRead(1, [cancelled])
    ledger.clientRead(2, [message])
    ledger.brokerCrashed(0)
    ledger.linkClosed(2)
    ledger.brokerEnded(2)
    expect(cancelUnheard(ledger)).toEqual(["cancel-unheard"])
  })

  it("#2 drops under a live client, which reads the message again on #3 with no control, then the broker crashes: cancel-unheard", () => {
    const ledger = cutOnTwo()
    // The connection drops before the crash: the broker could give the control to the client's return.
    ledger.linkClosed(2)
    ledger.brokerEnded(2)
    ledger.linkOpened(3, B, "client-b", 0)
    brokerTook(ledger, 3, [register])
    ledger.clientRead(3, [registered])
    ledger.clientRead(3, [message])
    ledger.brokerCrashed(0)
    ledger.linkClosed(3)
    ledger.brokerEnded(3)
    expect(cancelUnheard(ledger)).toEqual(["cancel-unheard"])
  })

  it("the broker crashes while #2 has the control on its way, and the next broker hands the message out again on #3 with no control: cancel-unheard", () => {
    const ledger = cutOnTwo()
    ledger.brokerCrashed(0)
    ledger.linkClosed(2)
    ledger.brokerEnded(2)
    // The crash explains the control lost on #2, not the cancelled message given out again by the next incarnation.
    ledger.linkOpened(3, B, "client-b", 1)
    brokerTook(ledger, 3, [register])
    ledger.clientRead(3, [registered])
    ledger.clientRead(3, [message])
    expect(cancelUnheard(ledger)).toEqual(["cancel-unheard"])
  })
})
