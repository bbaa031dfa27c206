/**
 * Review revba BA3 (probe): a cancel owed to the client instance that read
 * its message is dropped when that message comes back at a takeover by
 * another instance and goes nowhere. b-1 was written m1 and never confirmed
 * it; its connection dropped, m1 went back to the mailbox marked read by
 * b-1; d cancelled m1, so the mailbox kept it as a cancelled copy for b-1
 * (WithdrawnCopies.ts). b-1 returned on a connection whose socket takes
 * nothing: m1 again and the cancel right behind it are stuck there when
 * b-2 takes the session over. m1 comes back withdrawn and not given to b-2:
 * MailReturns.requeueForwarded → `dropWithdrawn`, whose comment says "when
 * a client read it, the control stays, owed to that client" — but the
 * control is then dropped. Here both are in the stuck write, so the old
 * close gives them back (MailReturns.giveBack → keepAlone: `returned.has(m1)`
 * → skipped, "its fate is the mailbox's", which it is not with b-2 live);
 * in the return's own parked list instead (a full outbox), OutputEnd.handOne drops it on the same
 * ground (`forwarded.get(m1) === false`). b-1 showed m1 and is never told
 * it was withdrawn; d was answered for the cancel. FAILS on main
 * (f4e05966) and on its parent (not made by ctlclose, but its docs call
 * that drop the "ask that is over" case only).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ControlFrame } from "../src/broker/ControlFrame.ts"
import { isMessage } from "../src/broker/OutboundItems.ts"
import type { Peer } from "../src/broker/Peer.ts"
import { closePeer } from "../src/broker/RouterContext.ts"
import { frameText, type OutFrame } from "../src/protocol/framing.ts"
import { message, registerFrame } from "./support/broker.ts"
import { custodyFeatures, type Seen } from "./support/controlWorld.ts"
import { fakeConnection } from "./support/fakeConnection.ts"
import { handRouter } from "./support/handRouter.ts"

const HOUR = 3_600_000

/**
 * The scenario, with b-1's return's outbox holding `outboxCapacity` frames: 4, m1's copy and its cancel in the
 * stuck write (the old close's giveBack → keepAlone decides the cancel); 1, both in the return's own parked list
 * (the takeover's OutputEnd.handOverParked → handOne decides it, the code ctlclose changed).
 */
const scenario = (outboxCapacity: number) =>
  Effect.gen(function*() {
    const { attach, batch, close, router, tryDrain } = yield* handRouter({ mailboxRetention: HOUR, outboxCapacity }, () => 1_000_000)
    const written = new Map<Peer, Array<Seen>>()
    let nextId = 1
    const connect = (stuck: boolean): Peer => {
      const frames: Array<Seen> = []
      const peer = attach({
        ...fakeConnection(nextId++, false),
        unfinishedWrite: () => (stuck ? 0 : undefined),
        write: (out: ReadonlyArray<OutFrame>) => {
          if (stuck) return Effect.never
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
    const seenOf = (peer: Peer): ReadonlyArray<string> =>
      framesOf(peer).flatMap((f) =>
        f.type === "message" ? [`message ${f.message?.id}`] : f.type === "message_control" ? [`${f.control?.action} ${f.control?.messageId}`] : []
      )
    const registerB = (instanceId: string, stuck = false): Peer => {
      const peer = connect(stuck)
      batch(peer, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId } })])
      return peer
    }
    const closeAbandoned = (peer: Peer): void => {
      closePeer(peer, "destroy")
      router.abandonWrites(peer)
      close(peer)
    }
    const b1 = registerB("b-1")
    const d = connect(false)
    batch(d, [registerFrame({ sessionId: "d" })])
    const m1 = message("m1")
    batch(d, [{ type: "send", to: "b", message: m1 }])
    assert.include(seenOf(b1), `message ${m1.id}`, "m1 was not written to b-1: the test sets up nothing")
    assert.strictEqual(b1.custody?.size, 1, "m1 is not in b-1's custody: the test sets up nothing")
    closeAbandoned(b1)
    batch(d, [{ type: "cancel_message", messageId: m1.id }])
    // b-1 returns on a connection whose socket takes nothing.
    const back = registerB("b-1", true)
    const stuckHere = [...(back.writer.inFlight?.returnable ?? []), ...back.outbox, ...back.parked.map(([, item]) => item)].flatMap((item) =>
      item instanceof ControlFrame ? [`control ${item.messageId}`] : isMessage(item) ? [`message ${item.mail.message.id}`] : []
    )
    assert.deepStrictEqual(stuckHere, [`message ${m1.id}`, `control ${m1.id}`], "m1's copy and its cancel are not stuck on b-1's return: the test sets up nothing")
    const b2 = registerB("b-2")
    closeAbandoned(back)
    assert.notInclude(seenOf(b2), `cancel ${m1.id}`, "b-2, which never had m1, got its cancel")
    assert.notInclude(seenOf(b2), `message ${m1.id}`, "b-2 got the withdrawn m1")
    batch(b2, [{ type: "unregister" }])
    closeAbandoned(b2)
    const again = registerB("b-1")
    for (let n = 0; n < 20; n++) {
      framesOf(again)
      if (!tryDrain(again)) break
    }
    const seen = seenOf(again).filter((c) => c.endsWith(m1.id))
    assert.include(seen, `cancel ${m1.id}`, `b-1 read m1 and was never told of its cancel (its next return saw ${JSON.stringify(seen)})`)
    assert.strictEqual(seen.filter((c) => c === `cancel ${m1.id}`).length, 1, "b-1 was told of the cancel twice")
  })

describe("revba BA3: a cancelled copy's cancel stuck on b-1's return at a takeover by another instance", () => {
  it.effect("in the return's stuck write (the old close: giveBack → keepAlone): b-1's next return gets the cancel once, b-2 none", () =>
    scenario(4))

  it.effect("in the return's own parked list (the hand-over: handOne): b-1's next return gets the cancel once, b-2 none", () =>
    scenario(1))
})
