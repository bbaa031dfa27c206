/**
 * `UnhandledMessages` (known issue 15): the client's read messages are
 * streamed one at a time, and a message leaves only when its consumer is done
 * with it, so an interrupted consumer leaves it to the next one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Stream } from "effect"
import type { InboundMessage } from "../../src/client/events.ts"
import { makeUnhandledMessages } from "../../src/client/UnhandledMessages.ts"

const inbound = (id: string, replyTo?: string): InboundMessage => ({
  from: { id: "sender", name: "sender", cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 },
  message: { id, timestamp: 0, content: { text: id }, ...(replyTo === undefined ? {} : { replyTo }) }
})

describe("UnhandledMessages", () => {
  it.effect("a consumer interrupted in the middle of a message leaves it, and those after it, to the next run", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      for (const id of ["m1", "m2", "m3"]) buffer.offer(inbound(id))
      const seen: Array<string> = []
      const inside = yield* Deferred.make<void>()
      const consumer = yield* Effect.forkChild(
        Stream.runForEach(buffer.stream, (m) =>
          Effect.suspend(() => {
            seen.push(m.message.id)
            // Finishes m1; is interrupted in the middle of m2.
            return m.message.id === "m2" ? Effect.andThen(Deferred.succeed(inside, undefined), Effect.never) : Effect.void
          })),
        { startImmediately: true }
      )
      yield* Deferred.await(inside)
      yield* Fiber.interrupt(consumer)
      assert.deepStrictEqual(seen, ["m1", "m2"])
      assert.strictEqual(buffer.size(), 2, "m2 and m3 wait for the next consumer")
      const next = yield* Stream.runCollect(Stream.take(buffer.stream, 2))
      assert.deepStrictEqual(next.map((m) => m.message.id), ["m2", "m3"])
    }))

  it.effect("a message marked handled leaves at once; the next run does not see it again", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      for (const id of ["m1", "m2"]) buffer.offer(inbound(id))
      const first = yield* Stream.runHead(buffer.stream)
      assert.strictEqual(first._tag === "Some" ? first.value.message.id : undefined, "m1")
      assert.strictEqual(buffer.size(), 2, "a run that stops after m1 without asking for more has not finished it")
      if (first._tag === "Some") buffer.handled(first.value)
      const rest = yield* Stream.runHead(buffer.stream)
      assert.strictEqual(rest._tag === "Some" ? rest.value.message.id : undefined, "m2")
    }))

  it.effect("a waiting consumer gets a message offered later, one pull per message", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      const collecting = yield* Effect.forkChild(Stream.runCollect(Stream.take(buffer.stream, 2)), {
        startImmediately: true
      })
      yield* Effect.yieldNow
      buffer.offer(inbound("m1"))
      buffer.offer(inbound("m2"))
      const got = yield* Fiber.join(collecting)
      assert.deepStrictEqual(got.map((m) => m.message.id), ["m1", "m2"])
      assert.strictEqual(buffer.size(), 1, "m2 was emitted last and never followed by a pull")
    }))

  it.effect("a kept message stays counted while the run moves on; the next run starts with it, before what was read after it", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      for (const id of ["m1", "m2", "m3"]) buffer.offer(inbound(id))
      // The run keeps m1 (nothing vouches for it yet), finishes m2, and stops at m3 without finishing it.
      const first = yield* Stream.runCollect(Stream.take(buffer.stream, 3).pipe(
        Stream.tap((m) => Effect.sync(() => m.message.id === "m1" ? buffer.keep(m) : undefined))
      ))
      assert.deepStrictEqual(first.map((m) => m.message.id), ["m1", "m2", "m3"])
      assert.strictEqual(buffer.size(), 2, "m1 (kept) and m3 (not finished) are not handled")
      const next = yield* Stream.runCollect(Stream.take(buffer.stream, 2))
      assert.deepStrictEqual(next.map((m) => m.message.id), ["m1", "m3"])
    }))

  it.effect("a kept message marked handled leaves, and the next run does not see it", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      for (const id of ["m1", "m2"]) buffer.offer(inbound(id))
      const first = yield* Stream.runHead(buffer.stream)
      if (first._tag === "None") return assert.fail("m1 was not emitted")
      buffer.keep(first.value)
      assert.strictEqual(buffer.size(), 2)
      buffer.handled(first.value)
      assert.strictEqual(buffer.size(), 1, "only m2 is left")
      const rest = yield* Stream.runHead(buffer.stream)
      assert.strictEqual(rest._tag === "Some" ? rest.value.message.id : undefined, "m2")
    }))

  it.effect("the oldest message not handled is a kept one before any unhandled one read after it", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      for (const id of ["m1", "m2", "m3"]) buffer.offer(inbound(id))
      // The run keeps m1, finishes m2 and is on m3: the confirmation bound must be m1, not m3.
      yield* Stream.runDrain(Stream.take(buffer.stream, 3).pipe(
        Stream.tap((m) => Effect.sync(() => m.message.id === "m1" ? buffer.keep(m) : undefined))
      ))
      assert.strictEqual(buffer.oldest()?.message.id, "m1")
      const first = buffer.oldest()
      if (first !== undefined) buffer.handled(first)
      assert.strictEqual(buffer.oldest()?.message.id, "m3")
    }))

  it.effect("caughtUp waits for the messages read before it (handled or kept), not for those read after", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      const m1 = inbound("m1")
      const m2 = inbound("m2")
      buffer.offer(m1)
      buffer.offer(m2)
      const caughtUp = yield* Effect.forkChild(buffer.caughtUp, { startImmediately: true })
      buffer.offer(inbound("m3"))
      buffer.handled(m1)
      yield* Effect.yieldNow
      assert.isUndefined(caughtUp.pollUnsafe(), "m2 is not handled yet")
      buffer.keep(m2)
      yield* Fiber.join(caughtUp)
      assert.strictEqual(buffer.size(), 2, "m2 (kept) and m3 still wait")
    }))

  it.effect("caughtUp completes at once when nothing waits, kept messages aside", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      yield* buffer.caughtUp
      const m1 = inbound("m1")
      buffer.offer(m1)
      buffer.keep(m1)
      yield* buffer.caughtUp
    }))

  it.effect("a message the taker takes as it is offered is not buffered, does not hold caughtUp, and the rest keep their order", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      const taken: Array<string> = []
      buffer.offer(inbound("m1"))
      const remove = buffer.takeOnOffer((m) => {
        if (m.message.id !== "reply") return false
        taken.push(m.message.id)
        return true
      })
      buffer.offer(inbound("reply"))
      buffer.offer(inbound("m2"))
      assert.deepStrictEqual(taken, ["reply"], "taken in the offer, ahead of m1")
      assert.strictEqual(buffer.size(), 2, "m1 and m2 wait")
      const [m1] = yield* Stream.runCollect(Stream.take(buffer.stream, 1))
      if (m1 !== undefined) buffer.handled(m1)
      yield* Stream.runHead(buffer.stream)
      const caughtUp = yield* Effect.forkChild(buffer.caughtUp, { startImmediately: true })
      assert.isUndefined(caughtUp.pollUnsafe(), "m2 is not handled yet")
      yield* Fiber.interrupt(caughtUp)
      // Removed, it takes nothing more; a later taker's removal by an earlier one's handle leaves it in place.
      remove()
      buffer.offer(inbound("reply"))
      assert.strictEqual(buffer.size(), 2, "offered to the buffer once the taker is gone")
      const later = buffer.takeOnOffer(() => true)
      remove()
      buffer.offer(inbound("m3"))
      assert.strictEqual(buffer.size(), 2, "the later taker took m3")
      later()
    }))
  it.effect("takeWaiting takes the first message answering its question that it accepts behind the one the consumer is at, never that one nor a kept one; the consumer never sees it", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      for (const id of ["k", "m1", "reply", "again", "m2"]) buffer.offer(inbound(id, "q"))
      buffer.offer(inbound("other", "q2"))
      const seen: Array<string> = []
      const atM1 = yield* Deferred.make<void>()
      const go = yield* Deferred.make<void>()
      const consumer = yield* Effect.forkChild(
        Stream.runForEach(Stream.take(buffer.stream, 3), (m) =>
          Effect.suspend(() => {
            seen.push(m.message.id)
            if (m.message.id === "k") buffer.keep(m)
            return m.message.id === "m1" ? Effect.andThen(Deferred.succeed(atM1, undefined), Deferred.await(go)) : Effect.void
          })),
        { startImmediately: true }
      )
      yield* Deferred.await(atM1)
      const asked: Array<string> = []
      const accept = (ids: ReadonlyArray<string>) => (m: InboundMessage) => {
        asked.push(m.message.id)
        return ids.includes(m.message.id)
      }
      assert.isUndefined(buffer.takeWaiting("q", accept(["k", "m1", "other"])), "k is kept, m1 is the consumer's")
      assert.deepStrictEqual(asked, ["reply", "again", "m2"], "asked about those behind m1 answering q only, oldest first")
      asked.length = 0
      assert.strictEqual(buffer.takeWaiting("q", accept(["reply", "again"]))?.message.id, "reply", "the first it accepts")
      assert.deepStrictEqual(asked, ["reply"], "and no further")
      assert.strictEqual(buffer.size(), 5, "k, m1, again, m2 and other wait")
      yield* Deferred.succeed(go, undefined)
      yield* Fiber.join(consumer)
      assert.deepStrictEqual(seen, ["k", "m1", "again"], "the consumer never saw the taken one")
    }))

  it.effect("takeWaiting asks about no message when none waiting answers its question, however many wait", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      for (let i = 0; i < 10_000; i++) buffer.offer(inbound(`m${i}`, i % 2 === 0 ? undefined : `old${i}`))
      let asked = 0
      const never = () => {
        asked++
        return false
      }
      for (let i = 0; i < 1_000; i++) assert.isUndefined(buffer.takeWaiting(`new${i}`, never))
      assert.strictEqual(asked, 0, "a brand-new question looks at nothing")
      assert.isUndefined(buffer.takeWaiting("old1", never))
      assert.strictEqual(asked, 1, "the one message answering old1, and only it")
      assert.strictEqual(buffer.size(), 10_000)
    }))

  it.effect("the index follows the messages out: handled, kept and put back, taken", () =>
    Effect.gen(function*() {
      const buffer = yield* makeUnhandledMessages
      const [a, b, c, d] = [inbound("a", "q"), inbound("b", "q"), inbound("c", "q"), inbound("d", "q")]
      for (const m of [a, b, c, d]) buffer.offer(m)
      const ids = (taken: InboundMessage | undefined) => taken?.message.id
      const any = () => true
      // A run passes a and b on and keeps them, and ends at b.
      yield* Stream.runForEach(Stream.take(buffer.stream, 2), (m) => Effect.sync(() => buffer.keep(m)))
      buffer.handled(c)
      assert.strictEqual(ids(buffer.takeWaiting("q", any)), "d", "a and b are kept, c handled")
      assert.isUndefined(buffer.takeWaiting("q", any), "only kept ones are left")
      // A new run puts a and b back and is at a: b is takeable again, behind it.
      buffer.offer(inbound("e", "q"))
      const again = yield* Stream.runHead(buffer.stream)
      assert.strictEqual(ids(again._tag === "Some" ? again.value : undefined), "a", "the kept ones first")
      assert.strictEqual(ids(buffer.takeWaiting("q", any)), "b", "put back, no longer kept")
      assert.strictEqual(ids(buffer.takeWaiting("q", any)), "e")
      assert.isUndefined(buffer.takeWaiting("q", any), "a is the consumer's")
      buffer.handled(a)
      assert.strictEqual(buffer.size(), 0)
      buffer.offer(inbound("f", "q"))
      assert.strictEqual(ids(buffer.takeWaiting("q", any)), "f", "a key emptied and filled again")
    }))
})
