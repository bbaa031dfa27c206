/**
 * A cancelled copy kept for b's base instance leaves the mailbox silently —
 * released at b-9's registration (MailDelivery.releaseCopies), pushed out by
 * the mailbox's bounds, or expired — while the cancel TOLD a live reader
 * (f-1, another session: P49's other holder), handing m0 on to f-1's
 * connection, whose write never completes. The route names f-1's write, not
 * the copy's reader: dropping it (`routes.lost`) cleared the record's
 * withdrawal, and past the replay record's hour f-1's close gave m0 back as
 * live mail to c (review revbx BX3). MailDelivery.copyLeft drops the route
 * only when it names one of the copy's readers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls, type Seen } from "../support/controlWorld.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const HOUR = 3_600_000

/** How the rest copy, kept for b's base instance only, leaves the mailbox: `leave` does it, on the world's parts. */
interface Leaving {
  readonly options: BrokerCoreOptions
  readonly leave: (world: {
    readonly reg: (sessionId: string, frame: Readonly<Record<string, unknown>>) => Peer
    readonly send: (to: string, id: string) => void
    readonly clock: { now: number }
  }) => void
}

const scenario = ({ leave, options }: Leaving) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const { attach, batch, close, router } = yield* handRouter(options, () => clock.now)
    const written = new Map<Peer, Array<Seen>>()
    const stuck = new Set<Peer>()
    let nextId = 1
    const connect = (): Peer => {
      const frames: Array<Seen> = []
      const peer: Peer = attach({
        ...fakeConnection(nextId++, false),
        unfinishedWrite: () => (stuck.has(peer) ? 0 : undefined),
        write: (out: ReadonlyArray<OutFrame>) => {
          if (stuck.has(peer)) return Effect.never
          for (const frame of out) frames.push(JSON.parse(frameText(frame)))
          return undefined
        }
      })
      written.set(peer, frames)
      return peer
    }
    const framesOf = (peer: Peer): ReadonlyArray<Seen> => {
      peer.writer.flush()
      return written.get(peer) ?? []
    }
    const closeAbandoned = (peer: Peer): void => {
      closePeer(peer, "destroy")
      router.abandonWrites(peer)
      close(peer)
    }
    const reg = (sessionId: string, frame: Readonly<Record<string, unknown>>): Peer => {
      const peer = connect()
      batch(peer, [registerFrame({ sessionId, name: "B", cwd: "/tmp", frame })])
      return peer
    }
    const d = connect()
    batch(d, [registerFrame({ sessionId: "d" })])
    closeAbandoned(reg("c", {}))
    // b's base client (received-v1, no instanceId, nothing known of b) reads c's m0 and drops.
    const x = reg("b", { features: [RECEIVED_V1] })
    const m0 = message("m0")
    batch(d, [{ type: "send", to: "c", message: m0 }])
    assert.deepStrictEqual(messagesAndControls(framesOf(x)), [`message ${m0.id}`], "b's base client did not take m0")
    closeAbandoned(x)
    // f-1 reads it too and drops.
    const f1 = reg("f", { features: custodyFeatures, instanceId: "f-1" })
    assert.deepStrictEqual(messagesAndControls(framesOf(f1)), [`message ${m0.id}`], "f-1 did not take m0")
    // e holds the identity (registered while f-1 is live: it takes nothing), so f-1's return takes nothing
    // from the mailbox; f-1's writes then never complete.
    reg("e", {})
    closeAbandoned(f1)
    const f1b = reg("f", { features: custodyFeatures, instanceId: "f-1" })
    assert.deepStrictEqual(messagesAndControls(framesOf(f1b)), [], "f-1's return took m0: the test sets up nothing")
    stuck.add(f1b)
    batch(d, [{ type: "cancel_message", messageId: m0.id }])
    assert.strictEqual(router.stats().withdrawnCopiesHeld, 1, "no copy kept for b's base reader: the test sets up nothing")
    leave({ reg, send: (to, id) => batch(d, [{ type: "send", to, message: message(id) }]), clock })
    assert.strictEqual(router.stats().withdrawnCopiesHeld, 0, "the copy did not leave: the test sets up nothing")
    // Two hours on (past the replay record's hour), f-1's stuck connection closes, giving m0 back unwritten.
    clock.now += 2 * HOUR
    closeAbandoned(f1b)
    // c returns: the session m0 was sent to, which never read it.
    const c2 = reg("c", {})
    const seen = messagesAndControls(framesOf(c2))
    assert.isFalse(
      seen.includes(`message ${m0.id}`) && !seen.includes(`cancel ${m0.id}`),
      `m0, cancelled two hours ago (its sender answered cancelled), came back live to c: ${JSON.stringify(seen)}`
    )
  })

describe("a cancelled copy that leaves the mailbox keeps the route of a reader the cancel told", () => {
  it.effect("released at b-9's registration: m0, still unwritten to f-1, is not given live to c after the hour", () =>
    scenario({
      options: {},
      leave: ({ reg }) => {
        // b-9 registers b: b's base instance can never return, the rest copy goes (releaseCopies).
        reg("b", { features: custodyFeatures, instanceId: "b-9" })
      }
    }))

  it.effect("pushed out by the mailbox's bound: m0, still unwritten to f-1, is not given live to c after the hour", () =>
    scenario({
      options: { mailboxCapacity: 1 },
      // One more message for away c: the mailbox, bounded at one, pushes the oldest (the rest copy) out.
      leave: ({ send }) => send("c", "m1")
    }))

  it.effect("expired: m0, still unwritten to f-1, is not given live to c after the hour", () =>
    scenario({
      options: { mailboxRetention: "1 second" },
      // Past the mailbox's retention (still within the route's hour), a registration prunes the mailbox.
      leave: ({ clock, reg }) => {
        clock.now += 2_000
        reg("g", {})
      }
    }))
})
