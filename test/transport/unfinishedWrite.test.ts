/**
 * `Connection.unfinishedWrite` over a Unix socket: what its owner (the
 * broker's connection actor) takes back when a write did not complete. A
 * write refused because the socket was already gone handed nothing over, so
 * it must report 0 — read as "every frame was written", its mail would be
 * lost rather than requeued.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as path from "node:path"
import { fromNetSocket } from "../../src/transport/UnixSocket.ts"
import { tempDir } from "../support/broker.ts"
import { socketPair } from "../support/socketPair.ts"


describe("Unix transport: unfinishedWrite", () => {
  it.live("a completed write leaves nothing unfinished; a write refused on a socket already gone handed over 0 frames", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir()
      const { server } = yield* socketPair(path.join(dir, "pair.sock"))
      const connection = yield* fromNetSocket(server)
      yield* connection.writeAll(["first"])
      assert.isUndefined(connection.unfinishedWrite())
      // The socket goes away under the writer (an error destroys it before its close event).
      server.destroy()
      const refused = yield* Effect.exit(connection.writeAll(["mail 1", "mail 2"]))
      assert.isTrue(Exit.isFailure(refused))
      assert.strictEqual(connection.unfinishedWrite(), 0)
    })))
})
