/**
 * The cwd half of a mailbox identity (P49: an explicit name, equal ignoring
 * case, in the same normalised cwd — `path.resolve` + `realpath` — and scope),
 * on real directories under a temp dir: a symlink to a departed session's
 * cwd is that cwd, also for a session that takes its name after registering;
 * and a cwd that does not exist (removed while its session ran, say) is no
 * reason to refuse a registration: its identity is the path as given,
 * resolved, so its successor of the same name there still collects its mail.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send, tempDir } from "../support/broker.ts"
import { withMemoryBroker } from "../support/memory.ts"

/** A temp dir holding `real`, a directory, `link`, a symlink to it, and the path `gone`, a directory made and removed. */
const directories = Effect.gen(function*() {
  const root = yield* tempDir("ei-cwd-")
  const real = path.join(root, "real")
  const link = path.join(root, "link")
  const gone = path.join(root, "gone")
  fs.mkdirSync(real)
  fs.symlinkSync(real, link)
  fs.mkdirSync(gone)
  fs.rmSync(gone, { recursive: true })
  return { real, link, gone }
})

describe("the mailbox identity's cwd (P49)", () => {
  it.effect("a successor registered in a symlink to the departed session's cwd collects the mail queued for it", () =>
    Effect.gen(function*() {
      const { link, real } = yield* directories
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender" })
      const old = yield* broker.session({ sessionId: "run-1", name: "Planner", cwd: real })
      yield* old.client.destroy
      yield* sender.client.next("session_left")
      const msg = message("plan this")
      assertDelivered(yield* send(sender.client, "run-1", msg), "queued")
      const next = yield* broker.session({ sessionId: "run-2", name: "planner", cwd: link })
      assert.strictEqual((yield* messageFor(next.client, msg.id)).from.id, "sender")
    }))

  it.effect("a session that takes the name after registering, in a symlink to the departed session's cwd, is given its mail at once", () =>
    Effect.gen(function*() {
      const { link, real } = yield* directories
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender" })
      const old = yield* broker.session({ sessionId: "old-builder", name: "Builder", cwd: real })
      yield* old.client.destroy
      yield* sender.client.next("session_left")
      const successor = yield* broker.session({ sessionId: "new-builder", cwd: link })
      yield* successor.client.send({ type: "presence", name: "builder" })
      yield* successor.client.roundTrip
      const msg = message("for whoever builds")
      assertDelivered(yield* send(sender.client, "old-builder", msg))
      yield* messageFor(successor.client, msg.id)
    }))

  it.effect("a session whose cwd does not exist registers, and its successor of the same name there collects its mail", () =>
    Effect.gen(function*() {
      const { gone } = yield* directories
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender" })
      const old = yield* broker.session({ sessionId: "run-1", name: "Planner", cwd: gone })
      assert.strictEqual(old.registered.sessionId, "run-1")
      yield* old.client.destroy
      yield* sender.client.next("session_left")
      const msg = message("plan this")
      assertDelivered(yield* send(sender.client, "run-1", msg), "queued")
      const next = yield* broker.session({ sessionId: "run-2", name: "planner", cwd: gone })
      assert.strictEqual((yield* messageFor(next.client, msg.id)).from.id, "sender")
    }))
})
