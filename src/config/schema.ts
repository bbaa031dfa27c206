/**
 * The shape of `<agentDir>/intercom/config.json` (protocol doc §10, C-CFG-2,
 * C-CFG-5). Every key is optional; unknown keys are allowed (and reported as
 * warnings by the resolver) so that newer files still load in older versions.
 */
import * as Schema from "effect/Schema"
import { MAX_ASK_TIMEOUT_MS } from "../protocol/constants.ts"
import { isAcceptedGroup, MAX_ID_LENGTH } from "../protocol/limits.ts"

/** A string with at least one non-whitespace character. */
const NonBlankString = Schema.String.check(Schema.isPattern(/\S/))
/**
 * A program to run: non-blank, with no whitespace at either end. `" bun"` or
 * `"bun "` names no program (`spawn "bun " ENOENT` at the first auto-spawn),
 * so the file is rejected when it is read, saying why, instead of trimmed:
 * trimming would guess at a path that really ends in a space.
 */
const CommandString = Schema.String.check(Schema.isPattern(/^\S(?:[\s\S]*\S)?$/))
/** A positive safe integer. */
const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))
/**
 * An ask timeout the broker accepts: 1 to `MAX_ASK_TIMEOUT_MS` (30 days). A
 * larger one would pass as a positive integer and then make every ask fail
 * as not delivered (`Invalid askTimeoutMs`), so the file is rejected instead.
 */
const AskTimeoutMs = PositiveInt.check(Schema.isLessThanOrEqualTo(MAX_ASK_TIMEOUT_MS))

/**
 * A group the broker takes at registration (`isAcceptedGroup`). Checked here
 * so that a bad `group` is reported as the file's mistake (C-CFG-2: the file is
 * rejected and the defaults apply), not met later as the broker's refusal.
 */
const GroupName = Schema.String.check(Schema.makeFilter((group: string) => isAcceptedGroup(group)))

/** What a group name must be, in words: the file's and the environment's errors say it the same way. */
export const GROUP_EXPECTATION = `a group name of at most ${MAX_ID_LENGTH} characters without control characters`

/** `inboundTrigger`: which inbound messages start a model turn — all, only replies, or none. */
export const InboundTrigger = Schema.Literals(["always", "replies", "never"])
/** A value of `inboundTrigger`. */
export type InboundTrigger = typeof InboundTrigger.Type

/** `toolVisibility`: when the host exposes the intercom tool: `always`, or lazily (`after-first-use`). */
export const ToolVisibility = Schema.Literals(["always", "after-first-use"])
/** A value of `toolVisibility`. */
export type ToolVisibility = typeof ToolVisibility.Type

/**
 * `config.json` as a Schema: every known key, each optional. Decode with
 * `parseConfigFile`, which also reports unknown keys and rejects the whole
 * file on one wrong-typed key; docs/configuration.md describes each key.
 */
export const IntercomConfigFile = Schema.Struct({
  brokerCommand: Schema.optionalKey(CommandString),
  brokerArgs: Schema.optionalKey(Schema.Array(Schema.String)),
  confirmSend: Schema.optionalKey(Schema.Boolean),
  inboundTrigger: Schema.optionalKey(InboundTrigger),
  toolVisibility: Schema.optionalKey(ToolVisibility),
  status: Schema.optionalKey(Schema.String),
  stableId: Schema.optionalKey(NonBlankString),
  enabled: Schema.optionalKey(Schema.Boolean),
  replyHint: Schema.optionalKey(Schema.Boolean),
  group: Schema.optionalKey(GroupName),
  askTimeoutMs: Schema.optionalKey(AskTimeoutMs),
  sendTimeoutMs: Schema.optionalKey(PositiveInt),
  listTimeoutMs: Schema.optionalKey(PositiveInt),
  shortcut: Schema.optionalKey(Schema.String),
  unsavedMessageLimit: Schema.optionalKey(PositiveInt),
  durability: Schema.optionalKey(Schema.Literals(["sqlite", "memory"]))
})
/** The accepted keys of a `config.json`. */
export type IntercomConfigFile = typeof IntercomConfigFile.Type

/** A key `config.json` understands. */
export type ConfigKey = keyof typeof IntercomConfigFile.fields

const POSITIVE_MS = "a positive integer (milliseconds)"

/** What each key must hold, in words, for error messages. */
export const CONFIG_KEY_EXPECTATIONS: { readonly [K in ConfigKey]: string } = {
  brokerCommand: "a program name or path, with no spaces at either end",
  brokerArgs: "an array of strings",
  confirmSend: "a boolean",
  inboundTrigger: `one of "always", "replies", "never"`,
  toolVisibility: `one of "always", "after-first-use"`,
  status: "a string",
  stableId: "a non-empty string",
  enabled: "a boolean",
  replyHint: "a boolean",
  group: GROUP_EXPECTATION,
  askTimeoutMs: `a whole number of milliseconds from 1 to ${MAX_ASK_TIMEOUT_MS} (30 days)`,
  sendTimeoutMs: POSITIVE_MS,
  listTimeoutMs: POSITIVE_MS,
  shortcut: "a string",
  unsavedMessageLimit: "a positive integer (messages)",
  durability: `one of "sqlite", "memory"`
}

/** Whether `key` is one `config.json` understands (others are ignored with a warning). */
export const isConfigKey = (key: string): key is ConfigKey => Object.hasOwn(CONFIG_KEY_EXPECTATIONS, key)

/** Every key `config.json` understands, in documentation order. */
export const CONFIG_KEYS: ReadonlyArray<ConfigKey> = Object.keys(CONFIG_KEY_EXPECTATIONS).filter(isConfigKey)
