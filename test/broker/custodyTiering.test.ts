/**
 * `PeerCustody.confirm` stays Maglev code when a confirmation first leaves
 * entries pending (docs/performance.md, "Durable per message, thirteenth
 * stop"): in every durable w64 run it was optimized while each confirmation
 * still emptied the FIFO, and deoptimized ("insufficient type feedback") the
 * first time one did not. The drive is test/broker/fixtures/custodyTiering.ts,
 * in its own Node process with V8's natives and deopt trace.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import path from "node:path"

const script = path.join(import.meta.dirname, "fixtures", "custodyTiering.ts")

describe("PeerCustody.confirm under Maglev", () => {
  it("is not deoptimized by the first confirmation that leaves entries pending", () => {
    const run = spawnSync(process.execPath, ["--allow-natives-syntax", "--trace-deopt", script], {
      encoding: "utf8",
      timeout: 20_000
    })
    assert.strictEqual(run.status, 0, run.stderr)
    const lines = run.stdout.split("\n")
    assert.include(lines, "maglev true", "confirm was not Maglev code before the confirmation (nothing tested)")
    const deopts = lines.filter((line) => line.includes("deoptimizing") && line.includes("<JSFunction confirm "))
    assert.deepStrictEqual(deopts, [])
    assert.include(lines, "after true")
    assert.include(lines, "released 2688")
  })
})
