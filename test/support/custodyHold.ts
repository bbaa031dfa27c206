/**
 * The setup of the takeover custody hold tests (CustodyHold.ts; simulation
 * seed 81): a `received-v1` recipient `b` whose old connection wrote `d`'s
 * `m0` and `m1` and whose client never confirmed them, taken over by another
 * instance on a Router driven by hand (handRouter.ts). Shared by
 * takeover-custody-order.test.ts, custody-hold-stats.test.ts and
 * custody-hold-return.test.ts.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { RECEIVED_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "./broker.ts"
import { fakeConnection } from "./fakeConnection.ts"
import { handRouter } from "./handRouter.ts"

/** The message texts among `frames`, in order. */
export const textsOf = (frames: ReadonlyArray<OutFrame>): Array<string> =>
  frames.flatMap((frame) => {
    const parsed: { type: string; message?: { content: { text: string } } } = JSON.parse(frameText(frame))
    return parsed.type === "message" ? [`${parsed.message?.content.text}`] : []
  })

/**
 * A connection whose writes complete at once, noting the message texts it
 * writes into `written` — until `stuck()` says otherwise: from then on a
 * write never completes (its frames count as taken by the socket).
 */
export const noting = (id: number, written: Array<string>, stuck: () => boolean = () => false): Connection => ({
  ...fakeConnection(id, false),
  write: (frames: ReadonlyArray<OutFrame>) => {
    written.push(...textsOf(frames))
    return stuck() ? Effect.never : undefined
  }
})

/** The features `b`'s instances ask for: custody, their own rejoin, and takeovers. */
export const features = [RECEIVED_V1, REJOIN_V1, TAKEOVER_V1]

/**
 * A recipient `b` (`received-v1`) on a connection noting what it writes in
 * `writtenOld`, and senders `d` and `e`; `d`'s `m0` and `m1` are written to
 * `b` and never confirmed. `takeOver` registers `b` again from another
 * instance; `closeOld` runs the old connection's close as `finish` does;
 * `offer` is a sender's drainer offering its next parked item.
 */
export const setUp = (options: { readonly stuckOld?: () => boolean } = {}) =>
  Effect.gen(function*() {
    const { attach, batch, closeAbandoning: close, router } = yield* handRouter({})
    const register = (peer: Peer, instanceId: string): Peer => {
      batch(peer, [registerFrame({ sessionId: "b", frame: { features, instanceId } })])
      return peer
    }
    const writtenOld: Array<string> = []
    const old = register(attach(noting(1, writtenOld, options.stuckOld)), "b-1")
    const sender = attach(fakeConnection(2, false))
    batch(sender, [registerFrame({ sessionId: "d" })])
    const other = attach(fakeConnection(4, false))
    batch(other, [registerFrame({ sessionId: "e" })])
    const send = (from: Peer, text: string): boolean => batch(from, [{ type: "send", to: "b", message: message(text) }])
    // Written to the old connection; its client (dead, unseen) never confirms them.
    for (const text of ["m0", "m1"]) assert.isFalse(send(sender, text))
    assert.deepStrictEqual(writtenOld, ["m0", "m1"], "the old connection did not write the older mail: the test sets up nothing")
    const writtenNew: Array<string> = []
    /** Another instance registers `b`, on a connection noting what it writes in `written`. */
    const takeOverAs = (id: number, instanceId: string, written: Array<string>): Peer =>
      register(attach(noting(id, written)), instanceId)
    const takeOver = (): Peer => takeOverAs(3, "b-2", writtenNew)
    /**
     * b is taken over, then that connection closes: b is away, the sender's m2 goes to the mailbox, and b
     * registers anew, getting m2 in its mailbox flush. The new connection and what it writes.
     */
    const awayThenAnew = (): { readonly later: Peer; readonly writtenLater: Array<string> } => {
      close(takeOver())
      assert.isFalse(send(sender, "m2"), "m2 did not go to the mailbox: the test sets up nothing")
      const writtenLater: Array<string> = []
      return { later: takeOverAs(5, "b-3", writtenLater), writtenLater }
    }
    const closeOld = (): void => close(old)
    const offer = (from: Peer): Effect.Effect<void> =>
      Effect.suspend(() => {
        const next = router.output.drain.nextParked(from)
        return next === undefined ? Effect.void : Effect.asVoid(router.output.drain.offerParked(from, next))
      })
    /** What `fresh` has queued and its writer (idle in a Router driven by hand) has not run: written into `written` now. */
    const flushNew = (fresh: Peer, written: Array<string> = writtenNew): void => {
      written.push(...textsOf(router.output.writes.takeForWrite(fresh).frames))
    }
    return { attach, awayThenAnew, batch, close, closeOld, flushNew, offer, old, other, register, router, send, sender, takeOver, takeOverAs, writtenNew, writtenOld }
  })

