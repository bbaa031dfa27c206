/**
 * examples/workflow-engine.ts runs, and its timeline is in the order the
 * workflow rules promise. The example is a deterministic script (every step
 * waits on a barrier: a message handed to the supervisor's workflow layer,
 * the detach's release, the interview's answer), so the whole timeline is
 * checked line by line. It is imported rather than spawned: Node 24 runs the
 * file as is (`node examples/workflow-engine.ts`), older Nodes do not.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runWorkflowEngine } from "../../examples/workflow-engine.ts"

describe("examples/workflow-engine.ts", () => {
  it.live("a parallel stage of 8 workers under a supervisor: the timeline is in the promised order", () =>
    Effect.gen(function*() {
      const lines = yield* runWorkflowEngine
      const background = [1, 2, 4, 5, 6, 7]
      assert.deepStrictEqual(lines, [
        // C-GRP-9: the items of one parallel set share one generated group.
        "launched 8 workers (subagent-worker-run-1-1 … subagent-worker-run-1-8), sharing 1 generated group",
        "supervisor busy: foreground subagent call on worker-0",
        ...[...background, 3].map((i) => `worker-${i} → supervisor: progress "worker-${i} halfway"`),
        "worker-3 → supervisor: interview request (waits for the answer)",
        // C-ORD-10…13: the foreground child's message detaches it, then steers the busy supervisor.
        `worker-0 → supervisor: progress "found the cause; continuing in the background"`,
        "worker-0 detached: the supervisor's subagent call returns",
        "supervisor steered by worker-0 progress: found the cause; continuing in the background",
        // C-ORD-25/27/31: each terminal right after that worker's earlier messages, while the supervisor is busy.
        ...background.flatMap((i) => [`supervisor ← worker-${i} progress: worker-${i} halfway`, `supervisor ← worker-${i} completed`]),
        // C-DLV-10: idle, the queue flushes as one batch; C-ORD-26: the ask was never claimed by a barrier.
        "supervisor turn with 2 message(s): worker-3 progress: worker-3 halfway; worker-3 interview request",
        "supervisor answers worker-3's interview",
        "worker-3 got the answer: stable",
        `worker-3 → supervisor: progress "worker-3 done with the stable API"`,
        `worker-0 → supervisor: progress "fix ready"`,
        "supervisor ← worker-3 progress: worker-3 done with the stable API",
        "supervisor ← worker-3 completed",
        // A detached child's later message is an ordinary one: it goes with its terminal.
        "supervisor ← worker-0 progress: fix ready",
        "supervisor ← worker-0 completed",
        "run ended"
      ])
      // Nothing reached the supervisor twice.
      const handedOver = lines.filter((line) => line.startsWith("supervisor ← ") || line.startsWith("supervisor steered"))
      assert.strictEqual(new Set(handedOver).size, handedOver.length)
    }), 60_000)
})
