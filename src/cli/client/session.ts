/**
 * The CLI as a host of `IntercomSession`: settings and paths of this process,
 * and one session (client + runtime) built from them. Short-lived commands
 * and `watch` both open their session here.
 */
import * as Data from "effect/Data"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type { IntercomEnvError } from "../../config/errors.ts"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { IntercomClient, type IntercomClientService } from "../../client/IntercomClient.ts"
import { DEFAULT_GROUP, homeGroup } from "../../config/group.ts"
import { loadIntercomSettings } from "../../config/load.ts"
import type { IntercomSettings } from "../../config/settings.ts"
import { Host, type HostIdentity, type HostService } from "../../session/Host.ts"
import {
  type InboundTrigger,
  IntercomSession,
  type IntercomSessionService,
  sessionRegistration
} from "../../session/IntercomSession.ts"
import {
  type AgentDirInaccessible,
  checkAgentDir,
  type IntercomDirNotADirectory,
  type IntercomPaths,
  type NoSuchAgentDir,
  resolveProcessPaths,
  type SocketPathError
} from "../paths.ts"
import { type ControlLocation, controlLocation } from "./control.ts"
import { CLI_MODEL, defaultCliName, nameKey } from "./identity.ts"

/** The flags every client command takes. */
export interface CommonInput {
  readonly name: Option.Option<string>
  readonly json: boolean
  readonly dir: Option.Option<string>
  /**
   * The home group of the session this command opens (`--group` of the
   * commands that send or stay: C-GRP-2's injected group, which beats
   * `ATOMIC_INTERCOM_GROUP` and config). `None` for `list` and `status`,
   * whose `--group` is a read-only look at another group instead.
   */
  readonly group?: Option.Option<string> | undefined
}

/** Everything a client command needs to know before it touches the bus. */
export interface CliContext {
  readonly settings: IntercomSettings
  /** The home group of this command's session: `--group`, else `settings.group` (env, config, `default`). */
  readonly group: string
  /** Socket path with the short fallback of long agent dirs, as `intercom broker` computes it. */
  readonly paths: IntercomPaths
  readonly name: string
  /** The agent dir (absolute) when `--dir` named it, so a command this one prints names it too; undefined otherwise. */
  readonly dirFlag: string | undefined
  /** Where a watch of this name listens; `None` when no usable path exists. */
  readonly control: Option.Option<ControlLocation>
  readonly identity: HostIdentity
}

/** `enabled: false` in config.json: the CLI does not connect (C-CFG-6). */
export class IntercomDisabled extends Data.TaggedError("IntercomDisabled")<{ readonly configFile: string }> {
  override get message(): string {
    return `Intercom is disabled ("enabled": false in ${this.configFile}); not connecting.`
  }
}

/** The failures of `resolveContext`, each with a user-facing `message`. */
export type ContextError =
  | IntercomEnvError
  | IntercomDisabled
  | SocketPathError
  | IntercomDirNotADirectory
  | NoSuchAgentDir
  | AgentDirInaccessible

/**
 * The settings, paths, name, home group and identity of this process for one
 * client command (`--dir`, `--name`, `--group`, environment, config.json). Fails before
 * anything connects: a bad environment variable, `enabled: false`, no
 * usable socket path, a file where the intercom dir must be, a `--dir`
 * that names no directory, or an agent dir this user may not reach
 * (`checkAgentDir`).
 */
export const resolveContext = (
  input: Pick<CommonInput, "name" | "dir" | "group">
): Effect.Effect<CliContext, ContextError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const dir = Option.getOrUndefined(input.dir)
    // Before config is read (a file in the intercom dir's place would make that a second, muddled error).
    const paths = yield* resolveProcessPaths(dir)
    yield* checkAgentDir(paths, dir)
    const settings = yield* loadIntercomSettings({ dir })
    if (!settings.enabled) {
      return yield* new IntercomDisabled({ configFile: settings.configSource ?? settings.paths.configFile })
    }
    const name = Option.getOrElse(input.name, defaultCliName).trim()
    const control = yield* Effect.option(controlLocation(paths, nameKey(name, settings.scopeId)))
    const identity: HostIdentity = { name, cwd: process.cwd(), model: CLI_MODEL }
    const group = homeGroup(Option.getOrUndefined(input.group ?? Option.none()), settings.group)
    const dirFlag = dir === undefined ? undefined : paths.agentDir
    return { settings, group, paths, name, dirFlag, control, identity } satisfies CliContext
  })

/** A word as a POSIX shell reads it back: as it is when plain, else single-quoted. */
const shellWord = (word: string): string => /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`

/**
 * How `pending` shows the answer to an ask at a shell: `intercom reply --name
 * <name> --reply-to <message id> "..."`, with `--dir <agent dir>` when this
 * command was given one and `--group <group>` when the session is outside the
 * default group, each word quoted for the shell where it needs it.
 */
export const cliReplyCall = (context: Pick<CliContext, "name" | "group" | "dirFlag">) => (messageId: string): string =>
  [
    "intercom reply --name",
    shellWord(context.name),
    ...(context.dirFlag === undefined ? [] : ["--dir", shellWord(context.dirFlag)]),
    ...(context.group === DEFAULT_GROUP ? [] : ["--group", shellWord(context.group)]),
    "--reply-to",
    shellWord(messageId),
    `"..."`
  ].join(" ")

/**
 * `pending`'s text as the watch that ran it wrote it, with each reply line
 * (`  reply: intercom reply … --reply-to <id> "..."`) written again for the
 * command that asked (`cliReplyCall(context)`): the watch writes them for its
 * own context, which lacks the command's `--dir`, so a line pasted in a shell
 * without the watch's environment would act on another agent dir.
 */
export const withCommandReplyCalls = (text: string, context: Pick<CliContext, "name" | "group" | "dirFlag">): string =>
  text.replace(/^( {2}reply: )intercom reply .* --reply-to (\S+) "\.\.\."$/gm, (_line, prefix: string, id: string) =>
    `${prefix}${cliReplyCall(context)(id.startsWith("'") ? id.slice(1, -1).replaceAll(`'\\''`, "'") : id)}`)

/** What `openSession` takes beyond the context: the session id, the host, and which inbound messages start a turn. */
export interface OpenSessionOptions {
  readonly sessionId: string
  readonly host: HostService
  readonly inboundTrigger: InboundTrigger
  /**
   * A one-shot command's session (`ephemeral-v1`): the broker forgets it when
   * it ends, so mail to its name is not queued for a session nobody runs.
   */
  readonly ephemeral: boolean
  /** After a takeover (`takeover-v1`): how to take the session back, the end of the client's error text. */
  readonly takenOverHint?: string | undefined
  /**
   * The client's `rejoinGraceMs` (`intercom watch --rejoin-grace`): how long
   * after a reconnect a session may take to come back before the membership
   * view reports it as left. Absent: the client's default (10 s).
   */
  readonly rejoinGraceMs?: number | undefined
}

/** An open CLI session: the session runtime, and the client under it (for `status` and membership events). */
export interface CliSession {
  readonly session: IntercomSessionService
  readonly client: IntercomClientService
}

/**
 * One session generation in the current Scope: an `IntercomClient` that
 * spawns the broker from the config when none runs, and the session runtime
 * over it. Nothing connects until the first action. Closing the Scope ends
 * the session and unregisters (the client's finalizer runs last).
 */
export const openSession = (
  context: CliContext,
  options: OpenSessionOptions
): Effect.Effect<CliSession, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { settings, paths } = context
    const now = yield* Clock.currentTimeMillis
    const client = yield* IntercomClient.make({
      agentDir: paths.agentDir,
      // Its session runtime consumes it: confirm what the runtime handled (known issue 21).
      confirmWhenHandled: true,
      intercomDir: paths.intercomDir,
      socketPath: paths.socketPath,
      sessionId: options.sessionId,
      scopeId: settings.scopeId,
      // C-GRP-2: `--group`, else ATOMIC_INTERCOM_GROUP / PI_INTERCOM_GROUP, else config `group`, else default.
      group: context.group,
      ephemeral: options.ephemeral,
      ...(options.takenOverHint === undefined ? {} : { takenOverHint: options.takenOverHint }),
      ...(options.rejoinGraceMs === undefined ? {} : { rejoinGraceMs: options.rejoinGraceMs }),
      registration: sessionRegistration({
        sessionId: options.sessionId,
        identity: options.host.identity,
        pid: process.pid,
        startedAt: now,
        statusSuffix: settings.status
      }),
      launch: settings.broker,
      sendTimeoutMs: settings.sendTimeoutMs,
      listTimeoutMs: settings.listTimeoutMs,
      livenessIntervalMs: settings.liveness.intervalMs,
      livenessTimeoutMs: settings.liveness.timeoutMs
    }).pipe(Effect.orDie) // no instanceId is given (a random one): the options' check cannot fail
    const session = yield* IntercomSession.make({
      askTimeoutMs: settings.askTimeoutMs,
      replyHint: settings.replyHint,
      // `pending` shows the command line that answers an ask, not the agent's tool call.
      replyCall: cliReplyCall(context),
      statusSuffix: settings.status,
      inboundTrigger: options.inboundTrigger
    }).pipe(
      Effect.provideService(IntercomClient, client),
      Effect.provideService(Host, options.host)
    )
    return { session, client }
  })

