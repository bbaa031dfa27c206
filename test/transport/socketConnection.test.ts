/**
 * The Unix socket's `Connection` (SocketConnection.ts): a class whose methods
 * every connection shares — a broker holds thousands of idle ones — reading
 * whole frames in order, counting them, holding what comes while nobody reads
 * (the socket paused meanwhile), and ending cleanly when the peer ends or
 * with the framing error when a frame is too large.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as path from "node:path"
import { encodeFrames } from "../../src/protocol/framing.ts"
import { fromNetSocket } from "../../src/transport/UnixSocket.ts"
import { tempDir } from "../support/broker.ts"
import { socketPair } from "../support/socketPair.ts"

/** Reads until `count` frames have arrived. */
const readFrames = (read: Effect.Effect<ReadonlyArray<string>, unknown>, count: number) =>
  Effect.gen(function*() {
    const frames: Array<string> = []
    while (frames.length < count) frames.push(...yield* read)
    return frames
  })

describe("SocketConnection", () => {
  it.live("two connections share their methods: none is a closure of its own", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir()
      const a = yield* socketPair(path.join(dir, "a.sock"))
      const b = yield* socketPair(path.join(dir, "b.sock"))
      const first = yield* fromNetSocket(a.server)
      const second = yield* fromNetSocket(b.server)
      assert.strictEqual(first.write, second.write)
      assert.strictEqual(first.writeAll, second.writeAll)
      assert.strictEqual(first.unfinishedWrite, second.unfinishedWrite)
      assert.strictEqual(first.readProgress, second.readProgress)
      assert.strictEqual(first.readPending, second.readPending)
    })))

  it.live("two connections' socket listeners are the same functions, and each socket's events reach its own connection", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir()
      const a = yield* socketPair(path.join(dir, "a.sock"))
      const b = yield* socketPair(path.join(dir, "b.sock"))
      const first = yield* fromNetSocket(a.server)
      const second = yield* fromNetSocket(b.server)
      for (const event of ["data", "end", "close", "error"]) {
        const ours = (socket: typeof a.server) => socket.listeners(event).at(-1)
        assert.strictEqual(ours(a.server), ours(b.server), event)
      }
      a.client.write(encodeFrames(["to a"]))
      b.client.write(encodeFrames(["to b"]))
      assert.deepStrictEqual(yield* first.read, ["to a"])
      assert.deepStrictEqual(yield* second.read, ["to b"])
      a.client.end()
      const ended = yield* Effect.flip(first.read)
      assert.isTrue(ended._tag === "ConnectionClosed" && ended.clean)
      b.client.write(encodeFrames(["b reads on"]))
      assert.deepStrictEqual(yield* second.read, ["b reads on"])
    })))

  it.live("a frame begun and not complete while a read waits: its bytes are pending, as readPending says without a record", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir()
      const { client, server } = yield* socketPair(path.join(dir, "pair.sock"))
      const connection = yield* fromNetSocket(server)
      assert.strictEqual(connection.readPending(), 0)
      const reading = yield* Effect.forkChild(connection.read)
      const arrived = Effect.callback<void>((resume) => {
        server.once("data", () => resume(Effect.void))
      })
      // A frame's 4-byte header and five of its eight bytes: the decoder holds those five.
      client.write(encodeFrames(["complete"]).subarray(0, 9))
      yield* arrived
      assert.deepStrictEqual(connection.readProgress(), { frames: 0, pending: 5, reading: true })
      assert.strictEqual(connection.readPending(), 5)
      client.write(encodeFrames(["complete"]).subarray(9))
      assert.deepStrictEqual(yield* Fiber.join(reading), ["complete"])
      assert.strictEqual(connection.readPending(), 0)
    })))

  it.live("reads frames in order and counts them; after the peer ends, read fails with a clean ConnectionClosed", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir()
      const { client, server } = yield* socketPair(path.join(dir, "pair.sock"))
      const connection = yield* fromNetSocket(server, { id: 7 })
      assert.strictEqual(connection.id, 7)
      client.write(encodeFrames(["one", "two"]))
      client.write(encodeFrames(["three"]))
      assert.deepStrictEqual(yield* readFrames(connection.read, 3), ["one", "two", "three"])
      assert.deepStrictEqual(connection.readProgress(), { frames: 3, pending: 0, reading: false })
      client.end()
      const ended = yield* Effect.flip(connection.read)
      assert.strictEqual(ended._tag, "ConnectionClosed")
      assert.isTrue(ended._tag === "ConnectionClosed" && ended.clean)
    })))

  it.live("a chunk that comes while no read waits is held and the socket paused; a read takes it, and the next read lets the socket flow again", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir()
      const { client, server } = yield* socketPair(path.join(dir, "pair.sock"))
      const connection = yield* fromNetSocket(server)
      const arrived = Effect.callback<void>((resume) => {
        server.once("data", () => resume(Effect.void))
      })
      client.write(encodeFrames(["one"]))
      yield* arrived
      // Nobody was reading: the chunk is held, and the socket paused (the kernel then holds the rest: backpressure).
      assert.isTrue(server.isPaused())
      assert.deepStrictEqual(connection.readProgress(), { frames: 0, pending: 0, reading: false })
      assert.deepStrictEqual(yield* connection.read, ["one"])
      // This read finds nothing held: it waits, and the socket flows again.
      client.write(encodeFrames(["two"]))
      assert.deepStrictEqual(yield* connection.read, ["two"])
      assert.isFalse(server.isPaused())
      assert.strictEqual(connection.readProgress().frames, 2)
    })))

  it.live("a frame past the limit fails read with FrameTooLarge, after the frames before it", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir()
      const { client, server } = yield* socketPair(path.join(dir, "pair.sock"))
      const connection = yield* fromNetSocket(server, { maxFrameBytes: 16 })
      client.write(encodeFrames(["small", "x".repeat(64)]))
      assert.deepStrictEqual(yield* connection.read, ["small"])
      const failed = yield* Effect.flip(connection.read)
      assert.strictEqual(failed._tag, "FrameTooLarge")
    })))
})
