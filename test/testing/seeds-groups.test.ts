/**
 * The seed sweep with groups (docs/testing.md, "Groups and supervisors"):
 * sessions over two groups, a supervisor and its delegated child, supervisor
 * traffic and plain sends into the other group mixed into the usual
 * workload with faults; every invariant, `cross-group` included, must hold.
 * Its own file, so vitest's workers run it beside the standard sweep.
 */
import { assert, describe } from "@effect/vitest"
import { sweepBlocks } from "./sweep.ts"

describe("simulation sweep with groups", () => {
  sweepBlocks(" with groups", 1, 150, { groups: true }, (summary, text) => {
    // The sweep exercises what it claims to: refusals into the other group, and the channel both ways.
    assert.isAbove(summary.groups.refusedCrossGroup, 0, text)
    assert.isAbove(summary.groups.refusedNotFound, 0, text)
    assert.isAbove(summary.groups.repliesBack, 0, text)
  })
})
