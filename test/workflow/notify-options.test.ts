/**
 * The workflow `intercom` option and its resolution (C-WFD-1…5, C-WFD-8,
 * C-WFD-10, C-WFD-14, open questions 8 and 9).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import fc from "fast-check"
import {
  DEFAULT_LIFECYCLE_NOTIFY_ON,
  DEFAULT_NOTIFY_CHANNELS,
  DEFAULT_SUBAGENT_NOTIFY_ON,
  DEFAULT_WORKFLOW_NOTIFY_ON,
  INTERCOM_DELIVERIES,
  IntercomOption,
  intercomCarries,
  resolveDelivery,
  resolveLifecycleNotifyOn,
  resolveNotifyChannels,
  resolveNotifyOn,
  resolveTarget,
  type RunShape,
  sendsControl,
  sendsResult
} from "../../src/workflow/NotifyOptions.ts"

const asyncParallel: RunShape = { async: true, direct: true, kind: "parallel", intercomAvailable: true }
const sorted = (set: ReadonlySet<string>) => [...set].sort()

describe("NotifyOptions", () => {
  it.effect("C-WFD-1: the option schema takes enabled, delivery, parentSession, notifyOn and refuses an unknown delivery", () =>
    Effect.gen(function*() {
      const decode = Schema.decodeUnknownEffect(IntercomOption)
      const ok = yield* decode({ enabled: true, delivery: "notify", parentSession: "boss", notifyOn: ["failed"] })
      assert.deepStrictEqual(ok, { enabled: true, delivery: "notify", parentSession: "boss", notifyOn: ["failed"] })
      const bad = yield* Effect.flip(decode({ delivery: "loud" }))
      assert.include(bad.message, "control-and-result")
    }))

  it("C-WFD-2: the resolution order, enabled:false first (open question 8)", () => {
    assert.strictEqual(resolveDelivery({ enabled: false, delivery: "result" }, asyncParallel), "off")
    assert.strictEqual(resolveDelivery({ enabled: true, delivery: "notify" }, asyncParallel), "notify")
    assert.strictEqual(resolveDelivery({ delivery: "result" }, { ...asyncParallel, async: false }), "result")
    assert.strictEqual(resolveDelivery({ enabled: true }, { ...asyncParallel, async: false }), "control-and-result")
    assert.strictEqual(resolveDelivery(undefined, asyncParallel), "control-and-result")
    assert.strictEqual(resolveDelivery({}, { ...asyncParallel, kind: "chain" }), "control-and-result")
    assert.strictEqual(resolveDelivery({}, { ...asyncParallel, kind: "single" }), "off")
    assert.strictEqual(resolveDelivery({}, { ...asyncParallel, async: false }), "off")
    assert.strictEqual(resolveDelivery({}, { ...asyncParallel, direct: false }), "off")
    assert.strictEqual(resolveDelivery({}, { ...asyncParallel, intercomAvailable: false }), "off")
  })

  it("C-WFD-2: enabled:false is off whatever else is set (property)", () => {
    fc.assert(fc.property(
      fc.option(fc.constantFrom(...INTERCOM_DELIVERIES), { nil: undefined }),
      fc.boolean(),
      fc.boolean(),
      fc.constantFrom("single" as const, "parallel" as const, "chain" as const),
      (delivery, async, available, kind) => {
        const option = delivery === undefined ? { enabled: false } : { enabled: false, delivery }
        return resolveDelivery(option, { async, direct: true, kind, intercomAvailable: available }) === "off"
      }
    ))
  })

  it("C-WFD-3: notify sends control only, result the result only, control-and-result both, off nothing", () => {
    assert.deepStrictEqual(
      INTERCOM_DELIVERIES.map((d) => [d, sendsControl(d), sendsResult(d)]),
      [["off", false, false], ["notify", true, false], ["result", false, true], ["control-and-result", true, true]]
    )
  })

  it("C-WFD-4: an explicit parentSession wins, else the port's parent; blank counts as absent", () => {
    assert.strictEqual(resolveTarget({ parentSession: "boss" }, "port-parent"), "boss")
    assert.strictEqual(resolveTarget({ parentSession: "  " }, "port-parent"), "port-parent")
    assert.strictEqual(resolveTarget(undefined, "port-parent"), "port-parent")
    assert.strictEqual(resolveTarget({}, undefined), undefined)
  })

  it("C-WFD-5, C-WFD-8: unknown entries dropped, explicit empty means nothing, all-invalid falls back a level, then to the default", () => {
    const r1 = resolveNotifyOn([["failed", "bogus"], ["completed"]])
    assert.deepStrictEqual(sorted(r1.values), ["failed"])
    assert.isTrue(r1.explicit)
    const empty = resolveNotifyOn([[], ["completed"]])
    assert.deepStrictEqual(sorted(empty.values), [])
    const fallback = resolveNotifyOn([["bogus"], ["completed", "nope"]])
    assert.deepStrictEqual(sorted(fallback.values), ["completed"])
    const toDefault = resolveNotifyOn([["bogus"], undefined, ["also-bogus"]])
    assert.deepStrictEqual(sorted(toDefault.values), [...DEFAULT_SUBAGENT_NOTIFY_ON].sort())
    assert.isFalse(toDefault.explicit)
    assert.deepStrictEqual(sorted(resolveNotifyOn([], DEFAULT_WORKFLOW_NOTIFY_ON).values), [...DEFAULT_WORKFLOW_NOTIFY_ON].sort())
    assert.deepStrictEqual(sorted(resolveNotifyChannels([undefined]).values), [...DEFAULT_NOTIFY_CHANNELS].sort())
    assert.deepStrictEqual(sorted(resolveNotifyChannels([["intercom", "x"]]).values), ["intercom"])
  })

  it("C-WFD-10: active_long_running never goes over intercom by default, only when a user listed it (open question 9)", () => {
    const byDefault = resolveNotifyOn([undefined])
    assert.isTrue(byDefault.values.has("active_long_running"))
    assert.isFalse(intercomCarries("active_long_running", byDefault))
    assert.isTrue(intercomCarries("needs_attention", byDefault))
    assert.isTrue(intercomCarries("active_long_running", resolveNotifyOn([["active_long_running"]])))
    assert.isFalse(intercomCarries("failed", resolveNotifyOn([["needs_attention"]])))
  })

  it("C-WFD-14: lifecycle notifyOn defaults to completed, failed, blocked, awaiting_input", () => {
    assert.deepStrictEqual([...resolveLifecycleNotifyOn([undefined]).values], [...DEFAULT_LIFECYCLE_NOTIFY_ON])
    assert.deepStrictEqual([...DEFAULT_LIFECYCLE_NOTIFY_ON], ["completed", "failed", "blocked", "awaiting_input"])
  })
})
