/**
 * The ledger's `control-never-reached-reader` check on its own, fed by hand
 * (ledger/instances.ts): A's cancel of `one`, acknowledged after B's client
 * read `one` on connection #2 and that connection ended, is reported when
 * the same client comes back as the same instance (a `rejoin-v1` register
 * with its `instanceId`) after the acknowledgement, on connection #3 live
 * to the end with everything read, and no control about `one` reached it —
 * the cancelled copy (WithdrawnCopies.ts) or the kept control
 * (KeptControls.ts) lost. Not when the control reached it, nor when the
 * return is another instance (a new client), nor when the broker restarted
 * in between (these are memory only), nor when the return registered before
 * the acknowledgement.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const B = "sim-2-b"
const from = { id: A, cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
const one: Message = { id: "m-0001", timestamp: 0, content: { text: "one" } }
const sendOf = (message: Message) => JSON.stringify({ type: "send", to: B, message })
const ackOf = (message: Message) => JSON.stringify({ type: "delivered", messageId: message.id, delivery: "socket_delivered" })
const frameOf = (message: Message) => JSON.stringify({ type: "message", from, message })
const cancelOf = (message: Message) => JSON.stringify({ type: "cancel_message", messageId: message.id })
const cancelAck = (message: Message) => JSON.stringify({ type: "delivered", messageId: message.id })
const cancelControl = JSON.stringify({
  type: "message_control",
  from,
  control: { messageId: one.id, action: "cancel", timestamp: 0 }
})
const registerAs = (instanceId: string) =>
  JSON.stringify({
    type: "register",
    sessionId: B,
    session: { cwd: "/", model: "m", pid: 2, startedAt: 0, lastActivity: 0 },
    features: ["rejoin-v1"],
    instanceId
  })
const registerA = JSON.stringify({
  type: "register",
  sessionId: A,
  session: { cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
})
const registered = (id: string) => JSON.stringify({ type: "registered", sessionId: id })

interface Return {
  /** The client that comes back (B's first is `client-b`). */
  readonly client: string
  readonly instanceId: string
  /** The broker incarnation it registers to (the first is 1). */
  readonly epoch: number
  /** Whether it registers before A's cancel is acknowledged. */
  readonly early: boolean
  /** What the broker writes it after `registered`, all read. */
  readonly after: ReadonlyArray<string>
}

/**
 * B's client `client-b` (instance `i-1`) reads `one` on link #2, which ends; A cancels `one`, answered
 * `delivered`; B comes back on link #3 as `back` says, live to the end.
 */
const world = (back: Return): Ledger => {
  let now = 0
  const ledger = new Ledger({ now: () => now })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 1)
  brokerTook(ledger, 1, [registerA])
  ledger.brokerWrote(1, [registered(A)])
  ledger.clientRead(1, [registered(A)])
  ledger.linkOpened(2, B, "client-b", 1)
  brokerTook(ledger, 2, [registerAs("i-1")])
  ledger.brokerWrote(2, [registered(B)])
  ledger.clientRead(2, [registered(B)])
  ledger.clientWrote(1, [sendOf(one)])
  brokerTook(ledger, 1, [sendOf(one)])
  ledger.brokerWrote(1, [ackOf(one)])
  ledger.clientRead(1, [ackOf(one)])
  ledger.brokerWrote(2, [frameOf(one)])
  ledger.clientRead(2, [frameOf(one)])
  now = 100
  ledger.linkClosed(2)
  ledger.brokerEnded(2)
  const comeBack = (): void => {
    ledger.linkOpened(3, B, back.client, back.epoch)
    brokerTook(ledger, 3, [registerAs(back.instanceId)])
    ledger.brokerWrote(3, [registered(B), ...back.after])
    ledger.clientRead(3, [registered(B), ...back.after])
  }
  now = 200
  if (back.early) comeBack()
  now = 300
  ledger.clientWrote(1, [cancelOf(one)])
  brokerTook(ledger, 1, [cancelOf(one)])
  ledger.brokerWrote(1, [cancelAck(one)])
  ledger.clientRead(1, [cancelAck(one)])
  now = 400
  if (!back.early) comeBack()
  return ledger
}

const kinds = (ledger: Ledger): ReadonlyArray<string> => {
  ledger.finish()
  return ledger.violations.map((violation) => violation.kind).filter((kind) => kind === "control-never-reached-reader")
}

const same: Return = { client: "client-b", instanceId: "i-1", epoch: 1, early: false, after: [] }

describe("control-never-reached-reader", () => {
  it("the instance that read a message, back after its cancel was acknowledged and live to the end, told nothing, is reported", () => {
    const ledger = world(same)
    expect(kinds(ledger)).toEqual(["control-never-reached-reader"])
    expect(ledger.violations.find((violation) => violation.kind === "control-never-reached-reader")?.message).toContain("#3")
  })

  it("the same return given the message again and the cancel behind it (a cancelled copy) is not", () => {
    expect(kinds(world({ ...same, after: [frameOf(one), cancelControl] }))).toEqual([])
  })

  it("the same return given the cancel alone (a kept control) is not", () => {
    expect(kinds(world({ ...same, after: [cancelControl] }))).toEqual([])
  })

  it("a new client of the session (another instance) told nothing is not", () => {
    expect(kinds(world({ ...same, client: "client-b2", instanceId: "i-2" }))).toEqual([])
  })

  it("the same client back as the same instance but to a restarted broker is not", () => {
    expect(kinds(world({ ...same, epoch: 2 }))).toEqual([])
  })

  it("the same instance back before the cancel was acknowledged is not judged", () => {
    expect(kinds(world({ ...same, early: true }))).toEqual([])
  })
})
