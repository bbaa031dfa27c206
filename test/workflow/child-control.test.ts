/**
 * `monitorChild` (C-WFD-9 with C-WFD-3, C-WFD-10, C-DQ-17): a child's
 * thresholds on a TestClock become control notices to the parent.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as TestClock from "effect/testing/TestClock"
import { monitorChild } from "../../src/workflow/childControl.ts"
import type { RunShape } from "../../src/workflow/NotifyOptions.ts"
import { answerCall, makeRunNotifications, type NotifyPort } from "../../src/workflow/RunNotifications.ts"

const shape: RunShape = { async: true, direct: true, kind: "parallel", intercomAvailable: true }

const recording = () => {
  const sent: Array<{ text: string; wake: boolean }> = []
  const port: NotifyPort = {
    parentSession: "boss",
    send: (_target, text, { wake }) => Effect.sync(() => void sent.push({ text, wake }))
  }
  return { sent, port }
}

const tick = (ms: number) => TestClock.adjust(ms).pipe(Effect.andThen(Effect.yieldNow))

describe("monitorChild", () => {
  it.effect("C-WFD-9, C-DQ-17: 60 s of inactivity sends a needs-attention notice; with an unresolved question it is Waiting for supervisor input", () =>
    Effect.gen(function*() {
      const { sent, port } = recording()
      const questions = { unresolvedFrom: (childId: string) => Effect.succeed(childId === "kid-1" ? ["q-42"] : []) }
      const notifications = makeRunNotifications({ run: "run-3", option: { enabled: true }, shape, port, questions })
      yield* monitorChild(notifications, { target: "worker-1", id: "kid-1" })
      const other = yield* monitorChild(notifications, { target: "worker-2", id: "kid-2" })
      yield* Effect.yieldNow
      yield* tick(30_000)
      yield* other.toolFailed
      yield* other.toolFailed
      yield* other.toolFailed
      yield* tick(30_000)
      assert.deepStrictEqual(sent, [
        { text: "Run run-3: worker-2 needs attention (3 failed tool attempts in a row).", wake: true },
        {
          text: `Run run-3: worker-1 is Waiting for supervisor input on question q-42. Answer it with ${answerCall("q-42")}.`,
          wake: true
        }
      ])
      // C-WFD-10: the 240 s long-running signal is not sent over intercom by default.
      yield* tick(300_000)
      assert.notInclude(sent.map((s) => s.text).join("\n"), "running for")
    }))

  it.effect("C-WFD-3: with delivery result, the thresholds send no control notice", () =>
    Effect.gen(function*() {
      const { sent, port } = recording()
      const notifications = makeRunNotifications({ run: "run-3", option: { delivery: "result" }, shape, port })
      yield* monitorChild(notifications, { target: "worker-1" })
      yield* Effect.yieldNow
      yield* tick(300_000)
      assert.deepStrictEqual(sent, [])
    }))
})
