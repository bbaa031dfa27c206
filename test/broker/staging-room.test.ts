/**
 * Replace staging against a full outbox, on a Router driven by hand (no
 * fibers): a message falling due while its recipient's outbox is full stays
 * staged, out of the deadline order, so the broker's staging fiber — which
 * sleeps until `nextDeadline()`, or on its queue when there is none
 * (Broker.ts) — does not spin on it; the recipient's writer taking its
 * outbox delivers it. A sender whose connection closes while its messages
 * wait so has its `session_left` held back from that recipient until they
 * went. The same over the in-memory network, with other readers,
 * replacement, the caps and leaving: backpressure.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Router } from "../../src/broker/Router.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { frameText } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const WINDOW_MS = 1_500

/** A Router on a clock the test moves, with a recipient whose writer is stuck and a sender granted `delivery-v1`. */
const setUp = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const { attach, batch, router } = yield* handRouter({ outboxCapacity: 2, replaceWindow: WINDOW_MS }, () => clock.now)
  const session = (id: number, sessionId: string, stuck: boolean, features: ReadonlyArray<string> = []): Peer => {
    const peer = attach(fakeConnection(id, stuck))
    batch(peer, [registerFrame({ sessionId, frame: { features: [...features] } })])
    return peer
  }
  const recipient = session(1, "recipient", true)
  const sender = session(2, "sender", false, [DELIVERY_V1])
  // The recipient's writer is busy with its first write for good: two messages fill its outbox.
  assert.isFalse(batch(sender, [
    { type: "send", to: "recipient", message: message("one") },
    { type: "send", to: "recipient", message: message("two") }
  ]))
  assert.strictEqual(recipient.outbox.length, 2)
  return { router, clock, batch, recipient, sender, session }
})

/** What a write holds, in order: `message <text>`, `left <id>`, `joined <id>`. */
const written = (router: Router, peer: Peer): Array<string> =>
  router.output.writes.takeForWrite(peer).frames.flatMap((frame) => {
    const parsed: { type: string; message?: { content: { text: string } }; sessionId?: string; session?: { id: string } } =
      JSON.parse(frameText(frame))
    if (parsed.type === "message") return [`message ${parsed.message?.content.text}`]
    if (parsed.type === "session_left") return [`left ${parsed.sessionId}`]
    if (parsed.type === "session_joined") return [`joined ${parsed.session?.id}`]
    return []
  })

/**
 * The recipient's writer takes its outbox once (it sees the sender join); `sender` stages `n` threads for it,
 * they fall due, two into its outbox and the rest waiting for room, and the sender's connection closes;
 * returns the staged messages' ids.
 */
const stageThenClose = (setup: Effect.Success<typeof setUp>, n: number): ReadonlyArray<string> => {
  const { batch, clock, recipient, router, sender } = setup
  assert.deepStrictEqual(written(router, recipient), ["joined sender", "message one", "message two"])
  const ids: Array<string> = []
  for (let i = 0; i < n; i++) {
    router.output.writes.takeForWrite(sender) // its own answers: its writer keeps up
    const staged = message(`due ${i}`)
    ids.push(staged.id)
    assert.isFalse(batch(sender, [
      { type: "send", to: "recipient", message: staged, delivery: "queue", queueMode: "replace", threadId: `t${i}` }
    ]))
  }
  clock.now += WINDOW_MS
  router.staging.flushDue(clock.now)
  assert.strictEqual(router.staging.waiting, n - 2)
  router.detach(sender, router.output.end.drainOnClose(sender))
  // Its connection closed: no batch of its to park them with; they still wait.
  assert.strictEqual(router.staging.waiting, n - 2)
  return ids
}

describe("a replace-staged message falling due into a full outbox", () => {
  it.effect("stays staged with no deadline left, however often the staging fiber would flush, and goes when its recipient's writer makes room", () =>
    Effect.gen(function*() {
      const { batch, clock, recipient, router, sender } = yield* setUp
      const staged = message("staged")
      assert.isFalse(batch(sender, [{ type: "send", to: "recipient", message: staged, delivery: "queue", queueMode: "replace", threadId: "t" }]))
      assert.strictEqual(router.staging.nextDeadline(), clock.now + WINDOW_MS)

      clock.now += WINDOW_MS
      // The staging fiber's loop: flush when the deadline is reached, else sleep; no deadline, wait on the queue.
      let flushes = 0
      for (let turn = 0; turn < 100; turn++) {
        const due = router.staging.nextDeadline()
        if (due === undefined || due > clock.now) break
        router.staging.flushDue(clock.now)
        flushes++
      }
      assert.strictEqual(flushes, 1, "the staging fiber flushed again and again: it spins on the blocked message")
      assert.isUndefined(router.staging.nextDeadline())
      assert.strictEqual(router.staging.size, 1, "the due message is no longer staged")
      assert.strictEqual(router.staging.waiting, 1)
      assert.strictEqual(recipient.outbox.length, 2, "the due message went into the full outbox")
      assert.strictEqual(recipient.parked.length + sender.parked.length, 0, "the due message was parked")

      // The recipient's writer takes its outbox: the due message is queued in the room it made.
      router.output.writes.takeForWrite(recipient)
      assert.strictEqual(router.staging.size, 0)
      assert.strictEqual(recipient.outbox.length, 1)
      const queued = recipient.outbox[0]
      assert.isTrue(typeof queued === "object" && "mail" in queued && queued.mail.message.id === staged.id)
    }))

  it.effect("whose sender's connection closes holds that sender's session_left back from the recipient until the last of them is queued", () =>
    Effect.gen(function*() {
      const setup = yield* setUp
      const { recipient, router } = setup
      stageThenClose(setup, 4)
      // The departure is in the feed, but this recipient's writer passes over it while two messages still wait.
      assert.deepStrictEqual(written(router, recipient), ["message due 0", "message due 1"])
      assert.strictEqual(router.staging.waiting, 0)
      // C-BRK-33: after the last of them.
      assert.deepStrictEqual(written(router, recipient), ["message due 2", "message due 3", "left sender"])
      assert.deepStrictEqual(written(router, recipient), [])
    }))

  it.effect("whose sender comes back while they wait: the recipient hears it join again (as at a takeover), and no session_left ahead of them", () =>
    Effect.gen(function*() {
      const setup = yield* setUp
      const { recipient, router, session } = setup
      stageThenClose(setup, 6)
      const seen = written(router, recipient) // passes over the departure; two of the four still wait
      assert.strictEqual(router.staging.waiting, 2)
      session(3, "sender", false, [DELIVERY_V1])
      for (let i = 0; i < 3; i++) seen.push(...written(router, recipient))
      // The return is written while two messages still wait: it stands for the departure, which is not written.
      assert.deepStrictEqual(seen, [
        ...Array.from({ length: 2 }, (_, i) => `message due ${i}`),
        "joined sender",
        ...Array.from({ length: 4 }, (_, i) => `message due ${i + 2}`)
      ])
    }))

  it.effect("whose sender comes back and withdraws them, then closes again before its return is written: the recipient hears it leave once, after what was queued", () =>
    Effect.gen(function*() {
      const setup = yield* setUp
      const { batch, recipient, router, session } = setup
      const ids = stageThenClose(setup, 6)
      const seen = written(router, recipient) // passes over the departure; two of the four still wait
      assert.strictEqual(router.staging.waiting, 2)
      const back = session(3, "sender", false, [DELIVERY_V1])
      router.output.writes.takeForWrite(back)
      // The last hold goes while the sender is back, before the recipient's writer wrote its return.
      batch(back, ids.slice(4).map((messageId) => ({ type: "cancel_message", messageId })))
      assert.strictEqual(router.staging.waiting, 0)
      router.detach(back, router.output.end.drainOnClose(back))
      for (let i = 0; i < 3; i++) seen.push(...written(router, recipient))
      assert.deepStrictEqual(seen, [...Array.from({ length: 4 }, (_, i) => `message due ${i}`), "left sender"])
      assert.isUndefined(recipient.withheldDepartures) // settled: nothing left behind
    }))

  it.effect("the held-back departure stays held when the feed drops it while the recipient lags (owed, not written early)", () =>
    Effect.gen(function*() {
      const setup = yield* setUp
      const { recipient, router, session } = setup
      stageThenClose(setup, 4)
      // Past the feed's bound of departed entries, while the recipient lags: the sender's departure is dropped
      // from the feed and owed to the recipient (Membership.compact).
      for (let i = 0; i < 1_100; i++) {
        const peer = session(10 + i, `passer-${i}`, false)
        router.detach(peer, router.output.end.drainOnClose(peer))
      }
      router.membership.notify()
      assert.deepStrictEqual(written(router, recipient), ["message due 0", "message due 1"])
      assert.deepStrictEqual(written(router, recipient), ["message due 2", "message due 3", "left sender"])
    }))
})
