/**
 * Broker options set in code are held to `BROKER_OPTION_RULES` (options.ts),
 * the rule the CLI's flags use too: a value that would silently turn a bound
 * off (NaN, negative, fractional, infinite) fails `Broker.make` and
 * `runBroker` with a `BrokerOptionError` naming the option, what it allows
 * and the value, before anything starts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import fc from "fast-check"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  BROKER_OPTION_RULES,
  Broker,
  type BrokerCoreOptions,
  brokerOptionProblem,
  type CheckedOption,
  runBroker
} from "../../src/broker/index.ts"
import { MAX_IDS } from "../../src/broker/ClientInstances.ts"
import { resolveCoreOptions } from "../../src/broker/options.ts"
import { tempDir } from "../support/broker.ts"

const OPTIONS = Object.keys(BROKER_OPTION_RULES).filter((key): key is CheckedOption =>
  Object.hasOwn(BROKER_OPTION_RULES, key)
)
const COUNTS = OPTIONS.filter((option) => BROKER_OPTION_RULES[option].kind !== "duration")
const DURATIONS = OPTIONS.filter((option) => BROKER_OPTION_RULES[option].kind === "duration")

const COUNT = "a whole number ≥ 1"
const DURATION = "a duration from 1 ms to 30 days (a whole number of milliseconds)"

/** Each option's class, as the table must say it: one entry per option, so a new one must be classed here. */
const EXPECTED: { readonly [K in CheckedOption]: string } = {
  maxSessions: COUNT,
  maxUnregistered: COUNT,
  registrationTimeout: DURATION,
  idleExit: `${DURATION}, or null (never)`,
  askTimeout: DURATION,
  replaceWindow: DURATION,
  outboxCapacity: COUNT,
  heldLimit: COUNT,
  outboxChars: COUNT,
  outboxCharsTotal: COUNT,
  mailboxCapacity: COUNT,
  mailboxBytes: COUNT,
  mailboxBytesPerTarget: COUNT,
  mailboxRetention:
    "a duration from 1 second to 30 days (a whole number of milliseconds from 1000 to 2592000000)",
  replayRecords: COUNT,
  replayBytes: COUNT,
  topicEntriesPerGroup: COUNT,
  topicRecords: COUNT,
  topicBytes: COUNT,
  clientInstanceIds: COUNT
}

/** Values no count or size may hold, and how the error shows them. */
const BAD_NUMBERS: ReadonlyArray<readonly [number, string]> = [
  [Number.NaN, "NaN"],
  [-1, "-1"],
  [0, "0"],
  [1.5, "1.5"],
  [Number.POSITIVE_INFINITY, "Infinity"]
]

/** Durations no duration option may hold, and how the error shows them. */
const BAD_DURATIONS: ReadonlyArray<readonly [Duration.Input, string]> = [
  ...BAD_NUMBERS,
  ["Infinity", `"Infinity"`],
  [Duration.infinity, "Infinity ms"],
  ["-5 seconds", `"-5 seconds"`],
  ["31 days", `"31 days"`],
  [[0, 500], "0.0005 ms"]
]

const makeFails = (options: BrokerCoreOptions) =>
  Effect.scoped(Effect.flip(Broker.make({ idleExit: null, ...options })))

describe("broker options set in code", () => {
  it("every option has a rule, of the class it is", () => {
    assert.deepStrictEqual(
      Object.fromEntries(OPTIONS.map((option) => [option, BROKER_OPTION_RULES[option].allowed])),
      EXPECTED
    )
  })

  it.effect("Broker.make refuses each count or size that would turn its bound off, naming option, rule and value", () =>
    Effect.gen(function*() {
      for (const option of COUNTS) {
        for (const [value, shown] of BAD_NUMBERS) {
          const error = yield* makeFails({ [option]: value })
          assert.strictEqual(error._tag, "BrokerOptionError")
          assert.strictEqual(error.message, `${option} must be ${EXPECTED[option]}, got ${shown}`)
        }
      }
    }))

  it.effect("Broker.make refuses each duration that is not 1 ms to 30 days (1 s for the mailbox retention)", () =>
    Effect.gen(function*() {
      for (const option of DURATIONS) {
        for (const [value, shown] of BAD_DURATIONS) {
          const error = yield* makeFails({ [option]: value })
          assert.strictEqual(error.message, `${option} must be ${EXPECTED[option]}, got ${shown}`)
        }
      }
    }))

  it("any number that is not a whole number ≥ 1 is refused as a count, and any that is is taken", () => {
    fc.assert(
      fc.property(fc.constantFrom(...COUNTS), fc.double(), (option, value) => {
        const problem = brokerOptionProblem(option, value)
        assert.strictEqual(problem === undefined, Number.isSafeInteger(value) && value >= 1, `${option} ${value}`)
      })
    )
    fc.assert(
      fc.property(fc.constantFrom(...COUNTS), fc.integer({ min: 1 }), (option, value) => {
        assert.isUndefined(brokerOptionProblem(option, value))
      })
    )
  })

  it("any duration of whole milliseconds is taken exactly when it is within its option's range", () => {
    const MAX = 30 * 86_400_000
    fc.assert(
      fc.property(fc.constantFrom(...DURATIONS), fc.double({ min: -MAX, max: 2 * MAX }), (option, value) => {
        const min = option === "mailboxRetention" ? 1_000 : 1
        const problem = brokerOptionProblem(option, value)
        assert.strictEqual(problem === undefined, Number.isInteger(value) && value >= min && value <= MAX, `${option} ${value}`)
      })
    )
  })

  it.effect("the defaults and idleExit: null are taken", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* Broker.make({ idleExit: null, topicRecords: 1, registrationTimeout: "1 hour", mailboxRetention: "2 days" })
    })))

  it("clientInstanceIds, which has no CLI flag, defaults to the 65,536 ids the bounds table names (MAX_IDS)", () => {
    assert.strictEqual(resolveCoreOptions({}).clientInstanceIds, 65_536)
    assert.strictEqual(MAX_IDS, 65_536)
  })

  it.live("runBroker fails with the same error before it touches the intercom directory", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const intercomDir = path.join(root, "intercom")
      const error = yield* Effect.flip(
        Effect.scoped(runBroker({ intercomDir, socketPath: path.join(intercomDir, "broker.sock"), topicBytes: -1 }))
      )
      assert.strictEqual(error.message, "topicBytes must be a whole number ≥ 1, got -1")
      assert.isFalse(fs.existsSync(intercomDir), "nothing was created")
    }))
})
