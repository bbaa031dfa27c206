/**
 * `processOwnsSocket` (what `intercom broker stop` checks before it signals
 * a pid) against a real listener: `serveUnix` binds a private name, which is
 * the address the kernel reports, and the lookup still finds the socket.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { processOwnsSocket } from "../../src/cli/processes.ts"
import { serveUnix } from "../../src/transport/UnixSocket.ts"
import { tempDir } from "../support/broker.ts"

describe("processOwnsSocket", () => {
  it.live.skipIf(process.platform !== "linux")("finds a serveUnix listener's process, and only it, through /proc", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const socketPath = path.join(dir, "broker.sock")
      yield* serveUnix(socketPath, () => Effect.void)
      assert.isTrue(yield* processOwnsSocket(process.pid, socketPath))
      assert.isFalse(yield* processOwnsSocket(process.ppid, socketPath), "a live process that holds no such socket")
    }))
})
