/**
 * `Connection.write`: the broker's writer writes synchronously while the
 * transport takes a whole write, and needs a fiber only for the rest of one
 * it did not. Over a Unix socket a write the kernel took at once completes
 * at once; a write that waits (the reader does not read) returns the Effect
 * that finishes it, which completes once the reader has read — even when the
 * socket finished the write before anyone ran that Effect. A frame in parts
 * (`FrameParts`) arrives as its text, over a socket and in memory. In memory,
 * a second write while one waits dies: one write at a time, as on a socket.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber } from "effect"
import * as path from "node:path"
import { FrameDecoder, type FrameParts } from "../../src/protocol/framing.ts"
import { makeInMemoryPair } from "../../src/transport/InMemory.ts"
import { fromNetSocket } from "../../src/transport/UnixSocket.ts"
import { tempDir } from "../support/broker.ts"
import { socketPair } from "../support/socketPair.ts"


describe("Connection.write", () => {
  it.live("Unix socket: a small write completes at once; one past the kernel buffer returns the rest, which completes once the peer reads", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir()
      const { client, server } = yield* socketPair(path.join(dir, "pair.sock"))
      client.pause()
      const connection = yield* fromNetSocket(server)
      assert.isUndefined(connection.write(["small"]), "a write the kernel took whole is complete at once")
      // Far past any socket buffer: the kernel cannot take it while the client does not read.
      const big = "x".repeat(1_000_000)
      const rest = connection.write([big, big, big, big])
      assert.isDefined(rest, "a write the kernel did not take whole is not complete")
      assert.isDefined(connection.unfinishedWrite(), "it is reported unfinished until it completes")
      // The peer reads everything only now, before the rest is even run: it still completes.
      let read = 0
      const all = 4 * (4 + big.length) + 4 + "small".length
      yield* Effect.callback<void>((resume) => {
        client.on("data", (chunk: Buffer) => {
          read += chunk.length
          if (read >= all) resume(Effect.void)
        })
        client.resume()
      })
      if (rest !== undefined) assert.isTrue(Exit.isSuccess(yield* Effect.exit(rest)))
      assert.isUndefined(connection.unfinishedWrite())
    })))

  it.live("Unix socket: a frame in parts arrives as its text, and counts as one frame of an unfinished write", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir()
      const { client, server } = yield* socketPair(path.join(dir, "parts.sock"))
      client.pause()
      const connection = yield* fromNetSocket(server)
      const pieces = ['{"type":"message","text":"', "é€😀".repeat(100_000), '"}']
      const parts: FrameParts = {
        length: pieces.join("").length,
        writeUtf8: (out, offset) => {
          let at = offset
          for (const piece of pieces) at += out.write(piece, at, "utf8")
          return at - offset
        },
        text: () => pieces.join("")
      }
      const rest = connection.write(["first", parts, parts, parts, "last"])
      assert.isDefined(rest, "far past the socket's buffer: not complete at once")
      const unfinished = connection.unfinishedWrite()
      assert.isTrue(unfinished !== undefined && unfinished >= 0 && unfinished < 5)
      const decoder = new FrameDecoder()
      const frames: Array<string> = []
      yield* Effect.callback<void>((resume) => {
        client.on("data", (chunk: Buffer) => {
          decoder.push(chunk, frames)
          if (frames.length === 5) resume(Effect.void)
        })
        client.resume()
      })
      if (rest !== undefined) assert.isTrue(Exit.isSuccess(yield* Effect.exit(rest)))
      assert.deepStrictEqual(frames, ["first", parts.text(), parts.text(), parts.text(), "last"])
      assert.isUndefined(connection.unfinishedWrite())
    })))

  it.effect("in memory: frames the buffer takes complete at once; the rest waits for the reader, frame by frame", () =>
    Effect.scoped(Effect.gen(function*() {
      const [a, b] = yield* makeInMemoryPair({ capacity: 2 })
      assert.isUndefined(a.write(["1"]))
      const rest = a.write(["2", "3", "4"])
      assert.isDefined(rest)
      assert.strictEqual(a.unfinishedWrite(), 1, "one more frame fitted the buffer")
      if (rest === undefined) return yield* Effect.void
      const fiber = yield* Effect.forkChild(rest)
      const got: Array<string> = []
      while (got.length < 4) got.push(...(yield* b.read))
      assert.isTrue(Exit.isSuccess(yield* Fiber.await(fiber)))
      assert.deepStrictEqual(got, ["1", "2", "3", "4"])
      assert.isUndefined(a.unfinishedWrite())
    })))

  it.effect("in memory: a frame in parts travels as its text", () =>
    Effect.scoped(Effect.gen(function*() {
      const [a, b] = yield* makeInMemoryPair()
      const parts: FrameParts = {
        length: 9,
        writeUtf8: (out, offset) => out.write('{"n":"é"}', offset, "utf8"),
        text: () => '{"n":"é"}'
      }
      assert.isUndefined(a.write(["1", parts]))
      assert.deepStrictEqual(yield* b.read, ["1", '{"n":"é"}'])
    })))

  it.effect("in memory: a write started while an earlier one still waits dies, as a socket would leave the earlier waiter hanging", () =>
    Effect.scoped(Effect.gen(function*() {
      const [a, b] = yield* makeInMemoryPair({ capacity: 1 })
      const first = yield* Effect.forkChild(a.writeAll(["1", "2"]), { startImmediately: true })
      const second = yield* Effect.exit(a.writeAll(["3"]))
      assert.isTrue(Exit.isFailure(second) && Cause.hasDies(second.cause), "the second write died")
      // The first is unharmed: once read, it completes, and the dead write left nothing on the wire.
      const got: Array<string> = []
      while (got.length < 2) got.push(...(yield* b.read))
      assert.isTrue(Exit.isSuccess(yield* Fiber.await(first)))
      assert.deepStrictEqual(got, ["1", "2"])
      assert.isUndefined(a.write(["4"]), "once the first completed, writing is free again")
    })))
})
