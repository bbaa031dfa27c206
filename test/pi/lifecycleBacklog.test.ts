/**
 * pi's lifecycle events before and after the generation's lifecycle fiber
 * runs (src/pi/lifecycleBacklog.ts): folded into what they amount to, then
 * handed over in order.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { type LifecycleEvent, LifecycleBacklog } from "../../src/pi/lifecycleBacklog.ts"

const collecting = () => {
  const sent: Array<LifecycleEvent> = []
  return { sent, backlog: new LifecycleBacklog((event) => void sent.push(event)) }
}

describe("LifecycleBacklog", () => {
  it("before the fiber runs, a thousand tool calls leave the last status, not two thousand events", () => {
    const { backlog, sent } = collecting()
    for (let i = 0; i < 1_000; i++) {
      backlog.offer({ _tag: "Status", status: "tool:bash" })
      backlog.offer({ _tag: "Status", status: "thinking" })
    }
    assert.isFalse(backlog.live)
    assert.deepStrictEqual(backlog.start(), [{ _tag: "Status", status: "thinking" }])
    assert.deepStrictEqual(sent, [])
  })

  it("the identity's updates are merged, an open turn is kept and an ended one dropped", () => {
    const { backlog } = collecting()
    backlog.offer({ _tag: "Identity", update: { name: "reviewer" } })
    backlog.offer({ _tag: "BeginTurn", message: { from: "s-1", messageId: "m-1" } })
    backlog.offer({ _tag: "EndTurn" })
    backlog.offer({ _tag: "Identity", update: { model: "m2" } })
    backlog.offer({ _tag: "BeginTurn", message: { from: "s-1", messageId: "m-2" } })
    backlog.offer({ _tag: "Status", status: "thinking" })
    assert.deepStrictEqual(backlog.start(), [
      { _tag: "Identity", update: { name: "reviewer", model: "m2" } },
      { _tag: "BeginTurn", message: { from: "s-1", messageId: "m-2" } },
      { _tag: "Status", status: "thinking" }
    ])

    const ended = collecting().backlog
    ended.offer({ _tag: "BeginTurn", message: { from: "s-1", messageId: "m-1" } })
    ended.offer({ _tag: "EndTurn" })
    assert.deepStrictEqual(ended.start(), [])
  })

  it.effect("an Applied before the fiber runs is answered at once; after, it goes to the fiber like any event", () =>
    Effect.gen(function*() {
      const { backlog, sent } = collecting()
      const early = yield* Deferred.make<void>()
      backlog.offer({ _tag: "Applied", done: early })
      assert.isTrue(yield* Deferred.isDone(early))

      assert.deepStrictEqual(backlog.start(), [])
      assert.isTrue(backlog.live)
      const late = yield* Deferred.make<void>()
      backlog.offer({ _tag: "Status", status: "idle" })
      backlog.offer({ _tag: "Applied", done: late })
      assert.isFalse(yield* Deferred.isDone(late), "the fiber answers it once what came before is applied")
      assert.deepStrictEqual(sent, [{ _tag: "Status", status: "idle" }, { _tag: "Applied", done: late }])
    }))
})
