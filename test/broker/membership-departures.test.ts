/**
 * A watcher that saw a session join always hears it leave, however the
 * session's changes fold together before the watcher's writer collects the
 * membership feed (MembershipFeed.ts: one entry per continuous presence,
 * `presentSince`). Real sockets: the session's changes arrive in one read
 * batch, so all of them are in the feed before the watcher collects.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { STATS_V1 } from "../../src/protocol/features.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { settled, writeThenRoundTrip } from "../support/barrier.ts"
import { assertDelivered } from "../support/assertions.ts"
import { list, membershipView, message, messageFor, registerFrame, send, withBroker } from "../support/broker.ts"
import type { WireClient } from "../support/wire.ts"

/** How many times a reader was held back by a full outbox, as a `stats-v1` session sees it. */
const backpressureWaits = (probe: WireClient) =>
  Effect.gen(function*() {
    yield* probe.send({ type: "stats", requestId: "waits" })
    return (yield* probe.next("stats_result")).stats.outbox.backpressureWaits
  })

/**
 * Fills `recipient`'s outbox while it does not read: `filler` sends it large
 * messages, one at a time, until the broker parks one (`probe` sees a reader
 * held back) rather than acknowledging it. From then on, until the recipient
 * reads again, its outbox is full and output queued for it is parked.
 */
const fillOutbox = (filler: WireClient, recipient: string, probe: WireClient) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      const big = message(`filler ${i}:`.padEnd(128 * 1024, "."))
      yield* filler.send({ type: "send", to: recipient, message: big })
      // Until the broker has read it: acknowledged, or parked.
      for (let polls = 0; polls < 100_000; polls++) {
        if (filler.received().some((f) => f.type === "delivered" && f.messageId === big.id)) break
        if ((yield* backpressureWaits(probe)) > 0) return
      }
    }
    assert.fail(`${recipient}'s outbox never filled`)
  })

describe("membership departures", () => {
  it.live("a known session taken over and gone before the watcher collects reaches it as session_left", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      yield* broker.session({ sessionId: "flapper" })
      yield* watcher.client.next("session_joined", (f) => f.session.id === "flapper")
      // Takeover (P16) and leave in one batch: the watcher collects both at once.
      const successor = yield* broker.connect("flapper-again")
      yield* writeThenRoundTrip(successor, [registerFrame({ sessionId: "flapper" }), { type: "unregister" }])
      yield* settled([], [watcher.client])
      assert.deepStrictEqual([...membershipView(watcher.client.received()).keys()], [])
      assert.deepStrictEqual((yield* list(watcher.client)).map((s) => s.id), ["watcher"])
    }))

  it.live("a known session that leaves, joins again and leaves again before the watcher collects reaches it as session_left", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const flapper = yield* broker.connect("flapper")
      yield* flapper.sendRaw(encodeFrames([JSON.stringify(registerFrame({ sessionId: "flapper" }))]))
      yield* watcher.client.next("session_joined", (f) => f.session.id === "flapper")
      // Leave, join again and leave again in one batch: the watcher collects all three at once.
      yield* writeThenRoundTrip(flapper, [{ type: "unregister" }, registerFrame({ sessionId: "flapper" }), { type: "unregister" }])
      yield* settled([], [watcher.client])
      assert.deepStrictEqual([...membershipView(watcher.client.received()).keys()], [])
      // The flapper registered twice on one connection: both registrations were taken.
      assert.strictEqual(flapper.received().filter((f) => f.type === "registered").length, 2)
    }))
})

// C-BRK-33: a client fails the asks waiting on a session when its `session_left` arrives, so a reply the
// session sent just before it left must come first — the writer collects departures after queued output.
/**
 * The replier answers the asker's question with `text` while the asker's outbox is full, in one batch
 * with its `unregister` and `then`: the answer is parked (the probe saw the replier's batch wait). The
 * asker is still paused.
 */
const parkedAnswer = (text: string, then: ReadonlyArray<Record<string, unknown>>) =>
  Effect.gen(function*() {
    const broker = yield* withBroker({ outboxCapacity: 2 })
    const asker = yield* broker.session({ sessionId: "asker" })
    const replier = yield* broker.session({ sessionId: "replier" })
    const filler = yield* broker.session({ sessionId: "filler" })
    const probe = yield* broker.session({ sessionId: "probe", frame: { features: [STATS_V1] } })
    yield* asker.client.next("session_joined", (f) => f.session.id === "probe")
    const question = message("still there?", { expectsReply: true })
    assertDelivered(yield* send(asker.client, "replier", question))
    yield* messageFor(replier.client, question.id)
    yield* asker.client.pause
    yield* fillOutbox(filler.client, "asker", probe.client)
    // The reply meets the full outbox and is parked; the unregister in the same batch is handled at once.
    const answer = message(text, { replyTo: question.id })
    yield* replier.client.sendRaw(encodeFrames([
      JSON.stringify({ type: "send", to: "asker", message: answer }),
      JSON.stringify({ type: "unregister" }),
      ...then.map((frame) => JSON.stringify(frame))
    ]))
    // Held back in its turn (a round trip on the replier could be read in the same batch, and parked too).
    for (let polls = 0; (yield* backpressureWaits(probe.client)) < 2; polls++) {
      if (polls >= 100_000) assert.fail("the reply was never parked")
    }
    return { asker: asker.client, replier: replier.client, answer }
  })

describe("a departure after a session's last messages", () => {
  it.live("a reply written with the replier's unregister reaches the asker before its session_left", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const asker = yield* broker.session({ sessionId: "asker" })
      const replier = yield* broker.session({ sessionId: "replier" })
      yield* asker.client.next("session_joined", (f) => f.session.id === "replier")
      const question = message("still there?", { expectsReply: true })
      assertDelivered(yield* send(asker.client, "replier", question))
      yield* messageFor(replier.client, question.id)
      const answer = message("yes, and leaving", { replyTo: question.id })
      yield* replier.client.sendRaw(encodeFrames([
        JSON.stringify({ type: "send", to: "asker", message: answer }),
        JSON.stringify({ type: "unregister" })
      ]))
      yield* asker.client.next("session_left", (f) => f.sessionId === "replier")
      const order = asker.client.received().flatMap((f) =>
        f.type === "message" ? [`message ${f.message.id}`] : f.type === "session_left" ? [`left ${f.sessionId}`] : []
      )
      assert.deepStrictEqual(order, [`message ${answer.id}`, "left replier"])
    }))

  it.live("a reply parked behind the asker's full outbox, sent with the replier's unregister, still comes before its session_left", () =>
    Effect.gen(function*() {
      const { answer, asker, replier } = yield* parkedAnswer("yes, and leaving", [])
      assert.strictEqual(replier.count("delivered"), 0, "the reply was not parked")
      yield* asker.resume
      yield* asker.next("session_left", (f) => f.sessionId === "replier", "10 seconds")
      const order = asker.received().flatMap((f) =>
        f.type === "message" && f.from.id === "replier"
          ? [`message ${f.message.id}`]
          : f.type === "session_left"
          ? [`left ${f.sessionId}`]
          : []
      )
      assert.deepStrictEqual(order, [`message ${answer.id}`, "left replier"])
    }))
})

// C-BRK-33 across a return: a sender that leaves and registers again before the recipient's writer collects
// has its old mail still queued there; its session_left and new join go after that mail, before its new mail.
describe("a departure and return after a session's last messages", () => {
  /** The watcher's frames from `from`, and its membership frames of `from`, in order. */
  const orderOf = (watcher: WireClient, from: string) =>
    watcher.received().flatMap((f) =>
      f.type === "message" && f.from.id === from
        ? [`message ${f.message.id}`]
        : f.type === "session_left" && f.sessionId === from
        ? ["left"]
        : f.type === "session_joined" && f.session.id === from
        ? ["joined"]
        : []
    )

  it.live("mail queued before the sender left and registered again reaches the watcher before its session_left, new mail after its join", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const flapper = yield* broker.connect("flapper")
      yield* flapper.sendRaw(encodeFrames([JSON.stringify(registerFrame({ sessionId: "flapper" }))]))
      yield* watcher.client.next("session_joined", (f) => f.session.id === "flapper")
      // One batch: both messages are queued for the watcher, and the feed holds the leave and the return,
      // before the watcher's writer collects.
      const before = message("sent before leaving")
      const after = message("sent after coming back")
      yield* flapper.sendRaw(encodeFrames([
        JSON.stringify({ type: "send", to: "watcher", message: before }),
        JSON.stringify({ type: "unregister" }),
        JSON.stringify(registerFrame({ sessionId: "flapper" })),
        JSON.stringify({ type: "send", to: "watcher", message: after })
      ]))
      yield* messageFor(watcher.client, after.id)
      assert.deepStrictEqual(orderOf(watcher.client, "flapper"), [
        "joined",
        `message ${before.id}`,
        "left",
        "joined",
        `message ${after.id}`
      ])
    }))

  it.live("with no new mail, the session_left and join come after the old mail", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const flapper = yield* broker.connect("flapper")
      yield* flapper.sendRaw(encodeFrames([JSON.stringify(registerFrame({ sessionId: "flapper" }))]))
      yield* watcher.client.next("session_joined", (f) => f.session.id === "flapper")
      const first = message("first")
      const second = message("second")
      yield* flapper.sendRaw(encodeFrames([
        JSON.stringify({ type: "send", to: "watcher", message: first }),
        JSON.stringify({ type: "send", to: "watcher", message: second }),
        JSON.stringify({ type: "unregister" }),
        JSON.stringify(registerFrame({ sessionId: "flapper" }))
      ]))
      yield* watcher.client.next("session_left", (f) => f.sessionId === "flapper")
      yield* watcher.client.next("session_joined", (f) =>
        f.session.id === "flapper" && watcher.client.received().some((g) => g.type === "session_left"))
      assert.deepStrictEqual(orderOf(watcher.client, "flapper"), [
        "joined",
        `message ${first.id}`,
        `message ${second.id}`,
        "left",
        "joined"
      ])
    }))
})

// The departure held for output parked behind backpressure is released when the session's connection
// registers as another session; each recipient of that output still hears the departure only after it.
describe("a departure released by a registration while the session's output is parked", () => {
  /** The asker's reads of the replier: its messages, and its membership frames, in order. */
  const orderOf = (asker: WireClient) =>
    asker.received().flatMap((f) =>
      f.type === "message" && f.from.id === "replier"
        ? [`message ${f.message.id}`]
        : f.type === "session_left" && f.sessionId === "replier"
        ? ["left"]
        : f.type === "session_joined" && f.session.id === "replier"
        ? ["joined"]
        : []
    )

  it.live("registered as another session in the same batch: the parked reply reaches the asker before the session_left", () =>
    Effect.gen(function*() {
      const { asker, answer } = yield* parkedAnswer("yes, and going on", [registerFrame({ sessionId: "replier-next" })])
      // The batch was handled (its output parked as it ended), the registration in it too; its answer waits too.
      yield* asker.resume
      yield* messageFor(asker, answer.id)
      yield* asker.next("session_left", (f) => f.sessionId === "replier", "10 seconds")
      assert.deepStrictEqual(orderOf(asker), ["joined", `message ${answer.id}`, "left"])
    }))
})
