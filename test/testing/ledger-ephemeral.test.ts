/**
 * The ledger's rule for a one-shot sender (`ephemeral-v1`; ledger/fates.ts,
 * ledger/departure.ts), fed by hand: a message the broker's mailbox dropped
 * after a short-lived registration of its sender ended by `unregister`
 * (the one it was sent in, or a later one: the broker then owes no notice,
 * docs/protocol.md, `ephemeral-v1`) is counted as `senderEnded`, not an
 * `untold-eviction`, even though the sender starts again under the same id
 * at the end (as the simulation's finish does). A sender whose connections
 * merely ended, that did not register short-lived, or whose `unregister` the
 * broker read before the message, is still owed the notice; so is one whose
 * end the broker that crashed took with it, when its successor restored the
 * message (durable: the successor owes it) — not when none did (the broker
 * that knew the end dropped it).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { EPHEMERAL_V1 } from "../../src/protocol/features.ts"
import { Ledger, type MessageTally } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const D = "sim-4-d"
const A = "sim-1-a"
const session = (pid: number) => ({ cwd: "/", model: "m", pid, startedAt: 0, lastActivity: 0 })
const mail: Message = { id: "m-0001", timestamp: 0, content: { text: "for the absent a" } }
const sendOf = JSON.stringify({ type: "send", to: A, message: mail })
const queued = JSON.stringify({ type: "delivered", messageId: mail.id, delivery: "queued" })
const registerOf = (ephemeral: boolean) =>
  JSON.stringify({
    type: "register",
    sessionId: D,
    session: session(4),
    ...(ephemeral ? { ephemeral: true, features: [EPHEMERAL_V1] } : {})
  })
const registered = JSON.stringify({ type: "registered", sessionId: D })
const unregister = JSON.stringify({ type: "unregister" })

/** What D does, in order, from a first registration on link #1 (short-lived if `ephemeral`). */
type Step =
  /** Sends the mail to the absent A; the broker queues it. */
  | "send"
  /** Ends its registration by `unregister` (the connection stays open). */
  | "unregister"
  /** Its connection ends; a new one (not registered yet) is opened. */
  | "drop"
  /** Registers again on its current connection. */
  | "register"
  /** The broker crashes (durable: the next one restores the mail); D connects to the next. */
  | "crash"
  /** The broker, whose mailbox dropped the mail already, crashes: the next one finds none; D connects to it. */
  | "crashAfterDrop"

/**
 * D runs `steps`; the finish then starts D again under its id on a new
 * connection; the broker's replay record says the mail was evicted, and D
 * was never told. Returns the violations' kinds and the tally.
 */
const run = (ephemeral: boolean, steps: ReadonlyArray<Step>): { readonly kinds: ReadonlyArray<string>; readonly tally: MessageTally } => {
  const ledger = new Ledger({ now: () => 0, durable: steps.includes("crash") || steps.includes("crashAfterDrop") })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: D, name: "d", scopeId: undefined, ephemeral })
  let link = 1
  let epoch = 0
  const register = () => {
    ledger.clientWrote(link, [registerOf(ephemeral)])
    brokerTook(ledger, link, [registerOf(ephemeral)])
    ledger.clientRead(link, [registered])
  }
  const reconnect = () => {
    ledger.brokerEnded(link)
    ledger.linkClosed(link)
    link++
    ledger.linkOpened(link, D, `client-d${link}`, epoch)
  }
  ledger.linkOpened(link, D, "client-d1", epoch)
  register()
  for (const step of steps) {
    if (step === "send") {
      ledger.clientWrote(link, [sendOf])
      brokerTook(ledger, link, [sendOf])
      ledger.clientRead(link, [queued])
    } else if (step === "unregister") {
      ledger.clientWrote(link, [unregister])
      brokerTook(ledger, link, [unregister])
    } else if (step === "register") {
      register()
    } else if (step === "drop") {
      reconnect()
    } else {
      ledger.brokerCrashed(epoch)
      epoch++
      ledger.brokerRestored(epoch, step === "crash" ? [mail.id] : [])
      reconnect()
    }
  }
  reconnect()
  register()
  for (const entry of ledger.unexplained()) ledger.recordSaid(entry.message.id, "E_DELIVERY_EVICTED")
  const tally = ledger.finish()
  return { kinds: ledger.violations.map((violation) => violation.kind), tally }
}

describe("Ledger: mail dropped after its one-shot sender ended (ephemeral-v1)", () => {
  it("a short-lived sender that ended by unregister is owed no notice: counted senderEnded, no violation", () => {
    const { kinds, tally } = run(true, ["send", "unregister"])
    expect(kinds).toEqual([])
    expect(tally.senderEnded).toBe(1)
  })

  it("a short-lived sender whose connection dropped (no unregister) is owed the notice: untold-eviction", () => {
    const { kinds, tally } = run(true, ["send", "drop"])
    expect(kinds).toEqual(["untold-eviction"])
    expect(tally.senderEnded).toBe(0)
  })

  it("a sender that did not register short-lived is owed the notice after its unregister: untold-eviction", () => {
    const { kinds, tally } = run(false, ["send", "unregister"])
    expect(kinds).toEqual(["untold-eviction"])
    expect(tally.senderEnded).toBe(0)
  })

  it("sent before a drop, then a short-lived return ended by unregister: no notice owed (its id is ended), senderEnded", () => {
    const { kinds, tally } = run(true, ["send", "drop", "register", "unregister"])
    expect(kinds).toEqual([])
    expect(tally.senderEnded).toBe(1)
  })

  it("sent before a drop, then a return that dropped too: the notice is owed, untold-eviction", () => {
    const { kinds, tally } = run(true, ["send", "drop", "register", "drop"])
    expect(kinds).toEqual(["untold-eviction"])
    expect(tally.senderEnded).toBe(0)
  })

  it("an unregister before the broker read the mail excuses nothing: untold-eviction", () => {
    const { kinds, tally } = run(true, ["unregister", "register", "send", "drop"])
    expect(kinds).toEqual(["untold-eviction"])
    expect(tally.senderEnded).toBe(0)
  })

  it("durable: ended on the broker that then crashed, its successor owes the notice: crash-lost-notice", () => {
    const { kinds, tally } = run(true, ["send", "unregister", "crash"])
    expect(kinds).toEqual(["crash-lost-notice"])
    expect(tally.senderEnded).toBe(0)
  })

  it("durable: ended on a broker that dropped the mail and then crashed (no successor found it): no notice owed, senderEnded", () => {
    const { kinds, tally } = run(true, ["send", "unregister", "crashAfterDrop"])
    expect(kinds).toEqual([])
    expect(tally.senderEnded).toBe(1)
  })

  it("durable: ended by unregister on the successor that restored the mail: no notice owed, senderEnded", () => {
    const { kinds, tally } = run(true, ["send", "crash", "register", "unregister"])
    expect(kinds).toEqual([])
    expect(tally.senderEnded).toBe(1)
  })
})
