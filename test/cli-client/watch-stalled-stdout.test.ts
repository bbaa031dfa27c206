/**
 * `intercom watch` whose stdout is a pipe whose reader stopped reading (not
 * closed): once the pipe and the reader's buffer are full, a message line's
 * write never completes. SIGTERM must still end the watch — the hand-off's
 * attempt is uninterruptible, and the watch's `show` lets the interruption
 * cut the write short — and it leaves quietly.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { awaitGone } from "../support/process.ts"
import { makeAgent, runCli, startWatch } from "./support.ts"

describe("intercom watch with a stalled stdout reader", () => {
  it.live("SIGTERM ends a watch whose message line waits on a full stdout pipe, with no warning", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      yield* startWatch(agent, "p", ["--no-stdin"])
      const watch = yield* startWatch(agent, "w2", ["--no-stdin"])
      watch.child.stdout?.pause() // the reader stops reading: the pipe fills, then the reader's buffer
      // 8 lines of 45,000 characters: far past a 64 KiB pipe and the paused reader's buffer.
      const big = "x".repeat(45_000)
      for (let i = 0; i < 8; i++) {
        const sent = yield* runCli(agent, ["send", "--name", "p", "w2", `${i} ${big}`])
        assert.strictEqual(sent.code, 0, sent.stderr)
      }
      yield* watch.kill("SIGTERM")
      const gone = yield* awaitGone(watch.pid, "15 seconds")
      watch.child.stdout?.resume()
      assert.isTrue(gone, `the watch did not exit within 15 s of SIGTERM; stderr: ${watch.stderr()}`)
      // Read once the child closed: both pipes are drained.
      yield* watch.waitExit("10 seconds")
      assert.notMatch(watch.stderr(), /abandoned|did not take/, watch.stderr())
    }), 90_000)
})
