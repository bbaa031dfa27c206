/**
 * The parameters of the `intercom` tool as one Schema, and their type derived
 * from it. Everything that carries the parameters whole — the watch's control
 * frame (cli/client/control.ts) is built from these fields — takes them from
 * here, so a parameter added later travels everywhere without being listed
 * again.
 *
 * The Schema checks shapes only (strings, finite numbers, booleans); the
 * session's tool checks their meaning (C-TOOL-5, C-TOOL-6, …) as it would for
 * any caller. `attachments` is left `Unknown` for the same reason.
 */
import { Schema } from "effect"

/**
 * Parameters of the `intercom` tool, as a model writes them.
 *
 * @category schemas
 * @since 0.1.0
 */
export const IntercomToolParams = Schema.Struct({
  /** `list`, `send`, `ask`, `reply`, `pending`, `status`, a topic, archive, question or worker action. */
  action: Schema.String,
  to: Schema.optional(Schema.String),
  message: Schema.optional(Schema.String),
  /** Checked against C-TOOL-5 before anything is sent. */
  attachments: Schema.optional(Schema.Unknown),
  replyTo: Schema.optional(Schema.String),
  /**
   * For `reply`: answer the ask with this failure text instead; the asker's
   * `ask` ends as an error with exactly this text (C-ASK-7). `message` may
   * then be left out.
   */
  replyError: Schema.optional(Schema.String),
  /** For `ask`: overrides `askTimeoutMs`. */
  timeoutMs: Schema.optional(Schema.Finite),
  /** For `list` and `status`: `"project"` or `"all"` (C-TOOL-16). */
  scope: Schema.optional(Schema.String),
  /**
   * Read-only (C-GRP-5, C-GRP-6): on `list`, another group to peek at; on
   * `status`, another group to count too; on `send`/`ask`/`reply`, only the
   * own group is accepted. Blank or absent: the own group.
   */
  group: Schema.optional(Schema.String),
  /**
   * For `send`/`ask`/`reply`: `steer` (default), `queue` or `passive` (never
   * for `ask`) (C-DLV-1, C-ASK-10). On an `ask`, an explicit mode waits
   * whatever the target's health; absent, a target publishing
   * `acceptsAsks: false` gets the question without a wait (C-HLT-5, C-HLT-6).
   */
  delivery: Schema.optional(Schema.String),
  /** For `delivery: "queue"`: `stack` or `replace` (C-DLV-4). */
  queueMode: Schema.optional(Schema.String),
  /** For `queueMode: "replace"`: the thread key (C-DLV-5). */
  threadId: Schema.optional(Schema.String),
  /** For `send`: legacy alias of `delivery: "passive"` (C-DLV-3). */
  passive: Schema.optional(Schema.Boolean),
  /** Topics (`topics-v1`): the exact topic of `publish`, `subscribe`, `unsubscribe`; a filter for `topics`. */
  topic: Schema.optional(Schema.String),
  /** For `publish`: `update` (default), `blocker`, `decision` or `release` (C-TOP-4). */
  event: Schema.optional(Schema.String),
  /** For `publish`: the resource this state is about. */
  resource: Schema.optional(Schema.String),
  /** For `publish`: `held` or `released` (needs `resource`). */
  ownership: Schema.optional(Schema.String),
  /** For `subscribe`: also be interrupted by `release` publications (C-TOP-9). */
  awaitRelease: Schema.optional(Schema.Boolean),
  /** For `result`: the archived report's address, `result:<UUID>` (C-WKR-2). */
  ref: Schema.optional(Schema.String),
  /** Durable questions (`questions-v1`): the question of `question`, `answer` and `stop` (its answer is `message`). */
  questionId: Schema.optional(Schema.String),
  /**
   * Supervised workers: the run handle from the delegation receipt (`run-3`) for `peek`, `steer` (its
   * instruction is `message`), `stop` and live `result` (C-WKR-2). With `run`, `stop` and `result` act on
   * the worker; without it, on the durable question (`questionId`) or the archived report (`ref`).
   */
  run: Schema.optional(Schema.String),
  /**
   * For `result`: the page's first UTF-16 unit (default 0); for `results`: the first report (default 0);
   * for `questions`: where the page starts (default 0).
   */
  offset: Schema.optional(Schema.Finite),
  /**
   * For `result`: UTF-16 units per page (2–100,000, default 20,000); for `results`: reports (1–50, default 20);
   * for `questions`: questions per page (1–100, default 20).
   */
  limit: Schema.optional(Schema.Finite),
  /** For `questions`, `question`, `answer`, `stop`: the supervisor session id to act for (default: this session). */
  owner: Schema.optional(Schema.String)
})

/**
 * Parameters of the `intercom` tool, as a model writes them.
 *
 * @category models
 * @since 0.1.0
 */
export interface IntercomToolParams extends Schema.Schema.Type<typeof IntercomToolParams> {}

/** The optional parameters written as text: every field but `action` whose value is a string. */
type TextParam = {
  [K in keyof IntercomToolParams]-?: K extends "action" ? never
    : [NonNullable<IntercomToolParams[K]>] extends [string] ? K
    : never
}[keyof IntercomToolParams]

/** Every optional text parameter, once: the type makes a new one a compile error until it is listed here. */
const TEXT_PARAMS: { readonly [K in TextParam]: true } = {
  to: true,
  message: true,
  replyTo: true,
  replyError: true,
  scope: true,
  group: true,
  delivery: true,
  queueMode: true,
  threadId: true,
  topic: true,
  event: true,
  resource: true,
  ownership: true,
  ref: true,
  questionId: true,
  run: true,
  owner: true
}

const isTextParam = (key: string): key is TextParam => Object.hasOwn(TEXT_PARAMS, key)

/**
 * The parameters with every optional text parameter that is `""` left out:
 * an empty string means absent, for every one of them, whoever wrote them (a
 * model fills optional fields with `""`; a command line's `--thread ""`).
 * Applied once, where the session's tool takes its parameters
 * (`makeIntercomTool`), so pi, the command line and the watch's control
 * frames all get it.
 *
 * @category models
 * @since 0.1.0
 */
export const withoutEmptyText = (params: IntercomToolParams): IntercomToolParams => {
  let result = params
  for (const key of Object.keys(params)) {
    if (!isTextParam(key) || result[key] !== "") continue
    const { [key]: _empty, ...rest } = result
    result = rest
  }
  return result
}
