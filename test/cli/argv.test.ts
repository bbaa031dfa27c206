/**
 * The fast path's argv check (argv.ts): exactly the well-formed
 * `broker [--dir D] [--max-sessions N] [--durability sqlite|memory] [<path>]` shapes are taken; everything
 * else — including everything effect/cli would reject — goes to the full program.
 */
import { assert, describe, it } from "@effect/vitest"
import { looksLikeBrokerScript, parseBrokerArgv } from "../../src/cli/argv.ts"
import { unknownBrokerSubcommand } from "../../src/cli/commands.ts"

describe("parseBrokerArgv", () => {
  it("takes the broker command with its flags and the ignored path, in any order", () => {
    assert.deepStrictEqual(parseBrokerArgv(["broker"]), { dir: undefined, maxSessions: undefined })
    assert.deepStrictEqual(parseBrokerArgv(["broker", "--dir", "/a b"]), { dir: "/a b", maxSessions: undefined })
    assert.deepStrictEqual(parseBrokerArgv(["broker", "--max-sessions", "20000", "--dir", "rel/dir"]), {
      dir: "rel/dir",
      maxSessions: 20000
    })
    // pi-intercom's spawner appends the path of its broker.ts; our client appends this executable's
    assert.deepStrictEqual(parseBrokerArgv(["broker", "/x/pi-intercom/broker.ts", "--dir", "/a"]), {
      dir: "/a",
      maxSessions: undefined
    })
    assert.deepStrictEqual(parseBrokerArgv(["broker", "--dir", "/a", "broker.ts"]), { dir: "/a", maxSessions: undefined })
    assert.deepStrictEqual(parseBrokerArgv(["broker", "--durability", "memory", "--dir", "/a"]), {
      dir: "/a",
      maxSessions: undefined,
      durability: "memory"
    })
    assert.deepStrictEqual(parseBrokerArgv(["broker", "--durability", "sqlite"]), {
      dir: undefined,
      maxSessions: undefined,
      durability: "sqlite"
    })
  })

  it("leaves every other command line to effect/cli", () => {
    const full: ReadonlyArray<ReadonlyArray<string>> = [
      [],
      ["--help"],
      ["--version"],
      ["list"],
      ["send", "bob", "hi"],
      ["broker", "status"],
      ["broker", "stop", "--dir", "/a"],
      ["broker", "--help"],
      ["broker", "-h"],
      ["broker", "--log-level", "debug"],
      ["broker", "--bogus"],
      ["broker", "--dir"],
      ["broker", "--dir", ""],
      ["broker", "--dir", "  "],
      ["broker", "--dir", "-x"],
      ["broker", "--dir=/a"],
      ["broker", "--dir", "/a", "--dir", "/b"],
      ["broker", "--max-sessions"],
      ["broker", "--max-sessions", "0"],
      ["broker", "--max-sessions", "-1"],
      ["broker", "--max-sessions", "abc"],
      ["broker", "--max-sessions", "1.5"],
      ["broker", "--max-sessions", "010"],
      ["broker", "--max-sessions", "1e3"],
      ["broker", "--max-sessions", "99999999999999999999"],
      ["broker", "--max-sessions", "5", "--max-sessions", "6"],
      ["broker", "--durability"],
      ["broker", "--durability", "disk"],
      ["broker", "--durability", "Memory"],
      ["broker", "--durability=memory"],
      ["broker", "--durability", "memory", "--durability", "sqlite"],
      ["broker", "/a/broker.ts", "extra.ts"],
      ["broker", "script"], // not path-like: could be a subcommand
      ["broker", "stopp"],
      ["broker", "status.txt"], // a dot is not enough: it must end in .js, .mjs, .cjs or .ts
      ["broker", "--"],
      ["intercom", "broker"]
    ]
    for (const args of full) assert.isUndefined(parseBrokerArgv(args), args.join(" "))
  })
})

describe("the ignored <broker-script>", () => {
  it("is path-like only with a / or a script's extension, in the fast path and the full program alike", () => {
    for (const arg of ["/x/broker.ts", "rel/dir", "broker.ts", "broker.js", "broker.mjs", "broker.cjs"]) {
      assert.isTrue(looksLikeBrokerScript(arg), arg)
    }
    for (const arg of ["stopp", "satus", "stats.", "status.txt", "script"]) {
      assert.isFalse(looksLikeBrokerScript(arg), arg)
    }
  })

  it("a word that is not path-like is an unknown subcommand, with the nearest one and the list", () => {
    assert.include(unknownBrokerSubcommand("stopp"), "unknown subcommand 'stopp'; did you mean 'stop'?")
    assert.include(unknownBrokerSubcommand("satus"), "did you mean 'status'?")
    assert.include(unknownBrokerSubcommand("stopp"), "status, stop, stats")
    assert.notInclude(unknownBrokerSubcommand("frobnicate"), "did you mean")
  })
})
