/**
 * The ledger's `control-to-other-instance` check on its own, fed by hand
 * (ledger/instances.ts): a control read by a client that took its session
 * over from the client that read the message is a violation (also while the
 * broker has not handled the old client's `unregister`), and so is one read
 * by another client registered after the holder departed; the nearby
 * legitimate cases are not — a client that registered with no live session
 * of its id and may be any earlier instance (nothing known of its id since
 * the broker started, or a base client after a base holder that may be any),
 * a client among the id's last four instances returning with its
 * `instanceId`, the client that read the message itself, and a
 * cancel of an ask given to the same client instance unread, at its rejoin
 * (commit 3dd5f19). And the path count beside it (ledger/controls.ts,
 * `heldCancelsRefused`): a cancel written after a takeover, refused once
 * the old connection confirmed the message and ended (review revb D1).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const B = "sim-2-b"
const from = { id: A, cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
const session = { cwd: "/", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const registered = JSON.stringify({ type: "registered", sessionId: B })
/** B's `register`, with `rejoin-v1` and the client's instance id when `rejoinAs` names one. */
const register = (rejoinAs?: string) =>
  JSON.stringify({
    type: "register",
    sessionId: B,
    session,
    ...(rejoinAs === undefined ? {} : { features: ["rejoin-v1"], instanceId: rejoinAs })
  })

/** A's message to B, `one` a plain send, or an ask. */
const messageOf = (ask: boolean): Message => ({
  id: "m-0001",
  timestamp: 0,
  content: { text: "one" },
  ...(ask ? { expectsReply: true } : {})
})
const delivered = (message: Message) => JSON.stringify({ type: "message", from, message })
const control = (message: Message, action: "cancel" | "supersede") =>
  JSON.stringify({ type: "message_control", from, control: { messageId: message.id, action, timestamp: 0 } })

/**
 * A sends B `message` (acknowledged); B's client `client-b` is registered on link #2 (with `rejoin-v1` when
 * `rejoin`), which is written the message, and reads it when `read`.
 */
const world = (message: Message, options: { readonly read: boolean; readonly rejoin?: boolean }) => {
  const ledger = new Ledger({ now: () => 0 })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 0)
  ledger.linkOpened(2, B, "client-b", 0)
  brokerTook(ledger, 2, [register(options.rejoin === true ? "client-b" : undefined)])
  ledger.clientRead(2, [registered])
  const send = JSON.stringify({ type: "send", to: B, message })
  ledger.clientWrote(1, [send])
  brokerTook(ledger, 1, [send])
  ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: message.id, delivery: "socket_delivered" })])
  ledger.brokerWriteStarted(2, [delivered(message)])
  ledger.brokerWrote(2, [delivered(message)])
  if (options.read) ledger.clientRead(2, [delivered(message)])
  return ledger
}

/** Client `client` of B opens link `id` and registers while the earlier links are still live to the broker. */
const registers = (ledger: Ledger, id: number, client: string, rejoinAs?: string) => {
  ledger.linkOpened(id, B, client, 0)
  brokerTook(ledger, id, [register(rejoinAs)])
  ledger.clientRead(id, [registered])
}

/** The `control-to-other-instance` violations once the ledger finished. */
const found = (ledger: Ledger) => {
  ledger.finish()
  return ledger.violations.filter((violation) => violation.kind === "control-to-other-instance").map((violation) => violation.kind)
}

describe("Ledger: control-to-other-instance", () => {
  it("a control read by a client that took the session over from the one that read the message is a violation", () => {
    const one = messageOf(false)
    for (const action of ["cancel", "supersede"] as const) {
      const ledger = world(one, { read: true })
      registers(ledger, 3, "client-b2")
      ledger.clientRead(3, [control(one, action)])
      expect(found(ledger)).toEqual(["control-to-other-instance"])
    }
  })

  it("a client whose unregister the broker has not handled yet still holds the session: a control to the client that took over is a violation", () => {
    const one = messageOf(false)
    const ledger = world(one, { read: true })
    ledger.clientWrote(2, [JSON.stringify({ type: "unregister" })])
    registers(ledger, 3, "client-b2")
    ledger.clientRead(3, [control(one, "cancel")])
    expect(found(ledger)).toEqual(["control-to-other-instance"])
  })

  /**
   * B's client-b registers with `rejoin-v1` on link #2 and is written A's `one` there, but reads nothing
   * (`registered` included) before client-b2 takes the session over on #3 and reads a cancel of `one`;
   * with `unregistering`, client-b wrote `unregister` first, which the broker has not handled.
   */
  const takenOverUnread = (unregistering: boolean) => {
    const one = messageOf(false)
    const ledger = new Ledger({ now: () => 0 })
    ledger.addSession({ id: A, name: "a", scopeId: undefined })
    ledger.addSession({ id: B, name: "b", scopeId: undefined })
    ledger.linkOpened(1, A, "client-a", 0)
    ledger.linkOpened(2, B, "client-b", 0)
    brokerTook(ledger, 2, [register("client-b")])
    const send = JSON.stringify({ type: "send", to: B, message: one })
    ledger.clientWrote(1, [send])
    brokerTook(ledger, 1, [send])
    ledger.brokerWriteStarted(2, [registered, delivered(one)])
    ledger.brokerWrote(2, [registered, delivered(one)])
    if (unregistering) ledger.clientWrote(2, [JSON.stringify({ type: "unregister" })])
    registers(ledger, 3, "client-b2", "client-b2")
    ledger.clientRead(3, [control(one, "cancel")])
    return found(ledger)
  }

  it("a client that took the session over before the old client read `registered` is a new instance: a control of mail given to the old one is a violation", () => {
    expect(takenOverUnread(false)).toEqual(["control-to-other-instance"])
  })

  it("so is one that took it over after the old client wrote `unregister`, before it read `registered`, the broker not having handled it", () => {
    expect(takenOverUnread(true)).toEqual(["control-to-other-instance"])
  })

  it("a registration the broker refused never held the session: a client registering next with nothing known of its id may be any instance", () => {
    const one = messageOf(false)
    const ledger = new Ledger({ now: () => 0 })
    ledger.addSession({ id: A, name: "a", scopeId: undefined })
    ledger.addSession({ id: B, name: "b", scopeId: undefined })
    ledger.linkOpened(1, A, "client-a", 0)
    ledger.linkOpened(2, B, "client-b", 0)
    brokerTook(ledger, 2, [register("client-b")])
    const refusal = JSON.stringify({ type: "registration_failed", reason: "refused" })
    ledger.brokerWriteStarted(2, [refusal])
    ledger.brokerWrote(2, [refusal])
    const send = JSON.stringify({ type: "send", to: B, message: one })
    ledger.clientWrote(1, [send])
    brokerTook(ledger, 1, [send])
    registers(ledger, 3, "client-b2", "client-b2")
    ledger.clientRead(3, [control(one, "cancel")])
    expect(found(ledger)).toEqual([])
  })

  it("a control read by a client that registered after the broker handled the last one's unregister (any instance) is no violation", () => {
    const one = messageOf(false)
    const ledger = world(one, { read: true })
    const unregister = JSON.stringify({ type: "unregister" })
    ledger.clientWrote(2, [unregister])
    brokerTook(ledger, 2, [unregister])
    registers(ledger, 3, "client-b2")
    ledger.clientRead(3, [control(one, "cancel")])
    expect(found(ledger)).toEqual([])
  })

  it("a control read by a client that registered with no live session of its id (any instance) is no violation", () => {
    const one = messageOf(false)
    const ledger = world(one, { read: true })
    ledger.brokerEnded(2)
    ledger.linkClosed(2)
    registers(ledger, 3, "client-b2")
    ledger.clientRead(3, [control(one, "cancel")])
    expect(found(ledger)).toEqual([])
  })

  it("a control read by the client that read the message, on its next connection, is no violation", () => {
    const one = messageOf(false)
    const ledger = world(one, { read: true })
    registers(ledger, 3, "client-b")
    ledger.clientRead(3, [control(one, "cancel")])
    expect(found(ledger)).toEqual([])
  })

  it("a cancel of an ask given unread to a taken-over session's new instance, read at that instance's rejoin, is no violation", () => {
    const ask = messageOf(true)
    // client-b2 takes the session over (a new instance) and is given the ask on link #3, unread; it rejoins on #4.
    const ledger = world(ask, { read: true })
    registers(ledger, 3, "client-b2", "client-b2")
    ledger.brokerWriteStarted(3, [delivered(ask)])
    ledger.brokerWrote(3, [delivered(ask)])
    registers(ledger, 4, "client-b2", "client-b2")
    ledger.clientRead(4, [control(ask, "cancel")])
    expect(found(ledger)).toEqual([])
  })

  /** The world with B's client registered with `rejoin-v1` as `client-b`, then its connection ended to the broker. */
  const departedWorld = (message: Message) => {
    const ledger = world(message, { read: true, rejoin: true })
    ledger.brokerEnded(2)
    ledger.linkClosed(2)
    return ledger
  }

  it("a control read by another client that registered after the holder departed (an instance the broker knows of its id) is a violation", () => {
    const one = messageOf(false)
    for (const rejoinAs of ["client-b2", undefined]) {
      const ledger = departedWorld(one)
      registers(ledger, 3, "client-b2", rejoinAs)
      ledger.clientRead(3, [control(one, "cancel")])
      expect(found(ledger)).toEqual(["control-to-other-instance"])
    }
  })

  it("a control read after the holder departed by a client the broker knows among its id's last four instances, returning with its instanceId, is no violation", () => {
    const one = messageOf(false)
    const ledger = departedWorld(one)
    // Three other clients hold the id in turn and leave: client-b is still among the last four.
    for (const [link, client] of [[3, "client-c"], [4, "client-d"], [5, "client-e"]] as const) {
      registers(ledger, link, client, client)
      ledger.brokerEnded(link)
      ledger.linkClosed(link)
    }
    registers(ledger, 6, "client-b", "client-b")
    ledger.clientRead(6, [control(one, "cancel")])
    expect(found(ledger)).toEqual([])
  })

  it("a control read by another client that registered after a broker restart (nothing known of its id since: any instance) is no violation", () => {
    const one = messageOf(false)
    const ledger = departedWorld(one)
    ledger.linkOpened(3, B, "client-b2", 1)
    brokerTook(ledger, 3, [register("client-b2")])
    ledger.clientRead(3, [registered])
    ledger.clientRead(3, [control(one, "cancel")])
    expect(found(ledger)).toEqual([])
  })

  it("a connection that registers again after its own unregister holds the session again: a control to another client that took it over is a violation", () => {
    const one = messageOf(false)
    const ledger = world(one, { read: true })
    const unregister = JSON.stringify({ type: "unregister" })
    ledger.clientWrote(2, [unregister])
    brokerTook(ledger, 2, [unregister])
    ledger.clientWrote(2, [register()])
    brokerTook(ledger, 2, [register()])
    ledger.clientRead(2, [registered])
    registers(ledger, 3, "client-b2")
    ledger.clientRead(3, [control(one, "cancel")])
    expect(found(ledger)).toEqual(["control-to-other-instance"])
  })

  it("a cancel of an ask given unread to another instance, read by a client that took the session over, is a violation", () => {
    const ask = messageOf(true)
    // The ask was given to client-b2's instance on #3; client-b3 then takes over and is sent its cancel.
    const ledger = world(ask, { read: true })
    registers(ledger, 3, "client-b2", "client-b2")
    ledger.brokerWriteStarted(3, [delivered(ask)])
    ledger.brokerWrote(3, [delivered(ask)])
    registers(ledger, 4, "client-b3", "client-b3")
    ledger.clientRead(4, [control(ask, "cancel")])
    expect(found(ledger)).toEqual(["control-to-other-instance"])
  })
})

describe("Ledger: the count of cancels a custody hold put off and the old client's confirmation refused (D1)", () => {
  /**
   * B's client-b read `one` on link #2; client-b2 takes the session over on #3 at `takeoverAt`; A writes a
   * cancel of `one` at `cancelAt`; the broker reads #2's confirmation when `confirmed`, then sees #2 end;
   * A reads the refusal ("cannot be cancelled"). Returns the tally's count.
   */
  const count = (options: { readonly takeoverAt: number; readonly cancelAt: number; readonly confirmed: boolean }) => {
    let now = 0
    const one = messageOf(false)
    const ledger = new Ledger({ now: () => now })
    ledger.addSession({ id: A, name: "a", scopeId: undefined })
    ledger.addSession({ id: B, name: "b", scopeId: undefined })
    ledger.linkOpened(1, A, "client-a", 0)
    ledger.linkOpened(2, B, "client-b", 0)
    brokerTook(ledger, 2, [register()])
    ledger.clientRead(2, [registered])
    const send = JSON.stringify({ type: "send", to: B, message: one })
    ledger.clientWrote(1, [send])
    brokerTook(ledger, 1, [send])
    ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: one.id, delivery: "socket_delivered" })])
    ledger.brokerWriteStarted(2, [delivered(one)])
    ledger.brokerWrote(2, [delivered(one)])
    ledger.clientRead(2, [delivered(one)])
    const cancel = JSON.stringify({ type: "cancel_message", messageId: one.id })
    const steps: Array<readonly [number, () => void]> = [
      [options.takeoverAt, () => registers(ledger, 3, "client-b2")],
      [options.cancelAt, () => {
        ledger.clientWrote(1, [cancel])
        brokerTook(ledger, 1, [cancel])
      }]
    ]
    for (const [at, step] of steps.sort((x, y) => x[0] - y[0])) {
      now = at
      step()
    }
    now = 100
    if (options.confirmed) brokerTook(ledger, 2, [JSON.stringify({ type: "received", frames: 2 })])
    ledger.brokerEnded(2)
    ledger.linkClosed(2)
    ledger.clientRead(1, [JSON.stringify({ type: "delivery_failed", messageId: one.id, reason: "Message cannot be cancelled by this session" })])
    return ledger.finish().heldCancelsRefused
  }

  it("a cancel written after the takeover, refused once the old connection confirmed the message and ended, is counted", () => {
    expect(count({ takeoverAt: 10, cancelAt: 20, confirmed: true })).toBe(1)
  })

  it("not one written before the takeover, nor one whose message the old connection never confirmed", () => {
    expect(count({ takeoverAt: 20, cancelAt: 10, confirmed: true })).toBe(0)
    expect(count({ takeoverAt: 10, cancelAt: 20, confirmed: false })).toBe(0)
  })
})
