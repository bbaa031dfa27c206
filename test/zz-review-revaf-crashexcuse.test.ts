/**
 * Review revaf AF2 (probe, fails on main 7f5b4023): the ledger's crash excuse
 * for `cancel-unheard` (`cancelCutShort`, `LinkRecord.cutByCrash`) is too wide.
 * A acks B's message cancelled; B read it on #2, the control is begun there,
 * the broker crashes with #2 live. B's same client connects to the next
 * incarnation and reads the message AGAIN there (given back from the store)
 * with no control: B acts on a message whose cancel was acknowledged. The
 * crash explains why the control on #2 never arrived, not why the next broker
 * hands the cancelled message out again; the excuse must not cover a later
 * read of it without a control.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../src/protocol/frames.ts"
import { Ledger } from "../src/testing/Ledger.ts"
import { brokerTook } from "./support/ledgerFeed.ts"

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

describe("review revaf AF2: the crash excuse and a read after the crash", () => {
  it("the cancelled message read again from the next broker with no control is cancel-unheard", () => {
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
    ledger.brokerCrashed(0)
    ledger.linkClosed(2)
    ledger.brokerEnded(2)
    // The same client connects to the next incarnation and is given the cancelled message again, no control.
    ledger.linkOpened(3, B, "client-b", 1)
    brokerTook(ledger, 3, [register])
    ledger.clientRead(3, [registered])
    ledger.clientRead(3, [message])
    ledger.finish()
    const kinds = ledger.violations.map((violation) => violation.kind)
    expect(kinds, JSON.stringify(ledger.violations)).toContain("cancel-unheard")
  })
})
