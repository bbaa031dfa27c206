/**
 * The ledger's host checks on their own, fed by hand: a message a host's own
 * journal restores to a new generation (`Ledger.hostRestored`) against one a
 * host is handed again (`hostDelivered`), and whose hand-off of a passive
 * message `passive-woke-model` judges. The sweeps run both; these pin each
 * branch alone. And how a second hand-off of a copy the broker re-sent
 * unconfirmed is named: `duplicate-delivery` when the client that read the
 * first copy read it again (its repeat filter should have dropped it),
 * `unconfirmed-redelivery` (known issue 6) when a new process read it — also
 * one that resumed the same client instance (`Ledger.clientResumed`, seed 12
 * of `--reader-return --client-timings`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Ledger } from "../../src/testing/Ledger.ts"
import { BaseClientIntent } from "../../src/testing/ledger/delivery.ts"
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

describe("Ledger.hostDelivered of a passive message", () => {
  const passive: Message = { id: "m-0002", timestamp: 0, content: { text: "fyi" } }

  /** A ledger in which A's client has written a passive send of `passive` to B. */
  const ledgerWithPassive = (): Ledger => {
    const ledger = ledgerWithSend()
    ledger.clientWrote(1, [JSON.stringify({ type: "send", to: B, message: passive, delivery: "passive" })])
    return ledger
  }

  it("handed to a delivery-v1 host with any intent but passive, it would wake the model", () => {
    const ledger = ledgerWithPassive()
    ledger.hostDelivered(B, A, passive, "trigger")
    expect(kinds(ledger)).toEqual(["passive-woke-model"])
  })

  it("handed over as passive, it is not", () => {
    const ledger = ledgerWithPassive()
    ledger.hostDelivered(B, A, passive, "passive")
    expect(kinds(ledger)).toEqual([])
  })

  // Seed 8236 `--held-return --unregister --delivery`: the broker never tells a base client the mode.
  it("read by a base client's connection (a held return's own, a hostile session's), it is not judged", () => {
    for (const intent of [BaseClientIntent.ownConnection, BaseClientIntent.hostile]) {
      const ledger = ledgerWithPassive()
      ledger.hostDelivered(B, A, passive, intent)
      expect(kinds(ledger)).toEqual([])
    }
  })
})

describe("Ledger.hostDelivered of a copy re-sent after its connection closed unconfirmed", () => {
  const deliveredFrame = JSON.stringify({
    type: "message",
    from: { id: A, cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 },
    message
  })

  /**
   * A's send of `message` to B is written to B's link #2 and read there, its host handed it; link #2 ends
   * before the broker read any confirmation, B's client `client-b` dials link #3 — after a new process
   * resumed that client instance when `resumed` — and the broker writes the message again, which is read.
   */
  const resentTo = (resumed: boolean): Ledger => {
    const ledger = ledgerWithSend()
    ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: message.id, delivery: "socket_delivered" })])
    ledger.linkOpened(2, B, "client-b", 0)
    ledger.brokerWriteStarted(2, [deliveredFrame])
    ledger.brokerWrote(2, [deliveredFrame])
    ledger.clientRead(2, [deliveredFrame])
    ledger.hostDelivered(B, A, message, "steer")
    ledger.brokerEnded(2)
    ledger.linkClosed(2)
    if (resumed) ledger.clientResumed("client-b")
    ledger.linkOpened(3, B, "client-b", 0)
    ledger.brokerWriteStarted(3, [deliveredFrame])
    ledger.brokerWrote(3, [deliveredFrame])
    ledger.clientRead(3, [deliveredFrame])
    ledger.hostDelivered(B, A, message, "steer")
    return ledger
  }

  it("handed again by the client that read the first copy (a reconnect), it is a duplicate", () => {
    const ledger = resentTo(false)
    expect(ledger.trace.some((line) => line.includes("m1 re-sent to b"))).toBe(true)
    expect(kinds(ledger)).toEqual(["duplicate-delivery"])
  })

  it("handed again by a new process that resumed the same client instance, it is unconfirmed-redelivery", () => {
    const ledger = resentTo(true)
    expect(ledger.trace.some((line) => line.includes("m1 re-sent to b"))).toBe(true)
    expect(kinds(ledger)).toEqual(["unconfirmed-redelivery"])
  })
})
