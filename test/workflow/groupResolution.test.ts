/**
 * Group resolution for stages and children (C-GRP-8…11).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import {
  canUseIntercom,
  groupChoice,
  type GroupOption,
  resolveChildGroup,
  resolveStageGroup
} from "../../src/workflow/groupResolution.ts"

const casing = (word: string) =>
  fc.tuple(fc.array(fc.boolean(), { minLength: word.length, maxLength: word.length }), fc.stringMatching(/^[ \t]{0,3}$/), fc.stringMatching(/^[ \t]{0,3}$/))
    .map(([upper, before, after]) => before + [...word].map((c, i) => upper[i] ? c.toUpperCase() : c).join("") + after)

const option: fc.Arbitrary<GroupOption> = fc.oneof(
  fc.constant(undefined),
  fc.boolean(),
  fc.constantFrom("", "  ", "team", " ops ", "auto", "TRUE")
)

describe("group resolution", () => {
  it("C-GRP-8: true and the strings true/auto in any case and spacing ask for a generated group, never a name", () => {
    assert.deepStrictEqual(groupChoice(true), { _tag: "Auto" })
    fc.assert(fc.property(fc.oneof(casing("true"), casing("auto")), (text) => {
      assert.deepStrictEqual(groupChoice(text), { _tag: "Auto" })
    }))
    assert.deepStrictEqual(groupChoice(" autos "), { _tag: "Named", group: "autos" })
    assert.isUndefined(groupChoice(false))
    assert.isUndefined(groupChoice("   "))
  })

  it("C-GRP-9: auto on a parallel set gives every item of the set one shared key, and another set another", () => {
    const items = ["a", "b", "c"].map((id) => resolveStageGroup({ parallelStep: "auto" }, { runId: "r1", id, parallelSetId: "p1" }, {}))
    assert.strictEqual(new Set(items.map((d) => JSON.stringify(d))).size, 1)
    assert.strictEqual(items[0]!._tag, "Generated")
    const other = resolveStageGroup({ item: true }, { runId: "r1", id: "a", parallelSetId: "p2" }, {})
    assert.notDeepEqual(other, items[0])
    // Outside a parallel set, a stage-level auto is the stage's own.
    const x = resolveStageGroup({ stage: true }, { runId: "r1", id: "x" }, {})
    const y = resolveStageGroup({ stage: true }, { runId: "r1", id: "y" }, {})
    assert.notDeepEqual(x, y)
  })

  it("C-GRP-10 (property): a stage's group comes from the most specific level that sets one", () => {
    fc.assert(fc.property(option, option, option, option, (item, stage, parallelStep, run) => {
      const placement = { runId: "r1", id: "s1", parallelSetId: "p1" }
      const decision = resolveStageGroup({ item, stage, parallelStep, run }, placement, {})
      const first = [item, stage, parallelStep, run].map(groupChoice).find((choice) => choice !== undefined)
      if (first === undefined) assert.deepStrictEqual(decision, { _tag: "HomeGroup" })
      else if (first._tag === "Named") assert.deepStrictEqual(decision, first)
      else assert.strictEqual(decision._tag, "Generated")
    }))
  })

  it("C-GRP-9/10 (property): a run-level auto is one group for the whole run; a parallel-step auto stays the set's", () => {
    const runAuto = fc.oneof(fc.constant<GroupOption>(true), casing("true"), casing("auto"))
    const setId = fc.option(fc.constantFrom("p1", "p2", "p3"), { nil: undefined })
    fc.assert(fc.property(runAuto, fc.array(fc.tuple(fc.constantFrom("plan", "review-a", "review-b", "fix"), setId), { minLength: 2, maxLength: 6 }), (run, stages) => {
      const keys = stages.map(([id, parallelSetId]) => resolveStageGroup({ run }, { runId: "r1", id, parallelSetId }, {}))
      assert.strictEqual(new Set(keys.map((d) => JSON.stringify(d))).size, 1)
      assert.strictEqual(keys[0]!._tag, "Generated")
    }))
    // A parallel-step auto still outranks the run's: the set gets its own group, apart from the run's.
    const planner = resolveStageGroup({ run: true }, { runId: "r1", id: "plan" }, {})
    const reviewers = ["a", "b"].map((id) =>
      resolveStageGroup({ parallelStep: true, run: true }, { runId: "r1", id, parallelSetId: "p1" }, {})
    )
    assert.deepStrictEqual(reviewers[0], reviewers[1])
    assert.notDeepEqual(reviewers[0], planner)
    // A child's own auto in a parallel set is still the set's.
    assert.deepStrictEqual(resolveChildGroup({ child: true }, { runId: "r1", id: "w1", parallelSetId: "p1" }, {}), reviewers[0])
  })

  it("C-GRP-10: a child's group is its own, then the launcher's, then env, then config, then default", () => {
    const at = { runId: "r1", id: "w1" }
    const env = { ATOMIC_INTERCOM_GROUP: " ", PI_INTERCOM_GROUP: "legacy" }
    assert.deepStrictEqual(resolveChildGroup({ child: "own", launcher: "lead", env, config: "cfg" }, at, {}), { _tag: "Named", group: "own" })
    assert.deepStrictEqual(resolveChildGroup({ child: " ", launcher: "lead", env, config: "cfg" }, at, {}), { _tag: "Named", group: "lead" })
    assert.deepStrictEqual(resolveChildGroup({ env, config: "cfg" }, at, {}), { _tag: "Named", group: "legacy" })
    assert.deepStrictEqual(resolveChildGroup({ env: { ATOMIC_INTERCOM_GROUP: "new", PI_INTERCOM_GROUP: "legacy" } }, at, {}), {
      _tag: "Named",
      group: "new"
    })
    assert.deepStrictEqual(resolveChildGroup({ config: "cfg" }, at, {}), { _tag: "Named", group: "cfg" })
    assert.deepStrictEqual(resolveChildGroup({}, at, {}), { _tag: "Named", group: "default" })
    assert.strictEqual(resolveChildGroup({ child: "auto", launcher: "lead" }, at, {})._tag, "Generated")
  })

  it("C-GRP-11: only a stage or child that has intercom or contact_supervisor gets a group", () => {
    assert.isFalse(canUseIntercom({ noTools: true }))
    assert.isFalse(canUseIntercom({ tools: ["read", "bash"] }))
    assert.isFalse(canUseIntercom({ excludeTools: ["intercom", "contact_supervisor"] }))
    assert.isTrue(canUseIntercom({ tools: ["read", "contact_supervisor"] }))
    assert.isTrue(canUseIntercom({ excludeTools: ["intercom"] }))
    assert.isTrue(canUseIntercom({}))
    const at = { runId: "r1", id: "s1" }
    assert.deepStrictEqual(resolveStageGroup({ stage: "team" }, at, { noTools: true }), { _tag: "NoGroup" })
    assert.deepStrictEqual(resolveStageGroup({ stage: "team" }, at, { tools: ["read"] }), { _tag: "NoGroup" })
    assert.deepStrictEqual(resolveStageGroup({ stage: "team" }, at, { tools: ["intercom"], excludeTools: ["intercom"] }), {
      _tag: "NoGroup"
    })
    assert.deepStrictEqual(resolveChildGroup({ child: "team" }, at, { tools: ["read"] }), { _tag: "NoGroup" })
  })
})
