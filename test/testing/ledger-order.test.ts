/**
 * The ledger's order check on its own, fed by hand: a message that was in a
 * write to a connection its receiver then replaced, cut before the transport
 * took it, and reached the receiver's new connection after newer mail is
 * `takeover-late-write` (known issue 22, the broker's documented trade-off)
 * when the old connection's or the new one's `register` went without
 * `rejoin-v1`; with it on both sides, and the same reorder without that
 * cause, it is `fifo`. The old connection holds the session from the
 * broker's handling of its `register`, not from its client's read of
 * `registered`: a takeover before that read (or after an `unregister` its
 * client wrote before it, unhandled) is one too.
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
/** B's `register` asking for `rejoin-v1` (with its instance id, as `IntercomClient` writes it). */
const registerWithRejoin = JSON.stringify({
  ...JSON.parse(register),
  features: ["exact-send-v1", "rejoin-v1"],
  instanceId: "client-b"
})
const registered = JSON.stringify({ type: "registered", sessionId: B })

/**
 * A sends `one` then `two` to B; the broker's write of `one` on B's link #2
 * began at `cutWriteAt` and was cut; B registers again on link #3 at 3 (a
 * takeover), where `two` and then `one` arrive. `oldEnds`: when the broker
 * saw link #2 end, if it did before B read `registered` — before it read the
 * new `register` (then it was no takeover), or after (the takeover ended it).
 */
const run = (
  cutWriteAt: number | undefined,
  oldEnds?: "beforeRegister" | "afterRegister",
  rejoin: { readonly old: boolean; readonly new: boolean } = { old: false, new: false },
  oldClient: OldClient = "readRegistered"
): ReadonlyArray<string> => violationsOf(cutWriteAt, oldEnds, rejoin, oldClient).map((violation) => violation.kind)

/**
 * What the old connection's client did before the takeover: read `registered`; read nothing yet; or
 * wrote `unregister` before it read `registered` (the broker has not handled it).
 */
type OldClient = "readRegistered" | "readNothing" | "unregisteredUnread"

/** `run`'s violations, with their messages. */
const violationsOf = (
  cutWriteAt: number | undefined,
  oldEnds: "beforeRegister" | "afterRegister" | undefined,
  rejoin: { readonly old: boolean; readonly new: boolean },
  oldClient: OldClient = "readRegistered"
) => {
  const time = { now: 0 }
  const ledger = new Ledger({ now: () => time.now })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 0)
  ledger.linkOpened(2, B, "client-b", 0)
  ledger.linkOpened(3, B, "client-b", 0)
  brokerTook(ledger, 2, [rejoin.old ? registerWithRejoin : register])
  if (oldClient === "readRegistered") ledger.clientRead(2, [registered])
  if (oldClient === "unregisteredUnread") ledger.clientWrote(2, [JSON.stringify({ type: "unregister" })])
  ledger.clientWrote(1, [sendOf(first), sendOf(second)])
  brokerTook(ledger, 1, [sendOf(first), sendOf(second)])
  if (cutWriteAt !== undefined) ledger.brokerWriteCut(2, [delivered(first)], cutWriteAt)
  time.now = 3
  if (oldEnds === "beforeRegister") ledger.brokerEnded(2)
  brokerTook(ledger, 3, [rejoin.new ? registerWithRejoin : register])
  if (oldEnds === "afterRegister") ledger.brokerEnded(2)
  time.now = 4
  ledger.clientRead(3, [registered])
  ledger.brokerWrote(3, [delivered(second), delivered(first)])
  ledger.clientRead(3, [delivered(second), delivered(first)])
  return ledger.violations
}

describe("Ledger: order across a takeover", () => {
  it("a message cut from the replaced connection's write, begun before the takeover, is takeover-late-write", () => {
    expect(run(2)).toEqual(["takeover-late-write"])
  })

  it("a write begun on the old connection after the broker read the takeover's registration is no excuse: fifo", () => {
    expect(run(3.5)).toEqual(["fifo"])
  })

  it("the takeover ended the old connection before B read `registered` (seed 2257, --unregister --delivery): still takeover-late-write", () => {
    expect(run(2, "afterRegister")).toEqual(["takeover-late-write"])
  })

  it("the broker saw the old connection end before it read the new `register` (no takeover): fifo", () => {
    expect(run(2, "beforeRegister")).toEqual(["fifo"])
  })

  it("the same reorder with no cut write is fifo", () => {
    expect(run(undefined)).toEqual(["fifo"])
  })

  it("with rejoin-v1 in both registrations it is fifo, saying the late write came although both had it", () => {
    const violations = violationsOf(2, undefined, { old: true, new: true })
    expect(violations.map((violation) => violation.kind)).toEqual(["fifo"])
    expect(violations[0]?.message).toContain("although both registrations had rejoin-v1")
  })

  it("a takeover before the old connection's client read `registered` is one too: takeover-late-write", () => {
    expect(run(2, undefined, undefined, "readNothing")).toEqual(["takeover-late-write"])
  })

  it("so is one after that client wrote `unregister`, before it read `registered`, which the broker has not handled", () => {
    expect(run(2, undefined, undefined, "unregisteredUnread")).toEqual(["takeover-late-write"])
  })

  it("with rejoin-v1 in only one of the two registrations it is takeover-late-write (either side without it)", () => {
    expect(run(2, undefined, { old: true, new: false })).toEqual(["takeover-late-write"])
    expect(run(2, undefined, { old: false, new: true })).toEqual(["takeover-late-write"])
  })
})
