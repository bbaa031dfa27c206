/** The child's reservation table as a state machine (C-ORD-11, C-ORD-12), against a model of what it must allow. */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { DetachReservations } from "../../src/workflow/DetachReservations.ts"
import { type DetachRoute, reservationKey, sameRoute } from "../../src/workflow/DetachRoute.ts"

const routeArb: fc.Arbitrary<DetachRoute> = fc.record({
  requestId: fc.constantFrom("m1", "m2"),
  messageId: fc.constantFrom("m1", "m2"),
  childIntercomTarget: fc.constantFrom("child", "other"),
  senderId: fc.constantFrom("s1", "s2"),
  runtimeGeneration: fc.constantFrom("g1", "g2")
})

type Op =
  | { readonly op: "reserve"; readonly route: DetachRoute }
  | { readonly op: "commit"; readonly route: DetachRoute }
  | { readonly op: "wait"; readonly ms: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("reserve" as const), route: routeArb }),
  fc.record({ op: fc.constant("commit" as const), route: routeArb }),
  fc.record({ op: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 700 }) })
)

describe("DetachReservations", () => {
  it("reserves only new identities, lets uncommitted ones lapse after 1 s, commits only identical live routes (C-ORD-11, C-ORD-12)", () => {
    fc.assert(fc.property(fc.array(opArb, { maxLength: 50 }), (program) => {
      const table = new DetachReservations()
      /** Per identity: the last successful reservation (route and time), and whether it was committed. */
      const model = new Map<string, { route: DetachRoute; at: number; committed: boolean }>()
      let now = 0
      for (const step of program) {
        if (step.op === "wait") {
          now += step.ms
          continue
        }
        const key = reservationKey(step.route)
        const known = model.get(key)
        const live = known !== undefined && !known.committed && now < known.at + 1000
        if (step.op === "reserve") {
          const expected = known === undefined ? true : !known.committed && !live
          assert.strictEqual(table.reserve(step.route, now), expected)
          if (expected) model.set(key, { route: step.route, at: now, committed: false })
        } else {
          const expected = live && known !== undefined && sameRoute(known.route, step.route)
          assert.strictEqual(table.commit(step.route, now), expected)
          if (expected && known !== undefined) known.committed = true
        }
      }
    }), { numRuns: 500 })
  })
})
