/** The fuzzer's pure parts: the frame meter, the blob builders, its command line. */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit } from "effect"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as CliError from "effect/cli/CliError"
import * as Command from "effect/cli/Command"
import { blob, mark, spliceJson } from "../../src/fuzz/attacks/blobs.ts"
import { ATTACKS, selectAttacks } from "../../src/fuzz/attacks/catalogue.ts"
import { replayCommand } from "../../src/fuzz/Campaign.ts"
import { isFindingKind, KNOWN_FINDINGS } from "../../src/fuzz/Findings.ts"
import { FrameMeter, type MeteredFrame } from "../../src/fuzz/FrameMeter.ts"
import { EndingSignal, fuzzCommand, type FuzzRequest, fuzzTeardown, MAX_TIMEOUT_MS } from "../../src/fuzz/fuzzCommand.ts"
import { ExitCode } from "../../src/cli/exit.ts"
import { encodeFrames, MAX_FRAME_BYTES } from "../../src/protocol/index.ts"
import { header } from "../support/bytes.ts"

describe("FrameMeter", () => {
  it("measures frames however the bytes are split, and keeps the text of those within the limit", () => {
    const bytes = encodeFrames(["{\"type\":\"a\"}", "", "{\"type\":\"é\"}"])
    for (const step of [1, 2, 3, 7, bytes.length]) {
      const meter = new FrameMeter()
      const out: Array<MeteredFrame> = []
      for (let at = 0; at < bytes.length; at += step) meter.push(bytes.subarray(at, at + step), out)
      assert.deepStrictEqual(out.map((f) => f.text), ["{\"type\":\"a\"}", "", "{\"type\":\"é\"}"], `step ${step}`)
      assert.deepStrictEqual(out.map((f) => f.bytes), [12, 0, 13])
      assert.isFalse(meter.pending)
    }
  })

  it("measures a frame over 1 MiB without refusing it, and reads on past it", () => {
    const big = MAX_FRAME_BYTES + 10
    const meter = new FrameMeter()
    const out: Array<MeteredFrame> = []
    meter.push(Buffer.concat([header(big), Buffer.alloc(big, 0x20), encodeFrames(["{}"])]), out)
    assert.deepStrictEqual(out.map((f) => [f.bytes, f.text]), [[big, undefined], [2, "{}"]])
    assert.strictEqual(meter.largest, big)
    assert.strictEqual(meter.oversized, 1)
  })
})

describe("blobs", () => {
  it("splices raw bytes into JSON where the markers are", () => {
    const bytes = spliceJson({ a: mark(0), b: [mark(1)] }, [blob("invalid-utf8", 3), blob("ascii", 2)])
    assert.deepStrictEqual([...bytes], [...Buffer.from("{\"a\":\""), 0xff, 0xff, 0xff, ...Buffer.from("\",\"b\":[\"xx\"]}")])
    // Invalid UTF-8 comes back three times larger: 3 bytes in, 3 × U+FFFD (9 bytes) out.
    assert.strictEqual(bytes.length, 6 + 3 + 13)
    assert.strictEqual(Buffer.byteLength(JSON.stringify(JSON.parse(bytes.toString("utf8")))), 6 + 9 + 13)
  })
})

describe("the catalogue", () => {
  it("has unique kinds, and selects by kind or category", () => {
    assert.strictEqual(new Set(ATTACKS.map((a) => a.kind)).size, ATTACKS.length)
    const selected = selectAttacks(["garbage", "slow", "nonsense"])
    assert.deepStrictEqual(selected.attacks.map((a) => a.kind), ["garbage", "slow-drip"])
    assert.deepStrictEqual(selected.unknown, ["nonsense"])
  })
})

describe("npm run fuzz", () => {
  const parse = (args: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const requests: Array<FuzzRequest> = []
      yield* Command.runWith(fuzzCommand((request) => Effect.sync(() => requests.push(request))), { version: "test" })(args)
      return requests
    })

  it.effect("parses a replay line back into the campaign it came from", () =>
    Effect.gen(function*() {
      const [request] = yield* parse(["--seed", "7", "--frames", "500", "--attackers", "3", "--in-process", "--light", "--only", "forged,slow", "--tolerate", "known"])
      assert.isDefined(request)
      assert.strictEqual(request?.seed, 7)
      assert.deepStrictEqual({ ...request?.campaign, tolerate: undefined }, {
        frames: 500,
        attackers: 3,
        mode: "in-process",
        light: true,
        only: ["forged", "slow"],
        tolerate: undefined
      })
      assert.deepStrictEqual(request?.campaign.tolerate, Object.keys(KNOWN_FINDINGS).filter(isFindingKind))
      const line = replayCommand({ seed: 7, ...(request?.campaign ?? { frames: 0 }) })
      assert.strictEqual(line, "npm run fuzz -- --seed 7 --frames 500 --attackers 3 --in-process --light --only forged,slow")
      // What a run tolerated is part of its verdict: its replay tolerates the same.
      const [tolerant] = yield* parse(["--seed", "8", "--frames", "20", "--tolerate", "health-late,memory-retained"])
      assert.strictEqual(
        replayCommand({ seed: 8, ...(tolerant?.campaign ?? { frames: 0 }) }),
        "npm run fuzz -- --seed 8 --frames 20 --attackers 8 --tolerate health-late,memory-retained"
      )
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("refuses unknown --only and --tolerate names with exit code 2 before anything runs", () =>
    Effect.gen(function*() {
      // Before, `--only forgd` ran every attack (nothing selected meant all) and `--tolerate` dropped typos silently.
      for (const args of [["--only", "forgd"], ["--only", "garbage,nonsense"], ["--tolerate", "healthy-los"]]) {
        const outcome = yield* Effect.exit(parse(args))
        assert.isTrue(Exit.isFailure(outcome), args.join(" "))
        const error = Exit.isFailure(outcome) ? Cause.squash(outcome.cause) : undefined
        assert.strictEqual(error instanceof ExitCode ? error.code : undefined, 2, args.join(" "))
      }
      const known = yield* parse(["--only", "garbage,forged", "--tolerate", "known"])
      assert.strictEqual(known.length, 1)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("takes the campaign's timeouts as flags, and keeps them in the replay line", () =>
    Effect.gen(function*() {
      const [request] = yield* parse(["--seed", "9", "--frames", "30", "--hung-after-ms", "5000", "--final-round-trips-ms", "2000"])
      assert.deepStrictEqual(request?.campaign.timeouts, { hungAfterMs: 5_000, finalRoundTripsMs: 2_000 })
      const line = replayCommand({ seed: 9, ...(request?.campaign ?? { frames: 0 }) })
      assert.strictEqual(line, "npm run fuzz -- --seed 9 --frames 30 --attackers 8 --hung-after-ms 5000 --final-round-trips-ms 2000")
      const [replayed] = yield* parse(line.split(" ").slice(4))
      assert.deepStrictEqual(replayed?.campaign, request?.campaign)
      const [all] = yield* parse(["--run-limit-ms", "1", "--memory-report-ms", String(MAX_TIMEOUT_MS)])
      assert.deepStrictEqual(all?.campaign.timeouts, { runLimitMs: 1, memoryReportMs: MAX_TIMEOUT_MS })
      const [none] = yield* parse([])
      assert.isUndefined(none?.campaign.timeouts)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("refuses a timeout that is not a whole number of ms from 1 up with exit code 2, before anything runs", () =>
    Effect.gen(function*() {
      const bad = [
        ["--hung-after-ms", "0"],
        ["--run-limit-ms", "-5"],
        ["--final-round-trips-ms", "1.5"],
        ["--memory-report-ms", "soon"],
        ["--final-round-trips-ms", String(MAX_TIMEOUT_MS + 1)]
      ]
      for (const args of bad) {
        const requests: Array<FuzzRequest> = []
        const outcome = yield* Effect.exit(
          Command.runWith(fuzzCommand((request) => Effect.sync(() => requests.push(request))), { version: "test" })(args)
        )
        const codes: Array<number> = []
        fuzzTeardown(outcome, (code) => codes.push(code))
        assert.deepStrictEqual([codes, requests.length], [[2], 0], args.join(" "))
        // A bad value of a flag it knows, not an unknown flag.
        const error = Exit.isFailure(outcome) ? Cause.squash(outcome.cause) : undefined
        const invalid = CliError.isCliError(error) && error._tag === "ShowHelp"
          ? error.errors.map((e) => e._tag === "InvalidValue" ? e.option : e._tag)
          : []
        assert.deepStrictEqual(invalid, [args[0]?.slice(2)], args.join(" "))
      }
    }).pipe(Effect.provide(NodeServices.layer)))

  it("exits 128 + the signal, not 0, when a signal ends the campaign (its exit code is its verdict)", () => {
    const codes: Array<number> = []
    const endedBy = (signal: NodeJS.Signals) => Exit.failCause(Cause.annotate(Cause.interrupt(), Context.make(EndingSignal, signal)))
    fuzzTeardown(endedBy("SIGTERM"), (code) => codes.push(code))
    fuzzTeardown(endedBy("SIGINT"), (code) => codes.push(code))
    fuzzTeardown(Exit.interrupt(), (code) => codes.push(code))
    fuzzTeardown(Exit.void, (code) => codes.push(code))
    fuzzTeardown(Exit.fail(new ExitCode({ code: 1 })), (code) => codes.push(code))
    assert.deepStrictEqual(codes, [143, 130, 130, 0, 1])
  })
})
