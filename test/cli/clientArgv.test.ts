/**
 * The `send` fast path's argv check (clientArgv.ts): the plain shapes of
 * `send` are taken, everything ambiguous goes to the full program, and an
 * argv the fast path takes means exactly what it means to effect/cli — the
 * same session flags and the same tool parameters — checked by running the
 * real `intercom` command with `runAction` replaced by a recorder.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Command from "effect/cli/Command"
import * as fc from "fast-check"
import { vi } from "vitest"
import { parseSendArgv, sendToolParams } from "../../src/cli/clientArgv.ts"
import { nameProblem } from "../../src/cli/client/identity.ts"
import { intercom } from "../../src/cli/commands.ts"

interface Recorded {
  readonly input: { readonly name: unknown; readonly json: unknown; readonly dir: unknown; readonly group: unknown }
  readonly params: unknown
}

const recorded = vi.hoisted((): Array<Recorded> => [])

vi.mock("../../src/cli/client/run.ts", async () => {
  const { Effect: E } = await import("effect")
  return {
    runAction: (input: Recorded["input"], params: unknown) => E.sync(() => void recorded.push({ input, params }))
  }
})

/** What effect/cli hands `runAction` for `args`, or undefined when it refuses the command line. */
const viaEffectCli = (args: ReadonlyArray<string>): Effect.Effect<Recorded | undefined> =>
  Effect.gen(function*() {
    recorded.length = 0
    const exit = yield* Command.runWith(intercom, { version: "test", renderErrors: false })(args).pipe(
      Effect.provide(NodeServices.layer),
      Effect.exit
    )
    return exit._tag === "Success" && recorded.length === 1 ? recorded[0] : undefined
  })

/** What the fast path hands `runAction` for `args`, or undefined when it leaves them to the full program. */
const viaFastPath = (args: ReadonlyArray<string>): Recorded | undefined => {
  const send = parseSendArgv(args)
  if (send === undefined) return undefined
  return {
    input: {
      name: Option.fromUndefinedOr(send.name),
      json: send.json,
      dir: Option.fromUndefinedOr(send.dir),
      group: Option.fromUndefinedOr(send.group)
    },
    params: sendToolParams(send)
  }
}

const sessionFlags = (recordedInput: Recorded["input"]) => ({
  name: recordedInput.name,
  json: recordedInput.json,
  dir: recordedInput.dir,
  group: recordedInput.group
})

describe("parseSendArgv", () => {
  it("takes send with its flags and words in any order", () => {
    assert.deepStrictEqual(parseSendArgv(["send", "bob", "hi", "there"]), {
      to: "bob",
      words: ["hi", "there"],
      name: undefined,
      json: false,
      dir: undefined,
      group: undefined,
      delivery: undefined,
      queueMode: undefined,
      thread: undefined
    })
    assert.deepStrictEqual(
      parseSendArgv([
        "send",
        "--json",
        "bob",
        "--delivery",
        "queue",
        "hi",
        "--queue-mode",
        "replace",
        "--thread",
        "t1",
        "--name",
        "al",
        "--dir",
        "/a b",
        "--group",
        "g"
      ]),
      {
        to: "bob",
        words: ["hi"],
        name: "al",
        json: true,
        dir: "/a b",
        group: "g",
        delivery: "queue",
        queueMode: "replace",
        thread: "t1"
      }
    )
  })

  it("leaves every other command line to effect/cli", () => {
    const full: ReadonlyArray<ReadonlyArray<string>> = [
      [],
      ["send"],
      ["send", "bob"],
      ["list"],
      ["ask", "bob", "hi"],
      ["intercom", "send", "bob", "hi"],
      ["send", "bob", "hi", "--help"],
      ["send", "bob", "hi", "-h"],
      ["send", "bob", "hi", "--log-level", "debug"],
      ["send", "bob", "--", "-hi"],
      ["send", "bob", "-3"],
      ["send", "bob", "hi", "--name=al"],
      ["send", "bob", "hi", "--name"],
      ["send", "bob", "hi", "--name", "-x"],
      ["send", "bob", "hi", "--name", "a", "--name", "b"],
      ["send", "bob", "hi", "--json", "--json"],
      ["send", "--json", "true", "bob", "hi"],
      ["send", "bob", "--json", "no", "hi"],
      ["send", "bob", "hi", "--dir", " "],
      ["send", "bob", "hi", "--group", ""],
      ["send", "bob", "hi", "--delivery", "later"],
      ["send", "bob", "hi", "--queue-mode", "fifo"],
      ["send", "bob", "hi", "--bogus"]
    ]
    for (const args of full) assert.isUndefined(parseSendArgv(args), args.join(" "))
  })

  it.effect("a command line the fast path takes gives runAction what effect/cli gives it", () =>
    Effect.gen(function*() {
      const tokens = [
        "bob",
        "hi",
        "two words",
        "",
        "true",
        "no",
        "1",
        "a.b",
        "-3",
        "-v",
        "--",
        "--name",
        "--dir",
        "--group",
        "--delivery",
        "--queue-mode",
        "--thread",
        "--json",
        "--help",
        "--name=al",
        "--log-level",
        "al",
        " ",
        "steer",
        "queue",
        "passive",
        "stack",
        "replace",
        "/tmp/d",
        "-x"
      ]
      const samples = fc.sample(fc.array(fc.constantFrom(...tokens), { maxLength: 9 }), { numRuns: 400, seed: 16 })
      let taken = 0
      for (const rest of samples) {
        const args = ["send", ...rest]
        const fast = viaFastPath(args)
        if (fast === undefined) continue
        taken++
        const full = yield* viaEffectCli(args)
        const name = parseSendArgv(args)?.name
        if (name !== undefined && nameProblem(name) !== undefined) {
          // clientEntry.ts hands these to the full program, which refuses them.
          assert.isUndefined(full, args.join(" "))
          continue
        }
        assert.isDefined(full, `effect/cli refused what the fast path took: ${JSON.stringify(args)}`)
        if (full === undefined) continue
        assert.deepStrictEqual(sessionFlags(full.input), sessionFlags(fast.input), JSON.stringify(args))
        assert.deepStrictEqual(full.params, fast.params, JSON.stringify(args))
      }
      assert.isAbove(taken, 20, "the samples exercise the fast path")
    }))
})
