/**
 * `Connection.write`: the broker's writer writes synchronously while the
 * transport takes a whole write, and needs a fiber only for the rest of one
 * it did not. Over a Unix socket a write the kernel took at once completes
 * at once; a write that waits (the reader does not read) returns the Effect
 * that finishes it, which completes once the reader has read — even when the
 * socket finished the write before anyone ran that Effect.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import * as path from "node:path"
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
})
