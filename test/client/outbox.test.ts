/**
 * `Outbox`: one client connection's frames, written in the order they were
 * queued. What is posted in one turn goes out in one transport write, and a
 * write takes what was posted before it along; while a write waits for room, what comes meanwhile waits
 * behind it (the in-memory transport dies on a second write while one waits,
 * so these tests would fail on it); a caller interrupted before its frames
 * were taken takes them back; a close fails what still waits, telling each
 * write still queued it was taken back first; the writes of
 * callers resumed while a received batch is dispatched go out as one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { Outbox } from "../../src/client/Outbox.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { type InMemoryPairOptions, makeInMemoryPair } from "../../src/transport/InMemory.ts"
import { recordingWrites as recording } from "./support.ts"

/** Reads from `peer` until `count` frames came. */
const readFrames = (peer: Connection, count: number) =>
  Effect.gen(function*() {
    const frames: Array<string> = []
    while (frames.length < count) frames.push(...(yield* peer.read))
    return frames
  })

/** An outbox over one end of an in-memory pair, its writer running, each transport write recorded. */
const recordedOutbox = (options: InMemoryPairOptions = {}) =>
  Effect.gen(function*() {
    const [near, far] = yield* makeInMemoryPair(options)
    const { connection, writes } = recording(near)
    const outbox = new Outbox(connection)
    yield* Effect.forkScoped(outbox.run)
    return { outbox, far, writes }
  })

describe("Outbox", () => {
  it.effect("frames posted in one turn go out in one write, in order; a write takes the frames posted before it along", () =>
    Effect.gen(function*() {
      const { outbox, far, writes } = yield* recordedOutbox()
      for (const text of ["a", "b", "c"]) assert.isTrue(outbox.post([text]))
      assert.deepStrictEqual(writes, [], "posting does not write")
      assert.deepStrictEqual(yield* readFrames(far, 3), ["a", "b", "c"])
      assert.deepStrictEqual(writes, [["a", "b", "c"]])
      assert.isTrue(outbox.post(["d"]))
      yield* outbox.write(["e"], "send")
      assert.deepStrictEqual(writes, [["a", "b", "c"], ["d", "e"]])
      assert.deepStrictEqual(yield* readFrames(far, 2), ["d", "e"])
    }))

  it.effect("while a write waits for room, later frames wait behind it and go out next, in order", () =>
    Effect.gen(function*() {
      const { outbox, far, writes } = yield* recordedOutbox({ capacity: 2 })
      // Two frames fit; the third waits for the peer to read.
      const first = yield* Effect.forkChild(outbox.write(["1", "2", "3"], "send"), { startImmediately: true })
      yield* Effect.yieldNow
      yield* Effect.yieldNow
      const second = yield* Effect.forkChild(outbox.write(["4"], "send"), { startImmediately: true })
      assert.isTrue(outbox.post(["5"]))
      yield* Effect.yieldNow
      assert.strictEqual(writes.length, 1, "nothing more is written while the first write waits")
      assert.deepStrictEqual(yield* readFrames(far, 5), ["1", "2", "3", "4", "5"])
      assert.isTrue(Exit.isSuccess(yield* Fiber.await(first)))
      assert.isTrue(Exit.isSuccess(yield* Fiber.await(second)))
      assert.deepStrictEqual(writes, [["1", "2", "3"], ["4", "5"]])
    }))

  it.effect("callers a finished write resumes, writing again at once, never start a second transport write while one waits", () =>
    Effect.gen(function*() {
      const { outbox, far, writes } = yield* recordedOutbox({ capacity: 1 })
      // z2 waits for room; a and c queue behind it, in one batch; each of their callers writes again
      // as soon as that batch is through.
      const first = yield* Effect.forkChild(outbox.write(["z1", "z2"], "send"), { startImmediately: true })
      const one = yield* Effect.forkChild(
        Effect.andThen(outbox.write(["a"], "send"), outbox.write(["f1a", "f1b"], "send")),
        { startImmediately: true }
      )
      const other = yield* Effect.forkChild(
        Effect.andThen(outbox.write(["c"], "send"), outbox.write(["f3"], "send")),
        { startImmediately: true }
      )
      assert.deepStrictEqual(yield* readFrames(far, 7), ["z1", "z2", "a", "c", "f1a", "f1b", "f3"])
      for (const fiber of [first, one, other]) assert.isTrue(Exit.isSuccess(yield* Fiber.await(fiber)))
      assert.deepStrictEqual(writes, [["z1", "z2"], ["a", "c"], ["f1a", "f1b"], ["f3"]])
    }))

  it.effect("a caller interrupted while its frames wait in the queue takes them back: they are never written", () =>
    Effect.gen(function*() {
      const [near, far] = yield* makeInMemoryPair({ capacity: 1 })
      const outbox = new Outbox(near)
      yield* Effect.forkScoped(outbox.run)
      const first = yield* Effect.forkChild(outbox.write(["1", "2"], "send"), { startImmediately: true })
      yield* Effect.yieldNow
      yield* Effect.yieldNow
      const withdrawn = yield* Effect.forkChild(outbox.write(["gone"], "send"), { startImmediately: true })
      yield* Fiber.interrupt(withdrawn)
      assert.isTrue(outbox.post(["3"]))
      assert.deepStrictEqual(yield* readFrames(far, 3), ["1", "2", "3"])
      yield* Fiber.join(first)
      assert.isTrue(outbox.post(["4"]))
      assert.deepStrictEqual(yield* readFrames(far, 1), ["4"], "nothing else came between")
    }))

  it.effect("when the writer stops, writes still queued fail with ConnectionLost and later ones are refused", () =>
    Effect.gen(function*() {
      const [near] = yield* makeInMemoryPair({ capacity: 1 })
      const outbox = new Outbox(near)
      const writer = yield* Effect.forkChild(outbox.run, { startImmediately: true })
      const blocked = yield* Effect.forkChild(outbox.write(["1", "2"], "send"), { startImmediately: true })
      yield* Effect.yieldNow
      yield* Effect.yieldNow
      const queued = yield* Effect.forkChild(outbox.write(["3"], "list"), { startImmediately: true })
      yield* Fiber.interrupt(writer)
      const failed = yield* Effect.flip(Fiber.join(queued))
      assert.strictEqual(failed._tag, "ConnectionLost")
      assert.strictEqual(failed.operation, "list")
      assert.strictEqual((yield* Effect.flip(Fiber.join(blocked)))._tag, "ConnectionLost")
      assert.isFalse(outbox.post(["4"]))
      assert.strictEqual((yield* Effect.flip(outbox.write(["5"], "send")))._tag, "ConnectionLost")
    }))

  // Helper cancelc: what the close fails (a cancel's table) must find the frames that never left already marked.
  it.effect("drop tells each write still queued it was taken back, before its waiter fails; not one in the transport's unfinished write", () =>
    Effect.gen(function*() {
      const { outbox, far, writes } = yield* recordedOutbox({ capacity: 1 })
      const told: Array<string> = []
      const failedWhenTold: Array<boolean> = []
      const write = (text: string) => {
        const done = Deferred.makeUnsafe<void>()
        const fiber = outbox.write([text], "cancel", () => {
          told.push(text)
          failedWhenTold.push(Deferred.isDoneUnsafe(done))
        }).pipe(Effect.ensuring(Deferred.succeed(done, undefined)))
        return Effect.forkChild(fiber, { startImmediately: true })
      }
      // "1" fits; "2" waits for room in the transport's write; "3" and "4" queue behind it.
      const inTransport = yield* write("1")
      const waitsForRoom = yield* write("2")
      yield* Effect.yieldNow
      const queued = yield* write("3")
      const other = yield* write("4")
      outbox.drop()
      assert.deepStrictEqual([...told].sort(), ["3", "4"], "the writes told taken back")
      assert.deepStrictEqual(failedWhenTold, [false, false], "a waiter ended before its write was told")
      assert.strictEqual((yield* Effect.flip(Fiber.join(queued)))._tag, "ConnectionLost")
      assert.strictEqual((yield* Effect.flip(Fiber.join(other)))._tag, "ConnectionLost")
      yield* Fiber.join(inTransport)
      // The unfinished write goes on; nothing queued before the drop follows it.
      assert.deepStrictEqual(yield* readFrames(far, 1), ["1"])
      assert.deepStrictEqual(yield* readFrames(far, 1), ["2"])
      yield* Fiber.join(waitsForRoom)
      assert.deepStrictEqual(writes, [["1"], ["2"]], "a frame dropped was written")
      outbox.drop()
      assert.strictEqual(told.length, 2, "a second drop told a write again")
    }))

  it.effect("callers resumed while a received batch is dispatched write as they resume, and their frames go out as one write after it", () =>
    Effect.gen(function*() {
      const { outbox, far, writes } = yield* recordedOutbox()
      // Three callers wait for an answer, as sends wait for their acknowledgements, then write again.
      const answers = [Deferred.makeUnsafe<void>(), Deferred.makeUnsafe<void>(), Deferred.makeUnsafe<void>()]
      const callers = yield* Effect.forEach(answers, (answer, i) =>
        Effect.forkChild(Effect.andThen(Deferred.await(answer), outbox.write([`next ${i}`], "send")), { startImmediately: true }))
      const heldDuringDispatch: Array<number> = []
      outbox.holdWhile(() => {
        for (const answer of answers) Deferred.doneUnsafe(answer, Exit.void)
        heldDuringDispatch.push(writes.length)
      })
      assert.deepStrictEqual(heldDuringDispatch, [0], "nothing is written during the dispatch")
      assert.deepStrictEqual(yield* readFrames(far, 3), ["next 0", "next 1", "next 2"])
      for (const caller of callers) assert.isTrue(Exit.isSuccess(yield* Fiber.await(caller)))
      assert.deepStrictEqual(writes, [["next 0", "next 1", "next 2"]])
    }))
})
