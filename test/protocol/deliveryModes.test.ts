/**
 * `checkDelivery` (C-DLV-2…4, C-ASK-10): the one rule set the session, the
 * CLI, the client and the broker share. A reference model of the contract is
 * compared with it over every combination fast-check draws.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { checkDelivery, type DeliveryKind, isDeliveryRefusal, STEER } from "../../src/protocol/deliveryModes.ts"

const field = <A>(values: ReadonlyArray<A>) => fc.option(fc.constantFrom(...values), { nil: undefined })

const inputs = fc.record({
  delivery: field<unknown>(["steer", "queue", "passive", "loud", 3]),
  queueMode: field<unknown>(["stack", "replace", "swap"]),
  threadId: field<unknown>(["build", "", "  ", "a\u0001b", 7]),
  passive: field<unknown>([true, false, "yes"])
})
const kinds = fc.constantFrom<DeliveryKind>("send", "ask", "reply")

/** The contract, written out case by case: the mode a valid input means, or undefined when it is invalid. */
const model = (input: {
  readonly delivery: unknown
  readonly queueMode: unknown
  readonly threadId: unknown
  readonly passive: unknown
}, kind: DeliveryKind): string | undefined => {
  const { delivery, queueMode, threadId, passive } = input
  if (delivery !== undefined && delivery !== "steer" && delivery !== "queue" && delivery !== "passive") return undefined
  if (passive !== undefined && typeof passive !== "boolean") return undefined
  if (passive === true && (kind !== "send" || (delivery !== undefined && delivery !== "passive"))) return undefined
  if (passive === false && delivery === "passive") return undefined
  const mode = passive === true ? "passive" : delivery ?? "steer"
  if (kind === "ask" && mode === "passive") return undefined
  if (queueMode !== undefined && (mode !== "queue" || (queueMode !== "stack" && queueMode !== "replace"))) return undefined
  if (queueMode === "replace") {
    if (typeof threadId !== "string" || threadId.trim() === "" || /[\u0000-\u001f]/.test(threadId)) return undefined
    return `queue/replace/${threadId}`
  }
  if (threadId !== undefined) return undefined
  return queueMode === undefined ? mode : `${mode}/${queueMode}`
}

describe("checkDelivery", () => {
  it("agrees with the contract's rules for every combination", () => {
    fc.assert(fc.property(inputs, kinds, (input, kind) => {
      const expected = model(input, kind)
      const actual = checkDelivery(input, kind)
      if (expected === undefined) {
        assert.isTrue(isDeliveryRefusal(actual), `expected a refusal for ${JSON.stringify(input)} (${kind})`)
        return
      }
      assert.isFalse(isDeliveryRefusal(actual), `expected ${expected} for ${JSON.stringify(input)} (${kind})`)
      if (isDeliveryRefusal(actual)) return
      const shown = [actual.delivery, actual.queueMode, actual.threadId].filter((part) => part !== undefined).join("/")
      assert.strictEqual(shown, expected)
    }), { numRuns: 2000 })
  })

  it("defaults to steer when nothing is given (C-DLV-2)", () => {
    assert.strictEqual(checkDelivery({}, "send"), STEER)
    assert.strictEqual(checkDelivery({}, "reply"), STEER)
    assert.strictEqual(checkDelivery({}, "ask"), STEER)
  })

  it("names what was wrong and what to do", () => {
    const reason = (input: Parameters<typeof checkDelivery>[0], kind: DeliveryKind) => {
      const result = checkDelivery(input, kind)
      return isDeliveryRefusal(result) ? result.reason : ""
    }
    assert.include(reason({ delivery: "passive" }, "ask"), "An ask is never passive")
    assert.include(reason({ passive: true }, "ask"), "an ask is never passive")
    assert.include(reason({ passive: true }, "reply"), "send-only")
    assert.include(reason({ passive: true, delivery: "queue" }, "send"), "conflicts")
    assert.include(reason({ delivery: "queue", queueMode: "replace" }, "send"), "needs a threadId")
    assert.include(reason({ threadId: "t" }, "send"), "threadId is only valid")
    assert.include(reason({ queueMode: "stack" }, "send"), `queueMode is only valid with delivery: "queue"`)
  })
})
