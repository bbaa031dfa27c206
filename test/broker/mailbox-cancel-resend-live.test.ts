/**
 * A resend of a cancelled message's id, made after its replay record went,
 * delivered live and given back unconfirmed, replaces the old cancelled copy
 * in the mailbox, and the copy's note goes with it (`requeueForwarded` takes
 * it, as `queue` does for a resend queued at once: review revi I4). Found by
 * review revl (L5): the note stayed, so the resend was taken for the
 * cancelled copy — the departed target's return got nothing, and the old
 * reader's return the resend with a cancel nobody sent for it.
 *
 * P49 setup: c departs; b-1 (sole holder of c's identity) reads m0 and
 * drops; d cancels it (kept for b-1); two hours on (the replay record
 * gone), e, a custody client of the same identity, is the sole live holder
 * and takes d's resend of m0, then drops unconfirmed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { custodyFeatures, type Seen } from "../support/controlWorld.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const HOUR = 3_600_000
const named = { name: "B", cwd: "/tmp" }

const probeWorld = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const { attach, batch, close, router } = yield* handRouter({}, () => clock.now)
  const written = new Map<Peer, Array<Seen>>()
  let nextId = 1
  const join = (sessionId: string, instanceId: string | undefined, features: ReadonlyArray<string>): Peer => {
    const frames: Array<Seen> = []
    const peer = attach({
      ...fakeConnection(nextId++, false),
      unfinishedWrite: () => undefined,
      write: (out: ReadonlyArray<OutFrame>) => {
        for (const frame of out) frames.push(JSON.parse(frameText(frame)))
        return undefined
      }
    })
    written.set(peer, frames)
    const frame = instanceId === undefined ? { features } : { features, instanceId }
    batch(peer, [registerFrame({ sessionId, session: sessionId === "d" ? {} : named, frame })])
    return peer
  }
  const framesOf = (peer: Peer): ReadonlyArray<Seen> => {
    peer.writer.flush()
    return written.get(peer) ?? []
  }
  const drop = (peer: Peer): void => {
    closePeer(peer, "destroy")
    router.abandonWrites(peer)
    close(peer)
  }
  const shown = (peer: Peer): ReadonlyArray<string> =>
    framesOf(peer).flatMap((f) =>
      f.type === "message" ? [`message ${f.message?.id}`] : f.type === "message_control" ? [`${f.control?.action} ${f.control?.messageId}`] : []
    )
  const d = join("d", undefined, [])
  const c = join("c", undefined, [])
  drop(c)
  const b1 = join("b", "b-1", custodyFeatures)
  const m0 = message("m0")
  batch(d, [{ type: "send", to: "c", message: m0 }])
  assert.deepStrictEqual(shown(b1), [`message ${m0.id}`], "b-1 did not take c's mail: the test sets up nothing")
  drop(b1)
  batch(d, [{ type: "cancel_message", messageId: m0.id }])
  clock.now += 2 * HOUR
  router.prune(clock.now)
  const e = join("e", "e-1", custodyFeatures)
  batch(d, [{ type: "send", to: "c", message: m0 }])
  assert.deepStrictEqual(shown(e), [`message ${m0.id}`], "e did not take the resend: the test sets up nothing")
  assert.strictEqual(e.custody?.size, 1, "the resend is not in e's custody: the test sets up nothing")
  drop(e)
  return { join, shown, m0 }
})

describe("a resend delivered live, given back over a kept cancelled copy of the same id", () => {
  it.effect("the departed target's return gets the resend", () =>
    Effect.gen(function*() {
      const { join, shown, m0 } = yield* probeWorld
      const back = join("c", undefined, [])
      assert.deepStrictEqual(shown(back), [`message ${m0.id}`])
    }))

  it.effect("the old reader's return is sent no cancel for the resend", () =>
    Effect.gen(function*() {
      const { join, shown, m0 } = yield* probeWorld
      const again = join("b", "b-1", custodyFeatures)
      assert.notInclude(shown(again), `cancel ${m0.id}`)
    }))
})
