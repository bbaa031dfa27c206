/**
 * A sender's withheld return (WithheldDepartures.ts; rbq): the replier
 * sends a reply to the asker and unregisters while that output waits behind
 * a watcher that does not read, then registers again elsewhere. The asker
 * must get the old reply before it hears the replier leave (C-BRK-33,
 * C-ASK-9), and no mail of a later incarnation before the old reply. These
 * cover the variants a review of the first version found open: a second
 * return while the first is withheld, a return after the old connection
 * registered as another session, and the asker taken over meanwhile; and
 * (held-return seeds 183, 284) the recipient's connection closing while it
 * withholds the return: its mail goes back to the mailbox oldest first; and
 * the recipient's session unregistering instead (its connection open),
 * received-v1 and base.
 *
 * Runs on the in-memory network under TestClock: every step runs until the
 * world is idle, so what the asker got after a round trip is final.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { encodeFrames } from "../../src/protocol/index.ts"
import { message, messageFor, registerFrame } from "../support/broker.ts"
import { withMemoryBroker } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"

/** Sends `n` messages of `bytes` text from `from` to `to` in one write. */
const burst = (from: WireClient, to: string, n: number, bytes: number, tag: string) =>
  Effect.gen(function*() {
    const msgs = Array.from({ length: n }, (_, i) =>
      message(`${tag}:${i}:`.padEnd(bytes, "."), { senderSequence: i + 1 }))
    yield* from.sendRaw(encodeFrames(msgs.map((msg) => JSON.stringify({ type: "send", to, message: msg }))))
    return msgs
  })

/** Waits for `n` messages from `fromId`. */
const takeMessages = (client: WireClient, fromId: string, n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < n; i++) yield* client.next("message", (f) => f.from.id === fromId, "10 seconds")
  })

/** The replier's messages (by id), departures and joins, in the order `client` got them. */
const replierOrder = (client: WireClient) =>
  client.received().flatMap((f) =>
    f.type === "message" && f.from.id === "replier"
      ? [`message:${String(f.message.id)}`]
      : f.type === "session_left" && f.sessionId === "replier"
      ? ["left"]
      : f.type === "session_joined" && f.session.id === "replier"
      ? ["joined"]
      : []
  )

/** Asker, filler, replier, watcher; the watcher's outbox full (it does not read). */
const setup = Effect.gen(function*() {
  const broker = yield* withMemoryBroker({ outboxCapacity: 4, linkCapacity: 8 })
  const asker = yield* broker.session({ sessionId: "asker" })
  const filler = yield* broker.session({ sessionId: "filler" })
  const replier = yield* broker.session({ sessionId: "replier" })
  yield* asker.client.next("session_joined", (f) => f.session.id === "replier")
  const watcher = yield* broker.session({ sessionId: "watcher" })
  yield* asker.client.next("session_joined", (f) => f.session.id === "watcher")
  yield* watcher.client.pause
  const fill = yield* burst(filler.client, "watcher", 40, 64, "fill")
  assert.isBelow(filler.client.count("delivered"), fill.length)
  return { broker, asker, filler, replier, watcher, fill }
})

/** The replier sends to the watcher (parked) and its reply to the asker, then unregisters; `after` follows in the batch. */
const replyAndLeave = (replier: WireClient, after: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const answer = message("old reply")
    yield* replier.sendRaw(encodeFrames([
      JSON.stringify({ type: "send", to: "watcher", message: message("for the watcher") }),
      JSON.stringify({ type: "send", to: "asker", message: answer }),
      JSON.stringify({ type: "unregister" }),
      ...after
    ]))
    return answer
  })

/** The watcher reads again: the parked output goes out, the old reply reaches `asker`. */
const unblock = (watcher: WireClient, asker: WireClient, fill: ReadonlyArray<unknown>, answerId: string) =>
  Effect.gen(function*() {
    yield* watcher.resume
    yield* takeMessages(watcher, "filler", fill.length)
    yield* messageFor(asker, answerId)
    yield* asker.roundTrip
  })

/**
 * A replier that floods a watcher that does not read with 40 old messages
 * and unregisters in that batch — more than the link and the outbox take, so
 * the rest parks on the old connection, which stays open — then comes back on
 * connection `b` with a new message for the watcher, which waits for the
 * withheld pair. `watcherFrame` adds to the watcher's `register`.
 */
const floodThenReturn = (watcherFrame: { readonly features?: ReadonlyArray<string> } = {}) =>
  Effect.gen(function*() {
    const broker = yield* withMemoryBroker({ outboxCapacity: 4, linkCapacity: 8 })
    const watcher = yield* broker.session({ sessionId: "watcher", frame: watcherFrame })
    const replier = yield* broker.session({ sessionId: "replier" })
    yield* watcher.client.next("session_joined", (f) => f.session.id === "replier")
    yield* watcher.client.pause
    const old = Array.from({ length: 40 }, (_, i) => message(`old:${i}:`.padEnd(64, "."), { senderSequence: i + 1 }))
    yield* replier.client.sendRaw(encodeFrames([
      ...old.map((msg) => JSON.stringify({ type: "send", to: "watcher", message: msg })),
      JSON.stringify({ type: "unregister" })
    ]))
    const b = yield* broker.session({ sessionId: "replier", label: "replier-b" })
    const fresh = message("new self")
    yield* b.client.sendRaw(encodeFrames([JSON.stringify({ type: "send", to: "watcher", message: fresh })]))
    yield* b.client.roundTrip
    return { b, broker, fresh, old, replier, watcher }
  })

describe("withheld return", () => {
  it.effect("back twice while held (the middle return's mail parked): that mail does not overtake the old reply", () =>
    Effect.gen(function*() {
      const { asker, broker, fill, replier, watcher } = yield* setup
      const answer = yield* replyAndLeave(replier.client)
      // Back on B: its message to the asker waits for the pair (parked in B's batch), and B unregisters with it parked.
      const b = yield* broker.session({ sessionId: "replier", label: "replier-b" })
      const fromB = message("from B")
      yield* b.client.sendRaw(encodeFrames([
        JSON.stringify({ type: "send", to: "asker", message: fromB }),
        JSON.stringify({ type: "unregister" })
      ]))
      // Back again on C (B's reader is parked: the broker read B's batch before C's register).
      const c = yield* broker.session({ sessionId: "replier", label: "replier-c" })
      yield* c.client.roundTrip
      yield* asker.client.roundTrip
      yield* asker.client.roundTrip
      assert.deepStrictEqual(replierOrder(asker.client), ["joined"], "nothing of the replier's before the old reply")
      yield* unblock(watcher.client, asker.client, fill, answer.id)
      const order = replierOrder(asker.client)
      const reply = order.indexOf(`message:${answer.id}`)
      assert.strictEqual(reply, 1, `the old reply first: ${order.join(", ")}`)
      assert.isAbove(order.indexOf(`message:${fromB.id}`), reply, "B's message after the old reply")
      assert.isAbove(order.indexOf("left"), reply, "the session_left after the old reply")
      assert.strictEqual(order.at(-1), "joined", "the return (C) heard last")
    }))

  it.effect("the old connection registers as another session, then the session returns elsewhere: left before the join, new mail after the old reply", () =>
    Effect.gen(function*() {
      const { asker, broker, fill, replier, watcher } = yield* setup
      const answer = yield* replyAndLeave(replier.client, [JSON.stringify(registerFrame({ sessionId: "other" }))])
      const b = yield* broker.session({ sessionId: "replier", label: "replier-b" })
      const fresh = message("new self")
      yield* b.client.sendRaw(encodeFrames([JSON.stringify({ type: "send", to: "asker", message: fresh })]))
      yield* b.client.roundTrip
      yield* asker.client.roundTrip
      assert.deepStrictEqual(replierOrder(asker.client), ["joined"], "nothing of the replier's before the old reply")
      yield* unblock(watcher.client, asker.client, fill, answer.id)
      yield* messageFor(asker.client, fresh.id)
      assert.deepStrictEqual(replierOrder(asker.client), [
        "joined",
        `message:${answer.id}`,
        "left",
        "joined",
        `message:${fresh.id}`
      ])
    }))

  it.effect("the return's connection closes while its new mail waits: that mail stays behind the old reply, which precedes the session_left", () =>
    Effect.gen(function*() {
      const { asker, broker, fill, replier, watcher } = yield* setup
      const answer = yield* replyAndLeave(replier.client)
      const b = yield* broker.session({ sessionId: "replier", label: "replier-b" })
      const fresh = message("new self")
      yield* b.client.sendRaw(encodeFrames([JSON.stringify({ type: "send", to: "asker", message: fresh })]))
      yield* b.client.roundTrip
      yield* b.client.destroy
      yield* asker.client.roundTrip
      yield* asker.client.roundTrip
      assert.deepStrictEqual(replierOrder(asker.client), ["joined"], "nothing of the replier's before the old reply")
      yield* unblock(watcher.client, asker.client, fill, answer.id)
      yield* asker.client.next("session_left", (f) => f.sessionId === "replier", "10 seconds")
      yield* asker.client.roundTrip
      // B's message reads as the present incarnation's (the asker never heard B join), its session_left after it.
      assert.deepStrictEqual(replierOrder(asker.client), ["joined", `message:${answer.id}`, `message:${fresh.id}`, "left"])
    }))

  it.effect("the recipient's connection closes while it withholds the return: its next connection gets the old mail before the new", () =>
    Effect.gen(function*() {
      // More than the link and the outbox take: the rest parks on the old connection, which stays open; back
      // elsewhere, its new message to the watcher waits for the withheld pair.
      const { b, broker, fresh, old, replier, watcher } = yield* floodThenReturn()
      assert.isBelow(replier.client.count("delivered"), old.length, "some of the old mail is parked")
      // The watcher's connection closes with the old mail still in its link, its outbox and the old
      // connection's parked list: all of it goes back to the mailbox, and the new message after it.
      yield* watcher.client.destroy
      yield* b.client.roundTrip
      const watcher2 = yield* broker.session({ sessionId: "watcher", label: "watcher-2" })
      yield* messageFor(watcher2.client, fresh.id)
      yield* watcher2.client.roundTrip
      // What the closed connection had written went with it; the rest comes again, oldest first, then the new.
      const got = watcher2.client.received().flatMap((f) =>
        f.type === "message" && f.from.id === "replier" ? [String(f.message.id)] : []
      )
      assert.isAbove(got.length, 1, "old mail came back")
      assert.deepStrictEqual(got, [...old.slice(old.length - (got.length - 1)).map((m) => m.id), fresh.id])
    }))

  it.effect("the recipient unregisters (connection open) while it withholds the return: its next connection gets all the old mail before the new", () =>
    Effect.gen(function*() {
      // A received-v1 client: its unregister gives back all it never confirmed (Custody.handBack).
      const { b, broker, fresh, old, replier, watcher } = yield* floodThenReturn({ features: ["received-v1"] })
      assert.isBelow(replier.client.count("delivered"), old.length, "some of the old mail is parked")
      // The watcher's session unregisters, its connection staying open: the waiting new message is
      // refused (its session is gone) and goes back to the mailbox after the old connection's parked mail.
      yield* watcher.client.sendRaw(encodeFrames([JSON.stringify({ type: "unregister" })]))
      yield* b.client.roundTrip
      const watcher2 = yield* broker.session({ sessionId: "watcher", label: "watcher-2" })
      yield* messageFor(watcher2.client, fresh.id)
      yield* watcher2.client.roundTrip
      const got = watcher2.client.received().flatMap((f) =>
        f.type === "message" && f.from.id === "replier" ? [String(f.message.id)] : []
      )
      assert.deepStrictEqual(got, [...old.map((m) => m.id), fresh.id])
    }))

  it.effect("a base recipient unregisters (connection open) while it withholds the return: the parked old mail before the new, and none lost", () =>
    Effect.gen(function*() {
      const { b, broker, fresh, old, watcher } = yield* floodThenReturn()
      // A base client's write is in progress: its unregister leaves the outbox behind it (Custody.handBack),
      // and the leave itself wakes the waiting new message, which goes back after the old parked mail.
      yield* watcher.client.sendRaw(encodeFrames([JSON.stringify({ type: "unregister" })]))
      yield* b.client.roundTrip
      const watcher2 = yield* broker.session({ sessionId: "watcher", label: "watcher-2" })
      yield* messageFor(watcher2.client, fresh.id)
      yield* watcher2.client.roundTrip
      const fromReplier = (client: WireClient) =>
        client.received().flatMap((f) => f.type === "message" && f.from.id === "replier" ? [String(f.message.id)] : [])
      const got = fromReplier(watcher2.client)
      assert.isAbove(got.length, 1, "parked old mail came back")
      assert.deepStrictEqual(got, [...old.slice(old.length - (got.length - 1)).map((m) => m.id), fresh.id])
      // The old connection reads again: what its socket took is its own; the rest of the old outbox comes
      // back to the mailbox once that write is done (after the new, the base client's trade-off). All arrive once.
      yield* watcher.client.resume
      yield* watcher.client.roundTrip
      yield* watcher2.client.roundTrip
      const all = [...fromReplier(watcher.client), ...fromReplier(watcher2.client)]
      assert.deepStrictEqual([...all].sort(), [...old.map((m) => m.id), fresh.id].sort())
    }))

  it.effect("the asker taken over while it withholds the return: the new connection gets the old reply, then the pair, then the new mail", () =>
    Effect.gen(function*() {
      const { asker, broker, fill, replier, watcher } = yield* setup
      const answer = yield* replyAndLeave(replier.client)
      const b = yield* broker.session({ sessionId: "replier", label: "replier-b" })
      const fresh = message("new self")
      yield* b.client.sendRaw(encodeFrames([JSON.stringify({ type: "send", to: "asker", message: fresh })]))
      yield* b.client.roundTrip
      yield* asker.client.roundTrip
      const asker2 = yield* broker.session({ sessionId: "asker", label: "asker-2" })
      yield* asker2.client.roundTrip
      yield* b.client.roundTrip
      yield* asker2.client.roundTrip
      assert.deepStrictEqual(replierOrder(asker2.client), [], "nothing of the replier's before the old reply")
      yield* unblock(watcher.client, asker2.client, fill, answer.id)
      yield* messageFor(asker2.client, fresh.id)
      assert.deepStrictEqual(replierOrder(asker2.client), [`message:${answer.id}`, "left", "joined", `message:${fresh.id}`])
    }))
})
