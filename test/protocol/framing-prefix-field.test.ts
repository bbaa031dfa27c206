/**
 * `FrameDecoder` gathers a split length prefix in a number field
 * (`headerValue`), at most three bytes of it; the whole prefix is read into a
 * local. Were a prefix of 2^31 or more — any client can send one; it is
 * refused `FrameTooLarge` — stored in the field, V8 would turn the field's
 * representation to a boxed double for every `FrameDecoder` made afterwards:
 * a heap number more per connection (+15 B measured), against the ~224 B per
 * idle session the number saves over a Buffer (review revidle #1).
 *
 * Measured in a child process (a fresh isolate: no other test's decoder may
 * have changed the field first), with `--expose-gc`: the heap per decoder,
 * each having gathered a small split prefix, before and after one decoder
 * gathered a split prefix of 0xffffffff.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as path from "node:path"

const framing = path.resolve(import.meta.dirname, "../../src/protocol/framing.ts")

const script = `
import { FrameDecoder } from ${JSON.stringify(framing)}
const N = 20000
const perDecoder = () => {
  globalThis.gc()
  const before = process.memoryUsage().heapUsed
  const keep = []
  for (let i = 0; i < N; i++) {
    const d = new FrameDecoder()
    d.push(Buffer.from([0, 0]), [])
    d.push(Buffer.from([0, 2, 0x68, 0x69]), [])
    keep.push(d)
  }
  globalThis.gc()
  const bytes = (process.memoryUsage().heapUsed - before) / N
  if (keep.length !== N) throw new Error("kept")
  return bytes
}
perDecoder()
const clean = perDecoder()
const hostile = new FrameDecoder()
hostile.push(Buffer.from([0xff, 0xff]), [])
const refused = hostile.push(Buffer.from([0xff, 0xff]), [])
if (refused === undefined) throw new Error("not refused")
const after = perDecoder()
console.log(JSON.stringify({ clean, after }))
`

describe("FrameDecoder's split-prefix number field", () => {
  it("one refused split length prefix >= 2^31 does not make every later decoder bigger", () => {
    const major = Number(process.versions.node.split(".")[0])
    const flags = major < 23 ? ["--experimental-strip-types", "--no-warnings"] : []
    const out = execFileSync(process.execPath, [...flags, "--expose-gc", "--input-type=module", "-e", script], {
      encoding: "utf8"
    })
    const parsed: unknown = JSON.parse(out.trim().split("\n").at(-1) ?? "null")
    const clean: unknown = typeof parsed === "object" && parsed !== null ? Reflect.get(parsed, "clean") : undefined
    const after: unknown = typeof parsed === "object" && parsed !== null ? Reflect.get(parsed, "after") : undefined
    if (typeof clean !== "number" || typeof after !== "number") return assert.fail(`no measurement: ${out}`)
    // Same decoders before and after: anything over noise is the field's box.
    assert.isBelow(after - clean, 8, `heap per decoder ${clean.toFixed(1)} B before, ${after.toFixed(1)} B after`)
  }, 60_000)
})
