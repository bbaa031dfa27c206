/**
 * The fast path's argv check (argv.ts): exactly the well-formed
 * `broker [--dir D] [--max-sessions N] [--durability sqlite|memory] [<path>]` shapes are taken; everything
 * else — including everything effect/cli would reject — goes to the full program.
 */
import { assert, describe, it } from "@effect/vitest"
import { parseBrokerArgv } from "../../src/cli/argv.ts"

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
      ["broker", "--"],
      ["intercom", "broker"]
    ]
    for (const args of full) assert.isUndefined(parseBrokerArgv(args), args.join(" "))
  })
})
