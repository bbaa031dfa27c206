/**
 * ClientInstances' retained heap at its bounds (docs/security.md, "Limits":
 * its share of `PROMISES.retainedBytes` is MAX_BYTES). The table is filled
 * past its bounds the way the broker fills it, in the shapes of
 * test/broker/fixtures/clientInstancesHeap.ts — the longest ids and
 * instanceIds the protocol takes, pi's UUIDs, the smallest scoped entries,
 * scopes padded with whitespace — each in a Node process run with
 * `--expose-gc` and measured after forced GCs.
 *
 * It failed before each of two fixes: short ids in scopes retained 27.1 MB
 * where 25.2 MB were counted (the scope key's rope was not counted:
 * ClientInstances' SCOPED), and scopes padded with whitespace 45.3 MB
 * (`trim`'s slice kept each `register`'s whole scope id alive: `spaceKeyOf`
 * copies it now).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import path from "node:path"
import { MAX_BYTES } from "../../src/broker/ClientInstances.ts"
import { spawnNode } from "../support/process.ts"

const script = path.join(import.meta.dirname, "fixtures", "clientInstancesHeap.ts")

/**
 * What a heap measured after two forced GCs may differ by, run to run, for the same table: a few
 * tens of KiB were seen. The table's counted bytes may fall below what it retains by this at most.
 */
const NOISE = 256 * 1024

const Measured = Schema.Struct({
  shape: Schema.String,
  noted: Schema.Number,
  ids: Schema.Number,
  counted: Schema.Number,
  retained: Schema.Number
})

const decodeMeasured = Schema.decodeUnknownSync(Schema.fromJsonString(Measured))

/** The fixture's measurement of each of `shapes`, in its own process. */
const measure = (shapes: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const child = yield* spawnNode(["--expose-gc", script, ...shapes])
    // Generous for a loaded machine: a bound on a failure report, not a barrier.
    const outcome = yield* Effect.orDie(child.waitExit("90 seconds"))
    assert.strictEqual(outcome.code, 0, child.stderr())
    return child.stdout().trim().split("\n").map((line) => decodeMeasured(line))
  }))

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`

describe("ClientInstances' retained heap at its bounds", () => {
  it.live(`stays within MAX_BYTES (${MAX_BYTES} bytes), and never above what the table counts by more than GC noise`, () =>
    Effect.gen(function*() {
      // Two processes at once: the machine has two cores.
      const runs = yield* Effect.all([measure(["longest", "short-scoped"]), measure(["typical", "padded-scope"])], {
        concurrency: 2
      })
      const measured = runs.flat()
      assert.deepStrictEqual(measured.map((one) => one.shape).sort(), ["longest", "padded-scope", "short-scoped", "typical"])
      for (const { shape, noted, ids, counted, retained } of measured) {
        const at = `${shape}: ${ids} ids kept of ${noted}, counted ${mb(counted)}, retained ${mb(retained)}`
        assert.isBelow(ids, noted, `${at}: the table never reached its bounds`)
        assert.isAtMost(counted, MAX_BYTES, at)
        assert.isAtMost(retained, MAX_BYTES, `${at}: more than MAX_BYTES`)
        assert.isAtMost(retained, counted + NOISE, `${at}: more than counted`)
      }
    }), 120_000)
})
