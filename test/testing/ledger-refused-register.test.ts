/**
 * The ledger's view of who holds a session (`LinkRecord.brokerHolds`) after a `register` the broker
 * refuses — here `ifFree` (`reclaim-v1`) answered `registration_failed` "session held", what a
 * taken-over client's periodic reclaim gets while the taker lives. The ledger ends the other
 * connections' hold when the broker handles a `register` (`registrationsHandled`), before it knows
 * the answer; the refusal gives them their hold back (`brokerWriteStarted`, `endedAtRegister`), so a
 * later real takeover is still judged one. Found by review revh (H1): without the give-back the
 * takeover below is not seen and its late mail reads as a `fifo` violation.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const B = "sim-2-b"
const from = { id: A, cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
const first: Message = { id: "m-0001", timestamp: 0, content: { text: "one" } }
const second: Message = { id: "m-0002", timestamp: 0, content: { text: "two" } }
const sendOf = (message: Message) => JSON.stringify({ type: "send", to: B, message })
const delivered = (message: Message) => JSON.stringify({ type: "message", from, message })
const register = JSON.stringify({
  type: "register",
  sessionId: B,
  session: { cwd: "/", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
})
const registerIfFree = JSON.stringify({ ...JSON.parse(register), features: ["reclaim-v1"], ifFree: true })
const registered = JSON.stringify({ type: "registered", sessionId: B })
const held = JSON.stringify({ type: "registration_failed", reason: "session held", code: "session_held" })

/** ledger-order.test.ts's cut-write takeover, with (or without) a refused `ifFree` register of B between. */
const run = (refusedBetween: boolean): ReadonlyArray<string> => {
  const time = { now: 0 }
  const ledger = new Ledger({ now: () => time.now })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 0)
  ledger.linkOpened(2, B, "client-b", 0)
  ledger.linkOpened(3, B, "client-b", 0)
  brokerTook(ledger, 2, [register])
  ledger.clientRead(2, [registered])
  ledger.clientWrote(1, [sendOf(first), sendOf(second)])
  brokerTook(ledger, 1, [sendOf(first), sendOf(second)])
  ledger.brokerWriteCut(2, [delivered(first)], 2)
  if (refusedBetween) {
    ledger.linkOpened(4, B, "client-other", 0)
    brokerTook(ledger, 4, [registerIfFree])
    ledger.brokerWriteStarted(4, [held])
    ledger.brokerWrote(4, [held])
    ledger.clientRead(4, [held])
    ledger.brokerEnded(4)
  }
  time.now = 3
  brokerTook(ledger, 3, [register])
  time.now = 4
  ledger.clientRead(3, [registered])
  ledger.brokerWrote(3, [delivered(second), delivered(first)])
  ledger.clientRead(3, [delivered(second), delivered(first)])
  return ledger.violations.map((violation) => violation.kind)
}

describe("ledger: a refused register leaves the holder's hold", () => {
  it("without the refused register: takeover-late-write (control)", () => {
    expect(run(false)).toEqual(["takeover-late-write"])
  })

  it("a refused ifFree register between does not change the verdict: still takeover-late-write", () => {
    expect(run(true)).toEqual(["takeover-late-write"])
  })
})
