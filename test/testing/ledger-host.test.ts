/**
 * The ledger's host checks on their own, fed by hand: a message a host's own
 * journal restores to a new generation (`Ledger.hostRestored`) against one a
 * host is handed again (`hostDelivered`). The sweeps run both; these pin each
 * branch of `hostRestored` alone.
 */
import { describe, expect, it } from "@effect/vitest"
import { Ledger } from "../../src/testing/Ledger.ts"
import type { Message } from "../../src/protocol/frames.ts"

const A = "sim-1-a"
const B = "sim-2-b"
const C = "sim-3-c"

const message: Message = { id: "m-0001", timestamp: 0, content: { text: "hello" } }

/** A ledger with three sessions, in which A's client has written a send of `message` to B. */
const ledgerWithSend = (): Ledger => {
  const ledger = new Ledger({ now: () => 0 })
  for (const [id, name] of [[A, "a"], [B, "b"], [C, "c"]] as const) ledger.addSession({ id, name, scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 0)
  ledger.clientWrote(1, [JSON.stringify({ type: "send", to: B, message })])
  return ledger
}

const kinds = (ledger: Ledger): ReadonlyArray<string> => ledger.violations.map((violation) => violation.kind)

describe("Ledger.hostRestored", () => {
  it("a message the host had is not a second hand-off when its journal restores it", () => {
    const ledger = ledgerWithSend()
    ledger.hostDelivered(B, A, message, "steer")
    ledger.hostRestored(B, A, message, "steer")
    expect(kinds(ledger)).toEqual([])
    expect(ledger.trace.some((line) => line.includes("restored by its host's journal"))).toBe(true)
  })

  it("the same message handed over a second time is a duplicate (the check the restore is exempt from)", () => {
    const ledger = ledgerWithSend()
    ledger.hostDelivered(B, A, message, "steer")
    ledger.hostDelivered(B, A, message, "steer")
    expect(kinds(ledger)).toEqual(["duplicate-delivery"])
  })

  it("a restore of a message no host had counts as its first hand-off", () => {
    const ledger = ledgerWithSend()
    ledger.hostRestored(B, A, message, "steer")
    expect(kinds(ledger)).toEqual([])
    // Counted: a later hand-off is then its second.
    ledger.hostDelivered(B, A, message, "steer")
    expect(kinds(ledger)).toEqual(["duplicate-delivery"])
  })

  it("a restore to a session the message was not for is misrouted", () => {
    const ledger = ledgerWithSend()
    ledger.hostDelivered(B, A, message, "steer")
    ledger.hostRestored(C, A, message, "steer")
    expect(kinds(ledger)).toEqual(["misrouted"])
  })
})
