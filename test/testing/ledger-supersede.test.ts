/**
 * The ledger's `supersede-unheard` check on its own, fed by hand
 * (ledger/controls.ts): A's send of `two` superseding `one`, acknowledged
 * after B's client read `one` on connection #2, is reported when #2 stayed
 * live, read everything written to it, and no control supersede of `one`
 * was read there (the supersede stage, SupersedeStage.ts dropping the control); not when
 * the control was read, nor when #2 closed before the end (a new
 * connection's instance gets no control for a message it never got).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const B = "sim-2-b"
const from = { id: A, cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
const one: Message = { id: "m-0001", timestamp: 0, content: { text: "one" } }
const two: Message = { id: "m-0002", timestamp: 0, content: { text: "two" }, supersedes: one.id }
const sendOf = (message: Message) => JSON.stringify({ type: "send", to: B, message })
const ackOf = (message: Message) => JSON.stringify({ type: "delivered", messageId: message.id, delivery: "socket_delivered" })
const frameOf = (message: Message) => JSON.stringify({ type: "message", from, message })
const supersedeControl = JSON.stringify({
  type: "message_control",
  from,
  control: { messageId: one.id, action: "supersede", supersededBy: two.id, timestamp: 0 }
})
const register = JSON.stringify({
  type: "register",
  sessionId: B,
  session: { cwd: "/", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
})
const registered = JSON.stringify({ type: "registered", sessionId: B })

/**
 * A sends B `one` (acknowledged), which B's client reads on link #2; then A
 * sends `two` superseding it, acknowledged. `between` runs before the
 * acknowledgement is read (the broker's writes to #2 meanwhile).
 */
const world = (between: (ledger: Ledger) => void) => {
  const ledger = new Ledger({ now: () => 0 })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 0)
  ledger.linkOpened(2, B, "client-b", 0)
  brokerTook(ledger, 2, [register])
  ledger.brokerWrote(2, [registered])
  ledger.clientRead(2, [registered])
  ledger.clientWrote(1, [sendOf(one)])
  brokerTook(ledger, 1, [sendOf(one)])
  ledger.clientRead(1, [ackOf(one)])
  ledger.brokerWrote(2, [frameOf(one)])
  ledger.clientRead(2, [frameOf(one)])
  ledger.clientWrote(1, [sendOf(two)])
  brokerTook(ledger, 1, [sendOf(two)])
  between(ledger)
  ledger.clientRead(1, [ackOf(two)])
  return ledger
}

const kinds = (ledger: Ledger): ReadonlyArray<string> => {
  ledger.finish()
  return ledger.violations.map((violation) => violation.kind).filter((kind) => kind === "supersede-unheard")
}

describe("supersede-unheard", () => {
  it("an acknowledged supersede of a message B read on a connection that stayed live and read everything, with no control there, is reported", () => {
    const ledger = world((ledger) => {
      ledger.brokerWrote(2, [frameOf(two)])
      ledger.clientRead(2, [frameOf(two)])
    })
    expect(kinds(ledger)).toEqual(["supersede-unheard"])
    expect(ledger.violations.find((violation) => violation.kind === "supersede-unheard")?.message).toContain("#2")
  })

  it("the same supersede with its control read on that connection before the new message is not", () => {
    const ledger = world((ledger) => {
      ledger.brokerWrote(2, [supersedeControl, frameOf(two)])
      ledger.clientRead(2, [supersedeControl, frameOf(two)])
    })
    expect(kinds(ledger)).toEqual([])
  })

  it("the same supersede with no control read, when B's connection #2 closed before the end, is not", () => {
    const ledger = world(() => {})
    ledger.linkClosed(2)
    expect(kinds(ledger)).toEqual([])
  })
})
