/**
 * The ledger's fate for a message written to a connection of its receiver
 * that died with it unread, when the broker crashes before the receiver
 * comes back (ledger/fates.ts, `custodyCrashed`). A receiver granted
 * `received-v1` has the broker keep that mail for its next connection, but
 * in memory mode that custody is in memory (docs/protocol.md): it covers the
 * connection's death, not the broker's, so the message is lost to a crash,
 * not a `lost-in-flight` violation under `--strict` (`--workflow-bus
 * --strict` seed 63116; `--parked-flush --unregister --delivery --durability
 * memory --strict` seed 63420, whose broker crashed before the connection
 * ended). A base client's, one whose receiver came back to
 * that broker before the crash, and any in durable mode stay lost in flight.
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
const message = JSON.stringify({ type: "message", from, message: one })
const register = JSON.stringify({
  type: "register",
  sessionId: B,
  session: { cwd: "/", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
})

/** `registered` for B, granting `received-v1` or not (a base client). */
const registered = (custody: boolean) =>
  JSON.stringify({ type: "registered", sessionId: B, ...(custody ? { features: ["received-v1"] } : {}) })

/**
 * Under `--strict`, on broker incarnation 1: A sends B `one` (acknowledged),
 * written to B's link #2, whose client dropped it unread (both sides saw it end).
 */
const diedUnread = (options: { readonly custody: boolean; readonly durable?: boolean }) => {
  let now = 0
  const ledger = new Ledger({ now: () => now, strictInFlight: true, durable: options.durable ?? false })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 1)
  ledger.linkOpened(2, B, "client-b", 1)
  brokerTook(ledger, 2, [register])
  ledger.clientRead(2, [registered(options.custody)])
  ledger.clientWrote(1, [send])
  brokerTook(ledger, 1, [send])
  ledger.clientRead(1, [acked])
  ledger.brokerWrote(2, [message])
  now = 5
  ledger.linkClosed(2)
  ledger.brokerEnded(2)
  return {
    ledger,
    at: (t: number) => {
      now = t
    }
  }
}

/** B registers on link `id` to broker incarnation `epoch` (the broker reads it, B's client reads `registered`). */
const backOn = (ledger: Ledger, id: number, epoch: number, custody: boolean) => {
  ledger.linkOpened(id, B, "client-b", epoch)
  brokerTook(ledger, id, [register])
  ledger.clientRead(id, [registered(custody)])
}

/** Broker incarnation 1 crashes (A's link goes with it) and B comes back on link #4 to incarnation 2. */
const crashThenBack = (ledger: Ledger, custody: boolean) => {
  ledger.brokerCrashed(1)
  ledger.linkClosed(1)
  backOn(ledger, 4, 2, custody)
}

const kinds = (ledger: Ledger) => ledger.violations.map((violation) => violation.kind)

describe("Ledger: a custody copy lost with its memory-mode broker (--strict)", () => {
  it("B granted received-v1, the broker crashed before B came back: lost to a crash, not lost-in-flight (seed 63116)", () => {
    const { at, ledger } = diedUnread({ custody: true })
    at(10)
    crashThenBack(ledger, true)
    const tally = ledger.finish()
    expect(kinds(ledger)).toEqual([])
    expect(tally.lostToCrash).toBe(1)
    expect(tally.lostInFlight).toBe(0)
  })

  // The shrunk workload of `--parked-flush --unregister --delivery --durability memory --strict` seed 63420:
  // the broker crashed while B's connection still held the message, and B's client dropped it only later.
  it("B granted received-v1, the broker crashed while B's connection held it unread and that connection ended after: lost to a crash (seed 63420)", () => {
    let now = 0
    const ledger = new Ledger({ now: () => now, strictInFlight: true, durable: false })
    ledger.addSession({ id: A, name: "a", scopeId: undefined })
    ledger.addSession({ id: B, name: "b", scopeId: undefined })
    ledger.linkOpened(1, A, "client-a", 1)
    ledger.linkOpened(2, B, "client-b", 1)
    brokerTook(ledger, 2, [register])
    ledger.clientRead(2, [registered(true)])
    ledger.clientWrote(1, [send])
    brokerTook(ledger, 1, [send])
    ledger.clientRead(1, [acked])
    ledger.brokerWrote(2, [message])
    now = 5
    ledger.brokerCrashed(1)
    now = 2005
    ledger.linkClosed(1)
    ledger.linkClosed(2)
    now = 2010
    backOn(ledger, 4, 2, true)
    const tally = ledger.finish()
    expect(kinds(ledger)).toEqual([])
    expect(tally.lostToCrash).toBe(1)
    expect(tally.lostInFlight).toBe(0)
  })

  it("B granted received-v1 came back to the same broker before it crashed: lost-in-flight (that broker owed it the copy)", () => {
    const { at, ledger } = diedUnread({ custody: true })
    at(7)
    backOn(ledger, 3, 1, true)
    at(10)
    ledger.linkClosed(3)
    crashThenBack(ledger, true)
    const tally = ledger.finish()
    expect(kinds(ledger)).toEqual(["lost-in-flight"])
    expect(tally.lostToCrash).toBe(0)
  })

  it("B a base client (no received-v1): lost-in-flight, crash or not (nothing kept its copy)", () => {
    const { at, ledger } = diedUnread({ custody: false })
    at(10)
    crashThenBack(ledger, false)
    const tally = ledger.finish()
    expect(kinds(ledger)).toEqual(["lost-in-flight"])
    expect(tally.lostToCrash).toBe(0)
  })

  it("durable mode: lost-in-flight (the store kept the custody for B's next connection)", () => {
    const { at, ledger } = diedUnread({ custody: true, durable: true })
    at(10)
    crashThenBack(ledger, true)
    const tally = ledger.finish()
    expect(kinds(ledger)).toEqual(["lost-in-flight"])
    expect(tally.lostToCrash).toBe(0)
  })

  it("no crash: lost-in-flight (the broker kept the copy for B's next connection)", () => {
    const { at, ledger } = diedUnread({ custody: true })
    at(10)
    backOn(ledger, 3, 1, true)
    const tally = ledger.finish()
    expect(kinds(ledger)).toEqual(["lost-in-flight"])
    expect(tally.lostToCrash).toBe(0)
  })
})
