/**
 * One `config.json`, read strictly (C-CFG-2): JSON, an object, every known key
 * of the right type — or the whole file is rejected with an error naming the
 * file and the keys, and the defaults apply. Unknown keys are warnings.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { IntercomConfigFileError, type InvalidField } from "./errors.ts"
import { CONFIG_KEY_EXPECTATIONS, CONFIG_KEYS, type ConfigKey, IntercomConfigFile, isConfigKey } from "./schema.ts"

/** What reading one candidate config file gave. */
export type ConfigFileRead =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Unreadable"; readonly reason: string }

/** Constructors of `ConfigFileRead`, for a `readFile` passed to `resolveIntercomSettings`. */
export const ConfigFileRead = {
  missing: { _tag: "Missing" } satisfies ConfigFileRead,
  text: (text: string): ConfigFileRead => ({ _tag: "Text", text }),
  unreadable: (reason: string): ConfigFileRead => ({ _tag: "Unreadable", reason })
} as const

/** What `parseConfigFile` made of one file: the accepted keys, warnings, or why the file was rejected. */
export interface ParsedConfigFile {
  /** The accepted keys; `{}` when the file was rejected. */
  readonly config: IntercomConfigFile
  /** Unknown keys. */
  readonly warnings: ReadonlyArray<string>
  /** Set when the whole file was rejected. */
  readonly error: IntercomConfigFileError | undefined
}

const MAX_FOUND_CHARS = 60

/** A short rendering of a JSON value for error messages. */
const renderValue = (value: unknown): string => {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > MAX_FOUND_CHARS ? `${text.slice(0, MAX_FOUND_CHARS)}…` : text
}

const describeNonObject = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`

const isJsonObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const issueFormatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** The known keys named by a decoding failure, in documentation order. */
const failedKeys = (issue: SchemaIssue.Issue): ReadonlyArray<ConfigKey> => {
  const named = new Set<string>()
  for (const entry of issueFormatter(issue).issues) {
    const head = entry.path?.[0]
    if (head === undefined) continue
    named.add(String(typeof head === "object" ? head.key : head))
  }
  return CONFIG_KEYS.filter((key) => named.has(key))
}

/** A file rejected as a whole: no keys accepted, the error says why. */
export const rejected = (
  path: string,
  problem: IntercomConfigFileError["problem"],
  detail: string,
  fields: ReadonlyArray<InvalidField> = [],
  warnings: ReadonlyArray<string> = []
): ParsedConfigFile => ({
  config: {},
  warnings,
  error: new IntercomConfigFileError({ path, problem, detail, fields })
})

const parseJson = (text: string): Result.Result<unknown, string> => {
  try {
    const value: unknown = JSON.parse(text)
    return Result.succeed(value)
  } catch (error) {
    return Result.fail(error instanceof Error ? error.message : String(error))
  }
}

const decodeConfigFile = Schema.decodeUnknownResult(IntercomConfigFile)

/**
 * Parses the text of one `config.json` (C-CFG-2): invalid JSON, a non-object,
 * or any known key with a wrong-typed value rejects the whole file. Unknown
 * keys are ignored, with a warning. A leading byte-order mark is tolerated.
 */
export const parseConfigFile = (path: string, text: string): ParsedConfigFile => {
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text
  // JSON.parse would say "Unexpected end of JSON input", which does not tell a user who ran `touch config.json` what is wrong.
  if (body.trim() === "") return rejected(path, "InvalidJson", "the file is empty (write {} for no settings, or delete it)")
  const json = parseJson(body)
  if (Result.isFailure(json)) return rejected(path, "InvalidJson", json.failure)
  const parsed = json.success
  if (!isJsonObject(parsed)) return rejected(path, "NotAnObject", describeNonObject(parsed))

  const unknownKeys = Object.keys(parsed).filter((key) => !isConfigKey(key))
  const warnings = unknownKeys.length === 0 ? [] : [
    `Intercom config ${path}: ignoring unknown ${unknownKeys.length === 1 ? "key" : "keys"} ${
      unknownKeys.map((key) => JSON.stringify(key)).join(", ")
    }.`
  ]

  const decoded = decodeConfigFile(parsed, { errors: "all", onExcessProperty: "ignore" })
  if (Result.isSuccess(decoded)) return { config: decoded.success, warnings, error: undefined }
  const fields = failedKeys(decoded.failure.issue).map((field): InvalidField => ({
    field,
    expected: CONFIG_KEY_EXPECTATIONS[field],
    found: renderValue(parsed[field])
  }))
  // Every failure of a struct of optional keys sits under one of its keys; this is a guard, not a path.
  if (fields.length === 0) return rejected(path, "InvalidJson", decoded.failure.message, [], warnings)
  return rejected(path, "InvalidFields", "", fields, warnings)
}

// ---------------------------------------------------------------------------
// Environment
// ---------------------------------------------------------------------------

