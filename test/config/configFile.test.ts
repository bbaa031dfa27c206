/** C-CFG-2/3/5: config.json keys, defaults, and the strict whole-file rejection rule. */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import {
  CONFIG_KEYS,
  ConfigFileRead,
  type ConfigKey,
  type IntercomConfigError,
  IntercomConfigFileError,
  type IntercomSettings,
  parseConfigFile
} from "../../src/config/index.ts"
import { PI_CONFIG, resolve, withConfig } from "./support.ts"

const defaults: IntercomSettings = resolve().settings

/** The settings that come from the file (everything but where the file was found). */
const fileBacked = ({ configSource: _, ...rest }: IntercomSettings) => rest

const fileError = (errors: ReadonlyArray<IntercomConfigError>): IntercomConfigFileError => {
  assert.strictEqual(errors.length, 1)
  const [error] = errors
  if (!(error instanceof IntercomConfigFileError)) return assert.fail(`expected a file error, got ${String(error)}`)
  return error
}

describe("defaults", () => {
  it("a missing file gives every default, no warning, no error", () => {
    const { errors, settings, warnings } = resolve()
    assert.deepStrictEqual(errors, [])
    assert.deepStrictEqual(warnings, [])
    assert.isUndefined(settings.configSource)
    assert.deepStrictEqual(fileBacked(settings), {
      paths: settings.paths,
      agentDirSource: { _tag: "Default" },
      enabled: true,
      confirmSend: false,
      replyHint: true,
      inboundTrigger: "always",
      toolVisibility: "always",
      status: undefined,
      stableId: undefined,
      scopeId: undefined,
      group: "default",
      shortcut: undefined,
      broker: { _tag: "Default" },
      askTimeoutMs: 600_000,
      sendTimeoutMs: 10_000,
      listTimeoutMs: 5_000,
      liveness: { intervalMs: 30_000, timeoutMs: 5_000 },
      unsavedMessageLimit: 100,
      durability: "sqlite"
    })
  })

  it("an empty object is the same as no file", () => {
    const { errors, settings, warnings } = withConfig({})
    assert.deepStrictEqual([errors, warnings], [[], []])
    assert.strictEqual(settings.configSource, PI_CONFIG)
    assert.deepStrictEqual(fileBacked(settings), fileBacked(defaults))
  })
})

describe("valid files", () => {
  it("every key is applied", () => {
    const { errors, settings, warnings } = withConfig({
      brokerCommand: "bun",
      brokerArgs: ["run"],
      confirmSend: true,
      inboundTrigger: "replies",
      toolVisibility: "after-first-use",
      status: "researching",
      stableId: "my-session",
      enabled: false,
      replyHint: false,
      group: "reviewers",
      askTimeoutMs: 120_000,
      sendTimeoutMs: 8_000,
      listTimeoutMs: 2_000,
      shortcut: "alt+shift+m",
      unsavedMessageLimit: 7
    })
    assert.deepStrictEqual([errors, warnings], [[], []])
    assert.deepStrictEqual(fileBacked(settings), {
      ...fileBacked(defaults),
      broker: { _tag: "Command", command: "bun", args: ["run"], configFile: PI_CONFIG },
      confirmSend: true,
      inboundTrigger: "replies",
      toolVisibility: "after-first-use",
      status: "researching",
      stableId: "my-session",
      enabled: false,
      replyHint: false,
      group: "reviewers",
      askTimeoutMs: 120_000,
      sendTimeoutMs: 8_000,
      listTimeoutMs: 2_000,
      shortcut: "alt+shift+m",
      unsavedMessageLimit: 7
    })
  })

  it("the npx --no-install tsx pair is the Default sentinel, written out or implied", () => {
    assert.deepStrictEqual(withConfig({ brokerCommand: "npx", brokerArgs: ["--no-install", "tsx"] }).settings.broker, {
      _tag: "Default"
    })
    assert.deepStrictEqual(withConfig({ brokerCommand: "npx" }).settings.broker, { _tag: "Default" })
    assert.deepStrictEqual(withConfig({ brokerArgs: ["--no-install", "tsx"] }).settings.broker, { _tag: "Default" })
  })

  it("anything else is a Command; a custom command without args gets none", () => {
    // The file that set them goes along, to be named if the command cannot be run.
    assert.deepStrictEqual(withConfig({ brokerCommand: "bun" }).settings.broker, {
      _tag: "Command",
      command: "bun",
      args: [],
      configFile: PI_CONFIG
    })
    assert.deepStrictEqual(withConfig({ brokerArgs: [] }).settings.broker, {
      _tag: "Command",
      command: "npx",
      args: [],
      configFile: PI_CONFIG
    })
    assert.deepStrictEqual(withConfig({ brokerCommand: "npx", brokerArgs: ["tsx", "--no-install"] }).settings.broker, {
      _tag: "Command",
      command: "npx",
      args: ["tsx", "--no-install"],
      configFile: PI_CONFIG
    })
  })

  it("a blank group in the file falls through to the default group; a padded one is trimmed", () => {
    assert.strictEqual(withConfig({ group: "  " }).settings.group, "default")
    assert.strictEqual(withConfig({ group: " team " }).settings.group, "team")
  })

  it("a byte-order mark is tolerated", () => {
    const { errors, settings } = resolve({ files: { [PI_CONFIG]: `\uFEFF{"confirmSend": true}` } })
    assert.deepStrictEqual(errors, [])
    assert.isTrue(settings.confirmSend)
  })
})

describe("unknown keys", () => {
  it("are ignored, with one warning naming them and the file", () => {
    const { errors, settings, warnings } = withConfig({ confirmSend: true, futureKey: 1, "other": { a: 1 } })
    assert.deepStrictEqual(errors, [])
    assert.isTrue(settings.confirmSend)
    assert.deepStrictEqual(warnings, [`Intercom config ${PI_CONFIG}: ignoring unknown keys "futureKey", "other".`])
  })

  it("are still reported when the file is rejected for another reason", () => {
    const { errors, warnings } = withConfig({ confirmSend: "yes", typo: true })
    assert.strictEqual(fileError(errors).problem, "InvalidFields")
    assert.deepStrictEqual(warnings, [`Intercom config ${PI_CONFIG}: ignoring unknown key "typo".`])
  })
})

/** For every key, values of the wrong type (or out of range). */
const WRONG: { readonly [K in ConfigKey]: ReadonlyArray<unknown> } = {
  brokerCommand: [1, "", "   ", null, ["npx"], " bun", "bun ", "\tbun\n"],
  brokerArgs: ["--no-install tsx", [1], ["ok", null], { 0: "a" }, null],
  confirmSend: ["true", 1, null, []],
  inboundTrigger: ["sometimes", "Always", true, null],
  toolVisibility: ["lazy", "after_first_use", 1, null],
  status: [1, false, null, ["x"]],
  stableId: ["", " ", 42, null],
  enabled: ["yes", 0, null],
  replyHint: ["false", 1, null],
  group: [1, true, null, ["a"], "bad\u0001group", "line\nbreak"],
  askTimeoutMs: [0, -1, 1.5, "1000", 2 ** 60, 2_592_000_001, 1e12, null],
  sendTimeoutMs: [0, -5, 0.1, "10000", null],
  listTimeoutMs: [0, 2.5, "5000", {}, null],
  shortcut: [1, true, null, {}],
  unsavedMessageLimit: [0, -1, 2.5, "100", null],
  durability: ["durable", "SQLite", true, null]
}

const VALID: { readonly [K in ConfigKey]: unknown } = {
  brokerCommand: "bun",
  brokerArgs: ["x"],
  confirmSend: true,
  inboundTrigger: "never",
  toolVisibility: "after-first-use",
  status: "s",
  stableId: "id-1",
  enabled: false,
  replyHint: false,
  group: "g",
  askTimeoutMs: 1,
  sendTimeoutMs: 2,
  listTimeoutMs: 3,
  shortcut: "ctrl+k",
  unsavedMessageLimit: 4,
  durability: "memory"
}

describe("strict rejection (C-CFG-2)", () => {
  for (const key of CONFIG_KEYS) {
    for (const wrong of WRONG[key]) {
      it(`${key}: ${JSON.stringify(wrong)} rejects the whole file and names the field`, () => {
        const { errors, settings } = withConfig({ ...VALID, [key]: wrong })
        const error = fileError(errors)
        assert.strictEqual(error.problem, "InvalidFields")
        assert.strictEqual(error.path, PI_CONFIG)
        assert.deepStrictEqual(error.fields.map((f) => f.field), [key])
        assert.include(error.message, PI_CONFIG)
        assert.include(error.message, `"${key}" must be `)
        assert.include(error.message, `found ${JSON.stringify(wrong)}`)
        // every other (valid) key is thrown away too
        assert.deepStrictEqual(fileBacked(settings), fileBacked(defaults))
      })
    }
  }

  it("group: a name the broker would refuse (over 256 characters) rejects the file, saying what a group must be", () => {
    const { errors, settings } = withConfig({ ...VALID, group: "x".repeat(257) })
    const error = fileError(errors)
    assert.deepStrictEqual(error.fields.map((f) => [f.field, f.expected]), [
      ["group", "a group name of at most 256 characters without control characters"]
    ])
    assert.strictEqual(settings.group, "default")
    // blank edges are trimmed away, as the broker trims them: not a refusal
    assert.deepStrictEqual(withConfig({ ...VALID, group: "\treviewers\n" }).errors, [])
  })

  it("names every wrong field, each with what it expects", () => {
    const error = fileError(withConfig({ confirmSend: "no", askTimeoutMs: -1, status: "fine" }).errors)
    assert.deepStrictEqual(error.fields, [
      { field: "confirmSend", expected: "a boolean", found: `"no"` },
      { field: "askTimeoutMs", expected: "a whole number of milliseconds from 1 to 2592000000 (30 days)", found: "-1" }
    ])
    assert.strictEqual(
      error.message,
      `Ignoring intercom config ${PI_CONFIG}; every setting uses its default. "confirmSend" must be a boolean, found "no". "askTimeoutMs" must be a whole number of milliseconds from 1 to 2592000000 (30 days), found -1.`
    )
  })

  it("askTimeoutMs above the broker's 30 days is rejected with the range; 30 days exactly is accepted", () => {
    // Past 30 days the broker refuses every ask as not delivered (ask-timeout-v1), so the file must not pass.
    const tooLong = withConfig({ askTimeoutMs: 2_592_000_001, confirmSend: true })
    assert.strictEqual(
      fileError(tooLong.errors).message,
      `Ignoring intercom config ${PI_CONFIG}; every setting uses its default. "askTimeoutMs" must be a whole number of milliseconds from 1 to 2592000000 (30 days), found 2592000001.`
    )
    assert.strictEqual(tooLong.settings.askTimeoutMs, 600_000)
    assert.isFalse(tooLong.settings.confirmSend)
    const longest = withConfig({ askTimeoutMs: 2_592_000_000 })
    assert.deepStrictEqual(longest.errors, [])
    assert.strictEqual(longest.settings.askTimeoutMs, 2_592_000_000)
  })

  it("brokerCommand with spaces at either end is rejected when the file is read, not met as spawn ENOENT later", () => {
    const { errors, settings } = withConfig({ brokerCommand: "bun ", status: "fine" })
    assert.strictEqual(
      fileError(errors).message,
      `Ignoring intercom config ${PI_CONFIG}; every setting uses its default. "brokerCommand" must be a program name or path, with no spaces at either end, found "bun ".`
    )
    assert.deepStrictEqual(settings.broker, { _tag: "Default" })
    assert.deepStrictEqual(withConfig({ brokerCommand: "/opt/my broker/run" }).settings.broker, {
      _tag: "Command",
      command: "/opt/my broker/run",
      args: [],
      configFile: PI_CONFIG
    })
  })

  it("names only the field for a bad array element", () => {
    const error = fileError(withConfig({ brokerArgs: ["a", 2, "c", false] }).errors)
    assert.deepStrictEqual(error.fields, [{ field: "brokerArgs", expected: "an array of strings", found: `["a",2,"c",false]` }])
  })

  it("long values are shortened in the message", () => {
    const error = fileError(withConfig({ status: { text: "x".repeat(500) } }).errors)
    const found = error.fields[0]?.found ?? ""
    assert.isAtMost(found.length, 61)
    assert.isTrue(found.endsWith("…"))
  })

  it("invalid JSON", () => {
    const { errors, settings } = resolve({ files: { [PI_CONFIG]: `{"confirmSend": true,}` } })
    const error = fileError(errors)
    assert.strictEqual(error.problem, "InvalidJson")
    assert.include(error.message, PI_CONFIG)
    assert.include(error.message, "not valid JSON")
    assert.isFalse(settings.confirmSend)
  })

  it("an empty file is invalid JSON, and the error says it is empty and what to write instead", () => {
    for (const text of ["", " \n", "\uFEFF"]) {
      const error = fileError(resolve({ files: { [PI_CONFIG]: text } }).errors)
      assert.strictEqual(error.problem, "InvalidJson")
      assert.strictEqual(
        error.message,
        `Ignoring intercom config ${PI_CONFIG}; every setting uses its default. It is not valid JSON: the file is empty (write {} for no settings, or delete it).`
      )
    }
  })

  for (const [json, what] of [["[]", "an array"], ["null", "null"], [`"text"`, "a string"], ["42", "a number"], ["true", "a boolean"]]) {
    it(`non-object JSON: ${json}`, () => {
      const error = fileError(resolve({ files: { [PI_CONFIG]: json ?? "" } }).errors)
      assert.strictEqual(error.problem, "NotAnObject")
      assert.strictEqual(error.detail, what)
      assert.include(error.message, `It must be a JSON object, but it is ${what}.`)
    })
  }

  it("an unreadable file is an error and defaults apply", () => {
    const { errors, settings } = resolve({ files: { [PI_CONFIG]: ConfigFileRead.unreadable("EACCES: permission denied") } })
    const error = fileError(errors)
    assert.strictEqual(error.problem, "Unreadable")
    assert.include(error.message, "EACCES: permission denied")
    assert.deepStrictEqual(fileBacked(settings), fileBacked(defaults))
  })

  it("parseConfigFile returns the accepted keys only when nothing is wrong", () => {
    assert.deepStrictEqual(parseConfigFile("/c.json", `{"status":"x","extra":1}`).config, { status: "x" })
    assert.deepStrictEqual(parseConfigFile("/c.json", `{"status":"x","enabled":"no"}`).config, {})
  })
})

// ---------------------------------------------------------------------------
// Properties, with validity rules written independently of the Schema
// ---------------------------------------------------------------------------

const isNonBlankString = (v: unknown) => typeof v === "string" && v.trim().length > 0
const isPositiveInt = (v: unknown) => typeof v === "number" && Number.isSafeInteger(v) && v > 0
/** 30 days: the broker's longest ask (ask-timeout-v1). */
const THIRTY_DAYS_MS = 30 * 24 * 3_600_000
const isOneOf = (options: ReadonlyArray<string>) => (v: unknown) => typeof v === "string" && options.includes(v)

const IS_VALID: { readonly [K in ConfigKey]: (value: unknown) => boolean } = {
  brokerCommand: (v) => isNonBlankString(v) && typeof v === "string" && v.trim() === v,
  brokerArgs: (v) => Array.isArray(v) && v.every((x) => typeof x === "string"),
  confirmSend: (v) => typeof v === "boolean",
  inboundTrigger: isOneOf(["always", "replies", "never"]),
  toolVisibility: isOneOf(["always", "after-first-use"]),
  status: (v) => typeof v === "string",
  stableId: isNonBlankString,
  enabled: (v) => typeof v === "boolean",
  replyHint: (v) => typeof v === "boolean",
  group: (v) => typeof v === "string" && v.length <= 256 && !/[\u0000-\u001f\u007f-\u009f]/.test(v.trim()),
  askTimeoutMs: (v) => isPositiveInt(v) && typeof v === "number" && v <= THIRTY_DAYS_MS,
  sendTimeoutMs: isPositiveInt,
  listTimeoutMs: isPositiveInt,
  shortcut: (v) => typeof v === "string",
  unsavedMessageLimit: isPositiveInt,
  durability: isOneOf(["sqlite", "memory"])
}

const positiveInt = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })
const VALID_ARB: { readonly [K in ConfigKey]: fc.Arbitrary<unknown> } = {
  brokerCommand: fc.string({ minLength: 1 }).filter((v) => isNonBlankString(v) && v.trim() === v),
  brokerArgs: fc.array(fc.string()),
  confirmSend: fc.boolean(),
  inboundTrigger: fc.constantFrom("always", "replies", "never"),
  toolVisibility: fc.constantFrom("always", "after-first-use"),
  status: fc.string(),
  stableId: fc.string({ minLength: 1 }).filter(isNonBlankString),
  enabled: fc.boolean(),
  replyHint: fc.boolean(),
  group: fc.string(),
  askTimeoutMs: fc.integer({ min: 1, max: THIRTY_DAYS_MS }),
  sendTimeoutMs: positiveInt,
  listTimeoutMs: positiveInt,
  shortcut: fc.string(),
  unsavedMessageLimit: positiveInt,
  durability: fc.constantFrom("sqlite", "memory")
}

/** Any valid subset of the known keys. */
const validConfig = fc.record(VALID_ARB, { requiredKeys: [] })

/** JSON values as they come back from a JSON round trip (e.g. -0 becomes 0). */
const jsonValue = fc.jsonValue().map((v): unknown => JSON.parse(JSON.stringify(v)))

describe("properties", () => {
  it("any file with exactly one wrong-typed known key is rejected whole, naming that key", () => {
    const wrongCase = fc.constantFrom(...CONFIG_KEYS).chain((key) =>
      fc.record({
        key: fc.constant(key),
        wrong: fc.oneof(jsonValue, fc.constantFrom(...WRONG[key])).filter((v) => !IS_VALID[key](v)),
        others: validConfig
      })
    )
    fc.assert(
      fc.property(wrongCase, ({ key, others, wrong }) => {
        const { errors, settings } = withConfig({ ...others, [key]: wrong })
        const error = fileError(errors)
        assert.deepStrictEqual(error.fields.map((f) => f.field), [key])
        assert.deepStrictEqual(fileBacked(settings), fileBacked(defaults))
      })
    )
  })

  it("any file of valid known keys is accepted and its values are used", () => {
    fc.assert(
      fc.property(validConfig, (config) => {
        const { errors, settings, warnings } = withConfig(config)
        assert.deepStrictEqual([errors, warnings], [[], []])
        assert.strictEqual(settings.confirmSend, config.confirmSend ?? false)
        assert.strictEqual(settings.enabled, config.enabled ?? true)
        assert.strictEqual(settings.replyHint, config.replyHint ?? true)
        assert.strictEqual(settings.inboundTrigger, config.inboundTrigger ?? "always")
        assert.strictEqual(settings.toolVisibility, config.toolVisibility ?? "always")
        assert.strictEqual(settings.status, config.status)
        assert.strictEqual(settings.stableId, config.stableId)
        assert.strictEqual(settings.shortcut, config.shortcut)
        assert.strictEqual(settings.askTimeoutMs, config.askTimeoutMs ?? 600_000)
        assert.strictEqual(settings.sendTimeoutMs, config.sendTimeoutMs ?? 10_000)
        assert.strictEqual(settings.unsavedMessageLimit, config.unsavedMessageLimit ?? 100)
        assert.strictEqual(settings.listTimeoutMs, config.listTimeoutMs ?? 5_000)
      })
    )
  })
})
