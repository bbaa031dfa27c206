/**
 * The ledger's fate of a message read by a process of its receiver's client
 * instance that a new process then resumed (`Ledger.clientResumed`), fed by
 * hand (ledger/fates.ts, `readByEndedProcess`). As in
 * `--reader-return --host-refusals` seed 7022: B's first process reads
 * `one` and, its journal's checkpoint still running, never hands it on (so
 * never confirms it); A supersedes `one` with `two`, acknowledged; B
 * unregisters and a new process of the same instance registers and is
 * handed `two`. The broker, given `one` back unconfirmed, does not queue it
 * again (docs/protocol.md: a message its sender superseded, given back
 * unconfirmed, is not queued again): `one` is withdrawn, not a silent loss.
 * Without the supersede the new process is owed `one`, and never getting it
 * stays a silent loss.
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
const other: Message = { id: "m-0003", timestamp: 0, content: { text: "other" } }
const sendOf = (message: Message) => JSON.stringify({ type: "send", to: B, message })
const ackOf = (message: Message) => JSON.stringify({ type: "delivered", messageId: message.id, delivery: "socket_delivered" })
const frameOf = (message: Message) => JSON.stringify({ type: "message", from, message })
const register = JSON.stringify({
  type: "register",
  sessionId: B,
  session: { cwd: "/", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
})
const registered = JSON.stringify({ type: "registered", sessionId: B })

/**
 * A sends B `one`, acknowledged, which B's first process reads on link #2
 * and never hands on; then A sends `next` (`two` superseding `one`, or an
 * unrelated message), acknowledged at 100 ms; at 200 ms B's link #2 ends
 * (its unregister), a new process resumes B's client instance on link #3
 * and is handed `next`, not `one`.
 */
const world = (next: Message) => {
  let now = 0
  const ledger = new Ledger({ now: () => now })
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
  ledger.clientWrote(1, [sendOf(next)])
  brokerTook(ledger, 1, [sendOf(next)])
  now = 100
  ledger.clientRead(1, [ackOf(next)])
  now = 200
  ledger.brokerEnded(2)
  ledger.linkClosed(2)
  ledger.clientResumed("client-b")
  ledger.linkOpened(3, B, "client-b", 0)
  brokerTook(ledger, 3, [register])
  ledger.brokerWrote(3, [registered, frameOf(next)])
  ledger.clientRead(3, [registered, frameOf(next)])
  ledger.hostDelivered(B, A, next, "trigger")
  return ledger
}

const losses = (ledger: Ledger): ReadonlyArray<string> =>
  ledger.violations.filter((violation) => violation.kind === "silent-loss").map((violation) => violation.message)

describe("a message read by a process its client instance's next process replaced", () => {
  it("superseded (acknowledged) before that process's connection ended, it is withdrawn, not a silent loss", () => {
    const ledger = world(two)
    const tally = ledger.finish()
    expect(losses(ledger)).toEqual([])
    expect(tally.withdrawn).toBe(1)
    expect(tally.delivered).toBe(1)
  })

  it("not withdrawn, the new process never given it, it is still a silent loss", () => {
    const ledger = world(other)
    const tally = ledger.finish()
    expect(losses(ledger)).toHaveLength(1)
    expect(losses(ledger)[0]).toContain("(send a → b)")
    expect(tally.withdrawn).toBe(0)
  })
})
